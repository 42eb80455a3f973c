"""The store: benchmarks as named graphs in pyoxigraph, with a catalog graph naming the live ones.

Each import loads a benchmark into a fresh graph ``{benchmark}/graph/{content hash}`` and then
points the catalog at it in one small SPARQL update, so a reader sees the old benchmark or the
new one, never half of either (pyoxigraph's bulk loader is fast but not atomic). Graphs the
catalog does not name are leftovers of an interrupted import or delete, removed on open.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import queue
import re
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, cast

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import (
    AmbiguousBenchmarkError,
    BenchmarkNotFoundError,
    CheckpointError,
    InvalidValueError,
    KareninaRDFError,
    Problem,
    StoreError,
)
from karenina_rdf.checkpoint._export import benchmark_json, item_json, write_json
from karenina_rdf.checkpoint._map import MappedBenchmark, identity, map_checkpoint, read_bytes, read_json
from karenina_rdf.rdf._graph import count_items, named, node_index, ordered_items, solutions, term_value
from karenina_rdf.rdf._ids import graph_iri
from karenina_rdf.rdf._vocab import (
    CATALOG_GRAPH,
    DEFAULT_BASE_IRI,
    KARENINA,
    MODELS_GRAPH,
    PREFIXES,
    SCHEMA,
    VOCABULARY_GRAPH,
)
from karenina_rdf.results._runs import ResultsImport, RunSummary
from karenina_rdf.sparql._named import bind_values, find_query, looks_like_reference, python_term
from karenina_rdf.validation._checks import Readiness, TemplateCache, readiness, template_results
from karenina_rdf.validation._shapes import ValidationResult

from ._remote import DEFAULT_TIMEOUT, RemoteStore, is_url

STORE_ENV = "KARENINA_RDF_STORE"
BASE_IRI_ENV = "KARENINA_RDF_BASE_IRI"
STORE_TOKEN_ENV = "KARENINA_RDF_STORE_TOKEN"  # Bearer token for a store given as a URL
DEFAULT_STORE_PATH = ".karenina-rdf"
# Below this many triples the transactional loader is used: one atomic write, no SST files.
_SMALL = 50_000
_DELETE_BATCH = 20_000
_CHUNK = 250_000
# A generation graph's IRI after '{base}benchmarks/' (docs/data-model.md §2).
_GENERATION = re.compile(r"[^/]+/graph/[0-9a-f]{16}$")
_GRAPH = KARENINA + "graph"
_HASH = KARENINA + "contentHash"
_SOURCE = KARENINA + "importedFrom"
_IMPORTED = KARENINA + "importedAt"
_FILE_HASH = KARENINA + "sourceSha256"
_COUNT = KARENINA + "tripleCount"
_STORE_NODE = "urn:karenina-rdf:store"
_BASE = KARENINA + "baseIri"
_PENDING = KARENINA + "pendingGraph"  # on the store node: a graph being loaded, not yet published
RUN_GRAPH = KARENINA + "runGraph"  # run → its live generation graph (see _results_store)


class ImportResult(BaseModel):
    """What one import did."""

    model_config = ConfigDict(frozen=True)

    benchmark_id: str
    iri: str
    name: str
    version: str | None
    questions: int
    triples: int
    status: str  # "imported", "replaced" or "unchanged"
    source: str | None = None
    warnings: tuple[str, ...] = ()
    # Which evaluation modes the questions are ready for (a validating import says so).
    readiness: Readiness | None = None


class BenchmarkSummary(BaseModel):
    """One line of ``Store.benchmarks()``."""

    model_config = ConfigDict(frozen=True)

    benchmark_id: str
    iri: str
    name: str
    version: str | None
    questions: int
    traits: int
    graph: str
    source: str | None = None
    imported_at: str | None = None


class ImportReport(BaseModel):
    """The outcome of importing several files: what was stored and what was refused."""

    imported: list[ImportResult] = []
    results: list[ResultsImport] = []
    errors: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.errors


def default_store_path() -> Path:
    return Path(os.environ.get(STORE_ENV) or DEFAULT_STORE_PATH)


def default_base_iri() -> str:
    return normalise_base_iri(os.environ.get(BASE_IRI_ENV) or DEFAULT_BASE_IRI)


def normalise_base_iri(base: str) -> str:
    """An absolute IRI ending in ``/`` or ``#``, so minted IRIs append cleanly."""
    base = base if base.endswith(("/", "#")) else base + "/"
    if not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", base):
        raise StoreError(f"base IRI {base!r} is not an absolute IRI (e.g. http://127.0.0.1:8000/)")
    try:
        ox.NamedNode(base + "benchmarks/x")
    except ValueError as exc:
        raise StoreError(f"base IRI {base!r} is not a valid IRI: {exc}") from None
    return base


