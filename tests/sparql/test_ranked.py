"""The ranked copy of the full-text index (sparql/_ranked.py, tantivy): it finds what FTS5
finds, it is the one that ranks when in step, and whatever keeps it from being written or
read (a lock, a crash between the two commits, a damaged folder) costs speed, never answers."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store
from karenina_rdf.sparql import TextIndex
from karenina_rdf.sparql._fulltext import RANKED_DIR
from karenina_rdf.sparql._ranked import Ranker, RankerUnavailable

from .test_fulltext import _edit_text, _filled

# Every search of test_fulltext.test_search's table, plus orders and pages.
SEARCHES: list[tuple[str, dict[str, Any]]] = [
    ("tumour", {}),
    ("TUMOUR", {}),
    ("tum*", {}),
    ("tum", {}),
    ('"tumour suppressor"', {}),
    ('"suppressor tumour"', {}),
    ("meniere", {}),
    ("MÉNIÈRE", {}),
    ("caffeine adenosine", {}),
    ("caffeine imatinib", {}),
    ("caffeine OR imatinib", {}),
    ("kinase caffeine OR genome", {}),  # AND binds tighter than OR, as in FTS5
    ("genome", {}),
    ("otology", {}),
    ("names_target", {}),
    ('"tumour sup"*', {}),  # a phrase whose last word is a prefix
    ("kinase", {"fields": ["question"]}),
    ("kinase", {"fields": ["answer"]}),
    ("kinases", {"fields": ["keywords"]}),
    ("target", {"fields": ["template"]}),
    ("kinase", {"benchmarks": ["Search test"]}),
    ("kinase OR tumour OR adenosine OR genome", {"limit": 2, "offset": 1}),
    ("zzz", {}),
]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return _filled(Store(tmp_path / "store"))


def _found(store: Store, query: str, **kwargs: Any) -> tuple[int, set[str]]:
    hits = store.search_text(query, **kwargs)
    return hits.total, {h.question_id for h in hits.hits}


def _fts5_alone(store: Store, query: str, **kwargs: Any) -> tuple[int, set[str]]:
    index = store.fulltext.index
    ranker, index.ranker = index.ranker, None
    try:
        return _found(store, query, **kwargs)
    finally:
        index.ranker = ranker


@pytest.mark.parametrize(("query", "kwargs"), SEARCHES)
def test_finds_what_fts5_finds(store: Store, query: str, kwargs: dict[str, Any]) -> None:
    fts5 = _fts5_alone(store, query, **kwargs)
    assert store.fulltext.index.ranked() is store.fulltext.index.ranker is not None  # it ranks
    ranked = _found(store, query, **kwargs)
    if "limit" in kwargs:  # a page: the same total; which hits depends on each engine's order
        assert ranked[0] == fts5[0] and len(ranked[1]) == len(fts5[1])
    else:
        assert ranked == fts5


def test_scores_are_the_search_order(store: Store) -> None:
    hits = store.search_text("kinase OR adenosine").hits
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert store.fulltext.scores("kinase OR adenosine") == {h.iri: h.score for h in hits}


def _in_step(store: Store) -> bool:
    index = store.fulltext.index
    assert index.ranker is not None
    return index._written() == index.ranker.stamps()


def test_a_write_the_copy_missed_is_fed_from_sqlite(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SQLite commit landed, the tantivy one did not (a crash, a lock): the stamps differ,
    the next search feeds the copy from SQLite's rows, without reading the graphs."""
    store.search_text("kinase")

    def refuse(*args: Any) -> None:
        raise RankerUnavailable("locked")

    monkeypatch.setattr(Ranker, "update", refuse)
    _edit_text(store)
    monkeypatch.undo()
    assert not _in_step(store)
    graph_reads: list[Any] = []
    monkeypatch.setattr(type(store.fulltext), "rows", lambda *a, **k: graph_reads.append(a) or iter(()))
    assert _found(store, "phosphatase") == (1, {"q-kinase2"})
    assert _in_step(store) and graph_reads == []


def test_locked_by_another_writer_answers_with_fts5(store: Store) -> None:
    store.search_text("kinase")
    ranker = store.fulltext.index.ranker
    assert ranker is not None
    other = ranker.index.writer(heap_size=15_000_000, num_threads=1)  # holds tantivy's lock
    try:
        _edit_text(store)  # SQLite takes it; the copy cannot
        assert not _in_step(store)
        assert store.fulltext.index.ranked() is None
        assert _found(store, "phosphatase") == (1, {"q-kinase2"})
        assert _found(store, "kinase") == (1, {"q-kinase"})
    finally:
        other.rollback()
        del other
    assert _found(store, "phosphatase") == (1, {"q-kinase2"})
    assert _in_step(store)


@pytest.mark.parametrize("damage", ["delete the folder", "garbage in the folder", "another schema"])
def test_folder_damaged_between_opens(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "store"
    with _filled(Store(path)) as store:
        assert store.search_text("kinase").total == 2
    folder = path / RANKED_DIR
    if damage == "delete the folder":
        shutil.rmtree(folder)
    elif damage == "garbage in the folder":
        for f in folder.iterdir():
            if f.is_file():
                f.write_bytes(b"not an index" * 10)
    else:
        ranker = Ranker(folder)
        ranker._write(lambda w: (w.delete_all_documents(), None)[1])  # no schema version: an older layout
        ranker.index.reload()
        del ranker
    with Store(path) as store:
        assert _found(store, "kinase") == (2, {"q-kinase", "q-kinase2"})
        assert store.fulltext.index.ranked() is not None and _in_step(store)


def test_rebuilt_sqlite_with_the_same_stamps_is_not_mistaken(tmp_path: Path) -> None:
    """SQLite's file made again (same catalog stamps, new row ids) while the copy could not be
    written: the copy's token is old, so its ids are never read against the new rows."""
    path = tmp_path / "store"
    with _filled(Store(path)) as store:
        store.search_text("kinase")
        Benchmark.create("Before", "d", store=store).add_question("An unrelated kinase question?", "x")
        store.search_text("kinase")
    with Store(path) as store:
        index = store.fulltext.index
        before = index.ranker.stamps() if index.ranker else {}
        ranker, index.ranker = index.ranker, None  # as if the copy were locked while SQLite is rebuilt
        index.db.execute("DELETE FROM state")
        index.db.commit()
        store.fulltext.sync()
        index.ranker = ranker
        assert ranker is not None and ranker.stamps() == before  # stale, though the stamps look alike
        assert index._written() != before
        assert _found(store, "kinase") == _fts5_alone(store, "kinase")


def test_read_only_reader_ranks_when_in_step(store: Store) -> None:
    store.search_text("kinase")
    assert store.fulltext.path is not None
    reader = TextIndex(store.fulltext.path, read_only=True)
    assert reader.ranked() is not None
    assert reader.search("kinase").total == 2
    assert reader.scores("kinase") == store.fulltext.scores("kinase")
    reader.close()


def test_memory_store_ranks_in_memory() -> None:
    store = _filled(Store.memory())
    assert store.search_text("tumour").total == 2
    assert store.fulltext.index.ranked() is not None
    assert store.fulltext.index.ranker is not None and store.fulltext.index.ranker.path is None
