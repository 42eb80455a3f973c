# ruff: noqa: E501  (the expected messages are asserted verbatim, so lines stay long)
"""Validation of stored verification runs: the run shapes and the run checks over a run graph
together with the benchmark graphs it used, the vocabulary and the models (_validate.findings_in_run).

The shape fixtures of runs are in tests/validation/test_shapes.py with the others; here: the Python checks on
those fixtures, real runs (the examples, the corpus exports), what happens when the store changes
under a run (a benchmark deleted or re-imported, SPARQL edits), where findings point, and the CLI.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
from typer.testing import CliRunner

from karenina_rdf import BenchmarkReport, Finding, NotFoundError, Store, StoreError, validate_store
from karenina_rdf.cli import app
from karenina_rdf.rdf._vocab import VOCABULARY_GRAPH
from karenina_rdf.results._model import FAILURE_GROUPS
from karenina_rdf.results._runs import resolve_run, taxonomy_triples
from karenina_rdf.validation._checks import CHECKS, CHECKS_NS, RUN_CHECKS, run_result_checks
from karenina_rdf.validation._shapes import SHAPES_DIR, shape_files
from karenina_rdf.validation._validate import RUN_SHAPE_FILES, findings_in_run, report_json, validate_run
from tests.conftest import CORPUS, EXAMPLES, ROOT, load_json, needs_corpus

FIXTURES = ROOT / "tests" / "validation" / "fixtures" / "shapes"
K = "urn:karenina:vocab:"
EARL = "http://www.w3.org/ns/earl#"
PROV = "http://www.w3.org/ns/prov#"
KS = "urn:karenina-rdf:shapes:"
RESULTS = EXAMPLES / "results"
PHARMACOLOGY_RUN = "pharmacology-2026-05"
WARNED_RUN = "pharmacology-warned"
runner = CliRunner()

# The classes whose nodes live in run graphs: the shape files targeting them are the run shapes.
RUN_CLASSES = {
    K + name
    for name in (
        "VerificationRun",
        "ResultsImport",
        "VerificationResult",
        "RubricEvaluation",
        "DeepJudgment",
        "Failure",
        "FieldOutcome",
        "TokenUsage",
        "TraitScore",
        "Model",
        "Tally",
        "RunSummaries",
        "UsageSummary",
        "FailureSummary",
        "MetricSummary",
        "ScoreSummary",
    )
} | {EARL + "TestResult"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The example benchmarks, their three runs and WARNED_RUN (the pharmacology run with one
    boolean trait scored 3: a warning), shared read-only by this module's tests."""
    s = Store.memory()
    report = s.import_paths([EXAMPLES])
    assert not report.errors and len(report.results) == 3
    doc = json.loads((RESULTS / f"{PHARMACOLOGY_RUN}.json").read_text(encoding="utf-8"))
    doc["metadata"]["job_id"] = WARNED_RUN
    scores = doc["results"][0]["rubric"]["llm_trait_scores"]
    boolean = next(name for name, value in scores.items() if isinstance(value, bool))
    scores[boolean] = 3
    warned = tmp_path_factory.mktemp("warned") / f"{WARNED_RUN}.json"
    warned.write_text(json.dumps(doc), encoding="utf-8")
    s.import_results(warned)
    yield s
    s.close()


@pytest.fixture
def fresh() -> Iterator[Store]:
    """The pharmacology benchmark and its run, for a test that changes them."""
    s = Store.memory()
    s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    s.import_results(RESULTS / f"{PHARMACOLOGY_RUN}.json")
    yield s
    s.close()


def _keys(findings: list[Finding]) -> Counter[tuple[str, str | None, str]]:
    """(severity, pointer, shape or check local name) of each finding, counted."""
    return Counter((f.severity, f.pointer, (f.source_shape or "").rsplit(":", 1)[-1]) for f in findings)


def _run_graph(store: Store, run: str) -> ox.NamedNode:
    return resolve_run(store, run)[1]


# -- which shapes are run shapes ----------------------------------------------------------------


def test_run_shape_files_are_the_files_of_run_classes() -> None:
    """A shape file is validated with runs exactly when it targets classes of run graphs: a new run
    shape file left out of RUN_SHAPE_FILES would never be checked (and a benchmark file put in
    it would validate benchmark graphs a second time)."""
    names = {p.name for p in shape_files()}
    assert set(RUN_SHAPE_FILES) <= names
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    for path in shape_files():
        g = rdflib.Graph().parse(path, format="turtle")
        targets = {str(c) for c in g.objects(None, sh.targetClass)}
        assert targets, path.name
        is_run = targets <= RUN_CLASSES
        assert is_run == (path.name in RUN_SHAPE_FILES), (path.name, targets)
        assert is_run or not targets & RUN_CLASSES, (path.name, targets & RUN_CLASSES)


