"""The full-text index kept in step AT IMPORT (store/_text.py ``TextSync.imported``/``deleted``):
an import indexes its questions from the texts it mapped, a delete drops them, and the next search
reads nothing back from the graph. The index an import writes must equal the one built from the
graph it wrote, and a crash on either side of the catalog's commit must leave the index untouched
or out of step (then rebuilt), never claiming a generation that is not live."""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from karenina_rdf import Store
from karenina_rdf.sparql import TextIndex
from karenina_rdf.sparql._ranked import Ranker
from karenina_rdf.store._text import TextSync
from tests.conftest import EXAMPLES, NOT_CHECKPOINTS, ROOT, corpus_params
from tests.helpers.bench_scripts import benchmark_script

Rows = list[tuple[str, str, int, str, str, str, str]]


def _generator() -> ModuleType:
    return benchmark_script("generate")


def _item(qid: str | None, text: str, answer: str, **extra: Any) -> dict[str, Any]:
    question: dict[str, Any] = {
        "@type": "Question",
        "text": text,
        "acceptedAnswer": {"@type": "Answer", "text": answer},
    }
    question.update(extra.pop("question", {}))
    item: dict[str, Any] = {
        "@type": "DataFeedItem",
        "dateCreated": "2026-01-01T00:00:00",
        "dateModified": "2026-01-01T00:00:00",
        "item": question,
        **extra,
    }
    if qid is not None:
        item["@id"] = qid
    return item


TEMPLATE = "class Answer(BaseAnswer):\n    gene: str = Field(description='the gene named')\n"


def _doc(name: str, items: list[dict[str, Any]], bench_id: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "@context": {"@vocab": "http://schema.org/"},
        "@type": "DataFeed",
        "name": name,
        "dateCreated": "2026-01-01T00:00:00",
        "dateModified": "2026-01-01T00:00:00",
        "dataFeedElement": items,
    }
    if bench_id is not None:
        doc["@id"] = bench_id
    return doc


def constructed() -> dict[str, Any]:
    """The texts' edge cases: keywords repeated, out of order, with a newline and the separator
    the graph read splits on; item-level (legacy) keywords; no template; an empty answer; a
    derived id; a question id repeated (the earlier item is shadowed, not indexed); accents."""
    code = {"@type": "SoftwareSourceCode", "name": "Answer", "text": TEMPLATE, "programmingLanguage": "Python"}
    return _doc(
        "Constructed texts",
        [
            _item("q1", "Which gene is a tumour suppressor?", "TP53", question={"keywords": ["b", "a", "b", "x\ny"]}),
            _item("q2", "What causes Ménière disease?", "", question={"hasPart": code}),
            _item("q3", "Legacy keywords?", "yes", keywords=["old", "older"]),
            _item(None, "A question without an id", "derived", question={"keywords": ["z\x1fw", "w"]}),
            _item("q5", "Shadowed text, not indexed", "first"),
            _item("q6", "A question with no keywords", "none", question={"keywords": []}),
            _item("q5", "The text Karenina answers with", "second", question={"hasPart": code}),
        ],
        bench_id="urn:test:constructed",
    )


# -- reading both indexes ------------------------------------------------------------------------
def index_rows(store: Store, bench: str) -> Rows:
    """What the index holds of ``bench``: each question's id, IRI, position and texts."""
    db = store.fulltext.index.db
    found = db.execute(
        "SELECT docs.qid, docs.iri, docs.pos, fts.question, fts.answer, fts.keywords, fts.template"
        " FROM docs JOIN fts ON fts.rowid = docs.id WHERE docs.bench = ?",
        (bench,),
    )
    return sorted(found)


def graph_rows(store: Store, bench: str) -> Rows:
    """The rows a from-graph build indexes (TextSync.rows reads them from the live graph)."""
    return sorted(
        (r.question_id, r.iri, r.position, r.question, r.answer, r.keywords, r.template)
        for r in store.fulltext.rows(bench)
    )


