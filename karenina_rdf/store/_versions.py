"""Kept versions of a benchmark: what a re-import replaced stays readable as a version, listed,
exported, compared and dropped (docs/publishing.md § Versions, docs/data-model.md § Versions).

A version is a node ``{B}/v/{n}`` in the catalog graph: ``dcterms:isVersionOf {B}``,
``karenina:versionNumber n`` (1, 2, 3…, never reused), ``schema:version`` (the checkpoint's
own version, else ``n``), ``prov:generatedAtTime`` (when it was imported), its source, hashes and
sizes, ``karenina:versionGraph`` (the graph holding its triples) and ``prov:wasRevisionOf`` the
kept version before it. The live benchmark carries its own ``karenina:versionNumber`` and
``prov:wasRevisionOf`` the latest kept version; it is always the latest version.

Where a version's triples live is the point of this module. In the store itself every kept
graph would be hidden from queries, and a query over a list of graphs instead of pyoxigraph's
union default graph is 4-18× slower (docs/publishing.md § Versions): so an embedded store keeps
them in a second pyoxigraph store, the *version archive* (``{store}/versions/``, or in memory
beside a memory store), which no query of the live benchmarks reads. On a SPARQL server the
dataset is always the list of live graphs, so the replaced generation graph simply stays there.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import InvalidValueError, NotFoundError, StoreError
from karenina_rdf.checkpoint import benchmark_json, item_json, write_json
from karenina_rdf.rdf import (
    CATALOG_GRAPH,
    KAR,
    KARENINA,
    SCHEMA,
    XSD,
    count_items,
    named,
    node_index,
    ordered_items,
    solutions,
    term_value,
    unsegment,
)

from . import _files
from ._catalog import CONTENT_HASH, FILE_HASH, IMPORTED_AT, SOURCE, TRIPLE_COUNT
from ._rebase import whole_lines

if TYPE_CHECKING:
    from ._store import GraphStore

PROV = "http://www.w3.org/ns/prov#"
DCT = "http://purl.org/dc/terms/"
WAS_REVISION_OF = PROV + "wasRevisionOf"
GENERATED_AT = PROV + "generatedAtTime"
IS_VERSION_OF = DCT + "isVersionOf"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
VERSION_NUMBER = KAR.versionNumber
VERSION_GRAPH = KAR.versionGraph
QUESTION_COUNT = KAR.questionCount
ARCHIVE = "versions"  # the version archive's folder in an on-disk store
_OPENING = threading.Lock()
_LOADING = threading.Lock()  # a kept version's files are loaded into the archive once
# The parts of a question a diff tells apart; everything else of the item is "metadata".
PARTS = ("text", "answer", "template", "rubric", "metadata")
_QUESTION_PARTS = {"text": "text", "acceptedAnswer": "answer", "hasPart": "template", "rating": "rubric"}
# Bookkeeping Karenina rewrites on every save: a date alone is not a change.
_DATES = ("dateCreated", "dateModified")
# The benchmark's own keys as a diff names them.
_HEADER_PARTS = {
    "rating": "global rubric",
    "additionalProperty": "properties",
    "hasPart": "scenarios",
    "creator": "creator",
    "name": "name",
    "description": "description",
    "version": "version",
}


class BenchmarkVersion(BaseModel):
    """One version of a benchmark (``Store.versions``); the last one listed is the live one."""

    model_config = ConfigDict(frozen=True)

    benchmark: str  # the benchmark's IRI
    number: int  # 1, 2, 3…: the version's place, never reused
    iri: str  # {benchmark}/v/{number}
    label: str  # schema:version: the checkpoint's own version, else the number
    date: str | None  # when it was imported (UTC, ISO 8601)
    source: str | None
    content_hash: str | None  # of the mapped triples; None after an edit in place
    file_hash: str | None  # SHA-256 of the imported file
    questions: int
    triples: int | None
    latest: bool
    revision_of: int | None  # the kept version it revises
    graph: str | None  # where its triples are (None: not recorded)


class QuestionChange(BaseModel):
    """A question present in both versions whose content differs, and in which parts."""

    model_config = ConfigDict(frozen=True)

    id: str
    parts: tuple[str, ...]  # some of PARTS


class BenchmarkDiff(BaseModel):
    """Questions added, removed and changed from version ``old`` to version ``new``."""

    model_config = ConfigDict(frozen=True)

    benchmark: str
    old: int
    new: int
    added: tuple[str, ...]  # question ids, in the new version's order
    removed: tuple[str, ...]  # in the old version's order
    changed: tuple[QuestionChange, ...]  # in the new version's order
    benchmark_parts: tuple[str, ...] = ()  # the benchmark's own parts that changed (global rubric…)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.benchmark_parts)


def version_iri(bench: str, number: int) -> str:
    return f"{bench}/v/{number}"


# -- the archive ---------------------------------------------------------------------------
def archive(store: GraphStore, *, create: bool = False) -> ox.Store | None:
    """The store holding the kept versions' graphs: the version archive (opened once, created
    when ``create``), or the server itself. Graphs it holds that no version names (a crash
    between copying and publishing) are dropped when it opens."""
    if store.remote is not None:
        return store.oxigraph
    found: ox.Store | None = store.__dict__.get("_version_archive")
    if found is not None:
        return found
    # The endpoint reads on several threads: RocksDB lets a process open a folder once.
    with _OPENING:
        found = store.__dict__.get("_version_archive")
        return found if found is not None else _open_archive(store, create)


def _open_archive(store: GraphStore, create: bool) -> ox.Store | None:
    if store.path is None:
        if not create:
            return None
        found = ox.Store()
    else:
        folder = store.path / ARCHIVE
        if not folder.is_dir() and not create:
            return None
        try:
            found = ox.Store(str(folder))
        except OSError as exc:
            raise StoreError(f"cannot open the version archive at {folder}: {exc}") from None
    store.__dict__["_version_archive"] = found
    named_graphs = set(kept_graphs(store))
    for g in list(found.named_graphs()):
        if g not in named_graphs:
            found.remove_graph(g)
    return found


def close_archive(store: GraphStore) -> None:
    """Flush and release the version archive (its RocksDB lock goes with the last reference)."""
    found = store.__dict__.pop("_version_archive", None)
    if found is not None and store.path is not None:
        found.flush()


def rebase_archive(
    store: GraphStore, rewrite: Callable[[bytes], bytes], term: Callable[[ox.NamedNode], ox.NamedNode]
) -> None:
    """Before a rebase of the store commits (``GraphStore.rebase``): a rebased copy of every kept
    graph is loaded into the archive beside the graph it copies. The catalog names one set or the
    other (the old before the store's commit, the new after it), and opening the archive drops
    the graphs it does not name, so a crash at any point leaves the versions whole under one base;
    :func:`prune_archive` drops the old set once the store committed. On a server the rebase's
    one update moves the kept graphs with the rest."""
    if store.remote is not None:
        return
    for graph in kept_graphs(store):
        materialise(store, graph)  # a version kept as its files: into the archive, then rebased
    target = archive(store)
    if target is None:
        return
    for graph in kept_graphs(store):
        moved = term(graph)
        if moved == graph:
            continue
        target.remove_graph(moved)  # a copy left by an earlier rebase that crashed
        if store.path is None:
            data = target.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph) or b""
            target.load(rewrite(data), format=ox.RdfFormat.N_TRIPLES, to_graph=moved)
            continue
        with tempfile.TemporaryDirectory(prefix=".import-", dir=store.path) as tmp:
            dumped, rebased = Path(tmp) / "version.nt", Path(tmp) / "rebased.nt"
            target.dump(str(dumped), format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
            with open(dumped, "rb") as inp, open(rebased, "wb") as out:
                for block in whole_lines(inp, 1 << 24):
                    out.write(rewrite(block))
            target.bulk_load(path=str(rebased), format=ox.RdfFormat.N_TRIPLES, to_graph=moved, lenient=True)
    target.flush()


def prune_archive(store: GraphStore) -> None:
    """Drop the archive's graphs that no version names (after a rebase: the old base's)."""
    target = None if store.remote is not None else archive(store)
    if target is not None:
        named_graphs = set(kept_graphs(store))
        for g in list(target.named_graphs()):
            if g not in named_graphs:
                target.remove_graph(g)
        target.flush()


def kept_graphs(store: GraphStore) -> list[ox.NamedNode]:
    """The graphs of every kept version of every benchmark (not the live ones)."""
    pattern = store.oxigraph.quads_for_pattern(None, ox.NamedNode(VERSION_GRAPH), None, CATALOG_GRAPH)
    return [named(q.object) for q in pattern]


def materialise(store: GraphStore, graph: ox.NamedNode) -> bool:
    """Make sure the archive holds a kept version's graph: a version kept as its import's files
    (:func:`_copy_to_archive`) is loaded from them the first time it is read, and its files go.
    False if neither holds it."""
    # Under the lock, every time: while a version's files are there, what the archive holds of
    # its graph may be a load another thread is making, or one a crash cut short.
    with _LOADING:
        parts = _files.files(store, graph)
        if parts is None:
            found = archive(store)
            return found is not None and found.contains_named_graph(graph)
        target = archive(store, create=True)
        assert target is not None
        target.remove_graph(graph)  # what a load cut short by a crash left (nothing, usually)
        _files.load(target, graph, parts)
        target.flush()
        # The archive holds it now (one source); the files go only after the load is complete.
        _files.forget(store, graph)
    return True


def _copy_to_archive(store: GraphStore, graph: ox.NamedNode) -> None:
    """Keep a generation graph as a version (embedded and memory stores): its import's files,
    when it has them and is unchanged since, are the version until it is first read (nothing to
    copy: docs/performance.md § Delete and replace, second pass); else it is copied into the
    version archive."""
    if _files.files(store, graph) is not None:
        return
    target = archive(store, create=True)
    assert target is not None
    if store.path is None:
        data = store.oxigraph.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
        target.load(data or b"", format=ox.RdfFormat.N_TRIPLES, to_graph=graph)
        return
    # Through a file in an .import-* folder (removed on open if a crash leaves it): one bulk load.
    with tempfile.TemporaryDirectory(prefix=".import-", dir=store.path) as tmp:
        part = Path(tmp) / "version.nt"
        store.oxigraph.dump(str(part), format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
        target.bulk_load(path=str(part), format=ox.RdfFormat.N_TRIPLES, to_graph=graph, lenient=True)
    target.flush()


# -- what an import writes -----------------------------------------------------------------
def _literal(value: str, datatype: str | None = None) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return f"{text}^^<{datatype}>" if datatype else text


def _numbers(store: GraphStore, bench: str, *, kept_only: bool = False) -> list[int]:
    kept = f"; <{VERSION_GRAPH}> ?g" if kept_only else ""
    rows = store.oxigraph.query(
        f"SELECT ?n WHERE {{ GRAPH {CATALOG_GRAPH} {{ ?v <{IS_VERSION_OF}> <{bench}> ;"
        f" <{VERSION_NUMBER}> ?n {kept} }} }}"
    )
    return [int(term_value(r["n"])) for r in solutions(rows)]


def live_number(store: GraphStore, bench: str) -> int:
    """The live version's number: recorded at its import, else one more than any kept one (a
    benchmark stored before versions were kept is version 1)."""
    recorded = store.catalog.value(bench, VERSION_NUMBER)
    if recorded is not None:
        return int(recorded)
    return max(_numbers(store, bench, kept_only=True), default=0) + 1


def _latest_kept(store: GraphStore, bench: str, below: int) -> int | None:
    return max((n for n in _numbers(store, bench, kept_only=True) if n < below), default=None)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _node_facts(v: BenchmarkVersion, *, kept: bool) -> list[tuple[str, str]]:
    """What the catalog says of a version's node ``{B}/v/{n}``; a kept one adds where its
    triples are and what they hold (the live one has those on ``{B}`` itself)."""
    said: list[tuple[str, str]] = [
        (RDF_TYPE, f"<{KAR.BenchmarkVersion}>"),
        (RDF_TYPE, f"<{PROV}Entity>"),
        (IS_VERSION_OF, f"<{v.benchmark}>"),
        (VERSION_NUMBER, str(v.number)),
        (SCHEMA + "version", _literal(v.label)),
    ]
    if v.date is not None:
        said += [(IMPORTED_AT, _literal(v.date)), (GENERATED_AT, _literal(v.date, XSD + "dateTime"))]
    if v.source is not None:
        said.append((SOURCE, _literal(v.source)))
    if v.revision_of is not None:
        said.append((WAS_REVISION_OF, f"<{version_iri(v.benchmark, v.revision_of)}>"))
    if kept:
        assert v.graph is not None
        said += [(VERSION_GRAPH, f"<{v.graph}>"), (QUESTION_COUNT, str(v.questions))]
        for p, value in ((CONTENT_HASH, v.content_hash), (FILE_HASH, v.file_hash)):
            if value is not None:
                said.append((p, _literal(value)))
        if v.triples is not None:
            said.append((TRIPLE_COUNT, str(v.triples)))
    return said


def _write_node(v: BenchmarkVersion, *, kept: bool) -> str:
    node = f"<{v.iri}>"
    body = " . ".join(f"{node} <{p}> {o}" for p, o in _node_facts(v, kept=kept))
    return (
        f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ {node} ?p ?o }} }} ;\n"
        f"INSERT DATA {{ GRAPH {CATALOG_GRAPH} {{ {body} }} }}"
    )


def _live_facts(v: BenchmarkVersion) -> list[tuple[str, str]]:
    facts = [(str(VERSION_NUMBER), str(v.number))]
    if v.revision_of is not None:
        facts.append((WAS_REVISION_OF, f"<{version_iri(v.benchmark, v.revision_of)}>"))
    return facts


def first_facts(bench: str, label: str | None, source: str | None) -> tuple[str, list[tuple[str, str]]]:
    """What the first import of ``bench`` publishes beside it: the update writing its version
    node (version 1), to run in the same request, and its own facts (``extra`` of publish)."""
    v = _new_live(bench, 1, label, source, None)
    return _write_node(v, kept=False), _live_facts(v)


def _new_live(bench: str, number: int, label: str | None, source: str | None, revises: int | None) -> BenchmarkVersion:
    return BenchmarkVersion(
        benchmark=bench,
        number=number,
        iri=version_iri(bench, number),
        label=label or str(number),
        date=_now(),
        source=source,
        content_hash=None,
        file_hash=None,
        questions=0,
        triples=None,
        latest=True,
        revision_of=revises,
        graph=None,
    )


def replace_facts(
    store: GraphStore,
    bench: str,
    old_graph: ox.NamedNode,
    *,
    keep: bool,
    label: str | None,
    source: str | None,
    old: BenchmarkVersion | None = None,
) -> tuple[str, list[tuple[str, str]], bool]:
    """What a re-import of ``bench`` publishes beside its new generation: an update to run in
    the same request (the version nodes), the new live facts (its number, the version it
    revises) and whether the old graph is still to be retired from the store. ``label`` and
    ``source``: the new checkpoint's own version and where it came from.

    With ``keep``, the old generation is first copied into the version archive (an embedded
    store) or left where it is (a server), and its node records it; without, its node goes, it
    is retired as before, and the new version revises the latest version still kept, if any.
    ``old``: the live version as :func:`live_version` read it before the import (which may have
    taken its graph out of the store: ``GraphStore.evict``)."""
    old = old or _live_version(store, bench, old_graph)
    if keep:
        if store.remote is None:
            _copy_to_archive(store, old_graph)
        update = _write_node(old, kept=True)
        revises: int | None = old.number
    else:
        update = f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{old.iri}> ?p ?o }} }}"
        revises = _latest_kept(store, bench, old.number)
    new = _new_live(bench, old.number + 1, label, source, revises)
    # On a server a kept graph is the version's graph now: it stays.
    return update + " ;\n" + _write_node(new, kept=False), _live_facts(new), not (keep and store.remote is not None)


def live_version(store: GraphStore, bench: str, graph: ox.NamedNode) -> BenchmarkVersion:
    """The live generation as a version, as a re-import records it when it keeps it."""
    return _live_version(store, bench, graph)


def _live_version(store: GraphStore, bench: str, graph: ox.NamedNode) -> BenchmarkVersion:
    """The live generation as a version (its facts are on ``{B}`` in the catalog)."""
    number = live_number(store, bench)
    label = None
    for q in store.oxigraph.quads_for_pattern(ox.NamedNode(bench), ox.NamedNode(SCHEMA + "version"), None, graph):
        label = term_value(q.object)
    facts = {
        **store.catalog.facts(bench),
        SCHEMA + "version": label or str(number),
        QUESTION_COUNT: str(count_items(store.oxigraph, graph, bench)),
        VERSION_GRAPH: graph.value,
    }
    revises = _latest_kept(store, bench, number)
    facts.pop(WAS_REVISION_OF, None)
    version = _version(bench, number, facts, latest=True)
    return version.model_copy(update={"revision_of": revises})


# -- listing -------------------------------------------------------------------------------
def versions(store: GraphStore, ref: str) -> list[BenchmarkVersion]:
    """Every version of a benchmark, oldest first; the last is the live one."""
    bench, graph = store.graph_of(ref)
    rows = store.oxigraph.query(
        f"SELECT ?v ?p ?o WHERE {{ GRAPH {CATALOG_GRAPH} {{ ?v <{IS_VERSION_OF}> <{bench}> ;"
        f" <{VERSION_GRAPH}> ?g ; ?p ?o }} }}"
    )
    by_node: dict[str, dict[str, str]] = {}
    for r in solutions(rows):
        by_node.setdefault(term_value(r["v"]), {})[term_value(r["p"])] = term_value(r["o"])
    out = [_version(bench, int(facts[VERSION_NUMBER]), facts, latest=False) for facts in by_node.values()]
    out.append(_live_version(store, bench, graph))
    return sorted(out, key=lambda v: v.number)


def _version(bench: str, number: int, facts: dict[str, str], *, latest: bool) -> BenchmarkVersion:
    revises = facts.get(WAS_REVISION_OF)
    triples = facts.get(TRIPLE_COUNT)
    return BenchmarkVersion(
        benchmark=bench,
        number=number,
        iri=version_iri(bench, number),
        label=facts.get(SCHEMA + "version") or str(number),
        date=facts.get(IMPORTED_AT),
        source=facts.get(SOURCE),
        content_hash=facts.get(CONTENT_HASH),
        file_hash=facts.get(FILE_HASH),
        questions=int(facts.get(QUESTION_COUNT) or 0),
        triples=int(triples) if triples is not None else None,
        latest=latest,
        revision_of=int(revises.rsplit("/", 1)[-1]) if revises else None,
        graph=facts.get(VERSION_GRAPH),
    )


def find_version(store: GraphStore, ref: str, version: int | str | None) -> BenchmarkVersion:
    """A version by number, ``"latest"``/None, ``"previous"``, or its label when only one has it."""
    listed = versions(store, ref)
    if version is None or version == "latest":
        return listed[-1]
    if version == "previous":
        if len(listed) < 2:
            raise NotFoundError(f"{listed[-1].benchmark} has one version only: nothing before the latest")
        return listed[-2]
    text = str(version).removeprefix("v")
    if text.isdigit():
        for v in listed:
            if v.number == int(text):
                return v
    labelled = [v for v in listed if v.label == str(version)]
    if len(labelled) == 1:
        return labelled[0]
    known = ", ".join(str(v.number) for v in listed)
    hint = f" ({len(labelled)} versions are labelled {version!r}: name one by number)" if labelled else ""
    raise NotFoundError(f"no version {version!r} of {listed[-1].benchmark}{hint}; its versions: {known}")


# -- reading a version ---------------------------------------------------------------------
def version_source(store: GraphStore, v: BenchmarkVersion) -> tuple[ox.Store, ox.NamedNode]:
    """Where to read a version's triples from, and its graph."""
    if v.graph is None:
        raise StoreError(f"version {v.number} of {v.benchmark}: where its triples are is not recorded")
    graph = ox.NamedNode(v.graph)
    if v.latest or store.remote is not None:
        return store.reader(graph), graph
    if not materialise(store, graph):
        raise StoreError(f"version {v.number} of {v.benchmark}: its graph is missing from the version archive")
    found = archive(store)
    assert found is not None
    return found, graph


