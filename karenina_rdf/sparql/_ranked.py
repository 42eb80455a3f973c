"""The ranked side of the full-text index: tantivy (BM25 with block-max pruning) beside the
SQLite FTS5 tables of ``_fulltext``.

Why two: FTS5 computes bm25 for every hit before it can give the best 100, so a common word
costs about a microsecond per hit (60 ms for 16,621 hits at 100k questions on this project's
2-core machine under load, 256 ms for 166,210 hits on a 1M-question index; a FTS5 ``rank``
column measured no faster). tantivy answers the same searches in 0.4 ms and 2.3 ms
(docs/performance.md § Full-text search). SQLite stays what the index is built and kept in step
from: the texts ``search_questions`` reads, positions, stamps. This is a copy of its rows,
keyed by SQLite's row id, rebuilt from SQLite (never from the graphs) when out of step.

Each benchmark's stamp is a document here too, written in the same tantivy commit as its rows,
so a crash between the SQLite commit and this one is seen at the next search (the stamps
differ) and the benchmark is fed again from SQLite. A reader that cannot bring it in step (a
query worker, or a second process holding tantivy's writer lock) ranks with FTS5 instead:
never a wrong answer, only a slower one.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy as tv

TEXT_FIELDS = ("question", "answer", "keywords", "template")
_ANALYZER = "karenina"  # simple tokenizer (runs of letters and digits), lowercase, accents folded
_WRITER_HEAP = 50_000_000  # bytes of tantivy's indexing buffer (its minimum is 15 MB)
_SCHEMA_VERSION = "1"  # a folder written with another schema is rebuilt


@dataclass(frozen=True)
class Part:
    """One part of a query: ``words`` in order (a phrase when more than one), the last one a
    prefix when ``prefix``."""

    words: tuple[str, ...]
    prefix: bool


def _analyzer() -> tv.TextAnalyzer:
    return (
        tv.TextAnalyzerBuilder(tv.Tokenizer.simple())
        .filter(tv.Filter.lowercase())
        .filter(tv.Filter.ascii_fold())
        .build()
    )


def _schema() -> tv.Schema:
    sb = tv.SchemaBuilder()
    for field in TEXT_FIELDS:
        sb.add_text_field(field, tokenizer_name=_ANALYZER, index_option="position")
    sb.add_text_field("bench", tokenizer_name="raw", index_option="basic")  # a benchmark's IRI
    sb.add_integer_field("id", indexed=True, fast=True)  # SQLite's docs.id
    # A stamp document: the benchmark (its IRI) and the stamp its rows were written at.
    sb.add_text_field("stamp_of", tokenizer_name="raw", index_option="basic", stored=True)
    sb.add_text_field("stamp", tokenizer_name="raw", stored=True)
    sb.add_text_field("version", tokenizer_name="raw", stored=True)
    sb.add_text_field("kind", tokenizer_name="raw", index_option="basic")  # "stamp", "version"; none for a question
    return sb.build()


def _reset(w: tv.IndexWriter) -> None:
    """Empty the index and say which schema it is written with."""
    w.delete_all_documents()
    w.add_document(tv.Document(kind="version", version=_SCHEMA_VERSION))


def _count(searcher: tv.Searcher, query: tv.Query) -> int:
    # A limit of 0 panics inside tantivy; its type stubs leave ``count`` out.
    return searcher.search(query, 1, count=True).count or 0  # type: ignore[attr-defined]


class RankerUnavailable(Exception):
    """tantivy could not be opened or written (locked by another process, a damaged folder)."""


class Ranker:
    """The tantivy copy of one store's index; ``path`` None keeps it in memory."""

    def __init__(self, path: Path | None, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.schema = _schema()
        self.analyzer = _analyzer()
        try:
            self.index = self._open()
        except (OSError, ValueError) as exc:
            if read_only or path is None:
                raise RankerUnavailable(str(exc)) from None
            # Derived data: a damaged or foreign folder is made again (from SQLite's rows).
            shutil.rmtree(path, ignore_errors=True)
            try:
                self.index = self._open()
            except (OSError, ValueError) as again:
                raise RankerUnavailable(str(again)) from None
        self.index.register_tokenizer(_ANALYZER, self.analyzer)
        if not read_only and self._version() != _SCHEMA_VERSION:
            self._write(_reset)

    def _open(self) -> tv.Index:
        if self.path is None:
            return tv.Index(self.schema)
        if self.read_only:
            if not tv.Index.exists(str(self.path)):
                raise OSError(f"no ranked index at {self.path}")
            return tv.Index.open(str(self.path))
        self.path.mkdir(parents=True, exist_ok=True)
        return tv.Index(self.schema, path=str(self.path), reuse=True)

    def _searcher(self) -> tv.Searcher:
        self.index.reload()  # another process (the store's) may have committed since
        return self.index.searcher()

    def _version(self) -> str | None:
        searcher = self._searcher()
        found = searcher.search(tv.Query.term_query(self.schema, "kind", "version"), 1).hits
        return searcher.doc(found[0][1])["version"][0] if found else None

    def _write(self, body: Callable[[tv.IndexWriter], None]) -> None:
        """Run ``body(writer)`` and commit: all of it lands or none."""
        if self.read_only:
            raise RankerUnavailable("opened read-only")
        try:
            writer = self.index.writer(heap_size=_WRITER_HEAP, num_threads=1)
        except ValueError as exc:  # another process holds the lock
            raise RankerUnavailable(str(exc)) from None
        try:
            body(writer)
            writer.commit()
            writer.wait_merging_threads()
        except BaseException:
            writer.rollback()
            raise

    # -- keeping in step -----------------------------------------------------------------------
    def stamps(self) -> dict[str, str]:
        searcher = self._searcher()
        query = tv.Query.term_query(self.schema, "kind", "stamp")
        total = _count(searcher, query)
        if not total:
            return {}
        out = {}
        for _, address in searcher.search(query, total).hits:
            doc = searcher.doc(address)
            out[doc["stamp_of"][0]] = doc["stamp"][0]
        return out

    def replace_benchmark(self, bench: str, rows: Iterable[tuple[int, Sequence[str]]], stamp: str) -> None:
        """Every row of ``bench`` again: (SQLite id, the texts of :data:`TEXT_FIELDS`)."""

        def body(w: tv.IndexWriter) -> None:
            w.delete_documents_by_term("bench", bench)
            w.delete_documents_by_term("stamp_of", bench)
            for rowid, texts in rows:
                w.add_document(self._doc(bench, rowid, texts))
            w.add_document(tv.Document(kind="stamp", stamp_of=bench, stamp=stamp))

        self._write(body)

    def update(self, bench: str, rows: Iterable[tuple[int, Sequence[str]]], removed: Iterable[int], stamp: str) -> None:
        def body(w: tv.IndexWriter) -> None:
            for rowid in removed:
                w.delete_documents_by_term("id", rowid)
            for rowid, texts in rows:
                w.delete_documents_by_term("id", rowid)
                w.add_document(self._doc(bench, rowid, texts))
            w.delete_documents_by_term("stamp_of", bench)
            w.add_document(tv.Document(kind="stamp", stamp_of=bench, stamp=stamp))

        self._write(body)

    def drop_benchmark(self, bench: str) -> None:
        def body(w: tv.IndexWriter) -> None:
            w.delete_documents_by_term("bench", bench)
            w.delete_documents_by_term("stamp_of", bench)

        self._write(body)

    @staticmethod
    def _doc(bench: str, rowid: int, texts: Sequence[str]) -> tv.Document:
        doc = tv.Document(bench=bench, id=rowid)
        for field, text in zip(TEXT_FIELDS, texts, strict=True):
            if text:
                doc.add_text(field, text)
        return doc

    # -- searching -----------------------------------------------------------------------------
    def query(
        self, groups: Sequence[Sequence[Part]], fields: Sequence[str], benchmarks: Sequence[str] | None
    ) -> tv.Query:
        """Groups ORed, the parts of a group ANDed, each part in any of ``fields``."""
        either = []
        for group in groups:
            parts = [(tv.Occur.Must, self._part(p, fields)) for p in group]
            either.append((tv.Occur.Should, tv.Query.boolean_query(parts)))
        query = tv.Query.boolean_query(either)
        if benchmarks is not None:
            each = [(tv.Occur.Should, tv.Query.term_query(self.schema, "bench", b)) for b in benchmarks]
            within = tv.Query.boolean_query(each)
            # The benchmark filter scores nothing: the ranking is the words' alone.
            query = tv.Query.boolean_query(
                [(tv.Occur.Must, query), (tv.Occur.Must, tv.Query.const_score_query(within, 0.0))]
            )
        return query

    def _part(self, part: Part, fields: Sequence[str]) -> tv.Query:
        # The query's words go through the analyzer the texts went through (case, accents).
        words: list[str | tuple[int, str]] = [t for w in part.words for t in self.analyzer.analyze(w)]
        options = []
        for field in fields:
            if part.prefix:
                q = tv.Query.phrase_prefix_query(self.schema, field, words)
            elif len(words) == 1:
                q = tv.Query.term_query(self.schema, field, str(words[0]))
            else:
                q = tv.Query.phrase_query(self.schema, field, words)
            options.append((tv.Occur.Should, q))
        return tv.Query.boolean_query(options)

    def search(self, query: tv.Query, limit: int | None, offset: int) -> tuple[int, list[tuple[int, float]]]:
        """(total, [(SQLite id, score)]) best first."""
        searcher = self._searcher()
        total = _count(searcher, query)
        wanted = total - offset if limit is None else min(limit, total - offset)
        if wanted <= 0:
            return total, []
        found = searcher.search(query, wanted, count=False, offset=offset).hits
        ids = searcher.fast_field_values("id", [a for _, a in found])
        return total, [(int(i or 0), float(score)) for (score, _), i in zip(found, ids, strict=True)]
