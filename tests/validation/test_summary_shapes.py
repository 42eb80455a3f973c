"""The shapes of a run's tallies and summaries (shapes/run-summary.ttl) on a stored run: the run as
imported conforms; each broken form a faulty writer (or an update that went around
``Store.update_graph``, which recounts them) could leave is one Violation, reported on one line that names the node and
the rule, by ``validate_run`` and by ``karenina-rdf validate --stored``.

The shape file's own fixtures (tests/validation/fixtures/shapes/run-summary-*.ttl) are checked with
the others in test_shapes.py (pyshacl) and test_shacl_engine.py (the engine against pyshacl)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from karenina_rdf import Store
from karenina_rdf.cli import app
from karenina_rdf.rdf import KAR, sparql_prefixes, term_value
from karenina_rdf.results._runs import resolve_run
from karenina_rdf.validation import validate_run
from tests.conftest import EXAMPLES

RUN = "pharmacology-2026-05"
PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
SUMMARY_CLASSES = ("Tally", "RunSummaries", "UsageSummary", "FailureSummary", "MetricSummary", "ScoreSummary")


class Broken(NamedTuple):
    cls: str  # the class of the node broken (its first node in IRI order)
    update: str  # SPARQL update on it: NODE and GRAPH stand for the node and the run graph
    path: str | None  # the path the finding names (None: the node itself)
    message: str  # the shape's message


def _replace(pred: str, value: str) -> str:
    """The update replacing the node's values of ``pred`` (a CURIE) with ``value``."""
    return (
        f"DELETE {{ GRAPH GRAPH {{ NODE {pred} ?old }} }} INSERT {{ GRAPH GRAPH {{ NODE {pred} {value} }} }} "
        f"WHERE {{ GRAPH GRAPH {{ NODE {pred} ?old }} }}"
    )


CASES: dict[str, Broken] = {
    "missing count": Broken(
        "UsageSummary",
        "DELETE WHERE { GRAPH GRAPH { NODE karenina:results ?n } }",
        KAR.results,
        "A usage summary needs its count of usages: one integer >= 1 (karenina:results)",
    ),
    "missing tally count": Broken(
        "Tally",
        "DELETE WHERE { GRAPH GRAPH { NODE karenina:failures ?n } }",
        KAR.failures,
        "A tally needs its count of failed results: one integer >= 0 (karenina:failures)",
    ),
    "wrong datatype": Broken(
        "ScoreSummary",
        _replace("karenina:scores", '"3"'),
        KAR.scores,
        "A score or metric summary needs its count of scores: one integer >= 1 (karenina:scores)",
    ),
    "wrong datatype of a sum": Broken(
        "MetricSummary",
        _replace("karenina:valueSum", '"1.5"'),
        KAR.valueSum,
        "A metric summary needs the sum of its values: one xsd:double (karenina:valueSum)",
    ),
    "stray property": Broken(
        "FailureSummary",
        "INSERT DATA { GRAPH GRAPH { NODE karenina:verifyResult true } }",
        KAR.verifyResult,
        "A failure summary (karenina:FailureSummary) has only its run, its keys (answering model, category, group) "
        "and its count",
    ),
    "stray property on the marker": Broken(
        "RunSummaries",
        'INSERT DATA { GRAPH GRAPH { NODE schema:name "x" } }',
        "https://schema.org/name",
        "The marker of a summarised run (karenina:RunSummaries) is an IRI node with its run (prov:wasGeneratedBy) "
        "and nothing else",
    ),
    "summary without its run": Broken(
        "MetricSummary",
        "DELETE WHERE { GRAPH GRAPH { NODE prov:wasGeneratedBy ?r } }",
        PROV + "wasGeneratedBy",
        "A run summary node belongs to exactly one verification run of the same graph (prov:wasGeneratedBy)",
    ),
    "summary of another run": Broken(
        "UsageSummary",
        _replace("prov:wasGeneratedBy", "<urn:example:no-such-run>"),
        PROV + "wasGeneratedBy",
        "A run summary node belongs to exactly one verification run of the same graph (prov:wasGeneratedBy)",
    ),
    "more passed than verified": Broken(
        "Tally",
        "DELETE { GRAPH GRAPH { NODE karenina:passed ?p } } INSERT { GRAPH GRAPH { NODE karenina:passed ?more } } "
        "WHERE { GRAPH GRAPH { NODE karenina:passed ?p ; karenina:verified ?v BIND(?v + 1 AS ?more) } }",
        None,
        "A tally counts more passed results than results with a verdict (karenina:passed > karenina:verified)",
    ),
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """The pharmacology benchmark and its run, imported with validation on (its summaries pass)."""
    s = Store(tmp_path / "store")
    s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    s.import_results(EXAMPLES / "results" / f"{RUN}.json")
    yield s
    s.close()


def _break(store: Store, case: Broken) -> str:
    """Apply the case to the first node of its class in the run graph; the node's IRI."""
    _, graph = resolve_run(store, RUN)
    typed = store.oxigraph.quads_for_pattern(None, RDF_TYPE, KAR.term(case.cls).node, graph)
    nodes = sorted(term_value(q.subject) for q in typed)
    assert nodes, f"the run has no {case.cls}: the case proves nothing"
    node = nodes[0]
    update = case.update.replace("GRAPH GRAPH", f"GRAPH {graph}").replace("NODE", f"<{node}>")
    # Straight on the engine: Store.update_graph recounts every run, which is not what is tested.
    store.oxigraph.update(sparql_prefixes() + update)
    return node


def test_the_run_as_imported_conforms(store: Store) -> None:
    report = validate_run(store, RUN)
    assert report.conforms and report.findings == [], [f.line() for f in report.findings]
    typed = store.oxigraph.quads_for_pattern(None, RDF_TYPE, None, resolve_run(store, RUN)[1])
    classes = {term_value(q.object) for q in typed}
    # Every class the shapes cover is there: the conformance above checks each of them.
    assert {KAR.term(c) for c in SUMMARY_CLASSES} <= classes


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_broken_form_is_one_violation_on_one_line(store: Store, case: Broken) -> None:
    node = _break(store, case)
    report = validate_run(store, RUN)
    # One rule broken, one line; a string count also fails the rule's bound (sh:datatype and
    # sh:minInclusive are two results of one property shape, with the same message).
    assert {(f.severity, f.focus_node, f.path, f.message) for f in report.findings} == {
        ("Violation", node, case.path, case.message)
    }
    prop = f" [{case.path}]" if case.path else ""
    assert {f.line() for f in report.findings} == {f"violation: run {RUN} node <{node}>{prop}: {case.message}"}


def test_validate_stored_reports_it(store: Store, tmp_path: Path) -> None:
    node = _break(store, CASES["stray property"])
    store.close()
    result = CliRunner().invoke(app, ["validate", "--stored", RUN, "--store", str(tmp_path / "store")])
    assert result.exit_code == 1, result.output
    # The CLI names a run's findings by the file the run was imported from.
    source = EXAMPLES / "results" / f"{RUN}.json"
    line = f"violation: {source} node <{node}> [{KAR.verifyResult}]: {CASES['stray property'].message}"
    assert line in [text.strip() for text in result.stdout.splitlines()], result.stdout