# The store's own readers of a benchmark graph (GraphStore's static methods, reached through the
# instance: this module is imported by _store and imports nothing of it).
def _header(store: GraphStore, source: ox.Store, v: BenchmarkVersion, graph: ox.NamedNode) -> dict[str, Any]:
    return benchmark_json(store._header_index(source, v.benchmark, graph), v.benchmark, [])


def _items(store: GraphStore, source: ox.Store, v: BenchmarkVersion, graph: ox.NamedNode) -> Iterator[dict[str, Any]]:
    return store._items_json(source, v.benchmark, graph)


def export_version(store: GraphStore, ref: str, version: int | str | None) -> dict[str, Any]:
    """A version as a Karenina checkpoint document (canonical form)."""
    v = find_version(store, ref, version)
    source, graph = version_source(store, v)
    header = store._header_index(source, v.benchmark, graph)
    return benchmark_json(header, v.benchmark, list(_items(store, source, v, graph)))


def save_version(store: GraphStore, ref: str, version: int | str | None, target: IO[str]) -> None:
    """Write a version as a checkpoint, streaming item by item."""
    v = find_version(store, ref, version)
    if v.latest and v.graph is not None:  # the live generation: as `save` writes it (its files, if trusted)
        store.write_checkpoint(target, v.benchmark, ox.NamedNode(v.graph))
        return
    source, graph = version_source(store, v)
    write_json(target, _header(store, source, v, graph), _items(store, source, v, graph))


