"""The full-text index (sparql/_fulltext.py, store/_text.py): what a search finds, in what order,
and that it stays in step with imports, edits, deletes, raw updates and crashes."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, InvalidValueError, Store
from karenina_rdf.rdf import KAR
from karenina_rdf.sparql import INDEX_FILE, TextIndex
from karenina_rdf.sparql._fulltext import bench_key, parse
from karenina_rdf.store._text import TextSync

TEMPLATE = """class Answer(BaseAnswer):
    names_target: bool = Field(description="whether the response names the target")

    def verify(self) -> bool:
        return self.names_target
"""
# (key, question, answer, keywords); every question is in the benchmark "Search test".
QUESTIONS = [
    ("q-tumour", "Which gene is a tumour suppressor?", "TP53, the guardian of the genome", ["oncology"]),
    ("q-meniere", "What causes Ménière disease?", "Endolymphatic hydrops", ["otology"]),
    ("q-kinase", "Which kinase does imatinib inhibit?", "BCR-ABL tyrosine kinase", ["kinases", "drugs"]),
    ("q-kinase2", "Is a kinase an enzyme?", "Yes", []),
    ("q-case", "Does CAFFEINE block adenosine receptors?", "yes, adenosine A1 and A2A", ["pharmacology"]),
    ("q-hyphen", "Name a tumour-suppressor gene on chromosome 13", "RB1", ["oncology"]),
]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return _filled(Store(tmp_path / "store"))


def _filled(store: Store) -> Store:
    bench = Benchmark.create("Search test", "d", store=store)
    for key, text, answer, keywords in QUESTIONS:
        qid = bench.add_question(text, answer, question_id=key)
        if keywords:
            bench.update_question_metadata(qid, custom_metadata={})  # an edit that changes no text
            _set_keywords(bench, qid, keywords)
    bench.add_answer_template("q-kinase2", TEMPLATE)
    return store


def _set_keywords(bench: Benchmark, qid: str, keywords: list[str]) -> None:
    bench._edit_question(qid, lambda q: q.__setitem__("keywords", keywords))


def _ids(store: Store, query: str, **kwargs: Any) -> list[str]:
    return [h.question_id for h in store.search_text(query, **kwargs).hits]


@pytest.mark.parametrize(
    ("query", "expression"),
    [
        ("tumour", '"tumour"'),
        ("tum*", '"tum"*'),
        ('"tumour suppressor"', '"tumour suppressor"'),
        ("tumour-suppressor", '"tumour suppressor"'),  # split where the index splits it
        ("kinase OR enzyme", '"kinase" OR "enzyme"'),
        ("OR kinase OR", '"kinase"'),  # a dangling OR is dropped
        ('"unclosed phrase', '"unclosed phrase"'),
        ('a" ) NEAR(x', '"a" "NEAR x"'),  # FTS5 syntax is only words here (an unclosed phrase)
        ("Ménière", '"Ménière"'),
    ],
)
def test_parse(query: str, expression: str) -> None:
    assert parse(query) == expression


@pytest.mark.parametrize(
    ("query", "kwargs", "found"),
    [
        ("tumour", {}, {"q-tumour", "q-hyphen"}),  # a word
        ("TUMOUR", {}, {"q-tumour", "q-hyphen"}),  # case
        ("tum*", {}, {"q-tumour", "q-hyphen"}),  # a prefix
        ("tum", {}, set()),  # a word is a whole word
        ('"tumour suppressor"', {}, {"q-tumour", "q-hyphen"}),  # a phrase ("-" separates words)
        ('"suppressor tumour"', {}, set()),  # word order counts in a phrase
        ("meniere", {}, {"q-meniere"}),  # accents
        ("MÉNIÈRE", {}, {"q-meniere"}),
        ("caffeine adenosine", {}, {"q-case"}),  # all the words
        ("caffeine imatinib", {}, set()),
        ("caffeine OR imatinib", {}, {"q-case", "q-kinase"}),
        ("genome", {}, {"q-tumour"}),  # the reference answer
        ("otology", {}, {"q-meniere"}),  # a keyword
        ("names_target", {}, {"q-kinase2"}),  # template code ("_" separates words: a phrase)
        ("kinase", {"fields": ["question"]}, {"q-kinase", "q-kinase2"}),
        ("kinase", {"fields": ["answer"]}, {"q-kinase"}),
        ("kinases", {"fields": ["keywords"]}, {"q-kinase"}),
        ("target", {"fields": ["template"]}, {"q-kinase2"}),  # (the others: Karenina's default template)
        ("zzz", {}, set()),
    ],
)
def test_search(store: Store, query: str, kwargs: dict[str, Any], found: set[str]) -> None:
    hits = store.search_text(query, **kwargs)
    assert {h.question_id for h in hits.hits} == found
    assert hits.total == len(found)


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("kinase", "q-kinase"),  # in the text, the answer and a keyword (prefix of "kinases")
        ("adenosine OR hydrops", "q-case"),  # twice in its text and answer, against once
    ],
)
def test_ranked(store: Store, query: str, first: str) -> None:
    hits = store.search_text(query).hits
    assert hits[0].question_id == first
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_pages_and_total(store: Store) -> None:
    everything = store.search_text("kinase OR tumour OR adenosine OR genome", limit=None)
    assert everything.total == len(everything.hits) == 5
    pages = [store.search_text("kinase OR tumour OR adenosine OR genome", limit=2, offset=o) for o in (0, 2, 4)]
    assert [h for p in pages for h in p.hits] == everything.hits
    assert {p.total for p in pages} == {5}


@pytest.mark.parametrize("query", ["", "   ", "?!", '""', "OR"])
def test_nothing_to_search(store: Store, query: str) -> None:
    with pytest.raises(InvalidValueError, match="nothing to search for"):
        store.search_text(query)


def test_unknown_field(store: Store) -> None:
    with pytest.raises(InvalidValueError, match="unknown field 'author'"):
        store.search_text("x", fields=["author"])


# -- in step -------------------------------------------------------------------------------------
def _edit_text(store: Store) -> None:
    Benchmark(store, "Search test").update_question_metadata("q-kinase2", question="Is a phosphatase an enzyme?")


def _add(store: Store) -> None:
    Benchmark(store, "Search test").add_question("What does a phosphatase remove?", "phosphate groups")


def _template(store: Store) -> None:
    Benchmark(store, "Search test").add_answer_template("q-case", TEMPLATE.replace("names_target", "phosphatase_named"))


def _remove(store: Store) -> None:
    Benchmark(store, "Search test").remove_question("q-kinase")


def _clear(store: Store) -> None:
    Benchmark(store, "Search test").clear_questions()


def _delete(store: Store) -> None:
    store.delete("Search test")


def _reimport(store: Store) -> None:
    doc = store.export_checkpoint("Search test")
    doc["dataFeedElement"][0]["item"]["text"] = "Which phosphatase opposes PI3K?"
    store.import_checkpoint(doc)


def _raw_update(store: Store) -> None:
    store.update_graph(
        'DELETE { GRAPH ?g { ?q <https://schema.org/text> "Is a kinase an enzyme?" } } '
        'INSERT { GRAPH ?g { ?q <https://schema.org/text> "Is a phosphatase an enzyme?" } } '
        'WHERE { GRAPH ?g { ?q <https://schema.org/text> "Is a kinase an enzyme?" } }'
    )


@pytest.mark.parametrize(
    ("change", "phosphatase", "kinase"),
    [
        (_edit_text, 1, 1),  # the edited text is found, the old one no longer
        (_add, 1, 2),
        (_template, 1, 2),
        (_remove, 0, 1),
        (_clear, 0, 0),
        (_delete, 0, 0),
        (_reimport, 1, 2),
        (_raw_update, 1, 1),
    ],
)
def test_kept_in_step(store: Store, change: Callable[[Store], None], phosphatase: int, kinase: int) -> None:
    assert store.search_text("kinase").total == 2  # built before the change
    change(store)
    assert store.search_text("phosphatase").total == phosphatase
    assert store.search_text("kinase").total == kinase


def test_edit_updates_only_what_it_touched(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.search_text("kinase")  # in step
    rebuilt: list[str] = []
    real = TextSync.rows

    def counting(self: TextSync, bench: str, only: Any = None) -> Any:
        rebuilt.append("all" if only is None else ",".join(sorted(i.rsplit("/", 1)[1] for i in only)))
        return real(self, bench, only)

    monkeypatch.setattr(TextSync, "rows", counting)
    _edit_text(store)
    assert store.search_text("phosphatase").total == 1
    assert rebuilt == ["q-kinase2"]  # one question read again, no rebuild at the search
    Benchmark(store, "Search test").set_custom_property("domain", "kinases")  # the header alone
    _remove(store)  # which question went is found from the item list
    assert store.search_text("kinase").total == 0
    assert rebuilt == ["q-kinase2"]  # nothing read again for either


def test_crash_between_graph_and_index(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The edit reached the graph (with its stamp), the process died before the index heard of
    it: the stamps differ, and the next search indexes the benchmark again."""
    store.search_text("kinase")

    def crash(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(TextSync, "edited", crash)
    with pytest.raises(KeyboardInterrupt):
        _edit_text(store)
    monkeypatch.undo()
    assert store.search_text("phosphatase").total == 1
    assert store.search_text("kinase").total == 1


@pytest.mark.parametrize(
    "damage",
    [
        "delete the file",
        "garbage in the file",
        "forget a benchmark's stamp",
        "a stale stamp",
    ],
)
def test_index_damaged_between_opens(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "store"
    with _filled(Store(path)) as store:
        assert store.search_text("kinase").total == 2
    index_file = path / INDEX_FILE
    if damage == "delete the file":
        index_file.unlink()
    elif damage == "garbage in the file":
        for leftover in path.glob(INDEX_FILE + "-*"):
            leftover.unlink()
        index_file.write_bytes(b"not a database" * 100)
    else:
        db = sqlite3.connect(index_file)
        with db:
            db.execute("DELETE FROM fts")  # the index lost its rows …
            if damage == "forget a benchmark's stamp":
                db.execute("DELETE FROM state")
            else:
                db.execute("UPDATE state SET stamp = 'old'")  # … and knows it is not in step
        db.close()
    with Store(path) as store:
        assert store.search_text("kinase").total == 2


def test_sparql_function(store: Store) -> None:
    rows = store.query(
        "SELECT ?q ?score WHERE { ?q a schema:Question . BIND(karenina:textScore(?q, ?text) AS ?score) "
        "FILTER(BOUND(?score)) } ORDER BY DESC(?score)",
        text="kinase",
    )
    expected = store.search_text("kinase")
    assert [(r["q"].value, float(r["score"].value)) for r in rows] == [(h.iri, h.score) for h in expected.hits]
    ask = "ASK { ?q schema:identifier 'q-meniere' . FILTER(karenina:textMatch(?q, 'MENIERE')) }"
    assert bool(store.query(ask)) is True


def test_search_parameter_joins(store: Store) -> None:
    rows = list(store.query("search", phrase="tumour"))
    assert [r["question_id"].value for r in rows] == _ids(store, "tumour")
    assert {r["benchmark"].value for r in rows} == {"Search test"}
    assert list(store.query("search", phrase="no-such-word")) == []
    with pytest.raises(InvalidValueError, match="nothing to search for"):
        store.query("search", phrase="?")


def test_function_iris_are_the_vocabulary() -> None:
    assert (KAR.textScore, KAR.textMatch) == ("urn:karenina:vocab:textScore", "urn:karenina:vocab:textMatch")


def test_memory_store_index_in_memory() -> None:
    store = _filled(Store.memory())
    assert store.fulltext.path is None and store.search_text("tumour").total == 2


def test_read_only_reader(store: Store) -> None:
    """A query worker's view: the file opened read-only answers, and cannot write."""
    store.search_text("kinase")
    assert store.fulltext.path is not None
    reader = TextIndex(store.fulltext.path, read_only=True)
    assert reader.search("kinase").total == 2
    with pytest.raises(sqlite3.OperationalError):
        reader.drop_benchmark("x")
    reader.close()


def test_benchmarks_filter(store: Store) -> None:
    other = Benchmark.create("Other", "d", store=store)
    other.add_question("Which kinase phosphorylates ERK?", "MEK")
    assert store.search_text("kinase").total == 3
    assert set(_ids(store, "kinase", benchmarks=["Search test"])) == {"q-kinase", "q-kinase2"}
    assert store.search_text("kinase", benchmarks=["Other"]).total == 1
    assert store.search_text(bench_key(other.iri)).total == 0  # the benchmark's own word is not searched


def test_search_questions_order_after_removals_and_additions(store: Store) -> None:
    """Removal renumbers the later questions; the index follows, so hits come in the
    benchmark's order after any mix of removals and additions."""
    bench = Benchmark(store, "Search test")
    for step in range(3):
        bench.remove_question(bench.get_question_ids()[1])
        bench.add_question(f"Which kinase number {step} is new?", "none")
    expected = [q["id"] for q in bench if "kinase" in q["question"].lower()]
    assert [q["id"] for q in bench.search_questions("kinase")] == expected
    assert len(expected) == 3


def test_a_long_query_with_nothing_to_search_is_echoed_cut_short(store: Store) -> None:
    with pytest.raises(InvalidValueError) as info:
        store.search_text('"' * 100_000)
    message = str(info.value)
    assert len(message) < 200 and "(100,000 characters)" in message
