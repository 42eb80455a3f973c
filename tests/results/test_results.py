"""Verification results in the store: import (streaming, upsert, links, atomicity, errors),
export back to Karenina's format 2.2 and to CSV, legacy rows, the results commands."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from karenina_rdf import CheckpointError, NotFoundError, Store
from karenina_rdf.cli import app
from karenina_rdf.results import _read as reader_module
from karenina_rdf.results._export import write_export
from karenina_rdf.results._model import PARTS, ROOT, is_default
from karenina_rdf.results._read import ExportReader
from tests.conftest import CORPUS, EXAMPLES, needs_corpus
from tests.helpers.bench_scripts import benchmark_script

RESULTS = sorted((EXAMPLES / "results").glob("*.json"))
CORPUS_EXPORTS = [
    "tests__fixtures__export_format__results_export_full.json",
    "tests__fixtures__export_format__results_export_empty.json",
]


def _generator() -> ModuleType:
    return benchmark_script("generate_results")


GEN = _generator()
MOLBIO = json.loads((EXAMPLES / "molecular-biology.jsonld").read_text(encoding="utf-8"))


def exported(store: Store, run: str) -> str:
    buf = io.StringIO()
    store.export_results(run, buf)
    return buf.getvalue()


def rows_of(text: str) -> list[dict[str, Any]]:
    return list(json.loads(text)["results"])


def write(path: Path, head: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        write_export(fh, head, iter(rows))
    return path


def synthetic(n: int = 12, *, seed: int = 1, job: str = "run-x") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows = list(GEN.generate_rows(MOLBIO, models=2, judges=2, replicates=2, seed=seed, limit=n))
    return GEN.header(MOLBIO, models=2, judges=2, job_id=job, rows=len(rows), seed=seed), rows


def full_row(row: dict[str, Any]) -> dict[str, Any]:
    """What a 2.2 export writes for ``row``: every field, the fresh value where it had none."""
    out = {}
    for part, fields, _ in PARTS:
        value = row.get(part)
        if isinstance(value, dict) and not all(f.name in value for f in fields):
            value = {f.name: value.get(f.name, copy.deepcopy(f.default)) for f in fields} | {
                k: v for k, v in value.items() if k not in {f.name for f in fields}
            }
        out[part] = value
    for f in ROOT:
        out[f.name] = row.get(f.name, f.default)
    out |= {k: v for k, v in row.items() if k not in out}
    return out


@pytest.fixture(scope="module")
def examples() -> Any:
    """The example benchmarks and their runs (examples/results/)."""
    s = Store.memory()
    report = s.import_paths([EXAMPLES])
    assert report.ok and len(report.results) == len(RESULTS), report.errors
    yield s
    s.close()


# -- round trips -----------------------------------------------------------------------------
@needs_corpus
@pytest.mark.parametrize("name", CORPUS_EXPORTS)
def test_corpus_exports_round_trip_byte_identical(store: Store, name: str) -> None:
    path = CORPUS / name
    result = store.import_results(path)
    original = path.read_text(encoding="utf-8")
    assert result.rows == original.count('{"metadata"')
    assert exported(store, result.run_id) == original


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_example_runs_round_trip_byte_identical(path: Path) -> None:
    store = Store.memory()
    store.import_paths([EXAMPLES / n for n in ("molecular-biology.jsonld", "pharmacology.jsonld")])
    result = store.import_results(path)
    assert (result.unmatched, result.template_mismatches) == (0, 0)
    assert result.benchmarks and result.rows > 0
    assert exported(store, result.run_id) == path.read_text(encoding="utf-8")


def _tweaks() -> list[tuple[str, Any]]:
    def rubric(row: dict[str, Any]) -> dict[str, Any]:
        row["rubric"] = row["rubric"] or {"rubric_evaluation_performed": True}
        return row["rubric"]

    return [
        ("key order not Karenina's", lambda r: r.__setitem__("metadata", dict(reversed(list(r["metadata"].items()))))),
        (
            "unknown fields",
            lambda r: (r["template"].__setitem__("future_field", {"a": [1, 2.5]}), r.__setitem__("x", 1)),
        ),
        ("template null", lambda r: r.__setitem__("template", None)),
        ("null where the fresh value is false", lambda r: r["template"].__setitem__("embedding_check_performed", None)),
        ("int where a float is usual", lambda r: r["metadata"].__setitem__("execution_time", 3)),
        ("float 1.0 and big int", lambda r: r["template"].__setitem__("verify_granular_result", [1.0, 2**70])),
        ("empty score dict", lambda r: rubric(r).__setitem__("regex_trait_scores", {})),
        ("trait only in provenance", lambda r: rubric(r).__setitem__("trait_provenance", {"gone": "global"})),
        (
            "same name in two kinds",
            lambda r: (
                rubric(r).__setitem__("llm_trait_scores", {"t": 3, "u.field": "x"}),
                rubric(r).__setitem__("regex_trait_scores", {"t": True}),
            ),
        ),
        ("score value null", lambda r: rubric(r).__setitem__("callable_trait_scores", {"c": None})),
        (
            "confusion lists out of order",
            lambda r: rubric(r).__setitem__("metric_trait_confusion_lists", {"m": {"fp": [], "tp": ["a"]}}),
        ),
        ("failure not Karenina's shape", lambda r: r["metadata"].__setitem__("failure", {"category": 3})),
        ("usage not a dict of dicts", lambda r: r["template"].__setitem__("usage_metadata", {"total": 5})),
        ("usage stage with other keys", lambda r: r["template"].__setitem__("usage_metadata", {"s": {"cost": 0.1}})),
        ("field results {}", lambda r: r["template"].__setitem__("field_results", {})),
        ("field score only", lambda r: r["template"].__setitem__("field_scores", {"only_score": 0.5})),
        ("field names that encode alike", lambda r: r["template"].__setitem__("field_results", {"": True, "_": False})),
        (
            "metric names that encode alike",
            lambda r: rubric(r).__setitem__("metric_trait_scores", {"m": {"": 0.5, "_": 1.0}}),
        ),
        ("identity with extra key", lambda r: r["metadata"]["answering"].__setitem__("extra", 1)),
        ("deep judgment not an object", lambda r: r.__setitem__("deep_judgment", [1])),
        ("unicode and control characters", lambda r: r["metadata"].__setitem__("question_text", 'é\u2028\x00"\\ 咖啡')),
    ]


@pytest.mark.parametrize(("label", "tweak"), _tweaks(), ids=[t[0] for t in _tweaks()])
def test_unusual_rows_come_back_as_they_went_in(tmp_path: Path, label: str, tweak: Any) -> None:
    head, rows = synthetic(3)
    for row in rows:
        tweak(row)
    path = write(tmp_path / "in.json", head, rows)
    store = Store.memory()
    result = store.import_results(path)
    back = rows_of(exported(store, result.run_id))
    expected = [full_row(r) for r in rows]
    # Key order matters to byte-identical exports: compare it too, not only the values.
    assert [json.dumps(r) for r in back] == [json.dumps(r) for r in expected]


def test_every_structure_of_a_full_run_round_trips(tmp_path: Path) -> None:
    head, rows = synthetic(60, seed=5)
    kinds = {k for r in rows if r["rubric"] for k, v in r["rubric"].items() if v}
    assert {"llm_trait_scores", "llm_trait_labels", "trait_provenance"} <= kinds
    assert any(r["deep_judgment"] for r in rows) and any(r["metadata"]["failure"] for r in rows)
    path = write(tmp_path / "run.json", head, rows)
    store = Store.memory()
    store.import_paths([EXAMPLES / "molecular-biology.jsonld"])
    result = store.import_results(path)
    assert exported(store, result.run_id) == path.read_text(encoding="utf-8")


def test_runs_on_every_backend(backend: tuple[str, Store], tmp_path: Path) -> None:
    """Embedded, Oxigraph server, Virtuoso: the same import, upsert, listing and export."""
    _, store = backend
    store.import_paths([EXAMPLES / "molecular-biology.jsonld"])
    path = EXAMPLES / "results" / "molecular-biology-2026-05.json"
    first = store.import_results(path)
    assert (first.unmatched, first.rows) == (0, len(rows_of(path.read_text(encoding="utf-8"))))
    again = store.import_results(path)
    assert (again.status, again.added, again.replaced) == ("updated", 0, first.rows)
    assert exported(store, first.run_id) == path.read_text(encoding="utf-8")
    (summary,) = store.runs()
    verdicts = [r["template"]["verify_result"] for r in rows_of(path.read_text(encoding="utf-8"))]
    assert (summary.results, summary.passed) == (len(verdicts), verdicts.count(True))
    store.delete_run(first.run_id)
    assert store.runs() == []


# -- the model in the store ------------------------------------------------------------------
def test_results_link_to_questions_templates_traits_and_models(examples: Store) -> None:
    q = """SELECT (COUNT(?r) AS ?n) (COUNT(?q) AS ?linked) (COUNT(?t) AS ?templates) WHERE {
        ?r a karenina:VerificationResult .
        OPTIONAL { ?r earl:test ?q . ?q a schema:Question }
        OPTIONAL { ?r karenina:template ?t . ?t a schema:SoftwareSourceCode } }"""
    n, linked, templates = (int(v.value) for v in next(iter(examples.query(q))))
    expected = sum(len(rows_of(p.read_text(encoding="utf-8"))) for p in RESULTS)
    assert n == expected == linked == templates
    q = """SELECT (COUNT(?s) AS ?n) (COUNT(?trait) AS ?linked) WHERE {
        ?s a karenina:TraitScore OPTIONAL { ?s karenina:scoresTrait ?trait . ?trait a schema:Rating } }"""
    n, linked = (int(v.value) for v in next(iter(examples.query(q))))
    assert n > 0 and linked == n
    q = "SELECT DISTINCT ?label WHERE { ?r earl:subject ?m . ?m a karenina:Model ; rdfs:label ?label } ORDER BY ?label"
    models = [s["label"].value for s in examples.query(q)]
    from_files = sorted(
        {
            f"{r['metadata']['answering']['interface']}:{r['metadata']['answering']['model_name']}"
            for p in RESULTS
            for r in rows_of(p.read_text(encoding="utf-8"))
        }
    )
    assert models == from_files


TALLY = """SELECT ?model ?judge ?bench ?n ?verified ?passed ?failures WHERE {
    ?t a karenina:Tally ; prov:wasGeneratedBy ?run ; karenina:results ?n ; karenina:verified ?verified ;
       karenina:passed ?passed ; karenina:failures ?failures .
    ?run schema:identifier ?id .
    ?t karenina:answeringModel/rdfs:label ?model ; karenina:parsingModel/rdfs:label ?judge .
    OPTIONAL { ?t karenina:benchmark ?bench } }"""


def tallies_of(rows: list[dict[str, Any]], bench: str | None) -> list[tuple[Any, ...]]:
    from karenina_rdf.results._model import display_string

    counts: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        meta, verdict = row["metadata"], (row["template"] or {}).get("verify_result")
        c = counts.setdefault((display_string(meta["answering"]), display_string(meta["parsing"])), [0, 0, 0, 0])
        c[0] += 1
        c[1] += verdict is not None
        c[2] += verdict is True
        c[3] += bool(meta["failure"])
    return sorted((m, j, bench, *c) for (m, j), c in counts.items())


def stored_tallies(store: Store, run: str) -> list[tuple[Any, ...]]:
    rows = store.query(TALLY, id=run)
    return sorted(
        (
            s["model"].value,
            s["judge"].value,
            s["bench"].value if s["bench"] else None,
            *(int(s[k].value) for k in ("n", "verified", "passed", "failures")),
        )
        for s in rows
    )


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_tallies_count_what_the_rows_say(examples: Store, path: Path) -> None:
    rows = rows_of(path.read_text(encoding="utf-8"))
    bench = examples.resolve("Pharmacology examples" if "pharma" in path.name else "Molecular biology examples")
    assert stored_tallies(examples, path.stem) == tallies_of(rows, bench)


def test_tallies_follow_an_upsert(tmp_path: Path) -> None:
    head, rows = synthetic(12)
    store = Store.memory()
    store.import_results(write(tmp_path / "a.json", head, rows[:8]))
    changed = copy.deepcopy(rows[5:12])
    for r in changed:  # flip every verdict of the rows imported again
        r["template"]["verify_result"] = (
            not r["template"]["verify_result"] if r["template"]["verify_result"] is not None else True
        )
    store.import_results(write(tmp_path / "b.json", head, changed))
    final = rows_of(exported(store, "run-x"))
    assert len(final) == 12
    assert stored_tallies(store, "run-x") == tallies_of(final, None)
    (summary,) = store.runs()
    assert (summary.results, summary.verified, summary.passed) == (
        12,
        sum(r["template"]["verify_result"] is not None for r in final),
        sum(r["template"]["verify_result"] is True for r in final),
    )


def test_failures_are_concepts_of_the_taxonomy(examples: Store) -> None:
    q = """SELECT ?category ?group ?label WHERE { ?r karenina:failure ?f . ?f karenina:failureCategory ?c .
        ?c skos:prefLabel ?category ; skos:broader ?g ; skos:inScheme karenina:failure . ?g skos:prefLabel ?group .
        ?f karenina:failureGroup ?fg . ?fg skos:prefLabel ?label }"""
    seen = [(s["category"].value, s["group"].value, s["label"].value) for s in examples.query(q)]
    failures = [
        r["metadata"]["failure"]
        for p in RESULTS
        for r in rows_of(p.read_text(encoding="utf-8"))
        if r["metadata"]["failure"]
    ]
    assert sorted(seen) == sorted((f["category"], f["group"], f["group"]) for f in failures)


@pytest.mark.parametrize(
    ("verify", "failure", "performed", "outcome"),
    [
        (True, None, True, "passed"),
        (False, {"category": "content"}, True, "failed"),
        (None, {"category": "timeout"}, False, "cantTell"),
        (None, None, False, "inapplicable"),
        (None, None, True, "cantTell"),
    ],
)
def test_earl_outcome(
    tmp_path: Path, verify: bool | None, failure: dict[str, Any] | None, performed: bool, outcome: str
) -> None:
    head, rows = synthetic(1)
    rows[0]["template"]["verify_result"] = verify
    rows[0]["template"]["template_verification_performed"] = performed
    if failure:
        failure = {"category": failure["category"], "stage": "s", "reason": "r", "details": None, "group": "g"}
    rows[0]["metadata"]["failure"] = failure
    store = Store.memory()
    store.import_results(write(tmp_path / "x.json", head, rows))
    got = [s["o"].value for s in store.query("SELECT ?o WHERE { ?r earl:result/earl:outcome ?o }")]
    assert got == ["http://www.w3.org/ns/earl#" + outcome]


def test_fresh_values_cost_no_triples(tmp_path: Path) -> None:
    head, rows = synthetic(1)
    store = Store.memory()
    store.import_results(write(tmp_path / "x.json", head, rows))
    preds = {s["p"].value for s in store.query("SELECT DISTINCT ?p WHERE { ?r a karenina:VerificationResult ; ?p ?o }")}
    row = rows[0]
    for part, fields, _ in PARTS[:2]:
        for f in fields:
            if f.store == "value" and is_default(row[part][f.name], f.default):
                assert f.predicate not in preds, f.name


# -- upsert ----------------------------------------------------------------------------------
def test_reimport_upserts_by_row_identity(tmp_path: Path) -> None:
    head, rows = synthetic(8)
    store = Store.memory()
    first = store.import_results(write(tmp_path / "a.json", head, rows[:6]))
    assert (first.status, first.added, first.replaced) == ("imported", 6, 0)
    assert store.runs()[0].results == 6
    changed = copy.deepcopy(rows[4:8])
    for r in changed:
        r["template"]["raw_llm_response"] = "changed"
    second = store.import_results(write(tmp_path / "b.json", head, changed))
    assert (second.status, second.added, second.replaced, second.rows) == ("updated", 2, 2, 4)
    back = rows_of(exported(store, "run-x"))
    assert len(back) == 8
    responses = {(r["metadata"]["result_id"]): r["template"]["raw_llm_response"] for r in back}
    assert [responses[r["metadata"]["result_id"]] for r in rows] == [
        r["template"]["raw_llm_response"] for r in rows[:4]
    ] + ["changed"] * 4
    again = store.import_results(write(tmp_path / "b.json", head, changed))
    assert (again.added, again.replaced) == (0, 4)
    assert len(rows_of(exported(store, "run-x"))) == 8


def test_identity_repeated_in_one_file_keeps_the_last_row(tmp_path: Path) -> None:
    head, rows = synthetic(3)
    late = copy.deepcopy(rows[0])
    late["template"]["raw_llm_response"] = "the later one"
    store = Store.memory()
    result = store.import_results(write(tmp_path / "x.json", head, [*rows, late]))
    assert (result.rows, result.duplicates, result.added) == (4, 1, 3)
    back = rows_of(exported(store, "run-x"))
    assert [r["template"]["raw_llm_response"] for r in back] == [
        "the later one",
        *(r["template"]["raw_llm_response"] for r in rows[1:]),
    ]


def test_graphs_of_earlier_generations_are_gone(tmp_path: Path) -> None:
    head, rows = synthetic(4)
    store = Store.memory()
    path = write(tmp_path / "x.json", head, rows)
    store.import_results(path)
    store.import_results(path)
    graphs = {g.value for g in store.oxigraph.named_graphs()}
    runs = {g for g in graphs if "/runs/" in g}
    assert runs == {g.value for g in store.run_graphs()} and len(runs) == 1
    assert not store.hidden_graphs()


def test_models_whose_canonical_keys_collide_stay_apart(tmp_path: Path) -> None:
    """Karenina's canonical key joins with ":", which model names contain: llama3 with config 8b
    and llama3:8b have the same key, but are two models."""
    a = {"interface": "ollama", "model_name": "llama3", "tools": [], "config_id": "8b"}
    b = {"interface": "ollama", "model_name": "llama3:8b", "tools": [], "config_id": None}
    store = Store.memory()
    for job, identity in (("m1", a), ("m2", b)):
        head, rows = synthetic(1, job=job)
        rows[0]["metadata"]["answering"] = identity
        store.import_results(write(tmp_path / f"{job}.json", head, rows))
    assert rows_of(exported(store, "m1"))[0]["metadata"]["answering"] == a
    assert rows_of(exported(store, "m2"))[0]["metadata"]["answering"] == b


def test_a_replaced_row_keeps_its_place(tmp_path: Path) -> None:
    head, rows = synthetic(5)
    store = Store.memory()
    store.import_results(write(tmp_path / "a.json", head, rows))
    again = copy.deepcopy(rows[1])
    again["template"]["raw_llm_response"] = "second answer"
    store.import_results(write(tmp_path / "b.json", head, [again]))
    back = rows_of(exported(store, "run-x"))
    assert [r["metadata"]["result_id"] for r in back] == [r["metadata"]["result_id"] for r in rows]
    assert back[1]["template"]["raw_llm_response"] == "second answer"


@pytest.mark.parametrize("small", [1_000_000, 10], ids=["one transaction", "named pipe"])
def test_a_lone_surrogate_is_refused_with_its_row(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, small: int) -> None:
    from karenina_rdf.store import _loading

    monkeypatch.setattr(_loading, "SMALL", small)  # the pipe opens once this many lines are mapped
    head, rows = synthetic(4)
    rows[2]["template"]["raw_llm_response"] = "LONE-SURROGATE"
    path = write(tmp_path / "x.json", head, rows)
    # Valid JSON (an escape), not valid text: what a writer with ensure_ascii=True leaves behind.
    path.write_text(path.read_text(encoding="utf-8").replace("LONE-SURROGATE", "\\ud800"), encoding="utf-8")
    store = Store.memory()
    with pytest.raises(CheckpointError) as caught:
        store.import_results(path)
    (problem,) = caught.value.problems
    assert problem.pointer == "/results/2" and "surrogate" in problem.message
    assert store.runs() == [] and not store.hidden_graphs()


def test_a_big_import_through_the_pipe_equals_a_small_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from karenina_rdf.store import _loading

    head, rows = synthetic(20)
    path = write(tmp_path / "x.json", head, rows)
    small = Store.memory()
    small.import_results(path)
    monkeypatch.setattr(_loading, "SMALL", 10)
    piped = Store(tmp_path / "disk")
    piped.import_results(path)
    assert exported(piped, "run-x") == exported(small, "run-x") == path.read_text(encoding="utf-8")
    piped.close()


def test_an_early_syntax_error_is_reported_without_reading_on(tmp_path: Path) -> None:
    path = tmp_path / "early.json"
    head = '{"format_version": "2.2", "metadata": {"job_id": "j",, "x": 1}, "results": [\n'
    path.write_text(head + ",\n".join(['{"metadata": {"question_id": "q"}}'] * 20000) + "\n]}", encoding="utf-8")
    with pytest.raises(CheckpointError) as caught:
        Store.memory().import_results(path)
    (problem,) = caught.value.problems
    assert (problem.pointer, problem.line) == ("/metadata", 1) and "invalid JSON" in problem.message


# -- links, ambiguity, unmatched ------------------------------------------------------------
def test_unmatched_questions_are_kept_and_reported(tmp_path: Path) -> None:
    head, rows = synthetic(4)
    rows[1]["metadata"]["question_id"] = "not-stored-1"
    store = Store.memory()
    store.import_paths([EXAMPLES / "molecular-biology.jsonld"])
    result = store.import_results(write(tmp_path / "x.json", head, rows))
    assert (result.rows, result.unmatched, result.unmatched_ids) == (4, 1, ("not-stored-1",))
    back = rows_of(exported(store, "run-x"))
    assert [r["metadata"]["question_id"] for r in back][1] == "not-stored-1"


def test_a_question_id_in_two_benchmarks_needs_benchmark(tmp_path: Path) -> None:
    store = Store.memory()
    store.import_paths([EXAMPLES / "molecular-biology.jsonld", EXAMPLES / "pharmacology.jsonld"])
    shared = "urn:uuid:question-what-is-the-primary-molecular-target-of-imatinib-af35ccf9"
    head, rows = synthetic(3)
    rows[2]["metadata"]["question_id"] = shared
    path = write(tmp_path / "x.json", head, rows)
    with pytest.raises(CheckpointError) as caught:
        store.import_results(path)
    (problem,) = caught.value.problems
    assert problem.pointer == "/results/2/metadata/question_id" and problem.question_id == shared
    for bench in store.benchmarks():
        if bench.name in ("Molecular biology examples", "Pharmacology examples"):
            assert bench.benchmark_id in problem.message
    assert "--benchmark" in problem.message
    assert store.runs() == [] and not store.hidden_graphs()
    assert not [g for g in store.oxigraph.named_graphs() if "/runs/" in g.value]
    result = store.import_results(path, benchmark="Pharmacology examples")
    assert result.benchmarks == (store.resolve("Pharmacology examples"),)
    linked = store.query("SELECT ?q WHERE { ?r karenina:questionId ?id ; earl:test ?q }", id=shared)
    assert [s["q"].value for s in linked] == [store.resolve("Pharmacology examples") + "/questions/" + shared]


# -- errors and atomicity ------------------------------------------------------------------
def _bad_inputs() -> list[tuple[str, str, str | None, int | None, str]]:
    ok = '{"format_version": "2.2", "metadata": {"job_id": "j"}, "shared_data": {},"results":[\n'
    return [
        ("not JSON", "hello", "/", 1, "a results export is a JSON object"),
        ("truncated", ok + '{"metadata": {"question_id": "q"', "/results/0", 2, "invalid JSON"),
        ("unknown version", '{"format_version": "3.0", "results": []}', "/format_version", None, "'3.0'"),
        ("row not an object", ok + "[1]\n]}", "/results/0", None, "a result is a JSON object"),
        ("no metadata", ok + '{"template": {}}\n]}', "/results/0", None, "'metadata' object"),
        ("question id not a string", ok + '{"metadata": {"question_id": 5}}\n]}', "/results/0", None, "question_id"),
        (
            "text after the end",
            '{"format_version": "2.2", "metadata": {}, "results": []} x',
            "/",
            None,
            "after the end",
        ),
        ("missing comma", ok + '{"metadata": {"question_id": "q"}} {}\n]}', "/results/0", None, "expected ','"),
    ]


@pytest.mark.parametrize(
    ("label", "text", "pointer", "line", "message"), _bad_inputs(), ids=[b[0] for b in _bad_inputs()]
)
def test_bad_input_names_file_place_and_problem(
    tmp_path: Path, label: str, text: str, pointer: str | None, line: int | None, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    store = Store.memory()
    with pytest.raises(CheckpointError) as caught:
        store.import_results(path)
    (problem,) = caught.value.problems
    assert problem.file == str(path)
    assert (problem.pointer or "/") == pointer
    if line is not None:
        assert problem.line == line
    assert message in problem.message
    assert store.runs() == [] and not [g for g in store.oxigraph.named_graphs() if "/runs/" in g.value]


def test_a_failed_reimport_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    head, rows = synthetic(6)
    store = Store.memory()
    store.import_results(write(tmp_path / "a.json", head, rows))
    before = exported(store, "run-x")
    bad = copy.deepcopy(rows)
    bad[4] = {"metadata": "broken"}
    with pytest.raises(CheckpointError) as caught:
        store.import_results(write(tmp_path / "b.json", head, bad))
    assert caught.value.problems[0].pointer == "/results/4"
    assert exported(store, "run-x") == before
    assert len(store.run_graphs()) == 1 and not store.hidden_graphs()


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"format_version": "2.2",\n"metadata": {"job_id": "caf\xe9"}, "results": []}')
    with pytest.raises(CheckpointError, match="not UTF-8"):
        Store.memory().import_results(path)


def test_unknown_run_is_a_clear_error(examples: Store) -> None:
    with pytest.raises(NotFoundError, match="molecular-biology-2026-05"):
        examples.export_results("no-such-run", io.StringIO())


# -- streaming reader ------------------------------------------------------------------------
@pytest.mark.parametrize("window", [pytest.param(1, marks=pytest.mark.slow), 7, 1 << 20])  # 1: a byte at a time
@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_reader_gives_the_rows_json_load_gives(monkeypatch: pytest.MonkeyPatch, window: int, path: Path) -> None:
    monkeypatch.setattr(reader_module, "_WINDOW", window)
    reader = ExportReader(path)
    rows = [row for _, _, row in reader.rows()]
    reader.close()
    whole = json.loads(path.read_text(encoding="utf-8"))
    assert rows == whole["results"]
    assert {k: v for k, v in reader.header.items() if k != "results"} == {
        k: v for k, v in whole.items() if k != "results"
    }


def test_header_after_the_rows_and_pretty_printed(tmp_path: Path) -> None:
    head, rows = synthetic(3, job="late-header")
    doc = {"results": rows, **head}  # a 2.1-era writer: json.dumps(indent=2), other key order
    path = tmp_path / "late.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    store = Store.memory()
    result = store.import_results(path)
    assert (result.run_id, result.rows) == ("late-header", 3)
    back = json.loads(exported(store, "late-header"))
    # The export is written in Karenina's layout, whatever the order of the file it came from.
    assert back["results"] == rows and list(back) == ["format_version", "metadata", "shared_data", "results"]


# -- legacy formats --------------------------------------------------------------------------
LEGACY_ROW = {
    "metadata": {
        "question_id": "urn:uuid:8a6fb8bfe479574b424385734cd50a6f",
        "template_id": "c18b2f46979874031b988f2b46a522fa",
        "completed_without_errors": True,
        "error": None,
        "question_text": "Are atopic eczema and Atopic Dermatitites synonyms?",
        "raw_answer": "Yes",
        "keywords": ["Annotation", "Disease"],
        "answering_model": "anthropic/claude-haiku-4-5",
        "parsing_model": "anthropic/claude-haiku-4-5",
        "answering_system_prompt": "You are an expert.",
        "parsing_system_prompt": "Parse.",
        "execution_time": 7.85,
        "timestamp": "2025-12-12 18:06:17",
        "run_name": "haiku-subsample",
        "answering_replicate": 3,
        "parsing_replicate": 3,
    },
    "template": {
        "raw_llm_response": "Yes",
        "template_verification_performed": True,
        "verify_result": True,
        "verify_granular_result": None,
        "verify_granular_result_details": None,
        "abstention_check_performed": False,
    },
    "rubric": {
        "rubric_evaluation_performed": True,
        "rubric_evaluation_strategy": "batch",
        "llm_trait_scores": {"Consequentiality": True},
        "regex_trait_scores": None,
        "callable_trait_scores": None,
        "metric_trait_scores": None,
    },
    "evaluation_input": "Yes",
    "used_full_trace": False,
    "trace_extraction_error": None,
}


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_legacy_rows_are_migrated_to_the_current_record(tmp_path: Path, version: str) -> None:
    doc = {
        "format_version": version,
        "metadata": {"export_timestamp": "2025-12-12 18:06:47 UTC", "karenina_version": "0.1.0", "job_id": "legacy"},
        "shared_data": {"rubric_definition": {"llm_traits": []}},
        "results": [
            LEGACY_ROW,
            {
                **LEGACY_ROW,
                "metadata": {
                    **LEGACY_ROW["metadata"],
                    "completed_without_errors": False,
                    "error": "boom",
                    "answering_replicate": 1,
                },
            },
        ],
    }
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    store = Store.memory()
    result = store.import_results(path)
    assert (result.format_version, result.migrated, result.rows) == (version, 2, 2)
    back = json.loads(exported(store, "legacy"))
    assert back["format_version"] == "2.2"
    first, second = back["results"]
    meta = first["metadata"]
    assert meta["answering"] == {
        "interface": "anthropic",
        "model_name": "claude-haiku-4-5",
        "tools": [],
        "config_id": None,
    }
    assert (meta["replicate"], meta["failure"], len(meta["result_id"])) == (3, None, 16)
    assert not {"answering_model", "completed_without_errors", "answering_replicate"} & set(meta)
    assert "verify_granular_result_details" not in first["template"]
    assert list(meta) == [f.name for f in PARTS[0][1]]
    assert second["metadata"]["failure"]["category"] == "unexpected_error"
    assert second["metadata"]["failure"]["reason"] == "boom"
    kept = [json.loads(s["v"].value) for s in store.query("SELECT ?v WHERE { ?r karenina:legacyFields ?v }")]
    assert {"answering_model": "anthropic/claude-haiku-4-5"}.items() <= kept[0]["metadata"].items()


# -- CSV -------------------------------------------------------------------------------------
def test_csv_has_one_column_per_global_trait(examples: Store) -> None:
    path = EXAMPLES / "results" / "pharmacology-2026-05.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    buf = io.StringIO()
    n = examples.export_results("pharmacology-2026-05", buf, format="csv")
    table = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert n == len(table) == len(doc["results"])
    definition = doc["shared_data"]["rubric_definition"]
    global_names = sorted(t["name"] for traits in definition.values() for t in traits)
    cols = list(table[0])
    trait_cols = cols[cols.index("keywords") + 1 : cols.index("answering_model")]
    trait_cols = [c for c in trait_cols if c != "question_specific_rubrics"]
    assert trait_cols == ["rubric_" + n for n in global_names]
    for line, row in zip(table, doc["results"], strict=True):
        meta, rubric = row["metadata"], row["rubric"] or {}
        assert line["question_id"] == meta["question_id"]
        assert line["success"] == str(meta["failure"] is None)
        scores = {**(rubric.get("llm_trait_scores") or {}), **(rubric.get("regex_trait_scores") or {})}
        scores |= rubric.get("callable_trait_scores") or {}
        scores |= rubric.get("metric_trait_scores") or {}
        for name in global_names:
            assert line["rubric_" + name] == (str(scores[name]) if name in scores else "")
        specific = {k: v for k, v in scores.items() if k not in global_names}
        if "question_specific_rubrics" in line:
            assert json.loads(line["question_specific_rubrics"]) == specific


# -- commands --------------------------------------------------------------------------------
def test_results_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    store = str(tmp_path / "store")
    r = runner.invoke(app, ["import", str(EXAMPLES), "--store", store])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("imported run ") == len(RESULTS)
    r = runner.invoke(app, ["results", "runs", "--store", store])
    assert r.exit_code == 0 and all(p.stem in r.stdout for p in RESULTS)
    a, b = "molecular-biology-2026-05", "molecular-biology-2026-06"
    r = runner.invoke(app, ["results", "compare", a, b, "--store", store])
    assert r.exit_code == 0, r.output
    rate = {}
    for name in (a, b):
        for row in rows_of((EXAMPLES / "results" / f"{name}.json").read_text(encoding="utf-8")):
            meta = row["metadata"]
            rate[(name, meta["question_id"], meta["answering"]["model_name"])] = row["template"]["verify_result"]
    regressions = sum(1 for (n, q, m), v in rate.items() if n == a and v is True and rate.get((b, q, m)) is False)
    improvements = sum(1 for (n, q, m), v in rate.items() if n == a and v is False and rate.get((b, q, m)) is True)
    assert f"{regressions} regressions, {improvements} improvements" in r.stdout
    out = tmp_path / "back.json"
    r = runner.invoke(app, ["results", "export", b, "-o", str(out), "--store", store])
    assert r.exit_code == 0 and out.read_bytes() == (EXAMPLES / "results" / f"{b}.json").read_bytes()
    r = runner.invoke(app, ["results", "compare", a, "nope", "--store", store])
    assert r.exit_code == 1 and "no verification run 'nope'" in r.stderr
    r = runner.invoke(app, ["results", "delete", b, "--store", store])
    assert r.exit_code == 0
    r = runner.invoke(app, ["results", "runs", "--store", store])
    assert b not in r.stdout and a in r.stdout


def test_validating_import_refuses_a_violation_and_keeps_the_store(tmp_path: Path) -> None:
    head, rows = synthetic(6, seed=5)
    store = Store.memory()
    store.import_paths([EXAMPLES / "molecular-biology.jsonld"])
    ok = store.import_results(write(tmp_path / "ok.json", head, rows), validate=True)
    assert ok.warnings == () and ok.rows == 6
    before = exported(store, "run-x")
    odd = copy.deepcopy(rows)
    odd[2]["template"]["usage_metadata"] = {"parsing": {"input_tokens": -5}}  # loadable, but never so
    warned = store.import_results(write(tmp_path / "odd.json", head, odd), validate=True)
    assert len(warned.warnings) == 1 and "/results/2/template/usage_metadata/parsing" in warned.warnings[0]
    before = exported(store, "run-x")
    bad = copy.deepcopy(rows)
    bad[3]["template"]["verify_result"] = "yes"  # Karenina's model refuses it
    with pytest.raises(CheckpointError) as caught:
        store.import_results(write(tmp_path / "bad.json", head, bad), validate=True)
    (problem,) = caught.value.problems
    assert problem.pointer == "/results/3" and "verify_result must be one boolean" in problem.message
    assert exported(store, "run-x") == before and not store.hidden_graphs()