# -- dropping ------------------------------------------------------------------------------
def drop_version(store: GraphStore, ref: str, version: int | str) -> BenchmarkVersion:
    """Forget a kept version and drop its graph; the version after it then revises the one
    before it. The live version cannot be dropped (delete the benchmark, or import another)."""
    v = find_version(store, ref, version)
    if v.latest:
        raise InvalidValueError(
            f"version {v.number} is the live version of {v.benchmark}: import another one first, "
            "or delete the benchmark"
        )
    _forget(store, v)
    return v


def _forget(store: GraphStore, v: BenchmarkVersion) -> None:
    node = f"<{v.iri}>"
    assert v.graph is not None  # a kept version's graph is recorded (versions() lists no other)
    graph = ox.NamedNode(v.graph)
    relink = (
        f"DELETE {{ GRAPH {CATALOG_GRAPH} {{ ?x <{WAS_REVISION_OF}> {node} }} }}\n"
        f"INSERT {{ GRAPH {CATALOG_GRAPH} {{ ?x <{WAS_REVISION_OF}> ?before }} }}\n"
        f"WHERE {{ GRAPH {CATALOG_GRAPH} {{ ?x <{WAS_REVISION_OF}> {node} "
        f"OPTIONAL {{ {node} <{WAS_REVISION_OF}> ?before }} }} }}"
    )
    forget = f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ {node} ?p ?o }} }}"
    if store.remote is not None:
        # Marked pending in the same request: a crash mid-drop leaves it to the next cleanup.
        mark = f"INSERT DATA {{ GRAPH {CATALOG_GRAPH} {{ <urn:karenina-rdf:store> <{KAR.pendingGraph}> {graph} }} }}"
        store.oxigraph.update(" ;\n".join([relink, forget, mark]))
        store.drop_graph(graph)
        store.catalog.mark_pending(graph, False)
        return
    store.oxigraph.update(relink + " ;\n" + forget)
    found = archive(store)
    if found is not None:  # unnamed now: a crash mid-drop leaves an orphan the next open drops
        found.remove_graph(graph)
    _files.forget(store, graph)  # a version kept as its files (unnamed now too: tidy would)


