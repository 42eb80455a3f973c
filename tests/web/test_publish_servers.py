"""The content negotiation ``publish`` writes (``nginx.conf``, ``.htaccess``, ``Caddyfile``),
run by the real servers from Debian's packages (nginx, apache2, caddy; ``.ci/run`` installs
them): the examples published under ``http://127.0.0.1:PORT/kb/`` (a sub-path), each server
started as a child process on a free port with the generated configuration (only its address
and folder filled in) and files of its own in the test's temporary folder, then asked as a
visitor would: a browser, an RDF client with each media type, ``*/*``, no Accept at all, and
the explicit file URLs. A server that is not installed is a skip, saying which package."""

from __future__ import annotations

import grp
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import pyoxigraph as ox
import pytest

from karenina_rdf import Store
from karenina_rdf.rdf import DEFAULT_BASE_IRI
from tests.conftest import EXAMPLES
from tests.helpers.servers import free_port
from tests.web.test_publish import RDF_FILES, VOCABULARIES, _source

pytestmark = pytest.mark.slow  # publishes the examples and starts web servers


def _binary(name: str) -> str | None:
    # Debian puts nginx and apache2 in /usr/sbin, which a non-root PATH may lack.
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    return found


@dataclass
class Served:
    server: str
    version: str
    base: str  # the public base: http://127.0.0.1:PORT/kb/
    site: Path  # the published folder, served at the base
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def label(self) -> str:  # what a failure names: the server and the version that answered
        return f"{self.server} {self.version}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _fill(text: str, old: str, new: str) -> str:
    """The generated configuration with one of its placeholders filled in (it must be there once)."""
    assert text.count(old) == 1, f"{old!r} is not in the generated configuration once"
    return text.replace(old, new)


def _nginx(binary: str, root: Path, tmp: Path, port: int) -> list[str]:
    site = (root / "kb" / "nginx.conf").read_text(encoding="utf-8")
    site = _fill(site, "listen 80;", f"listen 127.0.0.1:{port};")
    site = _fill(site, "root /srv/karenina-site;", f"root {root};")
    (tmp / "site.conf").write_text(site, encoding="utf-8")
    # The master runs as the current user; as root its workers would switch to nobody, who
    # cannot read the test's private temporary folder: they stay the current user.
    user = ""
    if os.geteuid() == 0:
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};"
    temps = "\n".join(
        f"    {kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    # As Debian's nginx.conf has it: the host's media types for the other locations.
    mime = "include /etc/nginx/mime.types;" if Path("/etc/nginx/mime.types").is_file() else ""
    (tmp / "nginx.conf").write_text(
        f"""daemon off;
{user}
worker_processes 1;
pid {tmp / "nginx.pid"};
error_log {tmp / "server.log"} info;
events {{ worker_connections 64; }}
http {{
    access_log {tmp / "access.log"};
    {mime}
    default_type application/octet-stream;
{temps}
    include {tmp / "site.conf"};
}}
""",
        encoding="utf-8",
    )
    # -e: the error log before the configuration is read (else Debian's /var/log/nginx/).
    return [binary, "-p", str(tmp), "-e", str(tmp / "server.log"), "-c", str(tmp / "nginx.conf")]


APACHE_MODULES = "/usr/lib/apache2/modules"


def _apache(binary: str, root: Path, tmp: Path, port: int) -> list[str]:
    # What Debian's apache2.conf and mods-enabled give a site, minus what serves no file here.
    modules = [
        ("mpm_event", "mod_mpm_event.so"),
        ("authz_core", "mod_authz_core.so"),
        ("mime", "mod_mime.so"),
        ("dir", "mod_dir.so"),
        ("negotiation", "mod_negotiation.so"),
        ("rewrite", "mod_rewrite.so"),
        ("headers", "mod_headers.so"),
    ]
    loads = "\n".join(f"LoadModule {m}_module {APACHE_MODULES}/{so}" for m, so in modules)
    # Apache refuses to serve as root: as root (here) its children run as www-data (or
    # nobody), so the site lies in a folder they can read (see the fixture).
    user = ""
    if os.geteuid() == 0:
        name = "www-data" if _has_user("www-data") else "nobody"
        user = f"User {name}\nGroup {grp.getgrgid(pwd.getpwnam(name).pw_gid).gr_name}"
    # Debian's media types and extensions (mods-enabled/mime.conf: .gz is application/x-gzip there).
    debian = Path("/etc/apache2/mods-available/mime.conf")
    mime = f"Include {debian}" if debian.is_file() else "TypesConfig /etc/mime.types"
    (tmp / "apache2.conf").write_text(
        f"""ServerRoot {tmp}
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile {tmp / "apache2.pid"}
DefaultRuntimeDir {tmp}
Mutex file:{tmp} default
ErrorLog {tmp / "server.log"}
LogLevel warn
{loads}
{user}
{mime}
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory {root}>
    Options FollowSymLinks
    AllowOverride All
    Require all granted
</Directory>
<FilesMatch "^\\.ht">
    Require all denied
</FilesMatch>
DocumentRoot {root}
""",
        encoding="utf-8",
    )
    # Debian's apache2ctl would read /etc/apache2/envvars: the binary itself, in the foreground.
    return [binary, "-f", str(tmp / "apache2.conf"), "-D", "FOREGROUND"]


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _caddy(binary: str, root: Path, tmp: Path, port: int) -> list[str]:
    site = (root / "kb" / "Caddyfile").read_text(encoding="utf-8")
    site = _fill(site, "root * /srv/karenina-site", f"root * {root}")
    assert f"http://127.0.0.1:{port} {{" in site  # the base's own address, as generated
    # No admin endpoint (it would take port 2019); what Caddy saves goes to $XDG_*_HOME = tmp.
    (tmp / "Caddyfile").write_text("{\n    admin off\n}\n" + site, encoding="utf-8")
    return [binary, "run", "--config", str(tmp / "Caddyfile"), "--adapter", "caddyfile"]


def _version(binary: str, args: list[str], pattern: str) -> str:
    got = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30, check=False)
    found = re.search(pattern, got.stdout + got.stderr)
    return found.group(1) if found else "unknown"


