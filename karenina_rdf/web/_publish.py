"""``karenina-rdf publish``: benchmarks (and the runs made on them) as a static linked-data site
that any static host serves, under a public base IRI.

The site is what ``serve`` answers, written to files: the stored benchmarks and runs are copied
into a store in memory minted under the public base (each benchmark through its checkpoint, each
run through its Karenina results export, the same paths ``import`` takes, so no IRI of the old
base can survive), and the endpoint's own app renders every page over it; RDF comes from
:class:`~karenina_rdf.linked.Site` as the endpoint's linked data does. Links are then rewritten
to the files: a resource ``{base}X`` is ``X/index.html`` (and ``X.ttl``, ``X.nt``, ``X.jsonld``,
``X.rdf``, the URLs ``serve`` answers), a page of a paged table ``X/page-N.html``.
"""

from __future__ import annotations

import gzip
import html
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import anyio
import httpx
import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import InvalidValueError, StoreError
from karenina_rdf._progress import QUIET, QUIET_TASK, Progress, Task
from karenina_rdf._store import Store
from karenina_rdf.authoring import Benchmark
from karenina_rdf.linked import Located, Site
from karenina_rdf.rdf import DEFAULT_BASE_IRI, MODELS_GRAPH, PREFIXES, SCHEMA, solutions, term_value
from karenina_rdf.sparql import SUFFIXES, serialize_graph
from karenina_rdf.store import SOURCE, BenchmarkVersion

from ._app import STATIC, EndpointSettings, create_app
from ._croissant import CROISSANT, croissant, question_rows, result_rows, rubric_rows, script_tag

DCAT = "http://www.w3.org/ns/dcat#"
DCT = "http://purl.org/dc/terms/"
VOID = "http://rdfs.org/ns/void#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
FOAF = "http://xmlns.com/foaf/0.1/"
# The RDF files written beside each resource's page: the suffixes ``serve`` answers.
RDF_SUFFIXES = {fmt: suffix for suffix, fmt in SUFFIXES.items() if fmt != "html"}
MEDIA = {
    "turtle": "text/turtle",
    "ntriples": "application/n-triples",
    "jsonld": "application/ld+json",
    "rdfxml": "application/rdf+xml",
}
SITEMAP_URLS = 50_000  # the sitemap protocol's limit per file
DUMP = "dump.nq.gz"
_LINK = re.compile(r'\b(href|src|action|formaction)="([^"]*)"')


class PublishReport(BaseModel):
    """What ``publish`` wrote."""

    model_config = ConfigDict(frozen=True)

    out: str
    base: str
    benchmarks: tuple[str, ...]  # the public IRIs
    runs: tuple[str, ...]
    resources: int  # IRIs given a page and RDF files
    pages: int  # HTML files
    files: int
    bytes: int
    rewritten_from: str | None  # the store's base, when it was not the public one
    default_base: bool  # the store's base was the local-only default
    # IRIs a static host cannot serve at themselves (an id holding "/", or dots only): their
    # files are named with the segment still encoded, and the site's links lead there.
    moved: tuple[str, ...] = ()


def _check_base(base: str) -> str:
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise InvalidValueError(f"--base {base!r}: give the site's public address, e.g. https://host/path/")
    return base if base.endswith("/") else base + "/"


