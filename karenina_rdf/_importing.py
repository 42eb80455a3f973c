"""The import pipeline: read → map → load → validate → publish, above the store and validation.

A checkpoint is read (``checkpoint``), mapped with Karenina's load rules into N-Triples that
stream into a fresh, unpublished generation graph (``store``: :meth:`GraphStore.generation`),
checked there against the shapes and the Python checks (``validation``), and published by one
catalog update. A results export or database goes the same way through ``results``, which asks
back through a callback for the check of the loaded run. A refused or failed import leaves the
store as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import CheckpointError, InvalidValueError, KareninaRDFError, Problem, StoreError
from karenina_rdf._progress import QUIET, Progress
from karenina_rdf.checkpoint import (
    MappedBenchmark,
    QuestionText,
    entries,
    identity,
    map_checkpoint,
    read_bytes,
    read_json,
    without_lone_surrogates,
)
from karenina_rdf.results import ResultsImport, RunCheck, is_results_store, is_sqlite, looks_like_results
from karenina_rdf.results import import_results as _import_results_file
from karenina_rdf.results import import_results_db as _import_results_db
from karenina_rdf.results import import_results_store as _import_results_store
from karenina_rdf.store import (
    CONTENT_HASH,
    FILE_HASH,
    GRAPH,
    TRIPLE_COUNT,
    BenchmarkVersion,
    Generation,
    GraphStore,
    first_version_facts,
    keep_files,
    live_version,
    store_files,
    version_facts,
)
from karenina_rdf.validation import (
    BenchmarkReport,
    Engine,
    Finding,
    Readiness,
    ValidationResult,
    check_engine,
    findings_in_graph,
    findings_in_run,
    load_finding,
    readiness,
    record_import,
    template_cache,
    template_results,
    validate_run,
)


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


class ImportReport(BaseModel):
    """The outcome of importing several files: what was stored and what was refused."""

    imported: list[ImportResult] = []
    results: list[ResultsImport] = []
    errors: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.errors


def checkpoint_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, and ``*.jsonld``/``*.json`` files found under folders named, in sorted order."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.suffix in (".jsonld", ".json") and f.is_file()))
        else:
            out.append(p)
    return out


# -- checkpoints ---------------------------------------------------------------------------
def import_checkpoint(
    store: GraphStore,
    source: str | Path | dict[str, Any],
    *,
    name: str | None = None,
    validate: bool = True,
    keep_version: bool = True,
    progress: Progress | None = None,
) -> ImportResult:
    """``Store.import_checkpoint``: read, map into a fresh generation graph, validate, publish;
    a replaced generation is kept as a version unless ``keep_version`` is false. ``progress`` is
    told of the phases: questions mapped, triples loaded, validation steps."""
    file_hash = None
    if isinstance(source, dict):
        doc, label = source, name
        doc, replaced = without_lone_surrogates(doc, label)
    else:
        # A file name that is not UTF-8 (surrogate escapes on Linux) is kept readable, not fatal.
        label = (name or str(source)).encode("utf-8", "backslashreplace").decode("utf-8")
        data = read_bytes(source)
        file_hash = hashlib.sha256(data).hexdigest()
        doc, replaced = without_lone_surrogates(read_json(data, label), label, data)
        del data
    _, bench, _ = identity(doc, store.base_iri)
    old_graph = store.catalog.benchmarks().get(bench) if bench else None
    if old_graph is not None and file_hash is not None and store.catalog.value(bench, FILE_HASH) == file_hash:
        return _unchanged(store, bench, old_graph, label)
    old = None
    evicted = False
    if old_graph is not None:
        assert bench is not None
        old = live_version(store, bench, old_graph)  # read while its graph is in the store
        # In a store holding little else, the old generation leaves first (from its files, a
        # rebuild of the little rest) rather than after, when the rebuild would reload the new one.
        evicted = store.evict(old_graph, old.triples)
    try:
        # A fresh generation graph, unreferenced until the catalog points at it: the sink loads
        # on a second thread while the rest is still being mapped.
        with store.generation(bench or "urn:x") as gen:
            return _import_into(
                store, gen, doc, label, old_graph, file_hash, validate, replaced, progress or QUIET, keep_version, old
            )
    finally:
        if evicted:
            store.restore_evicted()  # back from its files unless the new generation was published


def _import_into(
    store: GraphStore,
    gen: Generation,
    doc: Any,
    label: str | None,
    old_graph: ox.NamedNode | None,
    file_hash: str | None,
    validate: bool,
    replaced: list[Problem],
    progress: Progress,
    keep_version: bool = True,
    old: BenchmarkVersion | None = None,
) -> ImportResult:
    pointers: dict[str, str] | None = {} if validate else None
    templates: list[tuple[str, str]] | None = [] if validate else None
    # The questions' texts, for the full-text index once the import is published (_publish);
    # not collected for a store whose index is still to be built by its first search.
    texts: list[QuestionText] | None = [] if store.fulltext.indexes_imports() else None
    mapping = progress.start("mapping", entries(doc), "questions")
    # Chunks are loaded while the rest is mapped: the total is known once mapping ends.
    loading = progress.start("loading", None, "triples")
    gen.sink.on_load = loading.advance
    try:
        mapped = map_checkpoint(
            doc,
            base_iri=store.base_iri,
            source=label,
            stream=gen.sink,
            pointers=pointers,
            templates=templates,
            progress=mapping,
            texts=texts,
        )
    finally:
        del doc  # the parsed JSON is the largest object of a big import
    mapping.done()
    loading.set_total(gen.sink.lines)
    code: list[ValidationResult] = []

    def check_code() -> None:
        # Runs while the loader thread is still loading: parsing templates is the Python half
        # of validation, and the loader's half needs no GIL.
        if templates is not None:
            checking = progress.start("checking", len(templates), "templates")
            cache = template_cache(store)
            for at in range(0, len(templates), _TEMPLATE_BATCH):
                batch = templates[at : at + _TEMPLATE_BATCH]
                code.extend(template_results(batch, cache))
                checking.advance(len(batch))
            checking.done()
            templates.clear()

    try:
        gen.sink.finish(while_loading=check_code)
    except (OSError, SyntaxError, ValueError) as exc:
        raise StoreError(f"loading {mapped.source or mapped.iri} failed, store unchanged: {exc}") from None
    loading.done()
    modes = None
    validated: list[tuple[str, str]] = []
    if pointers is not None:
        # Three steps of unequal length (the shapes and checks take most of the time).
        validating = progress.start("validating", 3, "steps")
        findings = _refuse_violations(store, mapped, gen.graph, pointers, code)
        validating.advance()
        modes = readiness(store.oxigraph, gen.graph, mapped.iri)
        validating.advance()
        # Published with the graph: `validate --stored` reads these instead of validating again.
        validated = record_import(store, gen.graph, findings)
        validating.advance()
        validating.done()
    mapped.warnings = replaced + mapped.warnings
    # The files the sink loaded, kept with the graph if it is published (store._files).
    files: list[Path] = list(getattr(gen.sink, "paths", ()))
    return _publish(store, mapped, gen.graph, old_graph, file_hash, modes, validated, keep_version, files, old, texts)


# Templates checked between two progress reports (checking one takes well under a millisecond
# when the cache has it, a few when it does not).
_TEMPLATE_BATCH = 200


def _refuse_violations(
    store: GraphStore,
    mapped: MappedBenchmark,
    graph: ox.NamedNode,
    pointers: dict[str, str],
    code: list[ValidationResult],
) -> list[Finding]:
    """Raise the violations that refuse the file; turn the rest into the import's warnings.
    Returns the findings as a validation of the stored graph makes them."""
    findings = findings_in_graph(store, graph, mapped.iri, mapped.name, pointers, code)
    found = list(findings)

    def problem(f: Finding) -> Problem:
        return Problem(f.message, mapped.source, f.pointer, f.question_id, trait=f.trait)

    # Karenina builds the global rubric's traits only when the rubric is asked for, never when it
    # loads a file (tests/parity/test_load.py): a broken global trait is reported, not refused.
    global_trait = [f for f in findings if f.severity == "Violation" and f.trait is not None and f.question_id is None]
    violations = [f for f in findings if f.severity == "Violation" and f not in global_trait]
    if violations:
        raise CheckpointError([problem(f) for f in violations])
    for f in global_trait:
        message = f"{f.message}; Karenina loads the file and refuses this global trait when the rubric is built"
        findings.append(f.model_copy(update={"severity": "Warning", "message": message}))
    # The shapes and checks re-find most of what the mapper warned about, and their wording
    # replaces the mapper's; a mapper warning about a place no finding covers is kept.
    warned = [f for f in findings if f.severity == "Warning"]
    covered = {f.pointer for f in warned if f.pointer is not None}
    mapped.warnings = [problem(f) for f in warned] + [
        w
        for w in mapped.warnings
        if w.pointer is None or not any(w.pointer == c or w.pointer.startswith(c + "/") for c in covered)
    ]
    return found


def _publish(
    store: GraphStore,
    mapped: MappedBenchmark,
    graph: ox.NamedNode,
    old_graph: ox.NamedNode | None,
    file_hash: str | None,
    modes: Readiness | None = None,
    validated: list[tuple[str, str]] | None = None,
    keep_version: bool = True,
    files: list[Path] | None = None,
    old: BenchmarkVersion | None = None,
    texts: list[QuestionText] | None = None,
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
    if old_graph is not None and store.catalog.value(bench, CONTENT_HASH) == digest:
        # Same triples from different bytes: keep what is stored.
        store.drop_graph(graph, size=mapped.sink.count)
        return ImportResult(status="unchanged", **result)  # type: ignore[arg-type]
    hashes = [(CONTENT_HASH, json.dumps(digest)), *(validated or [])]
    if file_hash is not None:
        hashes.append((FILE_HASH, json.dumps(file_hash)))
    old_size = store.catalog.value(bench, TRIPLE_COUNT) if old_graph is not None else None
    # The old generation's files, found while the catalog still says they are its content.
    old_parts = store_files(store, old_graph) if old_graph is not None else None
    # Versions (store._versions): the replaced generation is kept as a version unless asked not to.
    if old_graph is None:
        before, facts = first_version_facts(bench, mapped.version, mapped.source)
        retire = False
    else:
        before, facts, retire = version_facts(
            store, bench, old_graph, keep=keep_version, label=mapped.version, source=mapped.source, old=old
        )
    hashes += facts
    if files:
        # Before the commit, fsynced: a crash after it finds them (a crash before leaves files no
        # graph owns, which the next open removes). They spare a later rebuild, drop or version
        # reading this graph back out of RocksDB.
        keep_files(store, graph, files, digest)
    store.catalog.publish(
        bench, GRAPH, graph, source=mapped.source, triples=mapped.sink.count, extra=hashes, before=before
    )
    if texts is not None:
        # After the commit, from the texts mapped: the next search finds the index in step and
        # reads nothing back from the graph (store._text.TextSync.imported).
        store.fulltext.imported(bench, graph, texts)
    if old_graph is not None and retire:
        # Unpublished now; marked until it is gone.
        store.retire(old_graph, size=int(old_size) if old_size is not None else None, parts=old_parts)
    return ImportResult(status="replaced" if old_graph else "imported", **result)  # type: ignore[arg-type]


def _unchanged(store: GraphStore, bench: str, graph: ox.NamedNode, label: str | None) -> ImportResult:
    s = store.summary(bench)
    return ImportResult(
        benchmark_id=s.benchmark_id,
        iri=bench,
        name=s.name,
        version=s.version,
        questions=s.questions,
        triples=int(store.catalog.value(bench, TRIPLE_COUNT) or 0),
        status="unchanged",
        source=label,
    )


# -- results -------------------------------------------------------------------------------
def _check_run(store: GraphStore) -> RunCheck:
    """The check ``results`` runs on a loaded, unpublished run: validation's findings, split
    into the violations that refuse it and the warnings it is imported with."""

    def check(run: str, graph: ox.NamedNode) -> tuple[list[Problem], list[Problem]]:
        findings = findings_in_run(store, run, graph)
        violations = [Problem(f.message, None, f.pointer, f.question_id) for f in findings if f.severity == "Violation"]
        warnings = [Problem(f.message, None, f.pointer, f.question_id) for f in findings if f.severity != "Violation"]
        return violations, warnings

    return check


def import_results(
    store: GraphStore,
    source: str | Path,
    *,
    benchmark: str | None = None,
    run: str | None = None,
    validate: bool = False,
    progress: Progress | None = None,
) -> ResultsImport:
    """``Store.import_results``: a results database goes to ``import_results_db``; with
    ``validate``, validation's check runs on the loaded run before it is published."""
    if is_sqlite(source):
        found = import_results_db(store, source, benchmark=benchmark, run=run, progress=progress)
        if len(found) == 1:
            return found[0]
        raise InvalidValueError(  # the runs are imported; the caller asked for one result
            f"{source} holds {len(found)} runs, all imported; use import_results_db to get each one's report"
        )
    check = _check_run(store) if validate else None
    if is_results_store(source):
        runs = _import_results_store(store, source, benchmark=benchmark, run_name=run, check=check, progress=progress)
        if len(runs) == 1:
            return runs[0]
        raise InvalidValueError(  # the runs are imported; the caller asked for one result
            f"{source} holds {len(runs)} runs, all imported; use import_results_store to get each one's report"
        )
    return _import_results_file(store, source, benchmark=benchmark, run_id=run, check=check, progress=progress)


