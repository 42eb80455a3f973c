"""The store as storage: benchmarks and runs as named graphs in pyoxigraph (or on a SPARQL
server), a catalog graph naming the live ones, queries, checkpoint export and delete.

Everything new lands in a fresh generation graph (:meth:`GraphStore.generation`) that no query
sees until the catalog points at it in one small SPARQL update, so a reader sees the old
benchmark or the new one, never half of either (pyoxigraph's bulk loader is fast but not
atomic). Graphs the catalog does not name are leftovers of an interrupted import or delete,
removed on open. What is loaded, and how it is checked, is the import pipeline's business
(``karenina_rdf._importing``); this module knows nothing of checkpoints' or results' rules.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self, cast

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import AmbiguousBenchmarkError, BenchmarkNotFoundError, InvalidValueError, StoreError
from karenina_rdf._progress import QUIET, QUIET_TASK, Progress, Task, counted
from karenina_rdf.checkpoint import benchmark_json, item_json, write_json
from karenina_rdf.rdf import (
    CATALOG_GRAPH,
    DEFAULT_BASE_IRI,
    KAR,
    MODELS_GRAPH,
    PREFIXES,
    SCHEMA,
    VOCABULARY_GRAPH,
    count_items,
    drop_summaries,
    graph_iri,
    node_index,
    ordered_items,
    shadowed_items,
    solutions,
    term_value,
)
from karenina_rdf.sparql import (
    Hits,
    SearchSyntaxError,
    bind_values,
    find_query,
    looks_like_reference,
    python_term,
    sparql_functions,
)

from . import _files, _versions
from ._catalog import IMPORTED_AT, SOURCE, TRIPLE_COUNT, Catalog
from ._file_export import FileSource, OutOfStep
from ._loading import Sink, open_sink
from ._rebase import Rewriter, check_new_base, rebase_update, whole_lines
from ._remote import DEFAULT_TIMEOUT, RemoteStore, is_url
from ._text import TextSync, calls_text_functions

STORE_ENV = "KARENINA_RDF_STORE"
BASE_IRI_ENV = "KARENINA_RDF_BASE_IRI"
STORE_TOKEN_ENV = "KARENINA_RDF_STORE_TOKEN"  # Bearer token for a store given as a URL
DEFAULT_STORE_PATH = ".karenina-rdf"
SNAPSHOTS = ".snapshots"  # checkpoints of an on-disk store that other processes read (snapshot())
_DELETE_BATCH = 20_000
_DELETE_BYTES = 1 << 22  # of N-Triples lines per DELETE DATA, when dropping by a graph's files
# Dropping a graph quad by quad costs pyoxigraph 20-40 µs a quad, while clearing the whole store
# takes well under a second; dumping what stays and bulk-loading it back cost about 0.75 of that
# a quad (measured, docs/performance.md § Deleting). So a graph is dropped by rebuilding the store
# without it when what stays is at most this many times its size: a benchmark beside the small
# shared graphs, or beside one other benchmark its size, or replaced by one its size. A graph that
# stays and has its import's files (store._files) is reloaded from them without the dump: at 20k
# questions the dump took as much CPU as the bulk load (7.4 s and 7.9 s, docs/performance.md
# § Delete and replace, second pass), so such a graph counts for 1 / _DUMPED of its size.
_REBUILD_RATIO = 1.25
_DUMPED = 2
_REBUILD = ".rebuild"  # in the store folder: what stays, while the store is rebuilt without a graph
# In the store folder: the live generation a re-import took out of the store before loading its
# replacement (GraphStore.evict), loaded back from its files if the re-import does not publish.
_EVICTED = "evicted.json"
_IDENTIFIER = ox.NamedNode(SCHEMA + "identifier")
_NAME = ox.NamedNode(SCHEMA + "name")
# A rebase on a server is one request rewriting every quad; its time limit, per quad (about 7
# times what an Oxigraph server took on a loaded machine).
_REBASE_SECONDS_PER_QUAD = 0.005
_BLOCK = 1 << 26  # bytes of N-Triples turned into N-Quads at a time
# A generation graph's IRI after '{base}benchmarks/' or '{base}runs/' (docs/data-model.md §2).
_GENERATION = re.compile(r"[^/]+/graph/[0-9a-f]{16}$")


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


class RebaseReport(BaseModel):
    """What ``Store.rebase`` did: the base before and after, and the quads the store holds."""

    model_config = ConfigDict(frozen=True)

    old_base: str
    new_base: str
    quads: int


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


@dataclass
class Generation:
    """A fresh generation graph being filled through ``sink``; unpublished until the catalog
    points at it."""

    graph: ox.NamedNode
    sink: Sink
    folder: Path


class GraphStore:
    """A karenina-rdf store as storage: on disk at ``path`` (created if missing), in memory when
    ``path`` is None, or on a SPARQL server. ``karenina_rdf.Store`` adds the import pipeline."""

    # Whether a big graph may be dropped by clearing the store and loading back what stays
    # (drop_graph): the store is empty for a moment, so a process whose other threads read it
    # while it writes (the endpoint) sets this to False.
    drop_by_rebuilding = True

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
                self._finish_rebuild()  # before anything reads it: a crash may have left it cleared
        except OSError as exc:
            hint = ""
            if "LOCK" in str(exc):  # RocksDB lets one process hold the store
                hint = (
                    " (another process, such as `karenina-rdf serve`, has it open: stop it, or put the store"
                    " on a SPARQL server that both can use)"
                )
            raise StoreError(f"cannot open store at {self.path}: {exc}{hint}") from None
        self.catalog = Catalog(self._ox)
        if remote is None and self.path is not None:
            self.restore_evicted()  # a re-import that crashed after taking its old generation out
        self.base_iri = self._settle_base_iri(requested)
        self.fulltext = TextSync(self)
        if remote is None:
            # One process holds an on-disk store: what is marked pending was left by a crash. On a
            # server another client may be importing right now: remove_orphans() is explicit there.
            self.remove_orphans()
            self._remove_leftover_folders()
            _files.tidy(self)  # after the rebuild is finished: it may reload some of them

    def _settle_base_iri(self, requested: str | None) -> str:
        # Every stored IRI was minted under one base; a second base would split identities.
        stored = self.catalog.base_iri()
        if stored is not None:
            if requested is not None and requested != stored:
                # Refused rather than followed: a base asked for and silently ignored would make
                # the caller believe its IRIs are minted under it.
                raise StoreError(
                    f"the store at {self.location} mints IRIs under {stored!r}, not {requested!r}; "
                    f"open it without --base-iri, or change its base with `karenina-rdf rebase {requested}`"
                )
            return stored
        base = requested or default_base_iri()
        self.catalog.set_base_iri(base)
        return base

    @classmethod
    def memory(cls, *, base_iri: str | None = None) -> Self:
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
    ) -> Self:
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
        text = getattr(self, "fulltext", None)  # absent when __init__ failed after opening
        if text is not None:
            text.close()
        _versions.close_archive(self)
        if self.path is not None:
            self._ox.flush()
        if self.remote is not None:
            self.remote.close()
        # RocksDB's lock goes with the last reference to the pyoxigraph store: the catalog's too.
        del self._ox, self.catalog

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- graphs ----------------------------------------------------------------------------
    def graphs(self) -> list[ox.NamedNode]:
        """The named graphs holding live benchmarks."""
        return list(self.catalog.benchmarks().values())

    def run_graphs(self) -> list[ox.NamedNode]:
        """The named graphs holding live verification runs."""
        return list(self.catalog.runs().values())

    def visible_graphs(self) -> list[ox.NamedNode]:
        """Every graph this store publishes: live benchmarks and runs, the catalog, the vocabulary."""
        catalog = self.catalog
        return [*catalog.benchmarks().values(), *catalog.runs().values(), CATALOG_GRAPH, VOCABULARY_GRAPH, MODELS_GRAPH]

    def graph_of(self, ref: str) -> tuple[str, ox.NamedNode]:
        iri = self.resolve(ref)
        return iri, self.catalog.benchmarks()[iri]

    def remove_orphans(self) -> None:
        """Drop generation graphs an interrupted import or delete left behind: those marked as
        being loaded, and (embedded, where listing graphs is cheap) any unpublished generation
        graph. Never another graph: a server may hold other people's data. On a server, run it
        when no other client is importing."""
        pending = self.catalog.pending()
        for hidden in self.hidden_graphs():
            if self._is_generation(hidden):
                self.drop_graph(cast(ox.NamedNode, hidden))
        for g in pending:
            self.catalog.mark_pending(g, False)

    def _remove_leftover_folders(self) -> None:
        """Temporary folders of loads a killed process left in the store folder (chunk files,
        a pipe). This process holds the store's lock, so no load of another is using them."""
        if self.path is None:
            return
        for leftover in [*self.path.glob(".import-*"), self.path / SNAPSHOTS]:
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)

    def snapshot(self) -> Path:
        """A checkpoint of this on-disk store as it is now, in a new folder under
        ``<store>/.snapshots/``: RocksDB hard-links its files (cheap), and no process writes it, so
        other processes may open it with ``pyoxigraph.Store.read_only`` (undefined on a store
        that another process writes). The caller deletes it; leftovers go when the store opens."""
        if self.path is None:
            raise StoreError("only a store on disk has snapshots")
        # Absolute: the query workers that open it run in another working directory (`serve`'s
        # default store, `.karenina-rdf`, is a relative path).
        folder = self.path.absolute() / SNAPSHOTS
        folder.mkdir(exist_ok=True)
        target = folder / uuid.uuid4().hex
        try:
            self._ox.backup(str(target))
        except OSError as exc:
            raise StoreError(f"cannot snapshot the store at {self.path}: {exc}") from None
        return target

    def _is_generation(self, graph: ox.NamedNode | ox.BlankNode) -> bool:
        name = graph.value if isinstance(graph, ox.NamedNode) else ""
        for collection in ("benchmarks/", "runs/"):
            prefix = self.base_iri + collection
            if name.startswith(prefix) and _GENERATION.match(name, len(prefix)) is not None:
                return True
        return False

    def drop_graph(
        self,
        graph: ox.NamedNode,
        *,
        size: int | None = None,
        progress: Progress | None = None,
        parts: list[Path] | None = None,
    ) -> None:
        """Remove a graph's triples (callers unlink it from the catalog first). ``size``: its
        number of triples, if known; a big graph in a store on disk holding little else is
        dropped by rebuilding the store without it. ``progress``: triples removed, or the graphs
        kept and reloaded by a rebuild. ``parts``: the graph's files (store._files), found
        while the catalog still named it."""
        if self.remote is not None:
            self.remote.drop_graph(graph)  # one DROP on a server; pyoxigraph's removal is slow
            return
        if not self._ox.contains_named_graph(graph):
            return  # evicted before its replacement was loaded (evict), or dropped already
        if size is not None and self.drop_by_rebuilding and self.path is not None and self._rest_is_small(graph, size):
            self._rebuild_without(graph, progress or QUIET)
            return
        # Removing quads is slow in pyoxigraph; batches keep each transaction small
        # (docs/performance.md).
        removing = (progress or QUIET).start("removing", size, "triples")
        if parts is not None:
            # The import's own lines: no reading each quad back out of RocksDB to name it.
            for part in parts:
                with open(part, encoding="utf-8") as fh:
                    while lines := fh.readlines(_DELETE_BYTES):
                        self._ox.update(f"DELETE DATA {{ GRAPH {graph} {{\n{''.join(lines)}}} }}")
                        removing.advance(len(lines))
            self._ox.remove_graph(graph)  # what an edit could have added is not in the files
            removing.done()
            return
        quads = self._ox.quads_for_pattern(None, None, None, graph)
        while True:
            batch = [q for _, q in zip(range(_DELETE_BATCH), quads, strict=False)]
            if not batch:
                break
            body = "\n".join(f"{q.subject} {q.predicate} {q.object} ." for q in batch)
            self._ox.update(f"DELETE DATA {{ GRAPH {graph} {{\n{body}\n}} }}")
            removing.advance(len(batch))
        self._ox.remove_graph(graph)
        removing.done()

    def retire(
        self,
        graph: ox.NamedNode,
        *,
        unpublish: str | None = None,
        size: int | None = None,
        progress: Progress | None = None,
        parts: list[Path] | None = None,
    ) -> None:
        """Drop a generation graph no longer (or never) published, marked pending while it is
        dropped (slowly, in batches) so no query sees it; ``unpublish`` first forgets the
        benchmark or run that the catalog says lives there. ``size`` and ``parts``: as for
        :meth:`drop_graph` (``parts`` found here, unless ``unpublish`` is None: the caller
        unpublished it already, and found them before)."""
        if parts is None and unpublish is not None:
            parts = _files.files(self, graph)  # while the catalog says they are its content
        self.catalog.mark_pending(graph, True)
        if unpublish is not None:
            self.catalog.unpublish(unpublish)
        self.drop_graph(graph, size=size, progress=progress, parts=parts)
        self.catalog.mark_pending(graph, False)
        _files.forget_unowned(self, graph)  # a kept version's files stay: they are the version

    # -- a re-import's old generation, taken out first ---------------------------------------
    def evict(self, graph: ox.NamedNode, size: int | None) -> bool:
        """Take the live generation ``graph`` out of the store before a re-import loads its
        replacement, when the rest of the store is small enough to rebuild without it and the
        graph has its import's files (store._files): the replacement is then loaded into a store
        that no longer holds it, instead of being reloaded by the rebuild that drops it after
        the publish (docs/performance.md § Delete and replace, second pass). The catalog still
        names it; :meth:`restore_evicted` loads it back from its files unless the re-import
        published a new generation, and so does the next open after a crash. Queries in this
        process meanwhile see the benchmark absent, as during any rebuild (the endpoint, which
        serves while it writes, sets :attr:`drop_by_rebuilding` to False)."""
        if size is None or not self.drop_by_rebuilding or self.path is None or self.remote is not None:
            return False
        if _files.files(self, graph) is None or not self._rest_is_small(graph, size):
            return False
        # Before the rebuild's commit: a crash on either side of it leaves the marker, and the
        # next open loads the graph back if the rebuild had taken it out.
        self._mark_evicted(graph, restoring=False)
        self._rebuild_without(graph, QUIET)
        return True

    def _mark_evicted(self, graph: ox.NamedNode, *, restoring: bool) -> None:
        assert self.path is not None
        tmp = self.path / (_EVICTED + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"graph": graph.value, "restoring": restoring}))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path / _EVICTED)
        # The marker must survive a power loss, not only a crash of this process: a store cleared
        # for the rebuild is put back from what the marker says.
        _files.fsync_dir(self.path)

    def restore_evicted(self) -> None:
        """Load back the generation :meth:`evict` took out if the catalog still names it live
        (the re-import failed, was refused, found nothing new, or crashed); forget the marker."""
        if self.path is None:
            return
        marker = self.path / _EVICTED
        if not marker.is_file():
            return
        told = json.loads(marker.read_text(encoding="utf-8"))
        graph = ox.NamedNode(told["graph"])
        if graph in self.catalog.benchmarks().values():
            cut_short = bool(told["restoring"])  # a crash while loading it back
            if cut_short or not self._ox.contains_named_graph(graph):
                parts = _files.files(self, graph)
                if parts is None:
                    raise StoreError(f"cannot load {graph} back into the store at {self.path}: its files are gone")
                self._mark_evicted(graph, restoring=True)
                if cut_short:
                    self._ox.remove_graph(graph)
                _files.load(self._ox, graph, parts)
                self._ox.flush()
        marker.unlink()

    # -- dropping by rebuilding --------------------------------------------------------------
    def _rest_is_small(self, graph: ox.NamedNode, size: int) -> bool:
        """Whether everything but ``graph`` is at most ``_REBUILD_RATIO`` times ``size`` triples:
        the live benchmarks and runs by their catalog counts, other graphs counted up to the
        limit (a store that holds more, or whose sizes are not known, drops quad by quad)."""
        budget = _REBUILD_RATIO * size  # triples that may stay (dumped and reloaded)
        counted: set[ox.NamedNode | ox.BlankNode] = {graph}
        for owner, g in [*self.catalog.benchmarks().items(), *self.catalog.runs().items()]:
            if g == graph:
                continue
            count = self.catalog.value(owner, TRIPLE_COUNT)
            if count is None:
                return False
            budget -= int(count) / (_DUMPED if _files.files(self, g) is not None else 1)
            counted.add(g)
        others: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph] = [ox.DefaultGraph()]
        others += [g for g in self._ox.named_graphs() if g not in counted]
        for other in others:
            for _ in self._ox.quads_for_pattern(None, None, None, other):
                budget -= 1
                if budget < 0:
                    return False
        return budget >= 0

    def _rebuild_without(self, graph: ox.NamedNode, progress: Progress) -> None:
        """Drop ``graph`` by clearing the store and bulk-loading everything else back.

        What stays is first written to ``.rebuild/`` in the store folder as one N-Quads file (one
        load keeps shared blank nodes shared) with a manifest naming the graphs, empty ones too;
        the manifest, written last and renamed into place, is the commit point. From then on a
        crash is finished by the next open (:meth:`_finish_rebuild`), which clears and loads
        again; before it, the store is untouched and the folder is removed."""
        assert self.path is not None
        folder = self.path / _REBUILD
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        keep = [g for g in self._ox.named_graphs() if g != graph]
        keeping = progress.start("keeping", len(keep) + 1, "graphs")
        reloaded: dict[str, list[str]] = {}  # graph → its import's files, reloaded as they are
        with open(folder / "rest.nq", "wb") as out:
            self._dump_as_quads(ox.DefaultGraph(), out, folder)
            keeping.advance()
            for g in keep:
                parts = _files.files(self, g)
                if parts is not None:
                    reloaded[str(g)] = [str(p) for p in parts]
                else:
                    self._dump_as_quads(g, out, folder)
                keeping.advance()
            out.flush()
            os.fsync(out.fileno())
        keeping.done()
        self._commit_rebuild(folder, keep, reloaded)
        # One bulk load, which reports nothing until it ends: the one file it reads is the count.
        reloading = progress.start("reloading", 1, "files")
        self._finish_rebuild()
        reloading.advance()
        reloading.done()

    @staticmethod
    def _commit_rebuild(
        folder: Path, graphs: Iterable[ox.NamedNode | ox.BlankNode], files: Mapping[str, list[str]] | None = None
    ) -> None:
        """Write the rebuild's manifest (the graphs it recreates, empty ones too, and the files
        some are reloaded from): renamed into place, it is the commit point. The files named stay
        until the rebuild is finished: only a graph's drop or :func:`_files.tidy` removes them,
        and the graphs named here are neither dropped nor stale."""
        manifest = folder / "manifest.json"
        tmp = folder / "manifest.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"graphs": [str(g) for g in graphs], "files": dict(files or {})}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, manifest)
        _files.fsync_dir(folder)  # the commit point holds after a power loss too

    # -- changing the base IRI ---------------------------------------------------------------
    def rebase(self, new_base: str) -> RebaseReport:
        """Move every IRI under the store's base to ``new_base`` (an absolute http(s) IRI ending
        in ``/``), in every graph, and make it the store's base (docs/publishing.md § Changing a
        store's base). Atomic: a reader, or the store reopened after a crash, sees the old base
        and all its data or the new base and all its data.

        On disk the store is written out rebased (a dump rewritten line by line) beside it, and
        the rebuild's commit point (:meth:`_rebuild_without`) swaps it in: a crash before the
        commit leaves the old store untouched, one after it is finished by the next open. On a
        server it is one SPARQL update request (``store._rebase.rebase_update``). Other processes
        that have the store open keep minting under the base they read when they opened it: stop
        them first (on disk, the store's lock makes sure of it)."""
        new = check_new_base(new_base)
        old = self.base_iri
        if new != old:
            rewriter = Rewriter(old, new)
            if self.remote is not None:
                # One request rewrites every quad: 0.7 ms a quad on an Oxigraph server (measured,
                # docs/publishing.md § Changing a store's base), so its time limit grows with the store.
                limit = max(self.remote.timeout, _REBASE_SECONDS_PER_QUAD * len(self.remote))
                self.remote.update(rebase_update(old, new), timeout=limit)
            else:
                # The kept versions' graphs first, copied beside themselves (see rebase_archive),
                # each loaded from its files into the archive first if it has not been read yet.
                _versions.rebase_archive(self, rewriter.block, rewriter.term)
                # Every IRI changes: the import's files would say the old ones (and no kept version
                # is only its files any more).
                _files.forget_all(self)
                if self.path is not None:
                    self._rebuild_rebased(rewriter, self.path / _REBUILD)
                else:
                    with tempfile.TemporaryDirectory(prefix="karenina-rdf-rebase-") as tmp:
                        self._rebuild_rebased(rewriter, Path(tmp) / _REBUILD)
                _versions.prune_archive(self)
            self.base_iri = new
            # After the commit: a crash in between leaves the index keyed on IRIs no graph has,
            # which the next search notices (every stamp names a graph) and indexes again.
            self.fulltext.rebased(old, new)
        return RebaseReport(old_base=old, new_base=new, quads=len(self._ox))

    def _rebuild_rebased(self, rewriter: Rewriter, folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        graphs = list(self._ox.named_graphs())
        try:
            with open(folder / "rest.nq", "wb") as out:
                self._dump_as_quads(ox.DefaultGraph(), out, folder, rewriter)
                for g in graphs:
                    if g == CATALOG_GRAPH:  # small, and holds the base fact: rewritten term by term
                        quads = rewriter.catalog_quads(self._ox)
                        out.write(ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b"")
                    else:
                        self._dump_as_quads(g, out, folder, rewriter)
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)  # before the commit: the store is untouched
            raise
        self._commit_rebuild(folder, [rewriter.term(g) if isinstance(g, ox.NamedNode) else g for g in graphs])
        self._finish_rebuild(folder)

    def _dump_as_quads(
        self,
        graph: ox.NamedNode | ox.BlankNode | ox.DefaultGraph,
        out: IO[bytes],
        folder: Path,
        rewriter: Rewriter | None = None,
    ) -> None:
        # pyoxigraph dumps one graph as N-Triples; a line ends in " .\n" and nowhere else (the
        # serializer escapes line breaks in literals), so the graph name goes before that end.
        part = folder / "graph.nt"
        self._ox.dump(str(part), format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
        name = rewriter.term(graph) if rewriter is not None and isinstance(graph, ox.NamedNode) else graph
        end = b" .\n" if isinstance(name, ox.DefaultGraph) else f" {name} .\n".encode()
        with open(part, "rb") as fh:
            for block in whole_lines(fh, _BLOCK):
                if rewriter is not None:
                    block = rewriter.block(block)
                out.write(block.replace(b" .\n", end))
        part.unlink()

    def _finish_rebuild(self, folder: Path | None = None) -> None:
        """Complete a rebuild whose manifest was written (clear, load, recreate empty graphs), or
        forget one that never reached it. Loading again after a crash mid-load is safe: the store
        is cleared first. ``folder``: where the rebuild was written (``.rebuild/`` in the store
        folder; a temporary folder for a store in memory)."""
        if folder is None:
            assert self.path is not None
            folder = self.path / _REBUILD
        manifest = folder / "manifest.json"
        if not manifest.is_file():
            shutil.rmtree(folder, ignore_errors=True)  # the store was not touched
            return
        written = json.loads(manifest.read_text(encoding="utf-8"))
        graphs = written["graphs"]
        self._ox.clear()
        self._ox.bulk_load(path=str(folder / "rest.nq"), format=ox.RdfFormat.N_QUADS)
        for g, parts in written.get("files", {}).items():
            _files.load(self._ox, ox.NamedNode(g[1:-1]), (Path(p) for p in parts))
        for g in graphs:
            term = ox.BlankNode(g[2:]) if g.startswith("_:") else ox.NamedNode(g[1:-1])
            self._ox.add_graph(term)
        self._ox.flush()
        shutil.rmtree(folder)

    @contextmanager
    def generation(self, owner: str, *, one_bulk_load: bool = False) -> Iterator[Generation]:
        """A fresh generation graph of ``owner`` (a benchmark or run IRI) with a sink loading
        into it, marked pending from the start: a crash leaves a marker the next open cleans up.
        The caller fills it, finishes the sink, and publishes it through :attr:`catalog`; if
        anything raises before it is published, the graph is dropped and nothing changes.
        ``one_bulk_load``: load through one bulk load (big loads; see ``store._loading``)."""
        graph = ox.NamedNode(graph_iri(owner, uuid.uuid4().hex[:16]))
        self.catalog.mark_pending(graph, True)
        with tempfile.TemporaryDirectory(prefix=".import-", dir=self.path) as tmpdir:
            sink = open_sink(self._ox, graph, Path(tmpdir), one_bulk_load=one_bulk_load)
            try:
                yield Generation(graph, sink, Path(tmpdir))
            except BaseException:
                try:
                    sink.abort()
                finally:  # whatever abort raised, nothing unpublished stays behind
                    catalog = self.catalog
                    if graph not in catalog.benchmarks().values() and graph not in catalog.runs().values():
                        if self._ox.contains_named_graph(graph):
                            self.drop_graph(graph)
                        catalog.mark_pending(graph, False)  # kept if the drop failed: the next cleanup retries
                raise
            sink.abort()  # after finish() a no-op; stops a loader a caller left without finishing
        self.catalog.mark_pending(graph, False)

    def mark_edited(self, bench: str) -> None:
        """Forget the content hash of a benchmark changed in place (re-import then replaces it)
        and its recorded validation."""
        self.catalog.forget_hashes(bench)

    def edit(self, bench: str, sparql_update: str) -> None:
        """Run a SPARQL update that changes ``bench`` in place, forgetting its content hashes and
        recorded validation in the same request: no crash or concurrent validation can leave a
        record of the triples as they were."""
        self._ox.update(self.catalog.forget_update(bench) + " ;\n" + sparql_update)

    # -- lookups ---------------------------------------------------------------------------
    def benchmarks(self) -> list[BenchmarkSummary]:
        out = []
        for bench, graph in self.catalog.benchmarks().items():
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
            source=self.catalog.value(bench, SOURCE),
            imported_at=self.catalog.value(bench, IMPORTED_AT),
        )

    def summary(self, ref: str) -> BenchmarkSummary:
        bench, graph = self.graph_of(ref)
        return self._summary(bench, graph)

    def resolve(self, ref: str) -> str:
        """The stored IRI of the benchmark that ``ref`` names: its id, its IRI or its name."""
        live = self.catalog.benchmarks()
        if ref in live:
            return ref
        by_id: list[str] = []
        by_name: list[str] = []
        # Only the two properties: the benchmark node also links each of its items, so reading
        # all its triples decoded a triple per question (a million on a store of ten 100k
        # benchmarks, for every command naming one; docs/performance.md § One million questions).
        for bench, graph in live.items():
            b = ox.NamedNode(bench)
            for pred, found in ((_IDENTIFIER, by_id), (_NAME, by_name)):
                if any(term_value(q.object) == ref for q in self._ox.quads_for_pattern(b, pred, None, graph)):
                    found.append(bench)
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

    # -- export / delete -------------------------------------------------------------------
    def export_checkpoint(self, ref: str) -> dict[str, Any]:
        """The benchmark as a Karenina checkpoint document (canonical form)."""
        bench, graph = self.graph_of(ref)
        files = FileSource.open(self, bench, graph)
        if files is not None:
            with files:
                try:
                    return benchmark_json(files.header_index(), bench, list(files.item_documents()))
                except OutOfStep:
                    pass  # not laid out as the mapper writes: the graph says the same
        source = self.reader(graph)
        header = self._header_index(source, bench, graph)
        return benchmark_json(header, bench, list(self._items_json(source, bench, graph)))

    def save(self, ref: str, path: str | Path | IO[str], *, progress: Progress | None = None) -> None:
        """Write the benchmark as a checkpoint file, streaming item by item (``progress`` is told
        of the questions written)."""
        bench, graph = self.graph_of(ref)
        task = (progress or QUIET).start("writing", None, "questions")
        if not isinstance(path, (str, Path)):
            self.write_checkpoint(path, bench, graph, task)
            return
        target = Path(path)
        tmp = target.with_name(f".{target.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            self.write_checkpoint(fh, bench, graph, task, restartable=True)
        os.replace(tmp, target)  # never leave a half-written checkpoint behind

    def write_checkpoint(
        self, out: IO[str], bench: str, graph: ox.NamedNode, task: Task = QUIET_TASK, *, restartable: bool = False
    ) -> None:
        """Write the benchmark in ``graph`` to ``out``: from the generation's files while they
        hold exactly the graph (store._file_export: about 6x less CPU than reading the graph
        back out of RocksDB), else from the graph. ``restartable``: ``out`` is a file this
        export owns, which it may empty and write again."""
        files = FileSource.open(self, bench, graph)
        if files is not None:
            with files:
                try:
                    header = benchmark_json(files.header_index(), bench, [])
                except OutOfStep:
                    header = None  # nothing written yet: the graph says the same
                if header is not None:
                    try:
                        write_json(out, header, files.item_documents(task))
                        return
                    except OutOfStep as exc:
                        if not restartable:
                            # Part of it is written to a stream: the caller has to start again,
                            # and without the files the next export reads the graph.
                            _files.forget(self, graph)
                            raise StoreError(
                                f"the export stopped: the stored files of {bench} are not laid out as "
                                f"expected ({exc}); they are removed, export again"
                            ) from None
                        out.seek(0)
                        out.truncate()
        source = self.reader(graph)
        header = benchmark_json(self._header_index(source, bench, graph), bench, [])
        write_json(out, header, self._items_json(source, bench, graph, task))

    def reader(self, graph: ox.NamedNode) -> ox.Store:
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
        return node_index(source, graph, [bench], skip=(f"{bench}/items/", f"{bench}/questions/", f"{bench}/shadowed/"))

    @staticmethod
    def _items_json(
        source: ox.Store, bench: str, graph: ox.NamedNode, task: Task = QUIET_TASK
    ) -> Iterator[dict[str, Any]]:
        # Items shadowed by a later one with their question id go back where they were.
        shadows = shadowed_items(source, graph, bench)
        items = ordered_items(source, graph, bench)
        task.set_total(len(items))
        for item in counted(items, task):
            # Item and question share their id segment by construction (_ids.item_iri/question_iri).
            question = bench + "/questions/" + item[len(bench) + len("/items/") :]
            index = node_index(source, graph, [item, question])
            if shadows:
                position = index[item].get(KAR.position)
                at = int(position[0].value) if position else 0
                while shadows and shadows[0][0] < at:
                    yield json.loads(shadows.pop(0)[3])
            yield item_json(index, item)
        for *_, text in shadows:
            yield json.loads(text)

    def delete(self, ref: str, *, progress: Progress | None = None) -> BenchmarkSummary:
        bench, graph = self.graph_of(ref)
        summary = self._summary(bench, graph)
        size = self.catalog.value(bench, TRIPLE_COUNT)
        _versions.drop_all(self, bench)  # its kept versions go with it
        self.retire(graph, unpublish=bench, size=int(size) if size is not None else None, progress=progress)
        self.fulltext.deleted(bench)  # its rows leave the index now, not at the next search
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
            sparql = find_query(query).bind(bindings, search=self.fulltext.scores)
        else:
            sparql = bind_values(query, {k: python_term(v) for k, v in bindings.items()})
        try:
            kwargs = self.dataset(benchmarks)
            functions = self.text_functions(sparql)
            if functions:  # never given to a server (RemoteStore.query takes no functions)
                kwargs["custom_functions"] = functions
            return self._ox.query(sparql, prefixes=dict(PREFIXES), **kwargs)
        except SyntaxError as exc:  # pyoxigraph's parse error, as one of ours
            raise InvalidValueError(f"SPARQL syntax error: {exc}") from None

    def text_functions(self, sparql: str) -> dict[ox.NamedNode, Any] | None:
        """``karenina:textScore`` and ``karenina:textMatch`` for a query that calls them, with
        the index brought in step first (docs/queries.md § Full-text search)."""
        if not calls_text_functions(sparql):
            return None
        if self.remote is not None:
            raise InvalidValueError(
                "karenina:textScore and karenina:textMatch run in this process, over its own index: "
                "a store on a SPARQL server evaluates queries itself and cannot call them; "
                "use Store.search_text, or run the query on the store that `karenina-rdf serve` serves"
            )
        self.fulltext.sync()
        return sparql_functions(self.fulltext.index, KAR.textScore, KAR.textMatch)

    def search_text(
        self,
        query: str,
        *,
        benchmarks: Iterable[str] | None = None,
        fields: Iterable[str] | None = None,
        limit: int | None = 100,
        offset: int = 0,
    ) -> Hits:
        """Full-text search over question text, reference answer, keywords and template code:
        ``Hits`` (total count, and ``limit`` hits from ``offset``, best first by bm25). Words
        are ANDed, ``word*`` is a prefix, ``"a phrase"`` a phrase, ``OR`` takes either side;
        case and accents are ignored. ``benchmarks``: ids, IRIs or names to search in;
        ``fields``: some of ``question``, ``answer``, ``keywords``, ``template``."""
        iris = None if benchmarks is None else [self.resolve(b) for b in benchmarks]
        try:
            return self.fulltext.search(
                query, benchmarks=iris, fields=None if fields is None else list(fields), limit=limit, offset=offset
            )
        except SearchSyntaxError as exc:
            raise InvalidValueError(str(exc)) from None

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
        live = self.catalog.benchmarks()
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
        hidden: set[ox.NamedNode | ox.BlankNode] = set(self.catalog.pending())
        live = set(self.catalog.benchmarks().values()) | set(self.catalog.runs().values())
        listed = self._ox.named_graphs() if self.remote is None else ()  # cheap embedded only
        hidden.update(g for g in listed if g not in live and self._is_generation(g))
        return hidden - live

    def update_graph(self, sparql_update: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update on the store (relative IRIs resolved against ``base_iri``). The
        stored benchmarks may no longer match the files they came from, so every content hash is
        forgotten: the next import of a file replaces. So is every recorded validation, before
        the update too (a validation recorded between the update and the forgetting would
        describe the triples as they were)."""
        # First (a crash after it only costs a rebuild): the update may change any text, so
        # every benchmark is indexed again at the next search.
        self.fulltext.invalidate_all()
        for bench in self.catalog.benchmarks():
            self.mark_edited(bench)
        # The runs' summaries (results._summaries) would not follow what the update changes in
        # their results: dropped before (a crash during the update leaves none, never stale ones)
        # and after it (the update may have written some); the named queries then aggregate the
        # results themselves. karenina_rdf.Store recounts every run (tallies too) right after;
        # a run left without its marker by a crash is recounted when the store is next opened.
        self._ox.update(drop_summaries())
        try:
            self._ox.update(sparql_update, base_iri=base_iri)
        except SyntaxError as exc:
            raise InvalidValueError(f"SPARQL syntax error: {exc}") from None
        self._ox.update(drop_summaries())
        for bench in self.catalog.benchmarks():
            self.mark_edited(bench)