def _check_endpoint(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidValueError(f"--sparql-endpoint {url!r}: give the endpoint's URL, e.g. https://host/sparql")
    return url


def publish(
    store: Store,
    benchmarks: list[str],
    base: str,
    out: str | Path,
    *,
    sparql_endpoint: str | None = None,
    runs: bool = True,
    progress: Progress | None = None,
    note: Callable[[str], None] | None = None,
) -> PublishReport:
    """Write ``benchmarks`` (ids, IRIs or names; every stored one when empty) and, with ``runs``,
    the runs on them as a static site in ``out`` under the public IRI ``base``.

    ``out`` must be empty or missing. ``sparql_endpoint`` names the SPARQL endpoint the site's
    query page sends queries to (one that holds this data under ``base``); without it the site
    has no query page. ``progress`` is told of the benchmarks copied and the resources written
    (each its page and RDF files); ``note``
    is told, before anything is written, when the store's IRIs are rewritten to ``base``."""
    base = _check_base(base)
    sparql_endpoint = _check_endpoint(sparql_endpoint)
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidValueError(f"{target}: publish writes into an empty or new folder")
    refs = benchmarks or list(store.catalog.benchmarks())
    if not refs:
        raise InvalidValueError("the store holds no benchmark to publish")
    chosen = list(dict.fromkeys(store.graph_of(ref)[0] for ref in refs))
    if note is not None and store.base_iri != base:
        local = " (the default base, for local use only)" if store.base_iri == DEFAULT_BASE_IRI else ""
        note(
            f"the store mints IRIs under {store.base_iri}{local}; every IRI is rewritten to {base} in what is published"
            f" (to move the store itself to it: karenina-rdf rebase {base})"
        )
    public = Store.memory(base_iri=base)
    created = not target.exists()
    try:
        bench_iris, run_iris = _copy(
            store, public, chosen, runs, (progress or QUIET).start("copying", len(chosen), "benchmarks")
        )
        target.mkdir(parents=True, exist_ok=True)
        writer = _Writer(public, target, sparql_endpoint, progress or QUIET)
        writer.write_all(bench_iris, run_iris)
    except BaseException:
        # No half-written site: the folder is left as it was found (new: removed; empty: emptied).
        if target.is_dir():
            for child in list(target.iterdir()) if not created else []:
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            if created:
                shutil.rmtree(target)
        raise
    finally:
        public.close()
    files = [p for p in target.rglob("*") if p.is_file()]
    old = store.base_iri
    return PublishReport(
        out=str(target),
        base=base,
        benchmarks=tuple(bench_iris),
        runs=tuple(run_iris),
        resources=writer.resources,
        pages=writer.pages,
        files=len(files),
        bytes=sum(p.stat().st_size for p in files),
        rewritten_from=old if old != base else None,
        default_base=old == DEFAULT_BASE_IRI and old != base,
        moved=tuple(writer.moved),
    )


def _copy(
    source: Store, public: Store, chosen: list[str], runs: bool, copying: Task = QUIET_TASK
) -> tuple[list[str], list[str]]:
    """Each chosen benchmark through its checkpoint, each run on them through its results export,
    into ``public`` (minting under the public base)."""
    from karenina_rdf.checkpoint import read_json

    bench_iris = []
    for bench in chosen:
        buf = io.StringIO()
        source.save(bench, buf)
        doc = read_json(buf.getvalue().encode("utf-8"), bench)
        # Where it came from, as the store recorded it (not its IRI under the old base).
        label = source.catalog.value(bench, SOURCE) or "checkpoint"
        # What was stored once passed the import's checks; they need not run twice.
        bench_iris.append(public.import_checkpoint(doc, name=label, validate=False).iri)
        _copy_versions(source, public, bench, bench_iris[-1])
        copying.advance()
    copying.done()
    run_iris: list[str] = []
    if not runs:
        return bench_iris, run_iris
    wanted = set(chosen)
    with tempfile.TemporaryDirectory(prefix="karenina-rdf-publish-") as tmp:
        for summary in source.runs():
            if not wanted & set(summary.benchmarks):
                continue
            path = Path(tmp) / "results.json"
            source.export_results(summary.iri, path)
            # A question id found in several published benchmarks: the run's own benchmark.
            mine = [b for b in chosen if b in summary.benchmarks]
            its_bench = bench_iris[chosen.index(mine[0])] if len(mine) == 1 else None
            try:
                done = public.import_results(path, run=summary.run_id, benchmark=its_bench)
            except StoreError as exc:
                raise StoreError(f"run {summary.run_id}: {exc}") from None
            # The import records the file it read: the run's own source, not this temporary copy.
            origin = ox.Literal(summary.source or summary.run_id)
            public.oxigraph.update(
                f"DELETE {{ GRAPH ?g {{ ?s ?p ?o }} }} INSERT {{ GRAPH ?g {{ ?s ?p {origin} }} }}"
                f" WHERE {{ GRAPH ?g {{ ?s ?p ?o FILTER(?o = {ox.Literal(str(path))}) }} }}"
            )
            run_iris.append(done.iri)
    return bench_iris, run_iris


def _copy_versions(source: Store, public: Store, bench: str, public_bench: str) -> None:
    """The benchmark's versions, each kept one through its checkpoint (imported into a scratch
    store under the public base, so its triples hold public IRIs only), with their numbers,
    labels, dates and chain as the source store has them."""
    from karenina_rdf.checkpoint import read_json
    from karenina_rdf.store import restore_versions

    listed = source.versions(bench)
    copied: list[tuple[BenchmarkVersion, bytes | None]] = []
    with Store.memory(base_iri=public.base_iri) as scratch:
        for v in listed:
            if v.latest:
                copied.append((v, None))
                continue
            buf = io.StringIO()
            source.save_version(bench, v.number, buf)
            doc = read_json(buf.getvalue().encode("utf-8"), f"{bench} version {v.number}")
            done = scratch.import_checkpoint(doc, validate=False, keep_version=False)
            if done.iri != public_bench:
                raise StoreError(f"version {v.number} of {bench} is stored as another benchmark ({done.iri})")
            graph = scratch.catalog.benchmarks()[done.iri]
            copied.append((v, scratch.oxigraph.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph)))
    restore_versions(public, public_bench, copied)


