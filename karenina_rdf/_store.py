"""``Store``: the public store, storage (``store.GraphStore``) with the import pipeline and the
verification runs on top, so one object does what a user asks of a store."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from karenina_rdf import _importing
from karenina_rdf._errors import InvalidValueError
from karenina_rdf._importing import ImportReport, ImportResult
from karenina_rdf._progress import Progress
from karenina_rdf.results import (
    ResultsImport,
    RunSummary,
    delete_run,
    export_run,
    export_run_db,
    list_runs,
    recount_runs,
    resolve_run,
)
from karenina_rdf.store import (
    BenchmarkDiff,
    BenchmarkVersion,
    GraphStore,
    diff_versions,
    drop_version,
    export_version,
    save_version,
    versions,
)

if TYPE_CHECKING:
    from karenina_rdf.store._remote import RemoteStore


class Store(GraphStore):
    """A karenina-rdf store: on disk at ``path`` (created if missing), in memory when ``path``
    is None (``Store.memory()``), or on a SPARQL server (a URL, or ``Store.connect``)."""

    def __init__(
        self, path: str | Path | None = None, *, base_iri: str | None = None, remote: RemoteStore | None = None
    ) -> None:
        super().__init__(path, base_iri=base_iri, remote=remote)
        if self.remote is None and self.path is not None:
            # One process holds an on-disk store: a run without the marker of its summaries is
            # not being verified now. Its tallies may lag behind its results (a raw update or a
            # live run that died before its recount): recounted before anything reads them.
            # On a server another client may be verifying: summarise_runs() is explicit there.
            recount_runs(self, only_unmarked=True)

    # -- raw updates -------------------------------------------------------------------------
    def update_graph(self, sparql_update: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update on the store (see ``GraphStore.update_graph``), then recount every
        run's tallies and summaries from its results (results._recount): the update may have
        changed any result, and the pass rates read the tallies. The recount takes about 5 s for
        a run of 10,000 results on two loaded cores (docs/performance.md § Raw updates); a crash
        before it ends leaves runs without their marker, recounted when the store is next opened."""
        try:
            super().update_graph(sparql_update, base_iri=base_iri)
        except InvalidValueError:
            # Refused unparsed: nothing changed but the summaries dropped before it was tried.
            recount_runs(self, only_unmarked=True)
            raise
        recount_runs(self)

    # -- import ----------------------------------------------------------------------------
    def import_checkpoint(
        self,
        source: str | Path | dict[str, Any],
        *,
        name: str | None = None,
        validate: bool = True,
        keep_version: bool = True,
        progress: Progress | None = None,
    ) -> ImportResult:
        """Import one checkpoint (a file or a parsed document); atomic: on error nothing changes.

        Importing a benchmark already stored (same id) replaces it; the same content is a no-op.
        With ``validate`` (the default) the loaded graph is checked against the shapes and checks
        before it is published: a Violation refuses the benchmark (``CheckpointError``), Warnings
        are returned, and so is which evaluation modes the questions are ready for. What Karenina
        loads is never refused (tests/parity asks Karenina): its templates are only read, and
        a global rubric trait Karenina would refuse when the rubric is built is a warning.
        The generation a re-import replaces is kept as a version (:meth:`versions`) unless
        ``keep_version`` is false. ``progress`` (``karenina_rdf._progress.Progress``) is told of
        the phases and their counts.
        """
        return _importing.import_checkpoint(
            self, source, name=name, validate=validate, keep_version=keep_version, progress=progress
        )

    def import_paths(
        self,
        paths: Iterable[str | Path],
        *,
        validate: bool = True,
        keep_version: bool = True,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Import every checkpoint and results export found (benchmarks first); a bad file is
        reported and the others still imported."""
        return _importing.import_paths(self, paths, validate=validate, keep_version=keep_version, progress=progress)

    # -- verification results ------------------------------------------------------------
    def import_results(
        self,
        source: str | Path,
        *,
        benchmark: str | None = None,
        run: str | None = None,
        validate: bool = False,
        progress: Progress | None = None,
    ) -> ResultsImport:
        """Import a Karenina results export (2.0-2.2) or results database (SQLite) into a run.

        Atomic per run; re-importing rows of a run replaces those with the same identity (run
        name, question, template, answering model, judge, replicate) and keeps the others.
        ``benchmark`` says which stored benchmark a question id means when several have it.
        ``validate`` checks the loaded run against the shapes before publishing it (a Violation
        refuses it, warnings are returned); off by default, as it costs about one more import
        (docs/performance.md § Results); ``validate_store`` checks stored runs any time.
        """
        return _importing.import_results(
            self, source, benchmark=benchmark, run=run, validate=validate, progress=progress
        )

    def import_results_db(
        self,
        source: str | Path,
        *,
        benchmark: str | None = None,
        run: str | None = None,
        progress: Progress | None = None,
    ) -> list[ResultsImport]:
        """Import the runs of a Karenina results database (SQLite; ``run`` picks one by id or
        name), each atomic, as ``import_results`` imports an export."""
        return _importing.import_results_db(self, source, benchmark=benchmark, run=run, progress=progress)

    def import_results_store(
        self,
        source: str | Path,
        *,
        benchmark: str | None = None,
        run: str | None = None,
        validate: bool = False,
        progress: Progress | None = None,
    ) -> list[ResultsImport]:
        """Import the runs of a Karenina ``ResultsStore`` file (``{"runs": {name: [result, …]}}``,
        what ``ResultsStore.export_to_file`` writes; ``run`` picks one by name), each atomic and
        stored under its run name, as ``import_results`` imports an export."""
        return _importing.import_results_store(
            self, source, benchmark=benchmark, run=run, validate=validate, progress=progress
        )

    def runs(self) -> list[RunSummary]:
        """The stored verification runs, oldest first."""
        return list_runs(self)

    def export_results(
        self, run: str, target: str | Path | IO[str], *, format: str = "karenina-json", progress: Progress | None = None
    ) -> int:
        """Write a run as a Karenina results export (``karenina-json``, format 2.2), as Karenina's
        CSV (``csv``) or into a Karenina results database (``karenina-db``: a SQLite file, created
        when new, that Karenina's ``load_verification_results`` reads); returns the row count."""
        if format == "karenina-db":
            if not isinstance(target, str | Path):
                raise InvalidValueError("karenina-db writes a database file: give its path, not a stream")
            return export_run_db(self, run, target, progress)
        return export_run(self, run, target, format, progress)

    def resolve_run(self, run: str) -> str:
        """The IRI of the stored run with this id or IRI (``NotFoundError`` lists the runs)."""
        return resolve_run(self, run)[0]

    def delete_run(self, run: str, *, progress: Progress | None = None) -> str:
        """Remove a stored run; returns its IRI."""
        return delete_run(self, run, progress)

    # -- versions (store._versions; docs/publishing.md § Versions) ------------------------
    def versions(self, benchmark: str) -> list[BenchmarkVersion]:
        """Every version of a benchmark, oldest first; the last is the live one. A re-import
        keeps the generation it replaces as a version (unless ``keep_version=False``)."""
        return versions(self, benchmark)

    def diff(self, benchmark: str, old: int | str | None = None, new: int | str | None = None) -> BenchmarkDiff:
        """Questions added, removed and changed (with the parts: text, answer, template, rubric,
        metadata) from version ``old`` (default: the one before ``new``) to ``new`` (default:
        the latest). A version is its number, ``"latest"``, ``"previous"`` or a unique label."""
        return diff_versions(self, benchmark, old, new)

    def export_version(self, benchmark: str, version: int | str | None = None) -> dict[str, Any]:
        """A version of a benchmark as a Karenina checkpoint document."""
        return export_version(self, benchmark, version)

    def save_version(self, benchmark: str, version: int | str | None, target: str | Path | IO[str]) -> None:
        """Write a version of a benchmark as a checkpoint file (Karenina loads it)."""
        if not isinstance(target, str | Path):
            save_version(self, benchmark, version, target)
            return
        path = Path(target)
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            save_version(self, benchmark, version, fh)
        tmp.replace(path)

    def drop_version(self, benchmark: str, version: int | str) -> BenchmarkVersion:
        """Drop a kept version (not the live one); returns what it was."""
        return drop_version(self, benchmark, version)
