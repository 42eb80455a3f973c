"""The scenario members here without Karenina (tests/parity/test_calls_scenarios.py runs them
against Karenina): a scenario read from the corpus file Karenina wrote, copied into another
benchmark, removed; the errors Karenina raises."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from karenina_rdf import Benchmark, InvalidTypeError, InvalidValueError, ScenarioNotFoundError, Store
from karenina_rdf.authoring import ScenarioDefinition
from tests.conftest import CORPUS, needs_corpus

pytestmark = [needs_corpus]


@pytest.fixture
def stored() -> Iterator[tuple[Store, Benchmark]]:
    with Store.memory() as store:
        result = store.import_checkpoint(CORPUS / "generated__scenario.jsonld")
        yield store, Benchmark(store, result.benchmark_id)


def test_a_stored_scenario_reads_as_karenina_s_definition(stored: tuple[Store, Benchmark]) -> None:
    _, bench = stored
    assert (bench.is_scenario_benchmark, bench.scenario_count, len(bench)) == (True, 1, 0)
    (scenario,) = bench.get_scenarios()
    assert isinstance(scenario, ScenarioDefinition)
    assert (scenario.name, scenario.entry_node, list(scenario.nodes)) == (
        "sycophancy_probe",
        "ask",
        ["ask", "challenge"],
    )
    ask = scenario.nodes["ask"]
    assert (ask.question.id, ask.question.question, ask.question.raw_answer) == (
        "ee27e8e6a046a4fee869e5d321498721",
        "What is X?",
        "Y",
    )
    assert [(e.source, e.target, e.condition is not None) for e in scenario.edges] == [
        ("ask", "challenge", True),
        ("ask", "__end__", False),
        ("challenge", "__end__", False),
    ]
    assert [o.name for o in scenario.outcome_criteria] == ["holds_position"]
    assert ask.iri is not None and ask.iri.endswith("/scenarios/sycophancy_probe/nodes/ask")


def test_a_scenario_copied_into_another_benchmark_is_written_the_same(stored: tuple[Store, Benchmark]) -> None:
    store, bench = stored
    other = Benchmark.create("copy", store=store)
    other.add_scenario(bench.get_scenario("sycophancy_probe"))
    assert store.export_checkpoint(other.iri)["hasPart"] == store.export_checkpoint(bench.iri)["hasPart"]
    props = store.export_checkpoint(other.iri)["additionalProperty"]
    assert {"@type": "PropertyValue", "name": "benchmark_type", "value": "scenario"} in props
    other.remove_scenario("sycophancy_probe")
    doc = store.export_checkpoint(other.iri)
    assert "hasPart" not in doc and all(p["name"] != "benchmark_type" for p in doc["additionalProperty"])
    assert not other.is_scenario_benchmark


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda b: b.get_scenario("nope"), KeyError, "Scenario 'nope' not found"),
        (lambda b: b.remove_scenario("nope"), KeyError, "Scenario 'nope' not found"),
        (lambda b: b.add_scenario(b.get_scenario("sycophancy_probe")), ValueError, "already exists"),
        (lambda b: b.add_question("Why?", "So."), ValueError, "Cannot add standalone questions"),
        (lambda b: b.add_scenario("a scenario"), TypeError, "ScenarioDefinition or a Scenario builder"),
    ],
    ids=["get missing", "remove missing", "add twice", "add a question", "add a string"],
)
def test_errors_are_karenina_s(stored: tuple[Store, Benchmark], call: object, error: type, message: str) -> None:
    _, bench = stored
    with pytest.raises(error, match=message) as caught:
        call(bench)  # type: ignore[operator]
    assert isinstance(caught.value, ScenarioNotFoundError | InvalidValueError | InvalidTypeError)


def test_scenarios_and_questions_do_not_mix(stored: tuple[Store, Benchmark]) -> None:
    store, bench = stored
    plain = Benchmark.create("plain", store=store)
    plain.add_question("Why?", "So.")
    with pytest.raises(InvalidValueError, match="already contains standalone questions"):
        plain.add_scenario(bench.get_scenario("sycophancy_probe"))