@dataclass
class _Writer:
    store: Store
    out: Path
    sparql: str | None
    progress: Progress
    resources: int = 0
    pages: int = 0
    moved: list[str] = field(default_factory=list)
    html_rels: set[str] = field(default_factory=set)  # site paths (no leading /) that are pages
    sitemap: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.site = Site(self.store)
        self.base = self.store.base_iri
        self.base_path = self.site.base_path

    # -- paths -----------------------------------------------------------------------------
    def file_for(self, rel: str) -> Path | None:
        """The file a site path (after the base path, as :meth:`served` gives it) is served from,
        as a static server maps it: each segment decoded."""
        decoded = [unquote(p) for p in rel.split("/")]
        if any(p in ("", ".", "..") or "/" in p or "\x00" in p for p in decoded[:-1]):
            return None
        if decoded[-1] in (".", "..") or "/" in decoded[-1] or "\x00" in decoded[-1]:
            return None
        if decoded[-1] == "":
            decoded[-1] = "index.html"
        return self.out.joinpath(*decoded)

    @staticmethod
    def _unservable(segment: str) -> bool:
        """A segment a static server cannot map to a file of its own: it decodes to a ``/`` (an
        id holding a slash, minted ``%2F``), a NUL, or to dots only (``.`` and ``..``, minted
        ``%2E``), a suffix aside."""
        decoded = unquote(segment)
        stem = next((decoded[: -len(x)] for x in SUFFIXES if decoded.endswith(x)), decoded)
        return "/" in decoded or "\x00" in decoded or (stem != "" and set(stem) == {"."})

    def served(self, rel: str) -> str:
        """Where a site path is served from: itself, but a segment no file can be named after
        is kept encoded in the file's name (its ``%`` escaped in the URL), so its resource is
        published under a URL other than its IRI."""
        return "/".join(seg.replace("%", "%25") if self._unservable(seg) else seg for seg in rel.split("/"))

    def rel_of(self, iri: str) -> str:
        return self.served(iri[len(self.base) :])

    def put(self, rel: str, data: bytes) -> None:
        path = self.file_for(rel)
        if path is None:
            raise InvalidValueError(f"{rel}: no file name holds it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    # -- links -----------------------------------------------------------------------------
    def rewrite(self, href: str) -> str:
        """A link of a served page as a link into the site's files."""
        if not href.startswith("/") or href.startswith("//"):
            return href  # in-page, relative or another host's
        parts = urlsplit(href)
        path = parts.path
        if not path.startswith(self.base_path):
            path = self.base_path + path[1:]  # the server's own pages sit at the site's root
        rel = path[len(self.base_path) :]
        query = parse_qs(parts.query)
        if rel == "compare":
            chosen = query.get("run", [])
            rel = "compare/" + quote(chosen[0], safe="") if len(chosen) == 1 else "compare"
        rel = self.served(rel)
        if rel.endswith(".html") and rel[:-5] in self.html_rels:
            rel = rel[:-5]
        if rel in self.html_rels or rel == "":
            page = query.get("page", ["1"])[0]
            rel = (rel + "/" if rel else "") + (f"page-{page}.html" if page.isdigit() and int(page) > 1 else "")
        elif rel == ".well-known/void":
            rel = "void.ttl"
        frag = "#" + parts.fragment if parts.fragment else ""
        return self.base_path + rel + frag

    def fix_links(self, page: str) -> str:
        def one(m: re.Match[str]) -> str:
            new = self.rewrite(html.unescape(m.group(2)))
            return f'{m.group(1)}="{html.escape(new, quote=True)}"'

        return _LINK.sub(one, page)

    # -- the site --------------------------------------------------------------------------
    def write_all(self, bench_iris: list[str], run_iris: list[str]) -> None:
        resources = list(self._resources())
        self.html_rels = {self.rel_of(iri) for iri, _ in resources}
        self.html_rels |= {"runs", "compare"} | {
            self.served("compare/" + quote(self._run_id(r), safe="")) for r in run_iris
        }
        if self.sparql:
            self.html_rels.add("query")
        app = create_app(self.store, EndpointSettings(query_processes=False))
        app.state.pages.publishing(self.sparql)
        try:
            # One event loop for every page: the app is called in process (no server, no socket).
            # On a thread of its own, as the caller may be running a loop (a notebook, Playwright).
            with ThreadPoolExecutor(1) as pool:
                pool.submit(anyio.run, self._render_all, app, resources, run_iris).result()
        finally:
            app.state.endpoint.close()
        exports = {run: self._results_export(run) for run in run_iris}
        for owner in [*bench_iris, *run_iris]:
            self._downloads(owner, exports.get(owner))
        parsed = {run: json.loads(text) for run, text in exports.items()}
        for bench in bench_iris:
            self._croissant(bench, parsed)
        self._static()
        self._void(bench_iris)
        self._catalog(bench_iris, run_iris)
        self._dump()
        self._sitemaps()
        self._server_configs()
        (self.out / ".nojekyll").write_bytes(b"")  # GitHub Pages: serve .well-known and all as they are

    async def _render_all(self, app: Any, resources: list[tuple[str, Located]], run_iris: list[str]) -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://publish.invalid") as client:

            async def render(url: str, rel: str) -> None:
                """A page as served, its links into the site, and the pages of its tables."""
                got = await client.get(url, headers={"accept": "text/html"})
                if got.status_code != 200:
                    raise StoreError(f"publishing {url}: the page answered {got.status_code}: {got.text[:200]}")
                self.put(rel + "/" if rel else "", self.fix_links(got.text).encode("utf-8"))
                self.pages += 1
                self.sitemap.append(self.base + (rel + "/" if rel else ""))
                # A pager links to the first, previous, next and last pages: follow them all.
                path = urlsplit(url).path
                done, todo = {1}, set(self._paged(got.text, path)) - {1}
                while todo:
                    n = min(todo)
                    todo.discard(n)
                    done.add(n)
                    sep = "&" if "?" in url else "?"
                    more = await client.get(f"{url}{sep}page={n}", headers={"accept": "text/html"})
                    if more.status_code != 200:
                        raise StoreError(f"publishing {url} page {n}: the page answered {more.status_code}")
                    self.put(f"{rel}/page-{n}.html", self.fix_links(more.text).encode("utf-8"))
                    self.pages += 1
                    todo |= set(self._paged(more.text, path)) - done

            await render("/", "")
            await render("/runs", "runs")
            for run in run_iris:
                run_id = self._run_id(run)
                await render("/compare?run=" + quote(run_id, safe=""), self._compare_rel(run))
            if run_iris:
                await render("/compare", "compare")
            if self.sparql:
                await render("/query", "query")
            writing = self.progress.start("writing", len(resources), "resources")
            for iri, where in resources:
                rel = self.rel_of(iri)
                await render(self.site.path_for(iri), rel)
                triples = self.site.describe(where)
                for fmt, suffix in RDF_SUFFIXES.items():
                    self.put(rel + suffix, serialize_graph(triples, fmt, prefixes=PREFIXES) or b"")
                self.resources += 1
                writing.advance()
            writing.done()

    def _paged(self, page: str, path: str) -> Iterator[int]:
        """The page numbers a page's pager links to on its own path."""
        for m in _LINK.finditer(page):
            parts = urlsplit(html.unescape(m.group(2)))
            if parts.path == path:
                for n in parse_qs(parts.query).get("page", []):
                    if n.isdigit():
                        yield int(n)

    def _compare_rel(self, run: str) -> str:
        """Where a run's comparison page is published."""
        return self.served("compare/" + quote(self._run_id(run), safe=""))

    def _run_id(self, run: str) -> str:
        return unquote(run.rsplit("/", 1)[-1])

    def _resources(self) -> Iterator[tuple[str, Located]]:
        """Every IRI under the base that the endpoint describes: the subjects of the benchmark,
        run and models graphs, and those graphs themselves."""
        graphs = [*self.store.catalog.benchmarks().values(), *self.store.catalog.runs().values(), MODELS_GRAPH]
        seen: set[str] = set()
        for graph in graphs:
            names = [graph.value] if graph != MODELS_GRAPH else []
            under = ox.Literal(self.base)
            found = self.store.oxigraph.query(
                f"SELECT DISTINCT ?s WHERE {{ ?s ?p ?o FILTER(isIRI(?s) && STRSTARTS(STR(?s), {under})) }} ORDER BY ?s",
                default_graph=graph,
            )
            names += [term_value(row["s"]) for row in found]  # type: ignore[union-attr]
            for iri in names:
                if iri in seen or not iri.startswith(self.base):
                    continue
                seen.add(iri)
                rel = self.rel_of(iri)
                if not rel or self.file_for(rel + "/") is None:
                    continue  # the base itself, or a path with an empty segment: no page of its own
                if rel != iri[len(self.base) :]:
                    self.moved.append(iri)
                where = self.site.locate(iri)
                if where is not None and where.fmt is None and where.download is None:
                    yield iri, where
        # Each version of a benchmark: {B}/v/{n}, described by its node in the catalog.
        for bench in self.store.catalog.benchmarks():
            for v in self.store.versions(bench):
                where = self.site.locate(v.iri)
                if where is not None and v.iri not in seen:
                    seen.add(v.iri)
                    yield v.iri, where

    def _results_export(self, run: str) -> str:
        buf = io.StringIO()
        self.store.export_results(run, buf, format="karenina-json")
        return buf.getvalue()

    def _downloads(self, owner: str, export: str | None) -> None:
        rel = self.rel_of(owner)
        if export is None:
            buf = io.StringIO()
            self.store.save(owner, buf)
            self.put(rel + "/checkpoint.jsonld", buf.getvalue().encode("utf-8"))
            self._version_downloads(owner, rel)
            return
        self.put(f"{rel}/results.json", export.encode("utf-8"))
        buf = io.StringIO()
        self.store.export_results(owner, buf, format="csv")
        self.put(f"{rel}/results.csv", buf.getvalue().encode("utf-8"))

    def _croissant(self, bench: str, exports: dict[str, Any]) -> None:
        """The benchmark as a Croissant dataset (``croissant.json`` and the files its record
        sets read, beside its page), embedded in its page for dataset search engines."""
        rel = self.rel_of(bench)
        handle = Benchmark(self.store, bench)
        info = handle.info()
        questions = handle.question_views()
        ids = {q.id for q in questions if q.id is not None}
        results = [row for export in exports.values() for row in result_rows(export, ids)]
        url = self.base + rel + "/"
        written = croissant(
            url=url,
            info=info,
            questions=question_rows(questions),
            global_rubric=rubric_rows(info.global_rubric),
            results=results,
            checkpoint_url=url + "checkpoint.jsonld",
            run_pages={self._run_id(r): self.base + self.rel_of(r) + "/" for r in exports},
        )
        for name, data in written.files.items():
            self.put(f"{rel}/{name}", data)
        page = self.file_for(rel + "/")
        if page is not None and page.is_file():  # a benchmark's page (_render_all wrote it)
            text = page.read_text(encoding="utf-8")
            page.write_text(text.replace("</head>", script_tag(written.description) + "</head>", 1), encoding="utf-8")

    def _version_downloads(self, owner: str, rel: str) -> None:
        """Each version's checkpoint and its changes since the version before (as ``serve``
        answers ``{B}/v/{n}/checkpoint.jsonld`` and ``…/diff.json``). The latest version's
        checkpoint is the benchmark's own: a hard link where the file system allows it."""
        listed = self.store.versions(owner)
        for i, v in enumerate(listed):
            here = self.rel_of(v.iri)
            if v.latest:
                latest, target = self.file_for(rel + "/checkpoint.jsonld"), self.file_for(here + "/checkpoint.jsonld")
                assert latest is not None and target is not None
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(latest, target)
                except OSError:
                    shutil.copyfile(latest, target)
            else:
                buf = io.StringIO()
                self.store.save_version(owner, v.number, buf)
                self.put(here + "/checkpoint.jsonld", buf.getvalue().encode("utf-8"))
            if i > 0:
                diff = self.store.diff(owner, listed[i - 1].number, v.number)
                self.put(here + "/diff.json", json.dumps(diff.model_dump(mode="json"), indent=2).encode("utf-8"))

    def _static(self) -> None:
        skip = None if self.sparql else shutil.ignore_patterns("yasgui", "query.js", "queries.js")
        shutil.copytree(STATIC, self.out / "static", ignore=skip)

    def _void(self, bench_iris: list[str]) -> None:
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.base))
        void_url = self.base + "void.ttl"
        triples = self.site.void(endpoint=self.sparql, void_url=void_url, server=origin)
        root = ox.NamedNode(void_url + "#dataset")
        triples.append(ox.Triple(root, ox.NamedNode(VOID + "dataDump"), ox.NamedNode(self.base + DUMP)))
        triples.append(ox.Triple(root, ox.NamedNode(FOAF + "homepage"), ox.NamedNode(self.base)))
        data = serialize_graph(triples, "turtle", prefixes=PREFIXES) or b""
        self.put("void.ttl", data)
        if self.base_path == "/":  # /.well-known/ is the host's: only a site at its root has it
            self.put(".well-known/void", data)

    def _catalog(self, bench_iris: list[str], run_iris: list[str]) -> None:
        """A DCAT catalog: each benchmark and run a dataset with its downloads."""
        t: list[ox.Triple] = []

        def add(s: str, p: str, o: ox.NamedNode | ox.Literal) -> None:
            t.append(ox.Triple(ox.NamedNode(s), ox.NamedNode(p), o))

        def dist(dataset: str, url: str, media: str, title: str) -> None:
            add(dataset, DCAT + "distribution", ox.NamedNode(url))
            add(url, RDF_TYPE, ox.NamedNode(DCAT + "Distribution"))
            add(url, DCAT + "downloadURL", ox.NamedNode(url))
            add(url, DCAT + "mediaType", ox.NamedNode("https://www.iana.org/assignments/media-types/" + media))
            add(url, DCT + "title", ox.Literal(title))

        catalog = self.base + "catalog.ttl#catalog"
        add(catalog, RDF_TYPE, ox.NamedNode(DCAT + "Catalog"))
        add(catalog, DCT + "title", ox.Literal("karenina-rdf benchmarks"))
        add(catalog, FOAF + "homepage", ox.NamedNode(self.base))
        whole = self.base + "catalog.ttl#all"
        add(catalog, DCAT + "dataset", ox.NamedNode(whole))
        add(whole, RDF_TYPE, ox.NamedNode(DCAT + "Dataset"))
        add(whole, DCT + "title", ox.Literal("Every published benchmark and run"))
        dist(whole, self.base + DUMP, "application/n-quads", "All graphs (N-Quads, gzip)")
        if self.sparql:
            service = self.base + "catalog.ttl#sparql"
            add(catalog, DCAT + "service", ox.NamedNode(service))
            add(service, RDF_TYPE, ox.NamedNode(DCAT + "DataService"))
            add(service, DCAT + "endpointURL", ox.NamedNode(self.sparql))
            add(service, DCAT + "servesDataset", ox.NamedNode(whole))
        live = {**self.store.catalog.benchmarks(), **self.store.catalog.runs()}
        for owner in [*bench_iris, *run_iris]:
            graph = live[owner]
            add(catalog, DCAT + "dataset", ox.NamedNode(owner))
            add(owner, RDF_TYPE, ox.NamedNode(DCAT + "Dataset"))
            add(owner, DCAT + "landingPage", ox.NamedNode(owner + "/"))
            for p in ("name", "description", "version", "dateCreated", "dateModified"):
                node = ox.NamedNode(owner)
                facts = self.store.oxigraph.quads_for_pattern(node, ox.NamedNode(SCHEMA + p), None, graph)
                for q in facts:
                    key = {"name": "title", "dateCreated": "issued", "dateModified": "modified"}.get(p, p)
                    if isinstance(q.object, ox.Literal):
                        add(owner, (DCAT if key == "version" else DCT) + key, ox.Literal(q.object.value))
            if owner in bench_iris:
                dist(owner, owner + "/checkpoint.jsonld", "application/ld+json", "Karenina checkpoint")
                # Where the page is published (an id holding "/" moves it): the file's real URL.
                described = self.base + self.rel_of(owner) + "/croissant.json"
                dist(owner, described, "application/ld+json", "Croissant (ML dataset description)")
                add(described, DCT + "conformsTo", ox.NamedNode(CROISSANT))
                tasks = self.base + self.rel_of(owner) + "/croissant-tasks.jsonld"
                dist(owner, tasks, "application/ld+json", "Croissant Tasks (the task and the runs' evaluations)")
                # Its versions (DCAT 3 versioning): the benchmark's IRI is always the latest.
                previous = None
                for v in self.store.versions(owner):
                    add(owner, DCAT + "hasVersion", ox.NamedNode(v.iri))
                    add(v.iri, RDF_TYPE, ox.NamedNode(DCAT + "Dataset"))
                    add(v.iri, DCAT + "version", ox.Literal(v.label))
                    add(v.iri, DCAT + "landingPage", ox.NamedNode(v.iri + "/"))
                    if v.date is not None:
                        add(v.iri, DCT + "issued", ox.Literal(v.date))
                    if previous is not None:
                        add(v.iri, DCAT + "previousVersion", ox.NamedNode(previous))
                    dist(
                        v.iri,
                        v.iri + "/checkpoint.jsonld",
                        "application/ld+json",
                        f"Karenina checkpoint, version {v.number}",
                    )
                    previous = v.iri
            else:
                found = self.store.oxigraph.query(
                    "SELECT DISTINCT ?b WHERE { ?r ?p ?q . ?q <https://schema.org/isPartOf> ?b }",
                    default_graph=[graph, *(live[b] for b in bench_iris)],
                )
                for b in solutions(found):
                    b_iri = term_value(b["b"])
                    if b_iri in bench_iris:
                        add(owner, DCT + "references", ox.NamedNode(b_iri))
                dist(owner, owner + "/results.json", "application/json", "Karenina results export")
                dist(owner, owner + "/results.csv", "text/csv", "Karenina results (CSV)")
            graph_url = graph.value
            dist(owner, graph_url + ".ttl", "text/turtle", "Graph (Turtle)")
            dist(owner, graph_url + ".nt", "application/n-triples", "Graph (N-Triples)")
        self.put("catalog.ttl", serialize_graph(t, "turtle", prefixes={**PREFIXES, "dcat": DCAT, "dct": DCT}) or b"")

    def _dump(self) -> None:
        """Every published graph as N-Quads, gzip (the catalog graph says which graph is which)."""
        raw = self.store.oxigraph.dump(format=ox.RdfFormat.N_QUADS)
        with gzip.open(self.out / DUMP, "wb") as fh:
            fh.write(raw or b"")

    def _sitemaps(self) -> None:
        chunks = [self.sitemap[i : i + SITEMAP_URLS] for i in range(0, len(self.sitemap), SITEMAP_URLS)] or [[]]

        def urlset(urls: list[str]) -> bytes:
            body = "".join(f"<url><loc>{html.escape(u)}</loc></url>\n" for u in urls)
            return (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' + body + "</urlset>\n"
            ).encode()

        if len(chunks) == 1:
            self.put("sitemap.xml", urlset(chunks[0]))
            return
        names = []
        for i, chunk in enumerate(chunks, 1):
            self.put(f"sitemap-{i}.xml", urlset(chunk))
            names.append(self.base + f"sitemap-{i}.xml")
        body = "".join(f"<sitemap><loc>{html.escape(u)}</loc></sitemap>\n" for u in names)
        self.put(
            "sitemap.xml",
            (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' + body + "</sitemapindex>\n"
            ).encode(),
        )

    def _server_configs(self) -> None:
        self.put("robots.txt", f"User-agent: *\nAllow: /\nSitemap: {self.base}sitemap.xml\n".encode())
        for name, text in server_configs(self.base).items():
            self.put(name, text.encode())