def test_failure_shapes_accept_every_category_of_the_taxonomy() -> None:
    """Every category of Karenina's taxonomy, with its own group, conforms against the vocabulary
    the store holds; a category of the wrong group is reported by the check, named in its message."""
    data = "\n".join(taxonomy_triples()) + "\n"
    for i, (category, group) in enumerate(FAILURE_GROUPS.items()):
        f, r = f"<urn:test:f{i}>", f"<urn:test:r{i}>"
        data += (
            f"{r} a <{K}VerificationResult> ; <{K}failure> {f} ; <{K}verifyResult> {str(category != 'content').lower()} .\n"
            f'{f} a <{K}Failure> ; <{K}failureCategory> <{K}failure/{category}> ; <{K}failureStage> "s" ; '
            f'<https://schema.org/description> "why" ; <{K}failureGroup> <{K}failure-group/{group}> .\n'
        )
    data += (
        f"<urn:test:rx> a <{K}VerificationResult> ; <{K}failure> <urn:test:fx> .\n"
        f'<urn:test:fx> a <{K}Failure> ; <{K}failureCategory> <{K}failure/timeout> ; <{K}failureStage> "s" ; '
        f'<https://schema.org/description> "why" ; <{K}failureGroup> <{K}failure-group/system> .\n'
    )
    store = ox.Store()
    graph = ox.NamedNode("urn:test:run")
    store.load(data.encode(), format=ox.RdfFormat.TURTLE, to_graph=graph)
    from karenina_rdf.validation._shacl import validate_store_graph

    shapes = rdflib.Graph().parse(SHAPES_DIR / "failure.ttl", format="turtle")
    assert validate_store_graph(store, [graph], shapes).results == []
    (found,) = run_result_checks(store, [graph, graph])
    assert (found.focus_node, found.path, found.severity) == ("urn:test:fx", K + "failureGroup", "Warning")
    assert found.message == (
        "The failure group 'system' is not the group of its category 'timeout' ('retry'); Karenina computes "
        "the group from the category and ignores this one (metadata.failure.group)"
    )


# -- the Python checks on the shape fixtures ------------------------------------------------------


def _checks_on_fixture(name: str) -> set[tuple[str, str, str]]:
    store = ox.Store()
    graph = ox.NamedNode("urn:test:fixture")
    store.load(path=str(FIXTURES / name), format=ox.RdfFormat.TURTLE, to_graph=graph)
    return {
        (
            r.focus_node.removeprefix("http://example.org/"),
            r.source_constraint_component.removeprefix(CHECKS_NS),
            r.message,
        )
        # The fixture graph is both the run graph and the graphs it links to.
        for r in run_result_checks(store, [graph, graph])
    }


def test_every_run_check_fails_on_a_fixture() -> None:
    found = {
        check
        for name in ("result", "failure", "trait-score")
        for _, check, _ in _checks_on_fixture(f"{name}-violates.ttl")
    }
    assert found == {c.name for c in RUN_CHECKS}
    assert not {c.name for c in RUN_CHECKS} & {c.name for c in CHECKS}


def test_checks_on_the_conforming_fixtures() -> None:
    for shape in ("result", "failure", "trait-score"):
        assert _checks_on_fixture(f"{shape}-conforms.ttl") == set(), shape


def test_result_checks_on_the_result_fixture() -> None:
    assert _checks_on_fixture("result-violates.ttl") == {
        (
            "r5",
            "ResultTemplateCurrent",
            "This result was verified with template '4a225841c1245831a5f69582bb21a271', but the stored template of its question is now '0123456789abcdef0123456789abcdef': the benchmark changed after the run (metadata.template_id)",
        ),
        (
            "r2",
            "ResultBenchmarkUsed",
            "This result tests a question of a benchmark its run does not list as used (prov:used): the run is read and validated without that benchmark (metadata.question_id)",
        ),
        (
            "r2",
            "OutcomeMatchesVerdict",
            "The outcome is earl:passed exactly when verify_result is true (template.verify_result)",
        ),
        (
            "r3",
            "OutcomeMatchesVerdict",
            "earl:inapplicable means no template was verified and nothing failed (rubric only), but this result has a failure or a template verification (metadata.failure, template.template_verification_performed)",
        ),
        (
            "r4",
            "OutcomeMatchesVerdict",
            "earl:cantTell means there is no verdict after a failure or a template verification, but this result has neither (metadata.failure, template.template_verification_performed)",
        ),
    }