def import_results_store(
    store: GraphStore,
    source: str | Path,
    *,
    benchmark: str | None = None,
    run: str | None = None,
    validate: bool = False,
    progress: Progress | None = None,
) -> list[ResultsImport]:
    """``Store.import_results_store``: each run of a Karenina ``ResultsStore`` file, as an export."""
    check = _check_run(store) if validate else None
    return _import_results_store(store, source, benchmark=benchmark, run_name=run, check=check, progress=progress)


def import_results_db(
    store: GraphStore,
    source: str | Path,
    *,
    benchmark: str | None = None,
    run: str | None = None,
    progress: Progress | None = None,
) -> list[ResultsImport]:
    """``Store.import_results_db``: each run of the database imported as an export is."""
    return _import_results_db(store, source, benchmark=benchmark, run_id=run, progress=progress)


# -- several files -------------------------------------------------------------------------
def import_paths(
    store: GraphStore,
    paths: Iterable[str | Path],
    *,
    validate: bool = True,
    keep_version: bool = True,
    progress: Progress | None = None,
) -> ImportReport:
    """``Store.import_paths``: benchmarks first (result rows link to their questions); a bad
    file is reported and the others still imported. ``progress`` is told of the files done
    (when there are several) and of each import's phases."""
    report = ImportReport()
    files = checkpoint_files(paths)
    results = [f for f in files if f.exists() and looks_like_results(f)]
    p = progress or QUIET
    done = p.start("files", len(files), "files") if len(files) > 1 else QUIET.start("files")
    # Benchmarks first: result rows link to the questions they name.
    for f in [f for f in files if f not in results] + results:
        if not f.exists():
            report.errors.append(str(Problem("no such file or folder", str(f))))
            done.advance()
            continue
        try:
            if f in results:
                if is_sqlite(f):
                    report.results.extend(import_results_db(store, f, progress=progress))
                elif is_results_store(f):
                    report.results.extend(import_results_store(store, f, progress=progress))
                else:
                    report.results.append(import_results(store, f, progress=progress))
            else:
                report.imported.append(
                    import_checkpoint(store, f, validate=validate, keep_version=keep_version, progress=progress)
                )
        except CheckpointError as exc:
            report.errors.extend(str(problem) for problem in exc.problems)
        except KareninaRDFError as exc:
            report.errors.append(f"{f}: {exc}")
        finally:
            done.advance()
    done.done()
    return report