def assert_in_step(store: Store) -> None:
    """Every live benchmark indexed at the catalog's stamp with exactly the rows a from-graph
    build gives, and nothing else in the index."""
    current = store.fulltext.stamps()
    assert store.fulltext.index.stamps() == current
    for bench in current:
        assert index_rows(store, bench) == graph_rows(store, bench), bench
    indexed = {b for (b,) in store.fulltext.index.db.execute("SELECT DISTINCT bench FROM docs")}
    assert indexed <= set(current)


class GraphReads:
    """Counts the benchmarks whose index rows are read back from a graph (a re-index)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.benches: list[str] = []
        original = TextSync.rows

        def counting(sync: TextSync, bench: str, only: Any = None) -> Any:
            self.benches.append(bench)
            return original(sync, bench, only)

        monkeypatch.setattr(TextSync, "rows", counting)


# -- the index an import writes equals the one built from the graph -------------------------------
def _sources() -> list[Any]:
    params = list(corpus_params(loadable_only=True))
    params.append(pytest.param("generated", id="generated-300"))
    params.append(pytest.param("constructed", id="constructed"))
    return params


@pytest.mark.parametrize("source", _sources())
@pytest.mark.parametrize("where", ["disk", "memory"])
def test_import_indexes_what_a_graph_build_would(
    source: Any, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if source == "generated":
        doc: Any = _generator().generate_checkpoint(300, seed=3)
    elif source == "constructed":
        doc = constructed()
    else:
        doc = json.loads(Path(source).read_text(encoding="utf-8"))
    store = Store(tmp_path / "store") if where == "disk" else Store.memory()
    try:
        if where == "memory":
            store.search_text("anything")  # a memory store keeps an index once a search built it
        reads = GraphReads(monkeypatch)
        bench = store.import_checkpoint(doc, validate=False).iri
        at_import = index_rows(store, bench)
        store.search_text("the")
        assert reads.benches == []  # in step: the search read nothing back from the graph
        assert store.fulltext.index.stamps()[bench] == store.fulltext.stamps()[bench]
        # The same benchmark indexed from its graph: every row equal.
        from_graph = graph_rows(store, bench)
        assert at_import == from_graph
        assert len(at_import) == store.summary(bench).questions
        found = _found(store)
        store.fulltext.index.replace_benchmark(bench, store.fulltext.rows(bench), store.fulltext.stamps()[bench])
        assert index_rows(store, bench) == at_import
        assert _found(store) == found  # the ranked copy too (fed from the import's rows before)
    finally:
        store.close()


def _found(store: Store) -> dict[str, tuple[int, set[str]]]:
    """What the ranked searches find: total and question ids, for a few common words."""
    out = {}
    for word in ("the", "what", "gene", "answer", "class", "a*"):
        hits = store.search_text(word, limit=None)
        out[word] = (hits.total, {h.iri for h in hits.hits})
    return out


def test_the_corpus_is_there_to_compare() -> None:
    # The comparison above is only as good as its inputs (skipped when the corpus is absent).
    files = [p.values[0] for p in corpus_params(loadable_only=True) if p.values[0] is not None]
    if not files:
        pytest.skip("the Karenina corpus is absent")
    assert len(files) >= 10
    assert all(p.name not in NOT_CHECKPOINTS for p in files)


# -- in step after every kind of write ---------------------------------------------------------------
def _changed(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its first question's text changed, its second removed and a new one added."""
    out = copy.deepcopy(doc)
    items = out["dataFeedElement"]
    items[0]["item"]["text"] = "A changed text about phosphatases"
    del items[1]
    items.append(_item("q-new", "A new question about kinases", "kinase", question={"keywords": ["new"]}))
    return out