def test_failure_checks_on_the_failure_fixture() -> None:
    assert _checks_on_fixture("failure-violates.ttl") == {
        (
            "f3",
            "ContentFailureIsFalseVerdict",
            "A content failure means the answer was judged wrong, but this result's verify_result is true (metadata.failure.category, template.verify_result)",
        ),
        (
            "f5",
            "FailureGroupMatchesCategory",
            "The failure group 'content' is not the group of its category 'timeout' ('retry'); Karenina computes the group from the category and ignores this one (metadata.failure.group)",
        ),
    }  # f4 belongs to no result: the shape reports that


def test_score_checks_on_the_trait_score_fixture() -> None:
    assert _checks_on_fixture("trait-score-violates.ttl") == {
        (
            "s2",
            "ScoreHoldsItsKind",
            "A regex trait score is true or false, not '3' (rubric.regex_trait_scores['no_dosage'])",
        ),
        (
            "s3",
            "ScoreHoldsItsKind",
            "A metric trait score keeps its numbers as metric values, not one value '0.5' (rubric.metric_trait_scores['recall_facts'])",
        ),
        (
            "s8",
            "ScoreHoldsItsKind",
            "Only a metric trait score has metric values, and the score of 'style' is not one (rubric.metric_trait_scores)",
        ),
        (
            "s4",
            "ScoreFitsTrait",
            "Trait 'clarity' is a boolean trait, so its score is true or false, not '3': the benchmark changed since the run, or the score is not Karenina's (rubric.llm_trait_scores['clarity'])",
        ),
    }  # 3 is a class index: the literal trait :tl that s4 also scores has no complaint


# -- real runs ----------------------------------------------------------------------------------------


def test_example_runs_conform(runs: Store) -> None:
    """Every result of the three example runs conforms, without a warning."""
    reports = [r for r in validate_store(runs) if r.run is not None and r.run != WARNED_RUN]
    assert sorted(r.run or "" for r in reports) == [
        "molecular-biology-2026-05",
        "molecular-biology-2026-06",
        PHARMACOLOGY_RUN,
    ]
    for r in reports:
        assert r.conforms and r.findings == [], [f.line() for f in r.findings]
        assert r.source == f"{RESULTS / (r.run or '')}.json"


@pytest.mark.slow  # pyshacl, the reference engine, over a whole run
def test_fast_engine_agrees_with_pyshacl_on_a_run(runs: Store) -> None:
    fast = validate_run(runs, WARNED_RUN)
    reference = validate_run(runs, WARNED_RUN, engine="pyshacl")
    assert [f.model_dump() for f in fast.findings] == [f.model_dump() for f in reference.findings]
    assert fast.findings  # the planted warning: the comparison is not of two empty lists


@needs_corpus
@pytest.mark.parametrize("name", ["empty", "full"])
def test_corpus_exports_conform(name: str) -> None:
    path = CORPUS / f"tests__fixtures__export_format__results_export_{name}.json"
    store = Store.memory()
    try:
        store.import_results(path)
        (report,) = validate_store(store)
    finally:
        store.close()
    assert report.run == "job-fixture-001" and report.benchmark is None
    assert report.conforms
    expected = {
        ("Warning", "/results/0", "ResultShape-testLinked"): 1,
        ("Warning", "/results/1", "ResultShape-testLinked"): 1,
    }
    assert _keys(report.findings) == (expected if name == "full" else {})
    if name == "full":
        assert [f.question_id for f in report.findings] == ["q-unicode", "q-timeout"]
        assert report.findings[0].message == (
            "No stored question has this question id: the result is kept but linked to no benchmark (metadata.question_id)"
        )


# -- the store changing under a run ---------------------------------------------------------------


def test_deleted_benchmark_leaves_warnings_only(fresh: Store) -> None:
    fresh.delete("Pharmacology examples")
    report = validate_run(fresh, PHARMACOLOGY_RUN)
    assert report.conforms
    shapes = Counter((f.source_shape or "").removeprefix(KS) for f in report.findings)
    assert shapes["RunShape-usedStored"] == 1
    assert shapes["ResultShape-testStored"] == shapes["ResultShape-templateStored"] == 16
    assert shapes["TraitScoreShape-scoresStoredTrait"] > 0
    # Without the benchmark no score is compared with its trait any more.
    assert shapes[CHECKS_NS.removeprefix(KS) + "ScoreFitsTrait"] == 0