@dataclass(frozen=True)
class Kind:
    binary: str
    package: str
    start: Callable[[str, Path, Path, int], list[str]]
    version: tuple[list[str], str]


SERVERS = {
    "nginx": Kind("nginx", "nginx", _nginx, (["-v"], r"nginx/(\S+)")),
    "apache": Kind("apache2", "apache2", _apache, (["-v"], r"Apache/(\S+)")),
    "caddy": Kind("caddy", "caddy", _caddy, (["version"], r"v?(\d+\.\d+\.\d+\S*)")),
}


@pytest.fixture(scope="module", params=list(SERVERS))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The examples published under /kb/ and served by one real server on 127.0.0.1."""
    from karenina_rdf.web import publish

    kind = SERVERS[request.param]
    binary = _binary(kind.binary)
    if binary is None:
        pytest.skip(f"no {kind.binary} (Debian package {kind.package}): its configuration is not run")
    tmp = tmp_path_factory.mktemp(request.param)
    # Apache's children run as another user when the test runs as root: the site goes in a
    # folder of its own that they may read (pytest's temporary folders are the user's alone).
    root = Path(tempfile.mkdtemp(prefix="karenina-rdf-site-")) if request.param == "apache" else tmp / "root"
    root.mkdir(exist_ok=True)
    root.chmod(0o755)
    try:
        port = free_port()
        base = f"http://127.0.0.1:{port}/kb/"
        store = _source_with_a_slash()
        try:
            publish(store, [], base, root / "kb")
        finally:
            store.close()
        log = tmp / "server.log"
        env = {**os.environ, "HOME": str(tmp), "XDG_DATA_HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp)}
        with (tmp / "stdout.log").open("wb") as out:
            process = subprocess.Popen(
                kind.start(binary, root, tmp, port), stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp
            )
        version = _version(binary, *kind.version)
        served = Served(request.param, version, base, root / "kb", process, log)
        try:
            _wait(served, tmp)
            yield served
        finally:
            served.stop()
    finally:
        if request.param == "apache":
            shutil.rmtree(root, ignore_errors=True)


def _wait(served: Served, tmp: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            break
        try:
            if httpx.get(served.base, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    served.stop()
    logs = "\n".join(p.read_text(errors="replace")[-1500:] for p in (tmp / "stdout.log", served.log) if p.is_file())
    raise RuntimeError(f"{served.server} did not serve {served.base} (exit {served.process.poll()}):\n{logs}")


def _source_with_a_slash() -> Store:
    """The examples, and a copy of one whose first question's id holds a "/" (Karenina allows
    it): no static host serves that question at its IRI, ``publish`` puts it under the id kept
    encoded (``%252F`` in the URL), and the configurations must not decode that twice."""
    store = _source()
    doc = json.loads((EXAMPLES / "bioinformatics-methods.jsonld").read_text(encoding="utf-8"))
    doc["@id"], doc["name"] = SLASHED_BENCH, "Bioinformatics methods, slashed"
    for n, item in enumerate(doc["dataFeedElement"]):
        item["@id"] = SLASHED_ID if n == 0 else item["@id"] + "-copy"
    store.import_checkpoint(doc, name="a copy with an id holding a slash")
    return store


SLASHED_BENCH = "urn:uuid:karenina-checkpoint-slashed"
SLASHED_ID = "urn:uuid:question-fastq/lines"
PHARMA = "benchmarks/urn:uuid:karenina-checkpoint-1795172400.0"
# Each kind of resource, by its IRI after the base (no trailing slash: the IRI as cited).
RESOURCES = {
    "benchmark": PHARMA,
    "question": PHARMA + "/questions/urn:uuid:question-which-receptor-does-losartan-block-39636e14",
    "run": "runs/pharmacology-2026-05",
    "result": "runs/pharmacology-2026-05/results/44d9b09977e3d8af",
    "model": "models/langchain/gpt-4o",
    # Its IRI holds %2F, so it is published under %252F (see _served).
    "question-id-with-slash": f"benchmarks/{SLASHED_BENCH}/questions/{quote(SLASHED_ID, safe=':')}",
}


def _served(path: str) -> str:
    """Where a resource is published (``publish``'s rule: a segment with ``%2F`` kept encoded)."""
    return path.replace("%2F", "%252F")


# Pages that are no resource (no RDF of their own): always the page.
INDEXES = {"index": "", "runs": "runs/", "compare": "compare/", "run-comparison": "compare/pharmacology-2026-05/"}
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
# Accept header → what is served: a suffix of the resource's RDF files, or its page.
ACCEPTS: dict[str | None, str] = {
    "text/html": "page",
    BROWSER: "page",
    "text/turtle": ".ttl",
    "application/ld+json": ".jsonld",
    "application/n-triples": ".nt",
    "application/rdf+xml": ".rdf",
    "text/turtle;q=0.9, application/rdf+xml;q=0.5": ".ttl",
    "*/*": "page",
    None: "page",
}
MEDIA = {
    ".ttl": "text/turtle",
    ".jsonld": "application/ld+json",
    ".nt": "application/n-triples",
    ".rdf": "application/rdf+xml",
}


def _get(served: Served, path: str, accept: str | None) -> httpx.Response:
    headers = {"accept": accept} if accept is not None else {}
    with httpx.Client(follow_redirects=True, timeout=30) as client:
        request = client.build_request("GET", served.base + path, headers=headers)
        if accept is None:
            del request.headers["accept"]  # httpx sends */* unless told
        return client.send(request)


def _media(response: httpx.Response) -> str:
    return str(response.headers.get("content-type", "")).split(";")[0].strip()


def _check_page(served: Served, response: httpx.Response, page: str) -> None:
    """The page a visitor asked for: 200, HTML, the published file itself."""
    assert response.status_code == 200, (served.label, str(response.url), response.status_code)
    assert _media(response) == "text/html", (served.label, str(response.url), response.headers)
    file = served.site / unquote(page + "index.html")
    assert response.content == file.read_bytes()
    assert "<h1" in response.text
    # Served at the IRI, or redirected to the folder, under the base (a sub-path, not the
    # host's root): the page's links are absolute paths, right at either.
    assert str(response.url) in (served.base + page, (served.base + page).rstrip("/"))


def _check_rdf(served: Served, response: httpx.Response, iri: str, suffix: str) -> None:
    """The resource's RDF in the asked format: 200, its media type, parses, names it, and names
    nothing outside the public base but the vocabularies."""
    assert response.status_code == 200, (served.label, str(response.url), response.status_code)
    assert _media(response) == MEDIA[suffix], (served.label, str(response.url), response.headers)
    triples = list(ox.parse(response.content, format=RDF_FILES[suffix], base_iri=iri))
    assert ox.NamedNode(iri) in {t.subject for t in triples}
    iris = {
        term.value for t in triples for term in (t.subject, t.predicate, t.object) if isinstance(term, ox.NamedNode)
    }
    # Web addresses, that is (urn: names are Karenina's ids, not places).
    web = {i for i in iris if i.startswith(("http:", "https:"))}
    foreign = sorted(i for i in web if not i.startswith((served.base, *VOCABULARIES)))
    assert foreign == [], served.label
    assert DEFAULT_BASE_IRI.encode() not in response.content


def _vary(response: httpx.Response) -> bool:
    return "accept" in {v.strip().lower() for v in response.headers.get("vary", "").split(",")}


@pytest.mark.parametrize("accept", list(ACCEPTS), ids=lambda a: "none" if a is None else a[:30])
@pytest.mark.parametrize("kind", list(RESOURCES))
def test_a_resource_iri_negotiates(served: Served, kind: str, accept: str | None) -> None:
    """A resource's IRI, asked with an Accept header: its page or its RDF, with Vary: Accept."""
    iri, path = RESOURCES[kind], _served(RESOURCES[kind])
    response = _get(served, path, accept)
    wanted = ACCEPTS[accept]
    if wanted == "page":
        _check_page(served, response, path + "/")
    else:
        _check_rdf(served, response, served.base + iri, wanted)
        assert response.content == (served.site / unquote(path + wanted)).read_bytes()
    assert _vary(response), (served.label, response.headers)


@pytest.mark.parametrize("suffix", list(MEDIA))
@pytest.mark.parametrize("kind", list(RESOURCES))
def test_a_resource_file_url_is_its_format(served: Served, kind: str, suffix: str) -> None:
    """``X.ttl`` and the others are that format whatever the Accept header (a browser's here)."""
    response = _get(served, _served(RESOURCES[kind]) + suffix, BROWSER)
    _check_rdf(served, response, served.base + RESOURCES[kind], suffix)


@pytest.mark.parametrize("accept", list(ACCEPTS), ids=lambda a: "none" if a is None else a[:30])
@pytest.mark.parametrize("page", list(INDEXES))
def test_an_index_page_is_a_page(served: Served, page: str, accept: str | None) -> None:
    _check_page(served, _get(served, INDEXES[page], accept), INDEXES[page])


@pytest.mark.parametrize("kind", list(RESOURCES))
def test_a_resource_page_url_is_its_page(served: Served, kind: str) -> None:
    """``X/``, the page's own URL (the sitemap's and the site's links), as a browser asks."""
    path = _served(RESOURCES[kind]) + "/"
    _check_page(served, _get(served, path, BROWSER), path)


def test_the_site_without_its_slash_is_its_index(served: Served) -> None:
    response = httpx.get(served.base.rstrip("/"), headers={"accept": BROWSER}, follow_redirects=True, timeout=30)
    _check_page(served, response, "")


DOWNLOADS = {
    PHARMA + "/checkpoint.jsonld": "application/ld+json",
    "runs/pharmacology-2026-05/results.json": "application/json",
    "runs/pharmacology-2026-05/results.csv": "text/csv",
    "dump.nq.gz": "application/gzip",
    "void.ttl": "text/turtle",
    "catalog.ttl": "text/turtle",
    "sitemap.xml": "application/xml text/xml",  # either names XML
    "robots.txt": "text/plain",
    "static/site.css": "text/css",
    "static/favicon.svg": "image/svg+xml",
}


@pytest.mark.parametrize("path", list(DOWNLOADS))
def test_downloads_are_the_files_with_their_media_type(served: Served, path: str) -> None:
    response = _get(served, path, BROWSER)
    assert response.status_code == 200, (served.label, path)
    assert _media(response) in DOWNLOADS[path].split(), (served.label, path, response.headers)
    # Bytes as published: no encoding a client would undo (the dump stays gzip).
    assert "content-encoding" not in response.headers
    assert response.content == (served.site / path).read_bytes()


@pytest.mark.parametrize("accept", list(ACCEPTS), ids=lambda a: "none" if a is None else a[:30])
@pytest.mark.parametrize("path", [PHARMA + "-missing", "benchmarks/missing.ttl", "missing/", "runs/missing"])
def test_a_missing_resource_is_404(served: Served, path: str, accept: str | None) -> None:
    assert _get(served, path, accept).status_code == 404
