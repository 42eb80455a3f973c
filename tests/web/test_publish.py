"""``karenina-rdf publish``: the examples (three benchmarks, three runs) published as static
sites, checked as a crawler and a static host would meet them: every RDF file parses and names
only IRIs under the public base (besides vocabularies), every link of every page is a file of
the site, nothing of the store is lost, and the checkpoint downloads load in Karenina (slow).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from karenina_rdf import Store
from karenina_rdf.cli import app
from karenina_rdf.rdf import DEFAULT_BASE_IRI
from karenina_rdf.web import PublishReport, publish
from tests.conftest import EXAMPLES, ROOT
from tests.helpers.karenina_ref import karenina


@dataclass(frozen=True)
class Case:
    name: str
    base: str
    sparql: str | None


CASES = [
    Case("under-a-path", "https://bench.example.org/kb/", None),
    Case("at-the-root-with-an-endpoint", "https://example.github.io/", "https://sparql.example.org/query"),
]
# IRIs a published file may name besides the public base's: the vocabularies it uses.
VOCABULARIES = (
    "https://schema.org/",
    "http://www.w3.org/",
    "http://rdfs.org/ns/void#",
    "http://purl.org/dc/terms/",
    "http://xmlns.com/foaf/0.1/",
    "https://www.iana.org/assignments/media-types/",
    "http://mlcommons.org/croissant/",  # the catalog says which Croissant version croissant.json conforms to
)
RDF_FILES = {
    ".ttl": ox.RdfFormat.TURTLE,
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".jsonld": ox.RdfFormat.JSON_LD,
    ".rdf": ox.RdfFormat.RDF_XML,
}
LINKING = {"a": "href", "link": "href", "script": "src", "img": "src", "form": "action", "button": "formaction"}


def _source() -> Store:
    store = Store.memory()  # the default, local-only base
    for path in sorted(EXAMPLES.glob("*.jsonld")):
        store.import_checkpoint(path, name=f"examples/{path.name}")
    for path in sorted((EXAMPLES / "results").glob("*.json")):
        store.import_results(path)
    return store


@pytest.fixture(scope="module")
def source() -> Store:
    return _source()


@pytest.fixture(scope="module")
def sites(source: Store, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, PublishReport]]:
    out = {}
    for case in CASES:
        folder = tmp_path_factory.mktemp(case.name) / "site"
        out[case.name] = folder, publish(source, [], case.base, folder, sparql_endpoint=case.sparql)
    return out


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _rdf_files(folder: Path) -> list[tuple[Path, ox.RdfFormat]]:
    found = [(p, RDF_FILES[p.suffix]) for p in _files(folder) if p.suffix in RDF_FILES]
    # A Karenina checkpoint is JSON-LD too, under Karenina's own context: checked by Karenina below.
    found = [(p, f) for p, f in found if p.name != "checkpoint.jsonld"]
    if (folder / ".well-known" / "void").is_file():
        found.append((folder / ".well-known" / "void", ox.RdfFormat.TURTLE))
    return found


def _dump(folder: Path) -> list[ox.Quad]:
    return list(ox.parse(gzip.decompress((folder / "dump.nq.gz").read_bytes()), format=ox.RdfFormat.N_QUADS))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_report_says_what_was_written(case: Case, sites: dict[str, tuple[Path, PublishReport]]) -> None:
    folder, report = sites[case.name]
    files = _files(folder)
    assert report.files == len(files) and report.bytes == sum(p.stat().st_size for p in files)
    assert len(report.benchmarks) == 3 and len(report.runs) == 3
    assert all(iri.startswith(case.base) for iri in (*report.benchmarks, *report.runs))
    assert report.rewritten_from == DEFAULT_BASE_IRI and report.default_base
    assert report.moved == ()
    assert report.pages == sum(1 for p in files if p.suffix == ".html")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_rdf_file_parses_and_names_only_public_iris(
    case: Case, sites: dict[str, tuple[Path, PublishReport]]
) -> None:
    folder, _ = sites[case.name]
    checked, outside = 0, set()
    quads = [q for path, fmt in _rdf_files(folder) for q in ox.parse(path=str(path), format=fmt)]
    quads += _dump(folder)
    for q in quads:
        for term in (q.subject, q.predicate, q.object, q.graph_name):
            if isinstance(term, ox.NamedNode):
                checked += 1
                iri = term.value
                # The SPARQL endpoint named at publish time is another service's address.
                if iri.startswith(("http:", "https:")) and not iri.startswith((case.base, *VOCABULARIES)):
                    if iri == case.sparql:
                        continue
                    outside.add(iri)
    assert checked > 10_000 and outside == set()
    # Nor in a literal, a page or a download: nothing says where the store was.
    leaks = [p for p in _files(folder) if p.suffix != ".gz" and DEFAULT_BASE_IRI.encode() in p.read_bytes()]
    assert leaks == []
    assert DEFAULT_BASE_IRI.encode() not in gzip.decompress((folder / "dump.nq.gz").read_bytes())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_nothing_of_the_store_is_lost(case: Case, source: Store, sites: dict[str, tuple[Path, PublishReport]]) -> None:
    """The dump holds every benchmark and run: the same instances of every class as the store,
    and every instance under the base is a page with its RDF files."""
    folder, _ = sites[case.name]
    dump = ox.Store()
    dump.extend(_dump(folder))
    count = (
        "SELECT ?c (COUNT(DISTINCT ?s) AS ?n)"
        " WHERE { GRAPH ?g { ?s a ?c } FILTER(?g != <urn:karenina-rdf:catalog>) } GROUP BY ?c"
    )
    ours = {r["c"].value: int(r["n"].value) for r in dump.query(count)}  # type: ignore[union-attr]
    theirs = {r["c"].value: int(r["n"].value) for r in source.oxigraph.query(count)}  # type: ignore[union-attr]
    assert ours == theirs and ours["https://schema.org/Question"] > 10
    subjects = {q.subject.value for q in dump if isinstance(q.subject, ox.NamedNode)}
    base_path = urlsplit(case.base).path
    missing = []
    for iri in sorted(s for s in subjects if s.startswith(case.base)):
        rel = unquote(iri[len(case.base) :])
        for name in (rel + "/index.html", rel + ".ttl", rel + ".nt", rel + ".jsonld"):
            if not (folder / name).is_file():
                missing.append(name)
    assert missing == [] and base_path.endswith("/")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (tag, URL)
        self.alternates: set[str] = set()  # media types of <link rel="alternate">

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        name = LINKING.get(tag)
        if name and found.get(name):
            self.links.append((tag, str(found[name])))
        if tag == "link" and found.get("rel") == "alternate":
            self.alternates.add(str(found.get("type")))


def _target(folder: Path, base_path: str, url: str) -> Path | None:
    """The file a static server answers a site URL with (None: not under the site)."""
    path = urlsplit(url).path
    if not path.startswith(base_path):
        return None
    rel = unquote(path[len(base_path) :])
    target = folder / rel
    return target / "index.html" if rel == "" or rel.endswith("/") or target.is_dir() else target


def _check_links(folder: Path, base_path: str) -> tuple[int, int]:
    """Every link of every page of the site is a file of it, and every resource's page names its
    RDF files; returns how many pages and resource pages were checked."""
    broken, queried, pages, resources = [], [], 0, 0
    for page in (p for p in _files(folder) if p.suffix == ".html"):
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        pages += 1
        for tag, url in parser.links:
            if url.startswith("#") or urlsplit(url).scheme in ("http", "https", "mailto"):
                continue
            if urlsplit(url).query:
                queried.append((page.relative_to(folder), url))  # a static host ignores the query
            target = _target(folder, base_path, url)
            if target is None or not target.is_file():
                broken.append((str(page.relative_to(folder)), tag, url))
        # A resource's page (it has RDF files beside it) names them for hosts without negotiation.
        if page.name == "index.html" and page.parent.with_name(page.parent.name + ".ttl").is_file():
            resources += 1
            assert {"text/turtle", "application/n-triples", "application/ld+json"} <= parser.alternates, page
    assert broken == [] and queried == []
    return pages, resources


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_internal_link_is_a_file_of_the_site(case: Case, sites: dict[str, tuple[Path, PublishReport]]) -> None:
    folder, _ = sites[case.name]
    pages, resources = _check_links(folder, urlsplit(case.base).path)
    assert pages > 500 and resources > 500


def test_every_page_of_a_long_table_is_published(tmp_path: Path) -> None:
    """A benchmark of 250 questions: its question table has three pages, each a file, and the
    pager's links (first, previous, next, last) all lead to one."""
    spec = importlib.util.spec_from_file_location("generate", ROOT / "benchmarks" / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    store = Store.memory()
    bench = store.import_checkpoint(generate.generate_checkpoint(250, seed=3), validate=False).iri
    report = publish(store, [], "https://long.example.org/", tmp_path / "site")
    folder = tmp_path / "site" / unquote(report.benchmarks[0][len(report.base) :])
    assert sorted(p.name for p in folder.glob("page-*.html")) == ["page-2.html", "page-3.html"]
    assert bench.startswith(DEFAULT_BASE_IRI)
    pages, _ = _check_links(tmp_path / "site", "/")
    assert pages == report.pages
    # Every question has its page, those whose id holds a "/" too (the generator makes some):
    # under the id kept encoded, where the links lead, as a static host cannot serve %2F.
    assert len([d for d in (folder / "questions").iterdir() if d.is_dir()]) == 250
    assert report.moved and all("%2F" in iri for iri in report.moved)
    questions = [iri.rsplit("/", 1)[1] for iri in report.moved if iri.rsplit("/", 2)[1] == "questions"]
    assert questions and all((folder / "questions" / seg / "index.html").is_file() for seg in questions)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_sitemap_void_and_catalog_name_the_published_files(
    case: Case, sites: dict[str, tuple[Path, PublishReport]]
) -> None:
    folder, report = sites[case.name]
    base_path = urlsplit(case.base).path
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    urls = [e.text or "" for e in ET.parse(folder / "sitemap.xml").getroot().findall("s:url/s:loc", ns)]
    assert len(urls) == sum(1 for p in _files(folder) if p.name == "index.html")
    assert all(u.startswith(case.base) and _target(folder, base_path, u).is_file() for u in urls)  # type: ignore[union-attr]
    void = list(ox.parse(path=str(folder / "void.ttl"), format=ox.RdfFormat.TURTLE))
    dcat = list(ox.parse(path=str(folder / "catalog.ttl"), format=ox.RdfFormat.TURTLE))
    downloads = {
        t.object.value
        for t in [*void, *dcat]
        if t.predicate.value in ("http://rdfs.org/ns/void#dataDump", "http://www.w3.org/ns/dcat#downloadURL")
    }
    # Each benchmark's checkpoint, Croissant and Croissant Tasks descriptions and graph, its one
    # version's checkpoint, each run's exports and graph, the whole dump.
    assert len(downloads) == 3 * 5 + 3 + 3 * 4 + 1
    assert all(_target(folder, base_path, u).is_file() for u in downloads)  # type: ignore[union-attr]
    endpoints = {t.object.value for t in void if t.predicate.value == "http://rdfs.org/ns/void#sparqlEndpoint"}
    assert endpoints == ({case.sparql} if case.sparql else set())
    assert {t.subject.value for t in dcat if t.object.value == "http://www.w3.org/ns/dcat#Dataset"} >= set(
        report.benchmarks
    )
    assert (folder / ".well-known" / "void").is_file() == (base_path == "/")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_query_page_only_with_an_endpoint(case: Case, sites: dict[str, tuple[Path, PublishReport]]) -> None:
    folder, _ = sites[case.name]
    base_path = urlsplit(case.base).path
    index = (folder / "index.html").read_text(encoding="utf-8")
    assert (f'href="{base_path}query/"' in index) == (case.sparql is not None)
    assert not (folder / "queries").exists()  # its forms run queries on a server
    if case.sparql is None:
        assert not (folder / "query").exists() and not (folder / "static" / "yasgui").exists()
        return
    page = (folder / "query" / "index.html").read_text(encoding="utf-8")
    config = json.loads(page.split('id="query-config">', 1)[1].split("</script>", 1)[0])
    assert config["endpoint"] == case.sparql
    assert (folder / "static" / "yasgui" / "yasgui.min.js").is_file()


@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        (
            "nginx.conf",
            ['"~*text/turtle" ".ttl"', '"~*application/ld\\+json" ".jsonld"', "try_files $uri$karenina_rdf_suffix"],
        ),
        (
            ".htaccess",
            [
                "RewriteCond %{HTTP_ACCEPT} text/turtle",
                "RewriteRule ^(.+)$ $1.nt [B=%?#,L]",
                "AddType text/turtle .ttl",
                "DirectorySlash Off",
            ],
        ),
        ("Caddyfile", ["header Accept *text/turtle*", "rewrite @ntriples {path}.nt", "file_server"]),
    ],
)
def test_content_negotiation_configs(
    name: str, wanted: list[str], sites: dict[str, tuple[Path, PublishReport]]
) -> None:
    """What each configuration says, for each base (test_publish_servers.py runs them)."""
    for case in CASES:
        text = (sites[case.name][0] / name).read_text(encoding="utf-8")
        assert all(w in text for w in wanted), name
        assert urlsplit(case.base).path in text


runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--base", "ftp://host/x/"], 2, "give the site's public address"),
        (["--base", "https://host/?q=1"], 2, "give the site's public address"),
        (["--base", "https://host/", "--sparql-endpoint", "sparql"], 2, "give the endpoint's URL"),
        (["no-such-benchmark", "--base", "https://host/"], 1, "no benchmark with id, IRI or name 'no-such-benchmark'"),
    ],
)
def test_cli_errors_are_one_line(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    store = tmp_path / "store"
    assert runner.invoke(app, ["import", str(EXAMPLES / "pharmacology.jsonld"), "--store", str(store)]).exit_code == 0
    result = runner.invoke(app, ["publish", *args, "-o", str(tmp_path / "site"), "--store", str(store)])
    assert result.exit_code == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "site").exists()


def test_cli_publishes_and_says_it_rewrites_the_default_base(tmp_path: Path) -> None:
    store, site = tmp_path / "store", tmp_path / "site"
    assert runner.invoke(app, ["import", str(EXAMPLES / "pharmacology.jsonld"), "--store", str(store)]).exit_code == 0
    result = runner.invoke(
        app,
        ["publish", "Pharmacology examples", "--base", "https://h.example/p", "-o", str(site), "--store", str(store)],
    )
    assert result.exit_code == 0, result.output
    assert "every IRI is rewritten to https://h.example/p/" in result.stderr
    assert "default base, for local use only" in result.stderr
    assert "to move the store itself to it: karenina-rdf rebase https://h.example/p/" in result.stderr
    assert "published 1 benchmark(s), 0 run(s)" in result.stdout
    again = runner.invoke(app, ["publish", "--base", "https://h.example/p/", "-o", str(site), "--store", str(store)])
    assert again.exit_code == 2 and "empty or new folder" in again.stderr


KARENINA_LOAD = r"""
import json, sys
from karenina import Benchmark
out = []
for path in sys.argv[1:]:
    b = Benchmark.load(path)
    qs = sorted((q["id"], q["question"], q["raw_answer"]) for q in b.get_all_questions())
    out.append({"name": b.name, "questions": qs, "global_rubric": str(b.get_global_rubric())})
print(json.dumps(out))
"""


@pytest.mark.slow  # runs Karenina in its own environment
def test_checkpoint_downloads_load_in_karenina(sites: dict[str, tuple[Path, PublishReport]]) -> None:
    folder, report = sites[CASES[0].name]
    published = [folder / unquote(iri[len(CASES[0].base) :]) / "checkpoint.jsonld" for iri in report.benchmarks]
    theirs = karenina(KARENINA_LOAD, *map(str, published))
    expected = karenina(KARENINA_LOAD, *map(str, sorted(EXAMPLES.glob("*.jsonld"))))
    assert sorted(theirs, key=lambda b: b["name"]) == sorted(expected, key=lambda b: b["name"])
    assert all(b["questions"] for b in theirs)
