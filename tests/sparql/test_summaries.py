"""The runs' summaries (results._summaries) give the named queries that read them the same rows as
the raw aggregation over every result: the text these queries had before they read summaries,
kept in tests/sparql/earlier/. Checked after imports, a re-import that replaces some
rows and keeps others, a run deleted, a benchmark deleted, a raw SPARQL update (which drops the
summaries: the queries then aggregate the results themselves) and summarise_runs writing them
again; the live verification run's end is checked in the slow test below."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Store
from karenina_rdf.rdf import KAR
from karenina_rdf.results import summarise_runs
from karenina_rdf.sparql._named import find_query, parse_query_file
from tests.conftest import EXAMPLES
from tests.sparql.test_queries_memory import _table

RAW = Path(__file__).parent / "earlier"
MB5, MB6, PH5 = "molecular-biology-2026-05", "molecular-biology-2026-06", "pharmacology-2026-05"

# Each summarised query with the parameters it is compared under (without, then each filter).
CASES: dict[str, list[dict[str, str]]] = {
    "token-usage": [{}, {"run": MB6}, {"model": "gpt-4o"}],
    "run-cost": [{}, {"run": MB5}],
    "failure-counts": [{}, {"run": MB5}, {"model": "gpt-4o"}],
    "trait-metrics-by-model": [{}, {"run": MB6}, {"model": "gpt-4o"}],
    "trait-aggregates-by-model": [{}, {"run": MB5}, {"model": "gpt-4o"}],
}


def summarised_runs(store: Store) -> set[str]:
    """The ids of the runs whose graph holds the marker of their summaries."""
    q = f"SELECT ?id WHERE {{ ?m a {KAR.RunSummaries.nt} ; prov:wasGeneratedBy ?rn . ?rn schema:identifier ?id }}"
    return {s["id"].value for s in store.query(q)}


def assert_same_rows(store: Store, *, nonempty: bool = True) -> None:
    """Every case: the named query's rows are the raw aggregation's rows (both on this store)."""
    for name, cases in CASES.items():
        raw = parse_query_file(RAW / f"{name}.rq")
        for params in cases:
            ours = _table(name, store.query(find_query(name).bind(params)))
            theirs = _table(name, store.query(raw.bind(params)))
            assert ours == theirs, f"{name} {params}"
            if nonempty and not params:
                assert ours, f"{name} returned no rows: the comparison proves nothing"


def test_earlier_are_what_the_queries_sum() -> None:
    """The raw texts have the queries' parameters and columns (so each comparison is like for like)."""
    for name in CASES:
        ours, raw = find_query(name), parse_query_file(RAW / f"{name}.rq")
        assert [(p.name, p.type) for p in ours.params] == [(p.name, p.type) for p in raw.params]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "store")
    s.import_paths([EXAMPLES], validate=False)
    yield s
    s.close()


def test_after_import(store: Store) -> None:
    assert summarised_runs(store) == {MB5, MB6, PH5}
    assert_same_rows(store)


def _changed_export(tmp_path: Path) -> Path:
    """The MB6 export with its first two rows' token counts and failure changed (the same row
    identities: they replace the stored rows, the others are kept)."""
    data = json.loads((EXAMPLES / "results" / f"{MB6}.json").read_text())
    rows = copy.deepcopy(data["results"][:2])
    for row in rows:
        for counts in (row["template"] or {}).get("usage_metadata", {}).values():
            if isinstance(counts.get("input_tokens"), int):
                counts["input_tokens"] += 1000
        row["metadata"]["failure"] = None
    data["results"] = rows
    path = tmp_path / "mb6-two-rows.json"
    path.write_text(json.dumps(data))
    return path


def test_after_reimport_replacing_some_rows(store: Store, tmp_path: Path) -> None:
    before = _table("token-usage", store.query("token-usage", run=MB6))
    report = store.import_results(_changed_export(tmp_path), run=MB6)
    assert (report.status, report.replaced) == ("updated", 2)
    assert _table("token-usage", store.query("token-usage", run=MB6)) != before  # the change is seen
    assert summarised_runs(store) == {MB5, MB6, PH5}
    assert_same_rows(store)


def test_after_deletes(store: Store) -> None:
    store.delete_run(MB5)
    assert summarised_runs(store) == {MB6, PH5}
    assert_same_rows(store)
    store.delete("Pharmacology examples")  # its run stays; the run's questions are gone
    assert_same_rows(store)


