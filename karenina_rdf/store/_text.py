"""Keeping a store's full-text index (``sparql._fulltext``) in step with its graphs.

The catalog says, for each benchmark, which generation graph is live and (``karenina:textStamp``)
a stamp every in-place edit changes in the same SPARQL update as the edit itself. The index keeps
the pair it was built from. Before any search the two are compared: a benchmark imported,
replaced, deleted, or edited by a process that did not update the index (one that crashed between
its update and the index's, or a raw SPARQL update) no longer matches and is indexed again from
its graph; the others are left alone.

The writes keep it in step themselves, so that the next search reads nothing back: an import
indexes its questions from the texts its mapper collected, once the catalog's update that
publishes it has committed (:meth:`TextSync.imported`: reading 100k questions back out of
pyoxigraph on disk took 46 s, writing the index from the rows in hand 8 s of CPU); a delete
drops the benchmark's rows (:meth:`TextSync.deleted`); an edit through the authoring API updates
the questions it touched (:meth:`TextSync.edited`).

An on-disk store keeps the index in ``<store>/text-index.sqlite``; a memory store and a store on a
SPARQL server keep it in memory, built from the graphs on the first search (on a server, over
HTTP: every client has its own copy, and the stamps on the server tell each one what changed) and
kept in step by the writes from then on.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from karenina_rdf._errors import InvalidValueError
from karenina_rdf.checkpoint import QuestionText
from karenina_rdf.rdf import CATALOG_GRAPH, DATA_FEED_ELEMENT, KAR, PREFIXES, question_iri, term_value
from karenina_rdf.sparql import INDEX_FILE, Hits, Row, SearchSyntaxError, TextIndex

if TYPE_CHECKING:
    from ._store import GraphStore

STAMP = KAR.textStamp
# What writing the index can raise (SQLite, the disk, tantivy) once the write it follows committed.
_INDEX_ERRORS = (sqlite3.Error, OSError, ValueError)
# The keywords come back joined by a control character no keyword is expected to hold, and are
# then split, sorted and joined by newlines (keywords_text): GROUP_CONCAT's order is the engine's
# (by stored term), which an import's own rows could not reproduce.
_KEYWORD_SEPARATOR = "\x1f"
_ROWS = """SELECT ?q ?id ?pos ?text ?answer ?code (GROUP_CONCAT(?kw; separator="\\u001F") AS ?kws) WHERE {
  ?i schema:item ?q ; karenina:position ?pos .
  ?q schema:isPartOf <%(bench)s> ; schema:identifier ?id ; schema:text ?text .
  %(only)s
  OPTIONAL { ?q schema:acceptedAnswer/schema:text ?answer }
  OPTIONAL { ?q schema:hasPart/schema:text ?code }
  OPTIONAL { ?q schema:keywords ?kw }
} GROUP BY ?q ?id ?pos ?text ?answer ?code"""


class TextSync:
    """The full-text index of one :class:`GraphStore` and what keeps it in step."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self.lock = threading.RLock()  # the endpoint's threads share one SQLite connection
        self._index: TextIndex | None = None

    @property
    def index(self) -> TextIndex:
        if self._index is None:
            path = None if self.store.path is None else self.store.path / INDEX_FILE
            try:
                self._index = TextIndex(path)
            except sqlite3.DatabaseError:
                if path is None:
                    raise
                # Not an index (a torn or foreign file): derived data, made again from the graphs.
                for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                    leftover.unlink(missing_ok=True)
                self._index = TextIndex(path)
        return self._index

    @property
    def path(self) -> str | None:
        """The index file (absolute), for readers in other processes; None when in memory."""
        return None if self.store.path is None else str((self.store.path / INDEX_FILE).absolute())

    def needs_index(self, sparql: str) -> bool:
        """Whether ``worker_spec(sparql)`` has anything to do (it may bring the index in step
        first, which can take seconds): the endpoint then prepares the query on a thread."""
        return calls_text_functions(sparql) and self.path is not None

    def worker_spec(self, sparql: str) -> dict[str, str] | None:
        """For a query worker process (``sparql._worker``) running ``sparql``: where the index is
        and the functions' IRIs, with the index brought in step first; None when the query
        calls no full-text function."""
        if not calls_text_functions(sparql) or self.path is None:
            return None
        self.sync()
        return {"path": self.path, "score": KAR.textScore, "match": KAR.textMatch}

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    # -- stamps ----------------------------------------------------------------------------
    def stamps(self) -> dict[str, str]:
        """Benchmark IRI → its stamp as the store has it: live graph and edit stamp."""
        ox_store = self.store.oxigraph
        edits = {
            term_value(q.subject): term_value(q.object)
            for q in ox_store.quads_for_pattern(None, ox.NamedNode(STAMP), None, CATALOG_GRAPH)
        }
        live = self.store.catalog.benchmarks()
        return {bench: f"{graph.value} {edits.get(bench, '')}" for bench, graph in live.items()}

    def bump(self, bench: str) -> tuple[str, str]:
        """(new stamp, the SPARQL update that writes it): run in the same update as an edit."""
        edit = uuid.uuid4().hex
        graph = self.store.catalog.benchmarks()[bench]
        fact = f"GRAPH {CATALOG_GRAPH} {{ <{bench}> <{STAMP}> ?s }}"
        update = (
            f"DELETE {{ {fact} }} INSERT {{ GRAPH {CATALOG_GRAPH} {{ <{bench}> <{STAMP}> {ox.Literal(edit)} }} }}"
            f" WHERE {{ OPTIONAL {{ {fact} }} }}"
        )
        return f"{graph.value} {edit}", update

    def invalidate_all(self) -> None:
        """Change every benchmark's stamp (before a raw SPARQL update that may touch any text):
        each one is indexed again at the next search."""
        benches = list(self.store.catalog.benchmarks())
        if benches:
            self.store.oxigraph.update(" ;\n".join(self.bump(b)[1] for b in benches))

    def rebased(self, old: str, new: str) -> None:
        """The store's base moved from ``old`` to ``new``: so do the index's keys (benchmark and
        question IRIs, and the graph IRI in each stamp), without indexing anything again."""
        with self.lock:
            if self._index is None and self.store.path is None:
                return  # built in memory at the first search: nothing yet
            self.index.rebase(old, new)

    # -- keeping in step -------------------------------------------------------------------
    def sync(self) -> None:
        """Index again every benchmark whose stamp differs; forget the ones no longer stored."""
        with self.lock:
            index = self.index
            current, indexed = self.stamps(), index.stamps()
            for bench in indexed.keys() - current.keys():
                index.drop_benchmark(bench)
            for bench, stamp in current.items():
                if indexed.get(bench) != stamp:
                    index.replace_benchmark(bench, self.rows(bench), stamp)
            index.ranked()  # the ranked copy follows SQLite's rows (a reader cannot do it itself)

    def built(self) -> bool:
        """Whether there is an index to keep in step: on disk, its file; in memory, one built by
        an earlier search (otherwise the first search builds it from the graphs)."""
        if self._index is not None:
            return True
        return self.store.path is not None and (self.store.path / INDEX_FILE).is_file()

    def indexes_imports(self) -> bool:
        """Whether :meth:`imported` would index an import now: on disk always, in memory once a
        search built the index (an import collects its texts only then)."""
        return self.store.path is not None or self._index is not None

    def imported(self, bench: str, graph: ox.NamedNode, texts: Iterable[QuestionText]) -> bool:
        """After an import made ``graph`` the live generation of ``bench`` (the catalog's update
        committed): index its questions from the texts the mapper collected, with no read of the
        graph, and record the stamp the catalog now holds. Returns whether it did.

        Only after the commit: an import that fails or crashes before it leaves the index as it
        was, and a crash between the commit and this write leaves it out of step (its stamp names
        the replaced generation, or none), so the next search indexes the benchmark from the
        graph. On disk the index is written (created if missing: the next search has nothing to
        read back); in memory (a memory store, a store on a server) only when a search already
        built it: otherwise the first search builds it from the graphs anyway."""
        with self.lock:
            if not self.indexes_imports():
                return False
            stamp = self.stamps().get(bench)
            if stamp != f"{graph.value} ":
                return False  # not live, or edited since: the next search reads the graph
            try:
                # A list: the ranked copy takes the same rows, not a read back from SQLite.
                self.index.replace_benchmark(bench, list(import_rows(bench, texts)), stamp)
            except _INDEX_ERRORS:
                # The import is committed: it must not be reported as failed for its derived copy.
                # The index's transaction rolled back, its stamp is the old one: out of step, so
                # the next search indexes the benchmark from the graph.
                return False
            return True

    def deleted(self, bench: str) -> None:
        """After ``bench`` was unpublished (deleted): its rows leave the index now rather than at
        the next search."""
        with self.lock:
            if self.built() and bench not in self.store.catalog.benchmarks() and bench in self.index.stamps():
                # The delete is committed; a failure here leaves rows the next search drops.
                with contextlib.suppress(*_INDEX_ERRORS):
                    self.index.drop_benchmark(bench)

    def edited(self, bench: str, old: str | None, new: str, question_ids: Iterable[str] | None) -> None:
        """After an edit of ``bench`` (its stamp ``old`` → ``new``): index the questions it
        touched (``question_ids``; None: find which questions appeared or went). Nothing is
        done when the index was not in step before the edit: the next search rebuilds it."""
        with self.lock:
            index = self.index
            if index.stamps().get(bench) != old:
                return
            if question_ids is None:
                # Items and questions share their id segment (rdf._ids): the item list, read
                # from the store's index, tells which questions there are without a query.
                items, questions = bench + "/items/", bench + "/questions/"
                graph = self.store.catalog.benchmarks()[bench]
                found = self.store.oxigraph.quads_for_pattern(
                    ox.NamedNode(bench), ox.NamedNode(DATA_FEED_ELEMENT), None, graph
                )
                listed = (term_value(q.object) for q in found)
                stored = {questions + i[len(items) :] for i in listed if i.startswith(items)}
                indexed = index.question_iris(bench)
                removed, touched = indexed - stored, stored - indexed
            else:
                touched = {question_iri(bench, qid) for qid in question_ids}
                removed = set()
            rows = list(self.rows(bench, touched)) if touched else []
            removed |= touched - {r.iri for r in rows}
            index.update_questions(bench, rows, removed, new)

    def rows(self, bench: str, only: Iterable[str] | None = None) -> Iterator[Row]:
        """The index rows of ``bench`` (all, or the questions whose IRIs are ``only``), read from
        its graph."""
        restrict = ""
        if only is not None:
            restrict = f"VALUES ?q {{ {' '.join(str(ox.NamedNode(i)) for i in only)} }}"
        for r in self._select(_ROWS % {"bench": bench, "only": restrict}, bench):
            yield Row(
                bench=bench,
                question_id=_text(r["id"]),
                iri=term_value(r["q"]),
                position=int(_text(r["pos"]) or 0),
                question=_text(r["text"]),
                answer=_text(r["answer"]),
                keywords=keywords_text([_text(r["kws"])]),  # keywords_text splits the joined keywords
                template=_text(r["code"]),
            )

    def _select(self, sparql: str, bench: str) -> Any:
        graph = self.store.catalog.benchmarks()[bench]
        return self.store.oxigraph.query(sparql, prefixes=dict(PREFIXES), default_graph=graph)

    # -- searching ---------------------------------------------------------------------------
    def scores(self, query: str) -> dict[str, float]:
        """Question IRI → bm25 score (higher is better) of every question matching ``query``."""
        with self.lock:
            self.sync()
            try:
                return self.index.scores(query)
            except SearchSyntaxError as exc:
                raise InvalidValueError(str(exc)) from None

    def search(
        self,
        query: str,
        *,
        benchmarks: Sequence[str] | None = None,
        fields: Sequence[str] | None = None,
        limit: int | None = 100,
        offset: int = 0,
    ) -> Hits:
        with self.lock:
            self.sync()
            return self.index.search(query, benchmarks=benchmarks, fields=fields, limit=limit, offset=offset)


def keywords_text(keywords: Iterable[str]) -> str:
    """A question's keywords as the index holds them: distinct, sorted, one per line. The same
    from the graph (:meth:`TextSync.rows`) and from an import's own values (:func:`import_rows`)."""
    return "\n".join(sorted({part for k in keywords for part in k.split(_KEYWORD_SEPARATOR)}))


def import_rows(bench: str, texts: Iterable[QuestionText]) -> Iterator[Row]:
    """The index rows of a benchmark from the texts its import mapped: the rows
    :meth:`TextSync.rows` reads back from the graph the import wrote, without reading it."""
    for t in texts:
        yield Row(
            bench=bench,
            question_id=t.question_id,
            iri=t.iri,
            position=t.position,
            question=t.question,
            answer=t.answer,
            keywords=keywords_text(t.keywords),
            template=t.template,
        )


def calls_text_functions(sparql: str) -> bool:
    return "textScore" in sparql or "textMatch" in sparql


def _text(term: Any) -> str:
    return "" if term is None else str(term.value)