def test_changed_template_is_reported(fresh: Store, tmp_path: Path) -> None:
    doc = load_json(EXAMPLES / "pharmacology.jsonld")
    item = doc["dataFeedElement"][3]["item"]
    item["hasPart"]["text"] += "\n# changed after the run\n"
    changed = tmp_path / "pharmacology.jsonld"
    changed.write_text(json.dumps(doc), encoding="utf-8")
    fresh.import_checkpoint(changed)
    report = validate_run(fresh, PHARMACOLOGY_RUN)
    stale = [f for f in report.findings if f.source_shape == CHECKS_NS + "ResultTemplateCurrent"]
    assert stale and {f.question_id for f in stale} == {doc["dataFeedElement"][3]["@id"]}
    assert {f.question_text for f in stale} == {item["text"]}
    assert stale[0].severity == "Warning" and "but the stored template of its question is now" in stale[0].message


def _update(store: Store, run: str, sparql: str) -> None:
    graph = _run_graph(store, run)
    store.oxigraph.update(sparql.replace("GRAPH_", str(graph)))


def test_edits_that_break_a_run_are_located(fresh: Store) -> None:
    run = resolve_run(fresh, PHARMACOLOGY_RUN)[0]
    # The result at export index 3: its outcome flipped, its failure moved to the retry group.
    third = f"SELECT ?r WHERE {{ GRAPH ?g {{ ?r a <{K}VerificationResult> ; <{K}position> 3 }} }}"
    (row,) = list(fresh.oxigraph.query(third))
    result = row["r"].value
    _update(
        fresh,
        PHARMACOLOGY_RUN,
        f"""DELETE {{ GRAPH GRAPH_ {{ ?o <{EARL}outcome> ?x }} }} INSERT {{ GRAPH GRAPH_ {{ ?o <{EARL}outcome> <{EARL}passed> }} }}
            WHERE {{ GRAPH GRAPH_ {{ <{result}> <{EARL}result> ?o . ?o <{EARL}outcome> ?x }} }} ;
            DELETE {{ GRAPH GRAPH_ {{ ?f <{K}failureGroup> ?x }} }} INSERT {{ GRAPH GRAPH_ {{ ?f <{K}failureGroup> <{K}failure-group/retry> }} }}
            WHERE {{ GRAPH GRAPH_ {{ <{result}> <{K}failure> ?f . ?f <{K}failureGroup> ?x }} }} ;
            DELETE WHERE {{ GRAPH GRAPH_ {{ <{run}> <{PROV}used> ?b }} }}""",
    )
    report = validate_run(fresh, PHARMACOLOGY_RUN)
    assert not report.conforms
    keys = _keys(report.findings)
    assert keys[("Violation", "/results/3", "OutcomeMatchesVerdict")] == 1
    assert keys[("Warning", "/results/3/metadata/failure", "FailureGroupMatchesCategory")] == 1
    # No benchmark used: every linked result is a Violation, and its links can no longer be followed.
    assert sum(n for (sev, _, name), n in keys.items() if name == "ResultBenchmarkUsed" and sev == "Violation") == 16
    assert keys[("Warning", "/results/3", "ResultShape-testStored")] == 1
    flipped = next(f for f in report.findings if f.source_shape == CHECKS_NS + "OutcomeMatchesVerdict")
    assert flipped.run == PHARMACOLOGY_RUN and flipped.focus_node == result
    assert flipped.question_id is not None and flipped.question_id.startswith("urn:uuid:question-")
    assert flipped.line(report.source).startswith(
        f"violation: {RESULTS / PHARMACOLOGY_RUN}.json at /results/3 (question "
    )
    assert flipped.value_term == f"<{EARL}passed>"
    # Violations first, then by export index.
    order = [(f.severity != "Violation", f.pointer) for f in report.findings]
    assert [o[0] for o in order] == sorted(o[0] for o in order)


def test_usage_and_field_findings_point_into_the_template(fresh: Store) -> None:
    _update(
        fresh,
        PHARMACOLOGY_RUN,
        f"""DELETE {{ GRAPH GRAPH_ {{ ?u <{K}position> ?p }} }} WHERE {{ GRAPH GRAPH_ {{ ?r <{K}position> 0 ; <{K}tokenUsage> ?u .
              ?u <{K}stage> "parsing" ; <{K}position> ?p }} }} ;
            DELETE {{ GRAPH GRAPH_ {{ ?f <https://schema.org/name> "answer" }} }} WHERE {{ GRAPH GRAPH_ {{ ?r <{K}position> 0 ; <{K}fieldOutcome> ?f .
              ?f <https://schema.org/name> "answer" }} }}""",
    )
    report = validate_run(fresh, PHARMACOLOGY_RUN)
    pointers = {f.pointer for f in report.violations}
    assert pointers == {"/results/0/template/usage_metadata/parsing", "/results/0/template/field_results/answer"}


