"""The full-text index of a store: question text, reference answer, keywords and template code
of every stored question, in SQLite FTS5 (``unicode61 remove_diacritics 2``: case- and
accent-insensitive words), with a tantivy copy that ranks (``_ranked``).

The graph stays the one source of truth; this is a derived copy the store keeps in step
(``store._text``): for each benchmark the index records the generation graph and the edit stamp
it was built from, and the catalog holds the same pair; when they differ the benchmark is indexed
again. It lives beside the store (``<store>/text-index.sqlite``), in memory for a memory store.

Loaded in a query worker too (pyoxigraph, tantivy and the standard library): a worker opens the
index read-only and offers :func:`sparql_functions` to its queries. Searches are ranked by the
index's tantivy copy (``_ranked``) when it is in step, by FTS5's bm25 otherwise.

Query syntax (``parse``): words are ANDed; ``word*`` is a prefix; ``"two words"`` a phrase;
``OR`` between two parts takes either. Whatever else the user typed is taken as words: the
FTS5 expression is built from quoted tokens, so no input is an FTS5 syntax error.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from ._ranked import Part, Ranker, RankerUnavailable

INDEX_FILE = "text-index.sqlite"
RANKED_DIR = "text-index.tantivy"  # beside it: the ranked copy (``_ranked``)
FIELDS = ("question", "answer", "keywords", "template")
_SCHEMA_VERSION = "3"
_DOUBLE = ox.NamedNode("http://www.w3.org/2001/XMLSchema#double")
# A token of the query as the user wrote it: a quoted phrase (closing quote optional) or a run of
# anything but spaces and quotes.
_PART = re.compile(r'"([^"]*)"?|([^\s"]+)')
# Letters, digits and marks: the characters unicode61 keeps in a token (its separators are the
# rest); a query word is split where the indexed text was.
_WORD = re.compile(r"[^\W_]+|\d+")


_FTS_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5("
    + ", ".join((*FIELDS, "bench"))
    + ", tokenize = 'unicode61 remove_diacritics 2')"
)
_INSERT_BATCH = 5000  # rows written per executemany (a benchmark's rows are streamed, not all held)
_BM25 = "bm25(fts, 1.0, 1.0, 1.0, 1.0, 0.0)"  # the columns' weights: FIELDS, then bench


def bench_key(bench: str) -> str:
    """The one word standing for a benchmark in the index's ``bench`` column."""
    return "b" + hashlib.sha256(bench.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Row:
    """One question as indexed."""

    bench: str
    question_id: str
    iri: str  # the question node's IRI
    position: int
    question: str
    answer: str
    keywords: str  # the keywords, one per line
    template: str


@dataclass(frozen=True)
class Hit:
    bench: str
    question_id: str
    iri: str
    score: float  # bm25, higher is better (SQLite's bm25 is negated)


@dataclass(frozen=True)
class Hits:
    total: int
    hits: list[Hit]


class SearchSyntaxError(ValueError):
    """A query with nothing to search for (no word in it)."""


def parts(query: str) -> list[list[Part]]:
    """A user's query (see the module docstring) as groups ORed together, the parts of each
    ANDed; raises :class:`SearchSyntaxError` when it holds no word."""
    groups: list[list[Part]] = [[]]
    for m in _PART.finditer(query):
        phrase, word = m.group(1), m.group(2)
        if word == "OR":
            if groups[-1]:
                groups.append([])
            continue
        prefix = word is not None and word.endswith("*")
        words = _WORD.findall(phrase if phrase is not None else word)
        if words:
            # "tumour-suppressor" is two tokens in the index: a phrase of them here.
            groups[-1].append(Part(tuple(words), prefix and phrase is None))
    groups = [g for g in groups if g]
    if not groups:
        # The query is echoed cut short: it comes from a stranger and may be megabytes long.
        shown = repr(query) if len(query) <= 80 else repr(query[:80]) + f"… ({len(query):,} characters)"
        raise SearchSyntaxError(f"nothing to search for in {shown}: give at least one word")
    return groups


def parse(query: str) -> str:
    """The FTS5 expression of a user's query; every token quoted, so no input is an FTS5
    syntax error. FTS5 binds AND tighter than OR, as :func:`parts` groups them."""
    return " OR ".join(
        " ".join('"' + " ".join(p.words) + '"' + ("*" if p.prefix else "") for p in group) for group in parts(query)
    )


class TextIndex:
    """One store's index. ``path`` None: in memory. ``read_only``: a reader (a query worker)."""

    def __init__(self, path: str | Path | None, *, read_only: bool = False) -> None:
        self.path = None if path is None else Path(path)
        self.read_only = read_only
        if self.path is None:
            self.db = sqlite3.connect(":memory:", check_same_thread=False)
        elif read_only:
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.db = sqlite3.connect(str(self.path), check_same_thread=False)
        self.db.execute("PRAGMA busy_timeout = 10000")
        self._vocabulary: tuple[int, list[str]] | None = None  # (_version(), words)
        self._writes = 0
        if not read_only:
            self._create()
        self.ranker: Ranker | None
        try:
            self.ranker = Ranker(None if self.path is None else self.path.with_name(RANKED_DIR), read_only=read_only)
        except RankerUnavailable:
            self.ranker = None  # FTS5 ranks alone: slower, the same hits

    def _create(self) -> None:
        db = self.db
        if self.path is not None:
            # Readers (query workers) never wait for the writer, nor it for them.
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version and str(version) != _SCHEMA_VERSION:
            for table in ("docs", "fts", "state"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
        with db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, bench TEXT NOT NULL,"
                " qid TEXT NOT NULL, iri TEXT NOT NULL UNIQUE, pos INTEGER NOT NULL)"
            )
            db.execute("CREATE INDEX IF NOT EXISTS docs_bench ON docs (bench, qid)")
            db.execute(_FTS_TABLE)
            # What each benchmark was indexed from: its generation graph and edit stamp.
            # ``written``: a token new at every write of the benchmark's rows, which the ranked copy
            # records with its own rows: it shows any SQLite write the copy missed, even one that
            # left the stamp as it was (a rebuilt file) while the row ids changed.
            db.execute(
                "CREATE TABLE IF NOT EXISTS state (bench TEXT PRIMARY KEY, stamp TEXT NOT NULL, written TEXT NOT NULL)"
            )
            db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    # -- keeping in step ---------------------------------------------------------------------
    def stamps(self) -> dict[str, str]:
        """Benchmark IRI → the stamp it was indexed at."""
        return dict(self.db.execute("SELECT bench, stamp FROM state").fetchall())

    def _written(self) -> dict[str, str]:
        """Benchmark IRI → the stamp the ranked copy must hold to be in step."""
        return {b: f"{s} {w}" for b, s, w in self.db.execute("SELECT bench, stamp, written FROM state")}

    def _state(self, bench: str, stamp: str) -> str:
        written = uuid.uuid4().hex
        self.db.execute("INSERT OR REPLACE INTO state VALUES (?, ?, ?)", (bench, stamp, written))
        return f"{stamp} {written}"

    def replace_benchmark(self, bench: str, rows: Iterable[Row], stamp: str) -> int:
        """Index ``bench`` again from ``rows`` (everything it had goes), in one transaction. Rows
        given as a list (an import's, in memory already) go to the ranked copy as they are;
        others (streamed from a graph) are read back from SQLite for it."""
        self._writes += 1
        with self.db:
            self._drop(bench)
            ids = self._insert(rows)
            ranked = self._state(bench, stamp)
        if self.path is not None:
            # A whole benchmark went through the write-ahead log: fold it in and give the space back.
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if isinstance(rows, list):
            fields = [(i, (r.question, r.answer, r.keywords, r.template)) for i, r in zip(ids, rows, strict=True)]
            self._rank(lambda r: r.replace_benchmark(bench, fields, ranked))
        else:
            self._rank(lambda r: r.replace_benchmark(bench, self._ranked_rows(bench), ranked))
        return len(ids)

    def update_questions(self, bench: str, rows: Iterable[Row], removed: Iterable[str], stamp: str) -> None:
        """Replace the questions ``rows`` and drop the questions ``removed`` (IRIs) of ``bench``."""
        rows = list(rows)
        self._writes += 1
        gone: list[int] = []
        with self.db:
            for iri in removed:
                # remove_question moves the later questions up one (positions stay 0..n-1).
                for (pos,) in self.db.execute("SELECT pos FROM docs WHERE iri = ?", (iri,)).fetchall():
                    self.db.execute("UPDATE docs SET pos = pos - 1 WHERE bench = ? AND pos > ?", (bench, pos))
                gone += self._drop_question(iri)
            for iri in (r.iri for r in rows):
                gone += self._drop_question(iri)
            ids = self._insert(rows)
            ranked = self._state(bench, stamp)
        fields = [(i, (r.question, r.answer, r.keywords, r.template)) for i, r in zip(ids, rows, strict=True)]
        self._rank(lambda r: r.update(bench, fields, gone, ranked))

    def drop_benchmark(self, bench: str) -> None:
        self._writes += 1
        with self.db:
            self._drop(bench)
            self.db.execute("DELETE FROM state WHERE bench = ?", (bench,))
        self._rank(lambda r: r.drop_benchmark(bench))

    def rebase(self, old: str, new: str) -> None:
        """Move every key under the IRI ``old`` to ``new``: benchmark and question IRIs, the
        graph IRI a stamp starts with, and the benchmark word of each indexed text, in one
        transaction."""
        self._writes += 1
        under = f"substr(%s, 1, {len(old)}) = ?"
        moved = f"? || substr(%s, {len(old) + 1})"
        with self.db:
            benches = [
                b for (b,) in self.db.execute(f"SELECT DISTINCT bench FROM docs WHERE {under % 'bench'}", (old,))
            ]
            for bench in benches:
                self.db.execute(
                    "UPDATE fts SET bench = ? WHERE rowid IN (SELECT id FROM docs WHERE bench = ?)",
                    (bench_key(new + bench[len(old) :]), bench),
                )
            for table, column in (("docs", "bench"), ("docs", "iri"), ("state", "bench"), ("state", "stamp")):
                self.db.execute(f"UPDATE {table} SET {column} = {moved % column} WHERE {under % column}", (new, old))

    def question_iris(self, bench: str) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT iri FROM docs WHERE bench = ?", (bench,))}

    def _drop(self, bench: str) -> None:
        """Remove ``bench``'s rows (inside the caller's transaction). FTS5 removes a row by
        tokenizing its stored text again (0.85 s of CPU for 20,000 questions, measured): when the
        rows that stay are fewer than those that go (the benchmark alone in the index, or
        replaced beside a smaller one), the text table is made again with the others' rows
        instead, under the same ids (the ranked copy is keyed by them)."""
        db = self.db
        (going,) = db.execute("SELECT count(*) FROM docs WHERE bench = ?", (bench,)).fetchone()
        if not going:
            return
        (rows,) = db.execute("SELECT count(*) FROM docs").fetchone()
        if rows - going >= going:
            db.execute("DELETE FROM fts WHERE rowid IN (SELECT id FROM docs WHERE bench = ?)", (bench,))
            db.execute("DELETE FROM docs WHERE bench = ?", (bench,))
            return
        staying = db.execute(
            f"SELECT fts.rowid, {', '.join(f'fts.{c}' for c in (*FIELDS, 'bench'))} FROM fts"
            " JOIN docs ON docs.id = fts.rowid WHERE docs.bench != ?",
            (bench,),
        ).fetchall()
        db.execute("DELETE FROM docs WHERE bench = ?", (bench,))
        db.execute("DROP TABLE fts")
        db.execute(_FTS_TABLE)
        db.executemany(f"INSERT INTO fts (rowid, {', '.join((*FIELDS, 'bench'))}) VALUES (?, ?, ?, ?, ?, ?)", staying)

    def _drop_question(self, iri: str) -> list[int]:
        found = [i for (i,) in self.db.execute("SELECT id FROM docs WHERE iri = ?", (iri,)).fetchall()]
        for i in found:
            self.db.execute("DELETE FROM fts WHERE rowid = ?", (i,))
            self.db.execute("DELETE FROM docs WHERE id = ?", (i,))
        return found

    def _insert(self, rows: Iterable[Row]) -> list[int]:
        """Insert ``rows`` (inside the caller's transaction, which has dropped any row of the
        same questions); their ids, in order. The ids are given rather than taken from each
        insert, so that each table is written by one ``executemany`` per batch."""
        ids: list[int] = []
        (last,) = self.db.execute("SELECT coalesce(max(id), 0) FROM docs").fetchone()
        keys: dict[str, str] = {}
        batch: list[Row] = []
        for r in rows:
            batch.append(r)
            if len(batch) == _INSERT_BATCH:
                last = self._insert_batch(batch, last, keys, ids)
                batch.clear()
        self._insert_batch(batch, last, keys, ids)
        return ids

    def _insert_batch(self, rows: Sequence[Row], last: int, keys: dict[str, str], ids: list[int]) -> int:
        first = last + 1
        for r in rows:
            if r.bench not in keys:
                keys[r.bench] = bench_key(r.bench)
        self.db.executemany(
            "INSERT OR REPLACE INTO docs (id, bench, qid, iri, pos) VALUES (?, ?, ?, ?, ?)",
            [(n, r.bench, r.question_id, r.iri, r.position) for n, r in enumerate(rows, start=first)],
        )
        self.db.executemany(
            "INSERT INTO fts (rowid, question, answer, keywords, template, bench) VALUES (?, ?, ?, ?, ?, ?)",
            [(n, r.question, r.answer, r.keywords, r.template, keys[r.bench]) for n, r in enumerate(rows, start=first)],
        )
        ids.extend(range(first, first + len(rows)))
        return last + len(rows)

    # -- the ranked copy (``_ranked``) ------------------------------------------------------------
    def _rank(self, write: Any) -> None:
        """Write to the ranked copy after SQLite committed; when it cannot be written (another
        process holds its lock) its stamp stays old and :meth:`ranked` feeds it again later."""
        if self.ranker is not None and not self.read_only:
            with contextlib.suppress(RankerUnavailable):
                write(self.ranker)

    def _ranked_rows(self, bench: str) -> Iterator[tuple[int, tuple[str, ...]]]:
        rows = self.db.execute(
            "SELECT docs.id, fts.question, fts.answer, fts.keywords, fts.template FROM docs"
            " JOIN fts ON fts.rowid = docs.id WHERE docs.bench = ?",
            (bench,),
        )
        for i, *texts in rows:
            yield i, tuple(texts)

    def ranked(self) -> Ranker | None:
        """The ranked copy, brought in step with SQLite's rows first; None when it is not and
        cannot be (read-only, locked, unavailable): then FTS5 ranks."""
        if self.ranker is None:
            return None
        try:
            mine, theirs = self._written(), self.ranker.stamps()
            if mine == theirs:
                return self.ranker
            if self.read_only:
                return None
            for bench in theirs.keys() - mine.keys():
                self.ranker.drop_benchmark(bench)
            for bench, stamp in mine.items():
                if theirs.get(bench) != stamp:
                    self.ranker.replace_benchmark(bench, self._ranked_rows(bench), stamp)
        except RankerUnavailable:
            return None
        return self.ranker

    # -- searching -----------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        benchmarks: Sequence[str] | None = None,
        fields: Sequence[str] | None = None,
        limit: int | None = 100,
        offset: int = 0,
    ) -> Hits:
        """The questions matching ``query`` (user syntax, see :func:`parse`), best first (BM25),
        with the total count; ``fields`` limits the match to some of :data:`FIELDS`."""
        groups = parts(query)
        expression = parse(query)
        unknown = [f for f in fields or () if f not in FIELDS]
        if unknown:
            raise SearchSyntaxError(f"unknown field {unknown[0]!r}: the fields are {', '.join(FIELDS)}")
        if benchmarks is not None and not benchmarks:
            return Hits(0, [])
        ranker = self.ranked()
        if ranker is not None:
            total, found = ranker.search(ranker.query(groups, fields or FIELDS, benchmarks), limit, offset)
            docs = self._docs([i for i, _ in found])
            return Hits(total, [Hit(*docs[i], score) for i, score in found if i in docs])
        # Always a column filter: never the bench column ("b*" would match every question there).
        expression = "{" + " ".join(fields or FIELDS) + "} : (" + expression + ")"
        if benchmarks is not None:
            # The benchmark is a word of its own column: the index intersects, no row is joined.
            keys = " OR ".join(f'"{bench_key(b)}"' for b in benchmarks)
            expression = f"({expression}) AND {{bench}} : ({keys})"
        try:
            # Ranked on the index alone, then the page joined. bm25 of every hit is the cost; the
            # bench column weighs nothing in it.
            total = self.db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", [expression]).fetchone()[0]
            page = self.db.execute(
                f"SELECT docs.bench, docs.qid, docs.iri, r.s FROM (SELECT rowid AS id, {_BM25} AS s FROM fts"
                " WHERE fts MATCH ? ORDER BY s, rowid LIMIT ? OFFSET ?) AS r CROSS JOIN docs ON docs.id = r.id"
                " ORDER BY r.s, r.id",
                [expression, -1 if limit is None else limit, offset],
            ).fetchall()
        except sqlite3.OperationalError as exc:  # parse() quotes every token: not expected
            raise SearchSyntaxError(f"cannot search for {query!r}: {exc}") from None
        return Hits(total, [Hit(b, q, i, -s) for b, q, i, s in page])

    def scores(self, query: str) -> dict[str, float]:
        """Question IRI → score of every question matching ``query`` (the scores
        :meth:`search` ranks by)."""
        ranker = self.ranked()
        if ranker is not None:
            _, found = ranker.search(ranker.query(parts(query), FIELDS, None), None, 0)
            docs = self._docs([i for i, _ in found])
            return {docs[i][2]: score for i, score in found if i in docs}
        sql = f"SELECT docs.iri, {_BM25} FROM fts CROSS JOIN docs ON docs.id = fts.rowid WHERE fts MATCH ?"
        rows = self.db.execute(sql, ["{" + " ".join(FIELDS) + "} : (" + parse(query) + ")"])
        return {iri: -score for iri, score in rows}

    def _docs(self, ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
        """SQLite id → (benchmark, question id, question IRI)."""
        out: dict[int, tuple[str, str, str]] = {}
        for start in range(0, len(ids), 5000):
            chunk = ids[start : start + 5000]
            rows = self.db.execute(
                f"SELECT id, bench, qid, iri FROM docs WHERE id IN ({', '.join('?' * len(chunk))})", chunk
            )
            out.update((i, (b, q, iri)) for i, b, q, iri in rows)
        return out

    def texts(self, bench: str, columns: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
        """(question id, the ``columns`` texts) of every question of ``bench``, in benchmark order."""
        cols = ", ".join(f"fts.{c}" for c in columns)
        rows = self.db.execute(
            f"SELECT docs.qid, {cols} FROM docs JOIN fts ON fts.rowid = docs.id WHERE docs.bench = ?"
            " ORDER BY docs.pos, docs.id",
            (bench,),
        )
        for qid, *values in rows:
            yield qid, values

    def texts_of(self, bench: str, columns: Sequence[str], qids: Sequence[str]) -> list[tuple[str, list[str]]]:
        """As :meth:`texts`, for the questions ``qids`` only."""
        cols = ", ".join(f"fts.{c}" for c in columns)
        found: list[tuple[int, int, str, list[str]]] = []
        for start in range(0, len(qids), 500):
            chunk = qids[start : start + 500]
            rows = self.db.execute(
                f"SELECT docs.pos, docs.id, docs.qid, {cols} FROM docs JOIN fts ON fts.rowid = docs.id"
                f" WHERE docs.bench = ? AND docs.qid IN ({', '.join('?' * len(chunk))})",
                (bench, *chunk),
            )
            found.extend((pos, i, qid, values) for pos, i, qid, *values in rows)
        found.sort(key=lambda r: (r[0], r[1]))  # the benchmark's order, as texts() gives it
        return [(qid, values) for _, _, qid, values in found]

    def matching_ids(self, bench: str, expression: str, columns: Sequence[str]) -> set[str]:
        """Question ids of ``bench`` whose ``columns`` match an FTS5 ``expression``."""
        rows = self.db.execute(
            "SELECT docs.qid FROM fts CROSS JOIN docs ON docs.id = fts.rowid WHERE fts MATCH ?",
            ("{" + " ".join(columns) + "} : (" + expression + f') AND {{bench}} : "{bench_key(bench)}"',),
        )
        return {r[0] for r in rows}

    def vocabulary_containing(self, needle: str, limit: int) -> list[str] | None:
        """The indexed words containing ``needle`` (lowercase ASCII), or None past ``limit``.
        The vocabulary is read once (fts5vocab reads the whole index: 0.5 s at 100k questions)
        and kept until the index changes."""
        version = self._version()
        if self._vocabulary is None or self._vocabulary[0] != version:
            self.db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, row)")
            self._vocabulary = (version, [r[0] for r in self.db.execute("SELECT term FROM temp.vocab")])
        words = []
        for word in self._vocabulary[1]:
            if needle in word:
                words.append(word)
                if len(words) > limit:
                    return None
        return words

    def _version(self) -> int:
        # data_version changes with another connection's commits, _writes with this one's.
        return int(self.db.execute("PRAGMA data_version").fetchone()[0]) * 1_000_000 + self._writes


def sparql_functions(index: TextIndex | None, score_iri: str, match_iri: str) -> dict[ox.NamedNode, Any]:
    """``karenina:textScore(?q, "query")`` (``score_iri``: the bm25 score of question ``?q``,
    unbound when it does not match) and ``karenina:textMatch(?q, "query")`` (``match_iri``: a
    boolean) for pyoxigraph's ``custom_functions``; the IRIs come from the caller (the
    vocabulary is ``rdf``'s, which a worker cannot import). The index is asked once per query
    text and evaluation; each row is then a dictionary lookup."""
    cache: dict[str, Mapping[str, float]] = {}

    def scores(query: Any) -> Mapping[str, float]:
        text = query.value if isinstance(query, ox.Literal) else None
        if text is None:
            return {}
        if text not in cache:
            if index is None:
                raise ValueError("this store has no full-text index")
            try:
                cache[text] = index.scores(text)
            except SearchSyntaxError:
                cache[text] = {}
        return cache[text]

    def score(question: Any, query: Any) -> ox.Literal | None:
        found = scores(query).get(question.value) if isinstance(question, ox.NamedNode) else None
        return None if found is None else ox.Literal(repr(found), datatype=_DOUBLE)

    def match(question: Any, query: Any) -> ox.Literal:
        hit = isinstance(question, ox.NamedNode) and question.value in scores(query)
        return ox.Literal("true" if hit else "false", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#boolean"))

    return {ox.NamedNode(score_iri): score, ox.NamedNode(match_iri): match}