def validate_results_files(
    paths: Sequence[str | Path],
    checkpoints: Sequence[str | Path] = (),
    *,
    engine: Engine = "auto",
    base_iri: str | None = None,
) -> list[BenchmarkReport]:
    """Validate results exports without storing them: each is imported into an in-memory store
    that also holds ``checkpoints`` (the benchmarks its rows link to, imported unvalidated: they
    have reports of their own), as a run of its own named by the file, and validated as a run."""
    check_engine(engine)
    store = GraphStore.memory(base_iri=base_iri)
    try:
        for c in checkpoints:
            # A checkpoint that does not load is reported by its own validation; the results then
            # link to no question of it.
            with contextlib.suppress(CheckpointError):
                import_checkpoint(store, c, validate=False)
        reports = []
        for path in paths:
            label = str(path)
            with open(path, "rb") as fh:
                database = fh.read(16) == b"SQLite format 3\x00"
            if database:
                problem = Problem("a results database: import it and validate the store (validate --stored)", label)
                reports.append(BenchmarkReport(source=label, benchmark=None, findings=[load_finding(problem)]))
                continue
            try:
                imported = import_results(store, path, run=label)
            except CheckpointError as exc:
                findings = [load_finding(p) for p in exc.problems]
                reports.append(BenchmarkReport(source=label, benchmark=None, findings=findings))
                continue
            report = validate_run(store, imported.iri, engine=engine)
            reports.append(report.model_copy(update={"source": label}))
        return reports
    finally:
        store.close()