def drop_all(store: GraphStore, bench: str) -> int:
    """Forget every version of ``bench`` (its deletion): the kept ones, whose graphs are
    dropped, and the live one's node; returns how many were kept."""
    try:
        listed = versions(store, bench)
    except NotFoundError:
        return 0
    for v in listed[:-1]:
        _forget(store, v)
    store.oxigraph.update(f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{listed[-1].iri}> ?p ?o }} }}")
    return len(listed) - 1


# -- comparing -----------------------------------------------------------------------------
def _digest(value: Any) -> bytes:
    return hashlib.blake2b(
        json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8"), digest_size=16
    ).digest()


def item_parts(item: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint item (a DataFeedItem) split into the parts a diff names: ``text``,
    ``answer`` (the accepted answer), ``template`` (the answer template's code node), ``rubric``
    (the question's rubric traits) and ``metadata`` (the rest: keywords, author, sources,
    custom metadata, finished…); the item's dates are left out."""
    question = item.get("item") if isinstance(item.get("item"), dict) else {}
    assert isinstance(question, dict)
    parts: dict[str, Any] = {name: question.get(key) for key, name in _QUESTION_PARTS.items()}
    rest = {k: v for k, v in question.items() if k not in _QUESTION_PARTS and k not in _DATES}
    rest |= {"item " + k: v for k, v in item.items() if k not in ("item", "@id", *_DATES)}
    parts["metadata"] = rest
    return parts


def _digests(source: ox.Store, v: BenchmarkVersion, graph: ox.NamedNode) -> dict[str, dict[str, bytes]]:
    """Each question's part digests, by question id, in the version's order. The id is the
    one the store holds (an item's ``@id`` may be absent from a file: Karenina derives it), and
    items shadowed by a later one with the same id are not the question: they are left out."""
    prefix = v.benchmark + "/items/"
    out: dict[str, dict[str, bytes]] = {}
    for item in ordered_items(source, graph, v.benchmark):
        # Item and question share their id segment by construction (rdf._ids).
        question = v.benchmark + "/questions/" + item[len(prefix) :]
        body = item_json(node_index(source, graph, [item, question]), item)
        out[unsegment(item[len(prefix) :])] = {name: _digest(value) for name, value in item_parts(body).items()}
    return out


def header_parts(header: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's own parts a diff names (its questions and dates left out)."""
    skip = {"@context", "dataFeedElement", *_DATES}
    return {_HEADER_PARTS.get(k, k): v for k, v in header.items() if k not in skip}


# Reading the parts from a graph's triples instead (engine="triples"): every node of a question is
# minted under its IRI ({B}/questions/{id}/answer, …/template, …/traits/{name}, …/author …), and
# the triples of a version are a function of its file alone (docs/data-model.md §2), so a part
# is the same in two versions exactly when its triples are. Bookkeeping a checkpoint's items do
# not hold as content is left out: dates, an item's position (removing a question moves the
# later ones) and the links from the benchmark and item nodes to what they hold.
_Q_NODES = {"answer": "answer", "template": "template", "traits": "rubric"}
_Q_PREDICATES = {f"<{SCHEMA}text>": "text", f"{KAR.textMd5.nt}": "text"}
_Q_LINKS = {f"<{SCHEMA}{p}>" for p in ("acceptedAnswer", "hasPart", "contentRating")}
_SKIPPED = {
    f"<{SCHEMA}{p}>" for p in ("dateCreated", "dateModified", "identifier", "item", "isPartOf", "dataFeedElement")
} | {KAR.position.nt, KAR.sourceId.nt, KAR.derivedIdentifier.nt}
_B_PREDICATES = {f"<{SCHEMA}contentRating>": "global rubric", f"<{SCHEMA}hasPart>": "scenarios"}
_B_NODES = {"traits": "global rubric", "scenarios": "scenarios", "shadowed": "shadowed items"}


def _triple_digests(
    source: ox.Store, v: BenchmarkVersion, graph: ox.NamedNode
) -> tuple[dict[str, Any], dict[str, dict[str, bytes]]]:
    """The benchmark's parts and each question's part digests (by question id, in the
    version's order), from one N-Triples dump of the version's graph."""
    bench = v.benchmark
    questions, items = f"<{bench}/questions/", f"<{bench}/items/"
    per: dict[str, dict[str, list[str]]] = {}
    head: dict[str, list[str]] = {}
    data = source.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph) or b""
    position, feed = KAR.position.nt, f"<{SCHEMA}dataFeedElement>"
    linked: set[str] = set()  # the items the benchmark lists (shadowed ones are not)
    order: list[tuple[int, str]] = []  # (position, item segment): the version's order
    for line in data.decode("utf-8").splitlines():
        subject, predicate, rest = line.split(" ", 2)  # IRIs hold no space; the rest is the object
        if predicate in _SKIPPED:
            if predicate == position and subject.startswith(items):
                order.append((int(rest[1 : rest.index('"', 1)]), subject[len(items) : -1]))
            elif predicate == feed and subject == f"<{bench}>":
                linked.add(rest[: rest.index(">") + 1])
            continue
        if subject.startswith(questions):
            seg, _, sub = subject[len(questions) : -1].partition("/")
            node = sub.split("/", 1)[0]
            part = _Q_NODES.get(node, "metadata") if sub else _Q_PREDICATES.get(predicate)
            if part is None:
                if predicate in _Q_LINKS:
                    continue  # a link to the answer, template or a trait: their own triples tell
                part = "metadata"
            per.setdefault(seg, {}).setdefault(part, []).append(line)
        elif subject.startswith(items):
            seg = subject[len(items) : -1]
            per.setdefault(seg, {}).setdefault("metadata", []).append(line)
        elif subject == f"<{bench}>":
            name = _B_PREDICATES.get(predicate) or _header_name(predicate)
            head.setdefault(name, []).append(line)
        else:
            node = subject[len(bench) + 2 : -1].split("/", 1)[0] if subject.startswith(f"<{bench}/") else "other"
            head.setdefault(_B_NODES.get(node, node), []).append(line)
    digests: dict[str, dict[str, bytes]] = {}
    listed = {seg for _, seg in order}
    # Items are linked from the benchmark; one without a position (none in what the mapper
    # writes) comes first, as rdf.ordered_items puts it.
    unplaced = [(0, seg) for seg in per if seg not in listed and f"<{bench}/items/{seg}>" in linked]
    for _, seg in sorted(unplaced + order):
        parts = per.get(seg, {})
        digests[unsegment(seg)] = {p: _lines_digest(parts.get(p)) for p in PARTS}
    return {k: sorted(lines) for k, lines in head.items()}, digests


def _lines_digest(lines: list[str] | None) -> bytes:
    text = "\n".join(sorted(lines)) if lines else ""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _header_name(predicate: str) -> str:
    """A benchmark predicate as the part a diff names: Karenina's properties are one part."""
    iri = predicate[1:-1]
    if iri.startswith(SCHEMA):
        return iri[len(SCHEMA) :]
    # custom_* properties, the system ones (benchmarkFormatVersion, benchmarkType) and their layout
    return "properties" if iri.startswith(KARENINA) else iri


def diff(
    store: GraphStore,
    ref: str,
    old: int | str | None = None,
    new: int | str | None = None,
    *,
    engine: str = "items",
) -> BenchmarkDiff:
    """What changed from version ``old`` (default: the one before ``new``) to version ``new``
    (default: the latest): questions added, removed, and changed with the parts that differ.
    ``engine``: ``"items"`` (the default) reads each version back as Karenina checkpoint items
    (the export's own code) and digests their parts; ``"triples"`` digests each part from one
    dump of each version's graph. The tests hold both to the two files compared directly; the
    second was 1.7-1.9× faster at 2,000 questions in memory but no faster at 10,000 on disk
    (docs/performance.md § Versions), so Karenina's own reading is the default."""
    if engine not in ("triples", "items"):
        raise InvalidValueError(f"diff engine {engine!r}: give 'triples' or 'items'")
    b = find_version(store, ref, new)
    if old is None:
        earlier = [v for v in versions(store, ref) if v.number < b.number]
        if not earlier:
            raise NotFoundError(f"version {b.number} of {b.benchmark} is its first: nothing to compare it with")
        a = earlier[-1]
    else:
        a = find_version(store, ref, old)
    if a.content_hash is not None and a.content_hash == b.content_hash:
        # The same triples (the hash is of the mapped N-Triples): nothing to read back.
        return BenchmarkDiff(benchmark=b.benchmark, old=a.number, new=b.number, added=(), removed=(), changed=())
    sides: list[tuple[dict[str, Any], dict[str, dict[str, bytes]]]] = []
    for v in (a, b):
        source, graph = version_source(store, v)
        if engine == "triples":
            sides.append(_triple_digests(source, v, graph))
        else:
            sides.append((header_parts(_header(store, source, v, graph)), _digests(source, v, graph)))
    (head_a, items_a), (head_b, items_b) = sides
    changed = []
    for qid, parts in items_b.items():
        before = items_a.get(qid)
        if before is not None and before != parts:
            changed.append(QuestionChange(id=qid, parts=tuple(p for p in PARTS if before[p] != parts[p])))
    bench_parts = sorted(k for k in head_a.keys() | head_b.keys() if _digest(head_a.get(k)) != _digest(head_b.get(k)))
    return BenchmarkDiff(
        benchmark=b.benchmark,
        old=a.number,
        new=b.number,
        added=tuple(q for q in items_b if q not in items_a),
        removed=tuple(q for q in items_a if q not in items_b),
        changed=tuple(changed),
        benchmark_parts=tuple(bench_parts),
    )


# -- copying into another store (publish) --------------------------------------------------
def restore_versions(target: GraphStore, bench: str, listed: list[tuple[BenchmarkVersion, bytes | None]]) -> None:
    """Give ``bench`` in ``target`` the versions ``listed`` (oldest first, the live one last,
    as :func:`versions` gives them from another store, with each kept version's triples as
    N-Triples minted under ``target``'s base): same numbers, labels, dates, sources and chain.
    Used by ``publish``, whose store in memory holds what is published."""
    updates = [f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ ?v <{IS_VERSION_OF}> <{bench}> ; ?p ?o }} }}"]
    for v, data in listed:
        moved = v.model_copy(update={"benchmark": bench, "iri": version_iri(bench, v.number)})
        if v.latest:
            updates.append(_write_node(moved, kept=False))
            facts = " . ".join(f"<{bench}> <{p}> {o}" for p, o in _live_facts(moved))
            updates.append(f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{bench}> <{VERSION_NUMBER}> ?n }} }}")
            updates.append(f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{bench}> <{WAS_REVISION_OF}> ?r }} }}")
            updates.append(f"INSERT DATA {{ GRAPH {CATALOG_GRAPH} {{ {facts} }} }}")
            continue
        graph = ox.NamedNode(f"{bench}/graph/{uuid.uuid4().hex[:16]}")
        if target.remote is None:
            found = archive(target, create=True)
            assert found is not None
            found.load(data or b"", format=ox.RdfFormat.N_TRIPLES, to_graph=graph)
        else:
            target.oxigraph.load(data or b"", format=ox.RdfFormat.N_TRIPLES, to_graph=graph)
        updates.append(_write_node(moved.model_copy(update={"graph": graph.value}), kept=True))
    target.oxigraph.update(" ;\n".join(updates))