def test_a_raw_update_drops_them_and_summarise_runs_writes_them_again(store: Store) -> None:
    store.update_graph(
        "PREFIX karenina: <urn:karenina:vocab:> "
        "DELETE { GRAPH ?g { ?u karenina:inputTokens ?n } } "
        'WHERE { GRAPH ?g { ?u karenina:stage "answer_generation" ; karenina:inputTokens ?n } }'
    )
    assert summarised_runs(store) == set()  # no summary could be stale: none is left
    assert_same_rows(store)  # the queries aggregate the results themselves
    generation = [r for r in store.query("token-usage") if r["stage"].value == "answer_generation"]
    assert generation and all(int(r["input_tokens"].value) == 0 for r in generation)  # the update is seen
    assert len(summarise_runs(store)) == 3
    assert summarised_runs(store) == {MB5, MB6, PH5}
    assert_same_rows(store)
    assert summarise_runs(store) == []  # only the runs without summaries


def test_the_memory_store_writes_them_too() -> None:
    s = Store.memory()
    s.import_paths([EXAMPLES], validate=False)
    assert summarised_runs(s) == {MB5, MB6, PH5}
    assert_same_rows(s)


def test_exports_do_not_carry_them(store: Store, tmp_path: Path) -> None:
    """The summaries are ours: a run exports as Karenina results with nothing of them."""
    out = tmp_path / "out.json"
    store.export_results(MB5, out)
    text = out.read_text()
    assert "Summar" not in text and "valueSum" not in text
    exported = json.loads(text)
    original = json.loads((EXAMPLES / "results" / f"{MB5}.json").read_text())
    assert exported["results"] == original["results"]


@pytest.mark.slow
def test_after_a_live_run_ends_and_resumes(tmp_path: Path) -> None:
    import threading

    from karenina_rdf.runner import RunOptions, Sandbox, run_verification
    from tests.runner.test_pipeline import LEGS, Fake, answers_right, extracting_judge, make_bench

    store = Store(tmp_path / "store")
    store.import_paths([EXAMPLES], validate=False)
    bench = make_bench(
        store, rubric=True, extra=[(f"q-{i}", f"How many legs does creature {i} have?", LEGS) for i in range(4)]
    )
    stop = threading.Event()
    calls: list[str] = []

    def judge(request: Any) -> str:
        calls.append(request.label)
        if len(calls) == 3:
            stop.set()
        return extracting_judge(request)

    a, j = Fake("fake-a", answers_right), Fake("fake-j", judge)
    opts = RunOptions(concurrency=1, run_id="live-run")
    with Sandbox(workers=1) as sandbox:
        first = run_verification(
            store, bench, judges=[j.spec], answerers=[a.spec], sandbox=sandbox, options=opts, stop=stop
        )
        assert first.status == "interrupted"
        assert "live-run" in summarised_runs(store)  # an interrupted run is summarised at its end too
        assert_same_rows(store)
        j2 = Fake("fake-j", extracting_judge)
        second = run_verification(
            store, bench, judges=[j2.spec], answerers=[a.spec], sandbox=sandbox, resume="live-run"
        )
        assert second.status == "completed"
    assert summarised_runs(store) == {MB5, MB6, PH5, "live-run"}
    assert_same_rows(store)
    rows = [r for r in store.query("token-usage", run="live-run") if r["stage"].value == "answer_generation"]
    assert sum(int(r["results"].value) for r in rows) == second.tasks  # every answer of both parts


# Queries rewritten for speed without summaries (each pattern a subquery of its own, joined by
# hashing; the questions chosen before their strings are read; a sort key of the query's own):
# the earlier text's rows, in the same order.
REWRITTEN: dict[str, list[dict[str, str]]] = {
    "questions-without-template": [{}, {"benchmark": "Variants"}],
    "unfinished-questions": [{}, {"benchmark": "Pharmacology examples"}],
    "benchmark-summary": [{}, {"benchmark": "Variants"}],
    "pass-rate-by-keyword": [{}, {"run": MB6}, {"benchmark": "Molecular biology examples"}, {"model": "gpt-4o"}],
}


@pytest.mark.parametrize("changed", [False, True], ids=["imported", "changed"])
def test_rewrites_give_the_earlier_rows(tmp_path: Path, changed: bool) -> None:
    from tests.sparql.test_queries_memory import _stocked

    store = _stocked(tmp_path / "store", changed)
    try:
        for name, cases in REWRITTEN.items():
            earlier = parse_query_file(RAW / f"{name}.rq")
            for params in cases:
                ours = _table(name, store.query(find_query(name).bind(params)))
                assert ours == _table(name, store.query(earlier.bind(params))), f"{name} {params}"
                if not changed and not params:
                    assert ours, f"{name} returned no rows: the comparison proves nothing"
    finally:
        store.close()