def checkpoint_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files named, and ``*.jsonld``/``*.json`` files found under folders named, in sorted order."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*") if f.suffix in (".jsonld", ".json") and f.is_file())
        else:
            yield p


class Store:
    """A karenina-rdf store: on disk at ``path`` (created if missing), or in memory when ``path`` is None."""

    def __init__(
        self, path: str | Path | None = None, *, base_iri: str | None = None, remote: RemoteStore | None = None
    ) -> None:
        # A URL (http://host:7878 for an Oxigraph server, …/sparql for Virtuoso) is a SPARQL
        # server (see _remote.py); anything else a folder, or None for memory.
        if remote is None and isinstance(path, str) and is_url(path):
            remote = RemoteStore.from_url(path, token=os.environ.get(STORE_TOKEN_ENV) or None)
        self.remote = remote
        self.path = Path(path) if path is not None and remote is None else None
        self.location = remote.query_url if remote is not None else (str(self.path) if self.path else ":memory:")
        requested = normalise_base_iri(base_iri) if base_iri else None
        try:
            if remote is not None:
                self._ox = cast(ox.Store, remote)  # the same calls, answered over HTTP
            elif self.path is None:
                self._ox = ox.Store()
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                self._ox = ox.Store(str(self.path))
        except OSError as exc:
            hint = ""
            if "LOCK" in str(exc):  # RocksDB lets one process hold the store
                hint = (
                    " (another process, such as `karenina-rdf serve`, has it open: stop it, or put the store"
                    " on a SPARQL server that both can use)"
                )
            raise StoreError(f"cannot open store at {self.path}: {exc}{hint}") from None
        self.base_iri = self._settle_base_iri(requested)
        if remote is None:
            # One process holds an on-disk store: what is marked pending was left by a crash. On a
            # server another client may be importing right now: remove_orphans() is explicit there.
            self.remove_orphans()
        # Template check outcomes by text hash (see TemplateCache), kept beside the store.
        self.template_cache = TemplateCache(self.path / "cache" if self.path is not None else None)

    def _settle_base_iri(self, requested: str | None) -> str:
        # Every stored IRI was minted under one base; a second base would split identities.
        stored = self._catalog_value(_STORE_NODE, _BASE)
        if stored is not None:
            if requested is not None and requested != stored:
                raise StoreError(
                    f"the store at {self.path} mints IRIs under {stored!r}, not {requested!r}; "
                    "export its benchmarks and import them into a new store to change it"
                )
            return stored
        base = requested or default_base_iri()
        self._ox.update(f"INSERT DATA {{ GRAPH {CATALOG_GRAPH} {{ <{_STORE_NODE}> <{_BASE}> {json.dumps(base)} }} }}")
        return base

    @classmethod
    def memory(cls, *, base_iri: str | None = None) -> Store:
        return cls(None, base_iri=base_iri)

    @classmethod
    def connect(
        cls,
        query_url: str,
        update_url: str | None = None,
        gsp_url: str | None = None,
        *,
        base_iri: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        auth: tuple[str, str] | None = None,
        token: str | None = None,
    ) -> Store:
        """A store on a SPARQL 1.1 server, given its query and update endpoints (one URL for
        both if ``update_url`` is None) and its Graph Store Protocol endpoint, if it has one.
        ``auth`` is HTTP basic authentication; ``token`` is sent as ``Authorization: Bearer``
        (the write token of a ``karenina-rdf serve`` endpoint)."""
        remote = RemoteStore(query_url, update_url, gsp_url, timeout=timeout, auth=auth, token=token)
        return cls(base_iri=base_iri, remote=remote)

    @property
    def oxigraph(self) -> ox.Store:
        """The underlying pyoxigraph store (for tools that need it directly)."""
        return self._ox

    def close(self) -> None:
        if not hasattr(self, "_ox"):
            return  # closed already
        if self.path is not None:
            self._ox.flush()
        if self.remote is not None:
            self.remote.close()
        del self._ox

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- catalog ---------------------------------------------------------------------------
    def _live(self) -> dict[str, ox.NamedNode]:
        return {
            term_value(q.subject): named(q.object)
            for q in self._ox.quads_for_pattern(None, ox.NamedNode(_GRAPH), None, CATALOG_GRAPH)
        }

    def graphs(self) -> list[ox.NamedNode]:
        """The named graphs holding live benchmarks."""
        return list(self._live().values())

    def _runs(self) -> dict[str, ox.NamedNode]:
        return {
            term_value(q.subject): named(q.object)
            for q in self._ox.quads_for_pattern(None, ox.NamedNode(RUN_GRAPH), None, CATALOG_GRAPH)
        }

    def run_graphs(self) -> list[ox.NamedNode]:
        """The named graphs holding live verification runs."""
        return list(self._runs().values())

    def visible_graphs(self) -> list[ox.NamedNode]:
        """Every graph this store publishes: live benchmarks and runs, the catalog, the vocabulary."""
        return [*self._live().values(), *self._runs().values(), CATALOG_GRAPH, VOCABULARY_GRAPH, MODELS_GRAPH]

    def graph_of(self, ref: str) -> tuple[str, ox.NamedNode]:
        iri = self.resolve(ref)
        return iri, self._live()[iri]

    def _catalog_value(self, bench: str, pred: str) -> str | None:
        for q in self._ox.quads_for_pattern(ox.NamedNode(bench), ox.NamedNode(pred), None, CATALOG_GRAPH):
            return term_value(q.object)
        return None

    def remove_orphans(self) -> None:
        """Drop generation graphs an interrupted import or delete left behind: those marked as
        being loaded, and (embedded, where listing graphs is cheap) any unpublished generation
        graph. Never another graph: a server may hold other people's data. On a server, run it
        when no other client is importing."""
        marker = (ox.NamedNode(_STORE_NODE), ox.NamedNode(_PENDING))
        pending = [q.object for q in self._ox.quads_for_pattern(*marker, None, CATALOG_GRAPH)]
        for hidden in self.hidden_graphs():
            if self._is_generation(hidden):
                self._drop_graph(cast(ox.NamedNode, hidden))
        for g in pending:
            self._pending(cast(ox.NamedNode, g), False)

    def _is_generation(self, graph: ox.NamedNode | ox.BlankNode) -> bool:
        name = graph.value if isinstance(graph, ox.NamedNode) else ""
        for collection in ("benchmarks/", "runs/"):
            prefix = self.base_iri + collection
            if name.startswith(prefix) and _GENERATION.match(name, len(prefix)) is not None:
                return True
        return False

    def _drop_graph(self, graph: ox.NamedNode) -> None:
        if self.remote is not None:
            self.remote.drop_graph(graph)  # one DROP on a server; pyoxigraph's removal is slow
            return
        # Removing quads is slow in pyoxigraph; batches keep each transaction small
        # (docs/performance.md). Callers unlink the graph from the catalog first.
        quads = self._ox.quads_for_pattern(None, None, None, graph)
        while True:
            batch = [q for _, q in zip(range(_DELETE_BATCH), quads, strict=False)]
            if not batch:
                break
            body = "\n".join(f"{q.subject} {q.predicate} {q.object} ." for q in batch)
            self._ox.update(f"DELETE DATA {{ GRAPH {graph} {{\n{body}\n}} }}")
        self._ox.remove_graph(graph)

    def mark_edited(self, bench: str) -> None:
        """Forget the content hash of a benchmark changed in place (re-import then replaces it)."""
        self._ox.update(
            " ;\n".join(
                f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{bench}> <{p}> ?h }} }}" for p in (_HASH, _FILE_HASH)
            )
        )

    # -- lookups ---------------------------------------------------------------------------
    def benchmarks(self) -> list[BenchmarkSummary]:
        out = []
        for bench, graph in self._live().items():
            out.append(self._summary(bench, graph))
        return sorted(out, key=lambda s: (s.name.lower(), s.version or "", s.benchmark_id))

    def _summary(self, bench: str, graph: ox.NamedNode) -> BenchmarkSummary:
        b = ox.NamedNode(bench)

        def one(pred: str) -> str | None:
            for q in self._ox.quads_for_pattern(b, ox.NamedNode(pred), None, graph):
                return term_value(q.object)
            return None

        traits = self._ox.query(
            f"SELECT (COUNT(*) AS ?n) WHERE {{ ?o <{SCHEMA}contentRating> ?r }}", default_graph=graph
        )
        n_traits = int(term_value(next(solutions(traits))["n"]))
        n_questions = count_items(self._ox, graph, bench)
        return BenchmarkSummary(
            benchmark_id=one(SCHEMA + "identifier") or bench,
            iri=bench,
            name=one(SCHEMA + "name") or "",
            version=one(SCHEMA + "version"),
            questions=n_questions,
            traits=n_traits,
            graph=graph.value,
            source=self._catalog_value(bench, _SOURCE),
            imported_at=self._catalog_value(bench, _IMPORTED),
        )

    def summary(self, ref: str) -> BenchmarkSummary:
        bench, graph = self.graph_of(ref)
        return self._summary(bench, graph)

    def resolve(self, ref: str) -> str:
        """The stored IRI of the benchmark that ``ref`` names: its id, its IRI or its name."""
        live = self._live()
        if ref in live:
            return ref
        by_id, by_name = [], []
        for bench, graph in live.items():
            b = ox.NamedNode(bench)
            for q in self._ox.quads_for_pattern(b, None, None, graph):
                p = q.predicate.value
                if p == SCHEMA + "identifier" and term_value(q.object) == ref:
                    by_id.append(bench)
                elif p == SCHEMA + "name" and term_value(q.object) == ref:
                    by_name.append(bench)
        if by_id:
            return by_id[0]
        if len(by_name) == 1:
            return by_name[0]
        if by_name:
            ids = ", ".join(sorted(self._summary(b, live[b]).benchmark_id for b in by_name))
            raise AmbiguousBenchmarkError(f"{len(by_name)} benchmarks are named {ref!r}; name one by id: {ids}")
        known = ", ".join(sorted(repr(s.name) for s in self.benchmarks())) or "none"
        raise BenchmarkNotFoundError(f"no benchmark with id, IRI or name {ref!r} (stored: {known})")

    def __contains__(self, ref: object) -> bool:
        if not isinstance(ref, str):
            return False
        try:
            self.resolve(ref)
        except (BenchmarkNotFoundError, AmbiguousBenchmarkError):
            return False
        return True

    # -- import ----------------------------------------------------------------------------
    def import_checkpoint(
        self, source: str | Path | dict[str, Any], *, name: str | None = None, validate: bool = True
    ) -> ImportResult:
        """Import one checkpoint (a file or a parsed document); atomic: on error nothing changes.

        Importing a benchmark already stored (same id) replaces it; the same content is a no-op.
        With ``validate`` (the default) the loaded graph is checked against the shapes and checks
        before it is published: a Violation refuses the benchmark (``CheckpointError``), Warnings
        are returned, and so is which evaluation modes the questions are ready for.
        """
        file_hash = None
        if isinstance(source, dict):
            doc, label = source, name
        else:
            # A file name that is not UTF-8 (surrogate escapes on Linux) is kept readable, not fatal.
            label = (name or str(source)).encode("utf-8", "backslashreplace").decode("utf-8")
            data = read_bytes(source)
            file_hash = hashlib.sha256(data).hexdigest()
            doc = read_json(data, label)
            del data
        _, bench, _ = identity(doc, self.base_iri)
        old_graph = self._live().get(bench) if bench else None
        if old_graph is not None and file_hash is not None and self._catalog_value(bench, _FILE_HASH) == file_hash:
            return self._unchanged(bench, old_graph, label)
        # A fresh generation graph, unreferenced until the catalog points at it: chunks can be
        # bulk-loaded by a second thread while the rest is still being mapped.
        graph = ox.NamedNode(graph_iri(bench or "urn:x", uuid.uuid4().hex[:16]))
        self._pending(graph, True)  # a crash from here on leaves a marker for the next open
        result = self._import_into(graph, doc, label, old_graph, file_hash, validate)
        self._pending(graph, False)
        return result

    def _pending(self, graph: ox.NamedNode, on: bool) -> None:
        fact = f"GRAPH {CATALOG_GRAPH} {{ <{_STORE_NODE}> <{_PENDING}> {graph} }}"
        self._ox.update(f"INSERT DATA {{ {fact} }}" if on else f"DELETE DATA {{ {fact} }}")

    def _import_into(
        self,
        graph: ox.NamedNode,
        doc: Any,
        label: str | None,
        old_graph: ox.NamedNode | None,
        file_hash: str | None,
        validate: bool,
    ) -> ImportResult:
        loader = _Loader(self._ox, graph)
        with tempfile.TemporaryDirectory(prefix=".import-", dir=self.path) as tmpdir:
            chunks = _Chunks(Path(tmpdir), _CHUNK, loader.submit)
            try:
                pointers: dict[str, str] | None = {} if validate else None
                templates: list[tuple[str, str]] | None = [] if validate else None
                try:
                    mapped = map_checkpoint(
                        doc,
                        base_iri=self.base_iri,
                        source=label,
                        stream=chunks,
                        pointers=pointers,
                        templates=templates,
                    )
                finally:
                    chunks.close()
                    del doc  # the parsed JSON is the largest object of a big import
                code: list[ValidationResult] = []

                def check_code() -> None:
                    # Runs while the loader thread is still loading: parsing templates is the
                    # Python half of validation, and the loader's half needs no GIL.
                    if templates is not None:
                        code.extend(template_results(templates, self.template_cache))
                        templates.clear()

                self._load(mapped, chunks, loader, graph, while_loading=check_code)
                modes = None
                if pointers is not None:
                    self._validate_loaded(mapped, graph, pointers, code)
                    modes = readiness(self._ox, graph, mapped.iri)
                return self._publish(mapped, graph, old_graph, file_hash, modes)
            except BaseException:
                loader.finish(raise_errors=False)
                if graph not in self._live().values():
                    if self._ox.contains_named_graph(graph):
                        self._drop_graph(graph)
                    self._pending(graph, False)  # kept if the drop failed: the next cleanup retries
                raise

    def _load(
        self,
        mapped: MappedBenchmark,
        chunks: _Chunks,
        loader: _Loader,
        graph: ox.NamedNode,
        while_loading: Callable[[], None],
    ) -> None:
        last = chunks.paths[-1:] if chunks.paths and chunks.paths[-1] not in loader.submitted else []
        try:
            if not loader.submitted and mapped.sink.count < _SMALL:
                while_loading()
                for path in last:  # small: one transactional write
                    self._ox.load(path=str(path), format=ox.RdfFormat.N_TRIPLES, to_graph=graph)
            else:
                for path in last:
                    loader.submit(path)
                while_loading()
                loader.finish()
        except (OSError, SyntaxError, ValueError) as exc:
            raise StoreError(f"loading {mapped.source or mapped.iri} failed, store unchanged: {exc}") from None

    def _validate_loaded(
        self, mapped: MappedBenchmark, graph: ox.NamedNode, pointers: dict[str, str], code: list[ValidationResult]
    ) -> None:
        from karenina_rdf.validation._validate import findings_in_graph  # the validator builds on the store

        findings = findings_in_graph(self, graph, mapped.iri, mapped.name, pointers, code)
        violations = [f for f in findings if f.severity == "Violation"]
        if violations:
            raise CheckpointError([Problem(f.message, mapped.source, f.pointer, f.question_id) for f in violations])
        # The shapes re-find what the mapper warned about, so their wording replaces the mapper's.
        mapped.warnings = [
            Problem(f.message, mapped.source, f.pointer, f.question_id) for f in findings if f.severity == "Warning"
        ]

    def _publish(
        self,
        mapped: MappedBenchmark,
        graph: ox.NamedNode,
        old_graph: ox.NamedNode | None,
        file_hash: str | None,
        modes: Readiness | None = None,
    ) -> ImportResult:
        bench = mapped.iri
        digest = mapped.content_hash()
        result = dict(
            benchmark_id=mapped.benchmark_id,
            iri=bench,
            name=mapped.name,
            version=mapped.version,
            questions=len(mapped.question_ids),
            triples=mapped.sink.count,
            source=mapped.source,
            warnings=tuple(str(w) for w in mapped.warnings),
            readiness=modes,
        )
        if old_graph is not None and self._catalog_value(bench, _HASH) == digest:
            self._drop_graph(graph)  # same triples from different bytes: keep what is stored
            return ImportResult(status="unchanged", **result)  # type: ignore[arg-type]
        self._point_catalog(bench, graph, digest, mapped.source, file_hash, mapped.sink.count)
        if old_graph is not None:
            self._pending(old_graph, True)  # unpublished now; marked until it is gone
            self._drop_graph(old_graph)
            self._pending(old_graph, False)
        return ImportResult(status="replaced" if old_graph else "imported", **result)  # type: ignore[arg-type]

    def _unchanged(self, bench: str, graph: ox.NamedNode, label: str | None) -> ImportResult:
        s = self._summary(bench, graph)
        return ImportResult(
            benchmark_id=s.benchmark_id,
            iri=bench,
            name=s.name,
            version=s.version,
            questions=s.questions,
            triples=int(self._catalog_value(bench, _COUNT) or 0),
            status="unchanged",
            source=label,
        )

    def _point_catalog(
        self,
        bench: str,
        graph: ox.NamedNode,
        digest: str | None,
        source: str | None,
        file_hash: str | None = None,
        count: int | None = None,
    ) -> None:
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        facts = [f"<{bench}> <{_GRAPH}> {graph}", f"<{bench}> <{_IMPORTED}> {json.dumps(now)}"]
        if digest is not None:
            facts.append(f"<{bench}> <{_HASH}> {json.dumps(digest)}")
        if file_hash is not None:
            facts.append(f"<{bench}> <{_FILE_HASH}> {json.dumps(file_hash)}")
        if count is not None:
            facts.append(f"<{bench}> <{_COUNT}> {count}")
        if source is not None:
            facts.append(f"<{bench}> <{_SOURCE}> {json.dumps(source, ensure_ascii=False)}")
        self._ox.update(
            f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{bench}> ?p ?o }} }} ;\n"
            f"INSERT DATA {{ GRAPH {CATALOG_GRAPH} {{ {' . '.join(facts)} }} }}"
        )

    def import_paths(self, paths: Iterable[str | Path], *, validate: bool = True) -> ImportReport:
        """Import every checkpoint and results export found (benchmarks first); a bad file is
        reported and the others still imported."""
        from karenina_rdf.results._read import is_sqlite, looks_like_results

        report = ImportReport()
        files = list(checkpoint_files(paths))
        results = [f for f in files if f.exists() and looks_like_results(f)]
        # Benchmarks first: result rows link to the questions they name.
        for f in [f for f in files if f not in results] + results:
            if not f.exists():
                report.errors.append(str(Problem("no such file or folder", str(f))))
                continue
            try:
                if f in results:
                    report.results.extend(self.import_results_db(f) if is_sqlite(f) else [self.import_results(f)])
                else:
                    report.imported.append(self.import_checkpoint(f, validate=validate))
            except CheckpointError as exc:
                report.errors.extend(str(p) for p in exc.problems)
            except KareninaRDFError as exc:
                report.errors.append(f"{f}: {exc}")
        return report

    # -- verification results (see _results_store) ----------------------------------------
    def import_results(
        self, source: str | Path, *, benchmark: str | None = None, run: str | None = None, validate: bool = False
    ) -> ResultsImport:
        """Import a Karenina results export (2.0-2.2) or results database (SQLite) into a run.

        Atomic per run; re-importing rows of a run replaces those with the same identity (run
        name, question, template, answering model, judge, replicate) and keeps the others.
        ``benchmark`` says which stored benchmark a question id means when several have it.
        ``validate`` checks the loaded run against the shapes before publishing it (a Violation
        refuses it, warnings are returned); off by default, as it costs about one more import
        (docs/performance.md § Results); ``validate_store`` checks stored runs any time.
        """
        from karenina_rdf.results._read import is_sqlite
        from karenina_rdf.results._runs import import_results

        if is_sqlite(source):
            found = self.import_results_db(source, benchmark=benchmark, run=run)
            if len(found) == 1:
                return found[0]
            raise InvalidValueError(  # the runs are imported; the caller asked for one result
                f"{source} holds {len(found)} runs, all imported; use import_results_db to get each one's report"
            )
        return import_results(self, source, benchmark=benchmark, run_id=run, validate=validate)

    def import_results_db(
        self, source: str | Path, *, benchmark: str | None = None, run: str | None = None
    ) -> list[ResultsImport]:
        """Import the runs of a Karenina results database (SQLite; ``run`` picks one by id or
        name), each atomic, as ``import_results`` imports an export."""
        from karenina_rdf.results._sqlite import import_results_db

        return import_results_db(self, source, benchmark=benchmark, run_id=run)

    def runs(self) -> list[RunSummary]:
        """The stored verification runs, oldest first."""
        from karenina_rdf.results._runs import list_runs

        return list_runs(self)

    def export_results(self, run: str, target: str | Path | IO[str], *, format: str = "karenina-json") -> int:
        """Write a run as a Karenina results export (format 2.2) or CSV; returns the row count."""
        from karenina_rdf.results._runs import export_run

        return export_run(self, run, target, format)

    def resolve_run(self, run: str) -> str:
        """The IRI of the stored run with this id or IRI (``NotFoundError`` lists the runs)."""
        from karenina_rdf.results._runs import resolve_run

        return resolve_run(self, run)[0]

    def delete_run(self, run: str) -> str:
        """Remove a stored run; returns its IRI."""
        from karenina_rdf.results._runs import delete_run

        return delete_run(self, run)

    # -- export / delete -------------------------------------------------------------------
    def export_checkpoint(self, ref: str) -> dict[str, Any]:
        """The benchmark as a Karenina checkpoint document (canonical form)."""
        bench, graph = self.graph_of(ref)
        source = self._reader(graph)
        header = self._header_index(source, bench, graph)
        return benchmark_json(header, bench, list(self._items_json(source, bench, graph)))

    def save(self, ref: str, path: str | Path | IO[str]) -> None:
        """Write the benchmark as a checkpoint file, streaming item by item."""
        bench, graph = self.graph_of(ref)
        source = self._reader(graph)
        header = benchmark_json(self._header_index(source, bench, graph), bench, [])
        if not isinstance(path, (str, Path)):
            write_json(path, header, self._items_json(source, bench, graph))
            return
        target = Path(path)
        tmp = target.with_name(f".{target.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            write_json(fh, header, self._items_json(source, bench, graph))
        os.replace(tmp, target)  # never leave a half-written checkpoint behind

    def _reader(self, graph: ox.NamedNode) -> ox.Store:
        """Where to read one benchmark from: the store itself, or for a server an in-memory copy
        of the generation graph fetched in one request (the export walks the graph with one
        pattern lookup per node, which over HTTP would be one round trip each)."""
        if self.remote is None:
            return self._ox
        local = ox.Store()
        local.load(
            self.remote.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph),
            format=ox.RdfFormat.N_TRIPLES,
            to_graph=graph,
        )
        return local

    @staticmethod
    def _header_index(source: ox.Store, bench: str, graph: ox.NamedNode) -> dict[str, dict[str, list[Any]]]:
        return node_index(source, graph, [bench], skip=(f"{bench}/items/", f"{bench}/questions/"))

    @staticmethod
    def _items_json(source: ox.Store, bench: str, graph: ox.NamedNode) -> Iterator[dict[str, Any]]:
        for item in ordered_items(source, graph, bench):
            # Item and question share their id segment by construction (_ids.item_iri/question_iri).
            question = bench + "/questions/" + item[len(bench) + len("/items/") :]
            index = node_index(source, graph, [item, question])
            yield item_json(index, item)

    def delete(self, ref: str) -> BenchmarkSummary:
        bench, graph = self.graph_of(ref)
        summary = self._summary(bench, graph)
        # Marked while it is being dropped (slowly, in batches): queries must not see it.
        self._pending(graph, True)
        self._ox.update(f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{bench}> ?p ?o }} }}")
        self._drop_graph(graph)
        self._pending(graph, False)
        return summary

    # -- SPARQL ----------------------------------------------------------------------------
    def query(
        self,
        query: str,
        /,
        params: Mapping[str, Any] | None = None,
        *,
        benchmarks: Iterable[str] | None = None,
        **values: Any,
    ) -> Any:
        """Run a SPARQL query, a named query (``queries/*.rq``) or a ``.rq`` file over the live
        benchmarks (their union plus the catalog is the default graph).

        Parameters come as keyword arguments or as the ``params`` mapping:
        ``store.query("questions-by-keyword", keyword="genomics")``. They are bound as RDF
        terms (see :mod:`karenina_rdf.sparql._named`), typed by the query's ``# param:`` lines, or
        by their Python type for plain SPARQL. The ``schema:``, ``karenina:``, ``rdf:`` and
        ``xsd:`` prefixes are predeclared. Returns pyoxigraph's ``QuerySolutions``,
        ``QueryBoolean`` or ``QueryTriples``.
        """
        bindings = {**(params or {}), **values}
        if looks_like_reference(query):
            sparql = find_query(query).bind(bindings)
        else:
            sparql = bind_values(query, {k: python_term(v) for k, v in bindings.items()})
        return self._ox.query(sparql, prefixes=dict(PREFIXES), **self.dataset(benchmarks))

    def dataset(self, benchmarks: Iterable[str] | None = None) -> dict[str, Any]:
        """The dataset a query sees, as keyword arguments of ``pyoxigraph.Store.query``.

        Embedded, the default graph is the union of every graph but the hidden ones (old
        generations of a benchmark, graphs being loaded or dropped): the live benchmarks, the
        catalog, and whatever a SPARQL update wrote into other graphs or the default graph. On a
        server it is the live benchmarks plus the catalog (listing a server's graphs would show
        its own system graphs). ``benchmarks`` limits it to those benchmarks plus the catalog.
        Each graph of the default graph is also a named graph for ``GRAPH ?g``.
        """
        if benchmarks is None and self.remote is None:
            hidden = self.hidden_graphs()
            if not hidden:
                # pyoxigraph joins over its union default graph 3-4x faster than over a list of
                # graphs (measured), and with nothing hidden the union is exactly the dataset.
                return {"use_default_graph_as_union": True}
            shown: list[ox.NamedNode | ox.BlankNode] = [g for g in self._ox.named_graphs() if g not in hidden]
            default: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph] = [*shown, ox.DefaultGraph()]
            return {"default_graph": default, "named_graphs": shown}
        live = self._live()
        if benchmarks is not None:
            graphs = [live[self.resolve(b)] for b in benchmarks]
            graphs.append(CATALOG_GRAPH)
        else:
            graphs = self.visible_graphs()
        return {"default_graph": list(graphs), "named_graphs": list(graphs)}

    def hidden_graphs(self) -> set[ox.NamedNode | ox.BlankNode]:
        """Graphs no query sees: generations of a benchmark that the catalog does not point at
        (being loaded, replaced or dropped) and graphs marked pending. On a server only the
        marked ones: listing its graphs is not cheap, and a server holds other people's data."""
        marker = (ox.NamedNode(_STORE_NODE), ox.NamedNode(_PENDING))
        hidden: set[ox.NamedNode | ox.BlankNode] = {
            cast(ox.NamedNode, q.object) for q in self._ox.quads_for_pattern(*marker, None, CATALOG_GRAPH)
        }
        live = set(self._live().values()) | set(self._runs().values())
        listed = self._ox.named_graphs() if self.remote is None else ()  # cheap embedded only
        hidden.update(g for g in listed if g not in live and self._is_generation(g))
        return hidden - live

    def update_graph(self, sparql_update: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update on the store (relative IRIs resolved against ``base_iri``). The
        stored benchmarks may no longer match the files they came from, so every content hash is
        forgotten: the next import of a file replaces."""
        self._ox.update(sparql_update, base_iri=base_iri)
        for bench in self._live():
            self.mark_edited(bench)


class _Chunks:
    """A text sink that rotates to a new N-Triples file about every ``size`` lines and hands
    each finished file to ``done``."""

    def __init__(self, folder: Path, size: int, done: Callable[[Path], None]) -> None:
        self.folder, self.size, self.done = folder, size, done
        self.paths: list[Path] = []
        self._fh: IO[str] | None = None
        self._lines = 0

    def write(self, text: str) -> int:
        if self._fh is not None and self._lines >= self.size:
            self.close()
            self.done(self.paths[-1])
        if self._fh is None:
            path = self.folder / f"chunk-{len(self.paths):05d}.nt"
            self.paths.append(path)
            self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
            self._lines = 0
        self._lines += text.count("\n")  # one line per triple: literals escape their newlines
        return self._fh.write(text)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class _Loader:
    """Bulk-loads finished chunk files in a background thread (pyoxigraph releases the GIL),
    so loading overlaps with mapping on a second core."""

    def __init__(self, store: ox.Store, graph: ox.NamedNode) -> None:
        self.store, self.graph = store, graph
        self.submitted: list[Path] = []
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def submit(self, path: Path) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="karenina-rdf-loader", daemon=True)
            self._thread.start()
        self.submitted.append(path)
        self._queue.put(path)

    def _run(self) -> None:
        while (path := self._queue.get()) is not None:
            if self._error is not None:
                continue
            try:
                # Our own N-Triples (escaped literals, minted IRIs): lenient skips re-validation.
                self.store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph, lenient=True)
            except BaseException as exc:  # handed to the importing thread by finish()
                self._error = exc

    def finish(self, raise_errors: bool = True) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if raise_errors and self._error is not None:
            raise self._error