# The media type of each kind of file a site holds, set by each configuration itself: a host's
# own tables differ (Caddy has no type for ``.nt`` without /etc/mime.types, nginx's mime.types
# none for ``.ttl``, Debian's Apache calls ``.gz`` application/x-gzip).
SITE_TYPES = {
    "html": "text/html",
    "css": "text/css",
    "js": "text/javascript",
    "svg": "image/svg+xml",
    "json": "application/json",
    "csv": "text/csv",
    "xml": "application/xml",
    "txt": "text/plain",
    "gz": "application/gzip",  # the dump: a file to download, not an encoding to undo
    **{s[1:]: MEDIA[f] for f, s in RDF_SUFFIXES.items()},
}


def server_configs(base: str) -> dict[str, str]:
    """Content negotiation for the published site: a request for a resource's IRI whose Accept
    header names an RDF media type gets the file with its suffix; any other (a browser's,
    ``*/*``, none) gets the page. The media types are tried in a fixed order (Turtle, N-Triples,
    JSON-LD, RDF/XML), not by q-value. Each answer says ``Vary: Accept``.

    tests/web/test_publish_servers.py runs all three with Debian's nginx, Apache and Caddy."""
    parts = urlsplit(base)
    path = parts.path or "/"
    host = parts.netloc.split(":")[0]
    types = "\n".join(f"            {m} {e};" for e, m in SITE_TYPES.items())
    maps = "\n".join(f'    "~*{re.escape(MEDIA[f])}" "{s}";' for f, s in RDF_SUFFIXES.items())
    nginx = f"""# nginx: content negotiation for the karenina-rdf site published under {base}
# Put the site's files in /srv/karenina-site{path} (so that {path}index.html is a file there),
# include this file in the http block, and reload nginx.
map $http_accept $karenina_rdf_suffix {{
    default "";
{maps}
}}
server {{
    listen 80;
    server_name {host};
    root /srv/karenina-site;
    location {path} {{
        # The site's media types (in place of the http block's, for this location only).
        types {{
{types}
        }}
        default_type application/octet-stream;
        add_header Vary Accept;
        # An RDF media type first: the resource's file with that suffix; else the file asked
        # for, else the folder's page (at the IRI itself, no redirect).
        try_files $uri$karenina_rdf_suffix $uri $uri/index.html =404;
    }}
}}
"""
    rules = "\n".join(
        f"RewriteCond %{{HTTP_ACCEPT}} {re.escape(MEDIA[f])}\n"
        f"RewriteCond %{{REQUEST_FILENAME}}{s} -f\n"
        f"RewriteRule ^(.+)$ $1{s} [B=%?#,L]"
        for f, s in RDF_SUFFIXES.items()
    )
    addtypes = "\n".join(f"AddType {m} .{e}" for e, m in SITE_TYPES.items())
    apache = f"""# Apache: content negotiation for the karenina-rdf site published under {base}
# This file sits at the site's root ({path}); it needs mod_rewrite, mod_headers, mod_mime,
# mod_dir and AllowOverride All (or FileInfo Indexes) for that folder.
{addtypes}
# The dump is a gzip file to download, not gzip-encoded N-Quads for a client to unpack.
RemoveEncoding .gz
DirectoryIndex index.html
Header merge Vary Accept
# A resource's IRI is a folder (its page) beside its RDF files: mod_dir's redirect to the
# folder ("DirectorySlash") would come before the RDF rules below take effect, so they
# make that redirect themselves, after the RDF rules.
DirectorySlash Off
RewriteEngine On
RewriteOptions AllowNoSlash
RewriteBase {path}
# A request whose Accept header names an RDF media type gets the resource's file with that suffix.
# (B=%?#: the path is decoded once already; a "%" kept in a file's name must not be decoded again.)
{rules}
# Else a folder asked for without its slash: redirected to it, as mod_dir does.
RewriteCond %{{REQUEST_FILENAME}} -d
RewriteCond %{{REQUEST_URI}} !/$
RewriteRule ^ %{{REQUEST_URI}}/ [R=301,L]
"""
    matchers = "\n".join(
        f"        @{f} {{\n            header Accept *{MEDIA[f]}*\n            file {{path}}{s}\n        }}\n"
        f"        rewrite @{f} {{path}}{s}"
        for f, s in RDF_SUFFIXES.items()
    )
    typed = "\n".join(
        f"        @type_{e} path *.{e}\n        header @type_{e} Content-Type {m}"
        for e, m in SITE_TYPES.items()
        if e not in ("html", "css", "js", "svg", "json", "xml")  # Caddy's own (Go's built-in) types
    )
    caddy = f"""# Caddy: content negotiation for the karenina-rdf site published under {base}
# Put the site's files in /srv/karenina-site{path}, then `caddy run --config Caddyfile`.
{parts.scheme}://{parts.netloc} {{
    root * /srv/karenina-site
    header Vary Accept
    # In this order: the RDF file an Accept header names, then its media type, then the file.
    route {{
{matchers}
{typed}
        # A folder's page at the folder's name too, as nginx serves it: Caddy's redirect to the
        # name with a slash loses a "%" kept in a file's name (an id holding "/").
        file_server {{
            disable_canonical_uris
        }}
    }}
}}
"""
    return {"nginx.conf": nginx, ".htaccess": apache, "Caddyfile": caddy}
