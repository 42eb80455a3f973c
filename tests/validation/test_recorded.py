"""Recorded validations (validation._recorded): ``validate_store`` answers from the record of the
last full validation only while it equals a full validation of what is stored, after every kind
of write; compared here edit by edit with a full validation made with the records removed."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from karenina_rdf import Benchmark, Store, validate_store
from karenina_rdf.store import VALIDATED
from karenina_rdf.validation import _validate
from tests.conftest import EXAMPLES

# The authoring API refuses a template that does not parse; a SPARQL update does not.
BREAK_TEMPLATE = (
    "DELETE {{ GRAPH {graph} {{ ?c <https://schema.org/text> ?t }} }} "
    'INSERT {{ GRAPH {graph} {{ ?c <https://schema.org/text> "class Answer(BaseAnswer:" }} }} '
    "WHERE {{ {{ SELECT ?c ?t WHERE {{ GRAPH {graph} {{ ?c a <https://schema.org/SoftwareSourceCode> ; "
    "<https://schema.org/text> ?t }} }} ORDER BY ?c LIMIT 1 }} }}"
)
TEMPLATE = """class Answer(BaseAnswer):
    city: str = Field(description="The city named")

    def verify(self) -> bool:
        return self.city.strip().lower() == "paris"
"""


def _records(store: Store) -> Path:
    assert store.path is not None
    return store.path / "cache" / "validation"


def _full(store: Store, ref: str) -> list[dict[str, object]]:
    """A full validation: with no record on disk, nothing can be reused."""
    shutil.rmtree(_records(store), ignore_errors=True)
    return [f.model_dump() for f in validate_store(store, ref)[0].findings]


def _current(store: Store, ref: str) -> list[dict[str, object]]:
    return [f.model_dump() for f in validate_store(store, ref)[0].findings]


def _first(b: Benchmark) -> str:
    return b.get_question_ids()[0]


def _sparql(sparql: str) -> Callable[[Benchmark], None]:
    def edit(b: Benchmark) -> None:
        b.store.update_graph(sparql.format(bench=b.iri, graph=b.store.graph_of(b.iri)[1]))

    return edit


# Each edit changes what a validation finds, or could: the record made before it must not answer.
EDITS: list[tuple[str, Callable[[Benchmark], None]]] = [
    ("SPARQL update: a template that does not parse", _sparql(BREAK_TEMPLATE)),
    ("template replaced", lambda b: b.add_answer_template(_first(b), TEMPLATE)),
    ("question added", lambda b: b.add_question("What is the capital of France?", "Paris")),
    ("question removed", lambda b: b.remove_question(_first(b))),
    ("metadata updated", lambda b: b.update_question_metadata(_first(b), author={"name": "A. Person"})),
    ("custom property", lambda b: b.set_custom_property("reviewed", True)),
    (
        "SPARQL update: a question loses its text",
        _sparql(
            "DELETE {{ GRAPH {graph} {{ ?q <https://schema.org/text> ?t }} }} "
            "WHERE {{ GRAPH {graph} {{ ?q <https://schema.org/text> ?t }} "
            'FILTER(STRSTARTS(STR(?q), "{bench}/questions/")) }}'
        ),
    ),
    (
        "SPARQL update: a literal of the wrong type",
        _sparql(
            "INSERT {{ GRAPH {graph} {{ <{bench}> <https://schema.org/version> 3 }} }} WHERE {{}}",
        ),
    ),
]


@pytest.fixture
def disk_store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.jsonld")), ids=lambda p: p.stem)
def test_import_records_what_a_full_validation_finds(disk_store: Store, example: Path) -> None:
    bench = disk_store.import_checkpoint(example).iri
    assert disk_store.catalog.value(bench, VALIDATED) is not None  # published with the graph
    recorded = _current(disk_store, bench)
    assert recorded == _full(disk_store, bench)


def test_every_edit_is_validated_again(disk_store: Store) -> None:
    bench = disk_store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
    b = Benchmark(disk_store, bench)
    changed = []
    for label, edit in EDITS:
        before = _current(disk_store, bench)
        edit(b)
        assert disk_store.catalog.value(bench, VALIDATED) is None, label  # forgotten with the edit
        after = _current(disk_store, bench)  # validates again, and records
        assert disk_store.catalog.value(bench, VALIDATED) is not None, label
        assert after == _full(disk_store, bench), label
        assert _current(disk_store, bench) == after, label  # the new record answers the same
        changed.append(before != after)
    assert sum(changed) >= 3, changed  # the table does change what is found


def test_an_unchanged_benchmark_is_not_validated_again(disk_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = disk_store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
    _sparql(BREAK_TEMPLATE)(Benchmark(disk_store, bench))
    expected = _current(disk_store, bench)  # validated and recorded
    assert expected

    def no_validation(*args: object, **kwargs: object) -> None:
        raise AssertionError("validated again")

    monkeypatch.setattr(_validate, "_findings", no_validation)
    path = disk_store.path
    disk_store.close()
    reopened = Store(path)
    assert [f.model_dump() for f in validate_store(reopened, bench)[0].findings] == expected


def test_record_of_another_generation_or_damaged_is_not_used(disk_store: Store, tmp_path: Path) -> None:
    bench = disk_store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
    _sparql(BREAK_TEMPLATE)(Benchmark(disk_store, bench))
    expected = _full(disk_store, bench)
    assert expected  # the broken template is found
    (record,) = _records(disk_store).iterdir()
    record.write_text("[]")  # a record that says nothing is wrong, but not the one the catalog vouches for
    assert _current(disk_store, bench) == expected
    # A re-import of the original file is a new generation, with its own record.
    disk_store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    assert _current(disk_store, bench) == _full(disk_store, bench)
    assert len(list(_records(disk_store).iterdir())) == 1  # the old generation's record was pruned


def test_an_edit_during_a_validation_leaves_no_record(disk_store: Store) -> None:
    bench = disk_store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
    b = Benchmark(disk_store, bench)
    shutil.rmtree(_records(disk_store))
    disk_store.mark_edited(bench)
    from karenina_rdf.validation._recorded import validate_recorded

    def edited_meanwhile() -> list[dict[str, object]]:
        _sparql(BREAK_TEMPLATE)(b)  # the edit lands while validating
        return []

    validate_recorded(disk_store, bench, disk_store.graph_of(bench)[1].value, edited_meanwhile)
    assert disk_store.catalog.value(bench, VALIDATED) is None
    assert _current(disk_store, bench) == _full(disk_store, bench) != []


def test_memory_store_validates_every_time() -> None:
    store = Store.memory()
    bench = store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
    assert store.catalog.value(bench, VALIDATED) is None
    _sparql(BREAK_TEMPLATE)(Benchmark(store, bench))
    assert validate_store(store, bench)[0].findings
