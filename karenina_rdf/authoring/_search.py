"""How ``Benchmark.search_questions`` finds its hits: with the store's full-text index.

Karenina's semantics are kept exactly: a question matches when each term (all of them, or any
with ``match_all=False``) is a substring of its fields' texts joined by a space (case-folded with
``str.lower`` unless ``case_sensitive``), or a regular expression found in them (``re.search``;
an invalid pattern matches nothing). The index holds those texts (question, reference answer,
template code), so nothing is read from the graph to decide; it also narrows the candidates
by the runs of ASCII letters and digits in a term: a text containing the term has, for each run,
an indexed word containing it, so the candidates are the questions having, for each run, one of
the vocabulary's words that contain it (SQLite folds case and accents as ``str.lower`` does for
these characters). Every candidate is then checked with Karenina's own test. Fields the index
does not hold (keywords, whose text Karenina matches as a Python list's repr, author, ids …) are
searched by the caller the old way, reading every question.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from karenina_rdf.sparql import TextIndex

if TYPE_CHECKING:
    from ._core import BenchmarkCore

# Karenina's field name → the index column holding the same text.
COLUMNS = {"question": "question", "raw_answer": "answer", "answer_template": "template"}
_WORD = re.compile(r"[A-Za-z0-9]+")
_MAX_WORDS = 2000  # vocabulary words a term may expand to before it is checked by a scan


def matches(text: str, term: str, case_sensitive: bool, regex: bool) -> bool:
    """Karenina's test of one term (``QuestionQueryBuilder._matches_search``)."""
    if regex:
        try:
            return re.search(term, text, 0 if case_sensitive else re.IGNORECASE) is not None
        except re.error:
            return False
    return term in text if case_sensitive else term.lower() in text.lower()


def search_hits(
    bench: BenchmarkCore,
    terms: Sequence[str],
    match_all: bool,
    fields: Sequence[str] | None,
    case_sensitive: bool,
    regex: bool,
) -> list[str] | None:
    """The ids of the questions ``search_questions`` returns, in benchmark order; None when a
    field is not in the index (the caller reads every question instead)."""
    fields = list(fields) if fields is not None else ["question"]
    if any(f not in COLUMNS for f in fields):
        return None
    columns = [COLUMNS[f] for f in dict.fromkeys(fields)]
    text = bench.store.fulltext
    with text.lock:
        text.sync()
        index = text.index
        candidates = None if regex else _candidates(bench.iri, index, terms, match_all, columns)
        rows = _rows(index, bench.iri, columns, candidates)
        out = []
        for qid, values in rows:
            by_column = dict(zip(columns, values, strict=True))
            joined = " ".join(t for t in (by_column[COLUMNS[f]] for f in fields) if t)
            hits = (matches(joined, term, case_sensitive, regex) for term in terms)
            if all(hits) if match_all else any(hits):
                out.append(qid)
        return out


def _candidates(
    bench: str, index: TextIndex, terms: Sequence[str], match_all: bool, columns: list[str]
) -> set[str] | None:
    """A superset of the questions matching, or None when the terms do not narrow it."""
    found: list[set[str]] = []
    for term in terms:
        # Each run of ASCII letters and digits of the term lies inside one word of any text that
        # contains the term, and that word, folded, contains the run lowercased.
        narrowed = []
        for run in _WORD.findall(term):
            words = index.vocabulary_containing(run.lower(), _MAX_WORDS)
            if words is not None:
                expression = " OR ".join(f'"{w}"' for w in words)
                narrowed.append(index.matching_ids(bench, expression, columns) if words else set())
        if narrowed:
            found.append(set.intersection(*narrowed))
        elif not match_all:
            return None  # one term the index cannot narrow: any question may match
    if not found:
        return None
    return set.intersection(*found) if match_all else set.union(*found)


def _rows(
    index: TextIndex, bench: str, columns: list[str], candidates: set[str] | None
) -> Iterator[tuple[str, list[str]]]:
    if candidates is None:
        yield from index.texts(bench, columns)
        return
    yield from index.texts_of(bench, columns, sorted(candidates))
