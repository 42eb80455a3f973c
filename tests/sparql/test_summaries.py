"""The runs' summaries (results._summaries) give the named queries that read them the same rows as
the raw aggregation over every result: the text these queries had before they read summaries,
kept in tests/sparql/earlier/. Checked after imports, a re-import that replaces some
rows and keeps others, a run deleted, a benchmark deleted, raw SPARQL updates (after which every run
is recounted: its tallies and summaries are the results' again), a crash before that recount
(recounted when the store is opened) and summarise_runs; the live verification run's end is
checked in the slow test below."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import InvalidValueError, Store
from karenina_rdf.rdf import KAR
from karenina_rdf.results import summarise_runs
from karenina_rdf.sparql._named import find_query, parse_query_file
from karenina_rdf.store import GraphStore
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


# Raw updates that touch results, as a user of the endpoint or of Store.update_graph writes them:
# each changes what the pass rates, token counts or failure counts are.
KAR_PREFIX = "PREFIX karenina: <urn:karenina:vocab:> PREFIX prov: <http://www.w3.org/ns/prov#> "
RAW_UPDATES: dict[str, str] = {
    "verdicts flipped": KAR_PREFIX
    + "DELETE { GRAPH ?g { ?r karenina:verifyResult ?v } } INSERT { GRAPH ?g { ?r karenina:verifyResult ?w } } "
    "WHERE { GRAPH ?g { ?r a karenina:VerificationResult ; karenina:verifyResult ?v } BIND(!?v AS ?w) }",
    "a result deleted": KAR_PREFIX
    + "DELETE { GRAPH ?g { ?r ?p ?o } } WHERE { GRAPH ?g { { SELECT ?r WHERE { ?r a karenina:VerificationResult "
    "; karenina:verifyResult true } ORDER BY ?r LIMIT 1 } ?r ?p ?o } }",
    "failures cleared": KAR_PREFIX + "DELETE WHERE { GRAPH ?g { ?r karenina:failure ?f } }",
    "input tokens removed": KAR_PREFIX + "DELETE { GRAPH ?g { ?u karenina:inputTokens ?n } } "
    'WHERE { GRAPH ?g { ?u karenina:stage "answer_generation" ; karenina:inputTokens ?n } }',
}

# Each run's counts by answering model, judge and benchmark, from its results (what the tallies
# must say): results, verified (a boolean verdict), passed, failures.
FROM_RESULTS = """SELECT ?run ?m ?j (COUNT(?r) AS ?n) (COUNT(?ok) AS ?verified)
  (SUM(IF(COALESCE(?ok, false), 1, 0)) AS ?passed) (COUNT(?f) AS ?failures) WHERE {
  ?r a karenina:VerificationResult ; prov:wasGeneratedBy ?rn . ?rn schema:identifier ?run .
  OPTIONAL { ?r earl:subject ?m } OPTIONAL { ?r earl:assertedBy ?j }
  OPTIONAL { ?r karenina:verifyResult ?ok FILTER(DATATYPE(?ok) = xsd:boolean) }
  OPTIONAL { ?r karenina:failure ?f } } GROUP BY ?run ?m ?j"""
FROM_TALLIES = """SELECT ?run ?m ?j (SUM(?n0) AS ?n) (SUM(?v0) AS ?verified) (SUM(?p0) AS ?passed)
  (SUM(?f0) AS ?failures) WHERE { ?t a karenina:Tally ; prov:wasGeneratedBy ?rn ; karenina:results ?n0 ;
  karenina:verified ?v0 ; karenina:passed ?p0 ; karenina:failures ?f0 . ?rn schema:identifier ?run
  OPTIONAL { ?t karenina:answeringModel ?m } OPTIONAL { ?t karenina:parsingModel ?j } } GROUP BY ?run ?m ?j"""


def _counts(store: Store, query: str) -> set[tuple[str, ...]]:
    cols = ("run", "m", "j", "n", "verified", "passed", "failures")
    return {tuple(str(row[c]) for c in cols) for row in store.query(query)}


def assert_counts_follow_results(store: Store) -> None:
    """The tallies (what the pass rates, the runs list and the run pages read) are the results'
    own counts; so are the pass rates the runs list gives."""
    assert _counts(store, FROM_TALLIES) == _counts(store, FROM_RESULTS)
    by_run: dict[str, list[int]] = {}
    for row in store.query(FROM_RESULTS):
        c = by_run.setdefault(row["run"].value, [0, 0, 0])
        for i, col in enumerate(("n", "verified", "passed")):
            c[i] += int(row[col].value)
    assert {r.run_id: [r.results, r.verified, r.passed] for r in store.runs()} == by_run


@pytest.mark.parametrize("update", RAW_UPDATES.values(), ids=RAW_UPDATES.keys())
def test_a_raw_update_recounts_every_run(store: Store, update: str) -> None:
    """After a raw update that touches results, every read is what the results now say: the pass
    rates (tallies) and the summarised queries, which read summaries written again at once."""
    before = _counts(store, FROM_TALLIES), [_table(n, store.query(n)) for n in CASES]
    store.update_graph(update)
    after = _counts(store, FROM_TALLIES), [_table(n, store.query(n)) for n in CASES]
    assert after != before  # the update changed what the reads answer: the case proves something
    assert summarised_runs(store) == {MB5, MB6, PH5}
    assert_counts_follow_results(store)
    assert_same_rows(store, nonempty=False)
    assert summarise_runs(store) == []  # nothing left to do


def test_an_update_that_does_not_parse_leaves_them_as_they_were(store: Store) -> None:
    before = _counts(store, FROM_TALLIES), [_table(n, store.query(n)) for n in CASES]
    with pytest.raises(InvalidValueError, match="SPARQL syntax error"):
        store.update_graph("INSERT {")
    assert summarised_runs(store) == {MB5, MB6, PH5}
    assert (_counts(store, FROM_TALLIES), [_table(n, store.query(n)) for n in CASES]) == before


def test_pass_rates_follow_a_raw_update(store: Store) -> None:
    """What a user who flips every verdict then asks for pass rates gets: 1 - the old rate."""
    old = {r["answering_model"].value: float(r["pass_rate"].value) for r in store.query("pass-rate-by-model")}
    store.update_graph(RAW_UPDATES["verdicts flipped"])
    new = {r["answering_model"].value: float(r["pass_rate"].value) for r in store.query("pass-rate-by-model")}
    assert new.keys() == old.keys() and old
    assert all(abs(new[m] - (1 - old[m])) < 1e-9 for m in old), (old, new)


def test_a_crash_before_the_recount_is_recounted_on_open(store: Store, tmp_path: Path) -> None:
    """The process dies after the update, before its recount (GraphStore.update_graph alone):
    the runs have no marker, and opening the store recounts them before anything reads them."""
    GraphStore.update_graph(store, RAW_UPDATES["verdicts flipped"])
    assert summarised_runs(store) == set()
    assert _counts(store, FROM_TALLIES) != _counts(store, FROM_RESULTS)  # stale: what a crash leaves
    store.close()
    reopened = Store(tmp_path / "store")
    try:
        assert summarised_runs(reopened) == {MB5, MB6, PH5}
        assert_counts_follow_results(reopened)
        assert_same_rows(reopened)
    finally:
        reopened.close()


def test_summarise_runs_writes_what_a_store_made_before_summaries_lacks(store: Store) -> None:
    """A run imported before summaries existed (no marker, no summaries): summarise_runs writes
    them, for those runs only, and they are what an import writes."""
    from karenina_rdf.rdf import drop_summaries

    written = _counts(store, FROM_TALLIES), [_table(n, store.query(n)) for n in CASES]
    store.oxigraph.update(drop_summaries())
    assert summarised_runs(store) == set()
    assert len(summarise_runs(store)) == 3
    assert summarised_runs(store) == {MB5, MB6, PH5}
    assert (_counts(store, FROM_TALLIES), [_table(n, store.query(n)) for n in CASES]) == written
    assert summarise_runs(store) == []


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