def test_validating_needs_the_taxonomy(fresh: Store) -> None:
    run, graph = resolve_run(fresh, PHARMACOLOGY_RUN)
    fresh.oxigraph.update(f"DROP GRAPH {VOCABULARY_GRAPH}")
    with pytest.raises(StoreError, match="failure taxonomy"):
        findings_in_run(fresh, run, graph)


# -- validate_store, reports and the CLI ------------------------------------------------------------


def test_validate_store_names_a_benchmark_or_a_run(runs: Store) -> None:
    every = validate_store(runs)
    assert [r.run for r in every] == [
        None,
        None,
        None,
        "molecular-biology-2026-05",
        "molecular-biology-2026-06",
        PHARMACOLOGY_RUN,
        WARNED_RUN,
    ]
    (one,) = validate_store(runs, WARNED_RUN)
    assert one.run == WARNED_RUN and one.benchmark is None
    (bench,) = validate_store(runs, "Pharmacology examples")
    assert bench.run is None and bench.benchmark == "Pharmacology examples"
    with pytest.raises(NotFoundError, match="no verification run 'nosuch'"):
        validate_store(runs, "nosuch")
    data = json.loads(report_json([one]))
    assert data["reports"][0]["run"] == WARNED_RUN
    assert data["reports"][0]["findings"][0]["run"] == WARNED_RUN


def test_report_of_a_run_as_turtle(runs: Store) -> None:
    report = validate_run(runs, WARNED_RUN)
    g = rdflib.Graph().parse(data=report.to_turtle(), format="turtle")
    sh = "http://www.w3.org/ns/shacl#"
    ask = g.query(f"ASK {{ ?x <{sh}focusNode> ?f ; <{sh}sourceConstraintComponent> <{CHECKS_NS}ScoreFitsTrait> }}")
    assert bool(ask)


def test_cli_validate_stored_includes_runs(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    assert runner.invoke(app, ["import", str(EXAMPLES), "--store", store]).exit_code == 0
    result = runner.invoke(app, ["validate", "--stored", "--store", store])
    assert result.exit_code == 0, result.output
    assert "Pharmacology examples: conforms (0 violations, 0 warnings)" in result.stdout
    assert f"run {PHARMACOLOGY_RUN}: conforms (0 violations, 0 warnings)" in result.stdout
    one = runner.invoke(app, ["validate", "--stored", PHARMACOLOGY_RUN, "--format", "json", "--store", store])
    assert one.exit_code == 0, one.output
    assert [r["run"] for r in json.loads(one.stdout)["reports"]] == [PHARMACOLOGY_RUN]


def test_report_model_keeps_benchmark_reports_as_they_were() -> None:
    """A benchmark report built as before (no run) still prints and serialises as before."""
    finding = Finding(severity="Warning", message="m", benchmark="B", component="urn:c")
    report = BenchmarkReport(source="f.jsonld", benchmark="B", findings=[finding])
    assert report.run is None and finding.run is None
    assert finding.line() == "warning: B: m"
    assert json.loads(report_json([report]))["reports"][0]["run"] is None


def test_cli_validate_results_files(tmp_path: Path) -> None:
    """Results files named on the command line are validated as runs, linked to the checkpoints
    named with them; a results database is left to the store."""
    database = tmp_path / "results.db"
    database.write_bytes(b"SQLite format 3\x00" + bytes(84))
    result = runner.invoke(app, ["validate", str(EXAMPLES), str(database), "--store", str(tmp_path / "unused")])
    assert result.exit_code == 1, result.output
    assert f"run {RESULTS / PHARMACOLOGY_RUN}.json: conforms (0 violations, 0 warnings)" in result.stdout
    assert "Pharmacology examples" not in result.stdout  # checkpoints are reported by file, as before
    assert f"{database}: does not conform (1 violations, 0 warnings)" in result.stdout
    alone = runner.invoke(app, ["validate", str(RESULTS / f"{PHARMACOLOGY_RUN}.json"), "--format", "json"])
    assert alone.exit_code == 0, alone.output
    (report,) = json.loads(alone.stdout)["reports"]
    # Without its benchmark no row is linked: one warning per result, and no score to compare.
    assert Counter(f["source_shape"] for f in report["findings"]) == {KS + "ResultShape-testLinked": 16}