def _write(tmp_path: Path, doc: dict[str, Any], name: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


Step = Callable[[Store, Path], Any]
PHARMACOLOGY = EXAMPLES / "pharmacology.jsonld"


def _imp(doc: Callable[[], Any], *, validate: bool = False) -> Step:
    return lambda s, p: s.import_checkpoint(doc(), validate=validate)


def _imp_file(name: str, doc: Callable[[], dict[str, Any]], **kwargs: Any) -> Step:
    return lambda s, p: s.import_checkpoint(_write(p, doc(), name), validate=False, **kwargs)


def _pharmacology_changed() -> dict[str, Any]:
    return _changed(json.loads(PHARMACOLOGY.read_text(encoding="utf-8")))


# Each: the writes made, in order; after them the index must be in step with no graph read.
OPS: dict[str, list[Step]] = {
    "import": [_imp(constructed)],
    "a second benchmark": [_imp(constructed), _imp(lambda: PHARMACOLOGY)],
    "replace (version kept)": [_imp(constructed), _imp(lambda: _changed(constructed()))],
    "replace (no version kept)": [
        _imp_file("a.json", constructed),
        _imp_file("b.json", lambda: _changed(constructed()), keep_version=False),
    ],
    "replace, validating": [_imp(lambda: PHARMACOLOGY, validate=True), _imp(_pharmacology_changed, validate=True)],
    "unchanged (the same file)": [
        _imp_file("a.json", constructed),
        lambda s, p: s.import_checkpoint(p / "a.json", validate=False),
    ],
    "unchanged (same triples, other bytes)": [
        _imp_file("a.json", constructed),
        lambda s, p: (p / "b.json").write_text(json.dumps(constructed(), indent=1), encoding="utf-8"),
        lambda s, p: s.import_checkpoint(p / "b.json", validate=False),
    ],
    "delete": [_imp(constructed), _imp(lambda: PHARMACOLOGY), lambda s, p: s.delete("urn:test:constructed")],
    "delete the last": [_imp(constructed), lambda s, p: s.delete("urn:test:constructed")],
    "results import": [
        _imp(lambda: EXAMPLES / "molecular-biology.jsonld"),
        lambda s, p: s.search_text("gene"),
        lambda s, p: s.import_results(EXAMPLES / "results" / "molecular-biology-2026-05.json"),
    ],
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("where", ["disk", "memory"])
def test_in_step_after(op: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "store") if where == "disk" else Store.memory()
    try:
        if where == "memory":
            store.search_text("anything")  # built (empty) by a first search, then kept in step
        reads = GraphReads(monkeypatch)
        for step in OPS[op]:
            step(store, tmp_path)
        store.search_text("question")
        assert reads.benches == []  # nothing indexed again from a graph, during the writes or after
        monkeypatch.undo()
        assert_in_step(store)
    finally:
        store.close()


def test_in_step_on_every_backend(backend: tuple[str, Store], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A store on a SPARQL server keeps its index in memory, as a memory store does: built by the
    # first search, then kept in step by this client's imports, replacements and deletes.
    _, store = backend
    store.search_text("anything")
    reads = GraphReads(monkeypatch)
    for step in [*OPS["replace (version kept)"], _imp(lambda: PHARMACOLOGY), *OPS["delete"][2:]]:
        step(store, tmp_path)
    store.search_text("question")
    assert reads.benches == []
    monkeypatch.undo()
    assert_in_step(store)


@pytest.mark.parametrize(
    "error", [sqlite3.OperationalError("disk I/O error"), OSError(28, "No space left on device"), ValueError("tantivy")]
)
def test_an_index_write_that_fails_leaves_the_import_done_and_the_index_out_of_step(
    error: Exception, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: Any, **kwargs: Any) -> None:
        raise error

    with Store(tmp_path / "store") as store:
        store.import_checkpoint(constructed(), validate=False)
        monkeypatch.setattr(TextIndex, "replace_benchmark", failing)
        result = store.import_checkpoint(_changed(constructed()), validate=False)
        monkeypatch.undo()
        assert result.status == "replaced"  # committed: the derived copy does not fail it
        reads = GraphReads(monkeypatch)
        assert [h.question_id for h in store.search_text("phosphatases").hits] == ["q1"]
        assert reads.benches == [result.iri]  # out of step: read again from the graph
        monkeypatch.undo()
        assert_in_step(store)


def test_memory_store_without_an_index_builds_it_at_the_first_search() -> None:
    # No search yet: the import leaves building it to the first search (from the graphs), as before.
    store = Store.memory()
    try:
        store.import_checkpoint(constructed(), validate=False)
        assert store.fulltext._index is None
        assert [h.question_id for h in store.search_text("tumour").hits] == ["q1"]
        assert_in_step(store)
    finally:
        store.close()


def test_disk_index_survives_reopening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(tmp_path / "store") as store:
        store.import_checkpoint(constructed(), validate=False)
    reads = GraphReads(monkeypatch)
    with Store(tmp_path / "store") as store:
        assert [h.question_id for h in store.search_text("suppressor").hits] == ["q1"]
    assert reads.benches == []


# -- crashes -------------------------------------------------------------------------------------------
# Each point kills the importing process (os._exit: no cleanup, no finally) at one moment of a
# re-import of the constructed benchmark, whose first import is indexed; then the store is opened
# again and searched.
CRASH_POINTS = {
    # Before the catalog's commit (the publish update never runs): the index is untouched and
    # stays in step with the old generation, still live.
    "before the catalog commit": ("karenina_rdf.store._catalog", "Catalog", "publish", "untouched"),
    # After the catalog's commit, before the index is written: out of step, rebuilt from the graph.
    "between the catalog commit and the index write": ("karenina_rdf.store._text", "TextSync", "imported", "rebuilt"),
    # Inside the index's SQLite transaction (rows written, stamp not committed): rolled back.
    "inside the index write": ("karenina_rdf.sparql._fulltext", "TextIndex", "_state", "rebuilt"),
    # SQLite committed, the ranked copy not: the copy is fed from SQLite, the graph is not read.
    "between the index write and the ranked copy": (
        "karenina_rdf.sparql._ranked",
        "Ranker",
        "replace_benchmark",
        "fed",
    ),
}

_CRASH = """
import importlib, os, sys
from karenina_rdf import Store
module, cls, name, checkpoint, folder = sys.argv[1:]
def crash(*args, **kwargs):
    os._exit(17)
setattr(getattr(importlib.import_module(module), cls), name, crash)
Store(folder).import_checkpoint(checkpoint, validate=False)
os._exit(0)
"""


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_crash(point: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module, cls, name, expect = CRASH_POINTS[point]
    path = tmp_path / "store"
    with Store(path) as store:
        bench = store.import_checkpoint(constructed(), validate=False).iri
        before = store.fulltext.index.stamps()[bench]
    changed = _write(tmp_path, _changed(constructed()), "changed.json")
    done = subprocess.run(
        [sys.executable, "-c", _CRASH, module, cls, name, str(changed), str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 17, done.stderr  # killed at that point, not before or after it
    fed: list[str] = []
    original_feed = Ranker.replace_benchmark

    def feeding(ranker: Ranker, bench: str, rows: Any, stamp: str) -> None:
        fed.append(bench)
        original_feed(ranker, bench, rows, stamp)

    with Store(path) as store:
        live = store.fulltext.stamps()[bench]
        indexed = store.fulltext.index.stamps()[bench]
        reads = GraphReads(monkeypatch)
        monkeypatch.setattr(Ranker, "replace_benchmark", feeding)
        new_text = {h.question_id for h in store.search_text("phosphatases").hits}
        old_text = {h.question_id for h in store.search_text("tumour").hits}
        monkeypatch.undo()
        if expect == "untouched":  # the old generation is still live, and the index says so
            assert indexed == live == before
            assert (reads.benches, fed, new_text, old_text) == ([], [], set(), {"q1"})
        elif expect == "rebuilt":  # out of step (the replaced generation's stamp): read again
            assert indexed == before != live
            assert (reads.benches, new_text, old_text) == ([bench], {"q1"}, set())
        else:  # SQLite in step; its ranked copy fed from SQLite, the graph not read
            assert indexed == live != before
            assert (reads.benches, fed, new_text, old_text) == ([], [bench], {"q1"}, set())
        assert_in_step(store)
