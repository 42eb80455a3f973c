"""What a raw SPARQL update costs a run's tallies and summaries, and what reading without them costs.

A raw update (``Store.update_graph``, the endpoint's update, ``karenina-rdf update``) may change any
result, so the runs' tallies (pass rates) and summaries (token usage, cost, failures, trait
aggregates) are recounted after it (results._recount). This measures, on one generated run of
``--rows`` full results (benchmarks/generate_results.py) in an embedded on-disk store, in one
process and one run:

* the update alone (one result's verdict flipped), as ``GraphStore.update_graph`` runs it;
* the recount of every run after it (``recount_runs``);
* the reads the recount serves: pass rate by model from the tallies against the same rate
  aggregated from the results, and the summarised named queries (token-usage, run-cost,
  failure-counts, trait-aggregates-by-model) with summaries against without (the marker dropped:
  the queries then aggregate the run's results), median of ``--repeat``.

    python benchmarks/bench_raw_update.py [--rows 10000] [--repeat 5] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_results import gen, write_rows  # noqa: E402  (the generators, loaded from benchmarks/)

from karenina_rdf import Store  # noqa: E402
from karenina_rdf.rdf import KAR, drop_summaries  # noqa: E402
from karenina_rdf.results._recount import recount_runs  # noqa: E402
from karenina_rdf.store import GraphStore  # noqa: E402

# The pass rate by model as the tallies give it, and aggregated from every result (what a read
# would do without tallies: the mean of the non-null verdicts).
FROM_TALLIES = f"""SELECT ?m (SUM(?v) AS ?verified) (SUM(?p) AS ?passed) WHERE {{
  ?t a {KAR.Tally.nt} ; {KAR.answeringModel.nt} ?m ; {KAR.verified.nt} ?v ; {KAR.passed.nt} ?p }} GROUP BY ?m"""
FROM_RESULTS = f"""SELECT ?m (COUNT(?ok) AS ?verified) (SUM(IF(BOUND(?ok) && ?ok, 1, 0)) AS ?passed) WHERE {{
  ?r a {KAR.VerificationResult.nt} ; <http://www.w3.org/ns/earl#subject> ?m .
  OPTIONAL {{ ?r {KAR.verifyResult.nt} ?ok FILTER(DATATYPE(?ok) = xsd:boolean) }} }} GROUP BY ?m"""
BOTH = (FROM_TALLIES, FROM_RESULTS)
SUMMARISED = ("token-usage", "run-cost", "failure-counts", "trait-aggregates-by-model")
FLIP = f"""PREFIX karenina: <urn:karenina:vocab:>
DELETE {{ GRAPH ?g {{ ?r karenina:verifyResult ?v }} }} INSERT {{ GRAPH ?g {{ ?r karenina:verifyResult ?w }} }}
WHERE {{ {{ SELECT ?g ?r ?v WHERE {{ GRAPH ?g {{ ?r a {KAR.VerificationResult.nt} ; karenina:verifyResult ?v }} }}
  ORDER BY ?r LIMIT 1 }} BIND(!?v AS ?w) }}"""


def _load() -> str:
    with open("/proc/loadavg", encoding="utf-8") as fh:
        return " ".join(fh.read().split()[:3])


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _read(store: Store, query: str) -> list[Any]:
    return list(store.query(query))


def _median(fn: Callable[[], Any], repeat: int) -> float:
    return statistics.median(_timed(fn)[1] for _ in range(repeat))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=None, help="a folder for the store (kept); default a temporary one")
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-raw-update-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load before: {_load()}  cpus: {os.cpu_count()}", flush=True)
    checkpoint = gen.generate_checkpoint(max(1, round(args.rows / 4 / 0.9)), seed=1)
    ckpt = work / "checkpoint.jsonld"
    ckpt.write_text(json.dumps(checkpoint, ensure_ascii=False), encoding="utf-8")
    export = work / "results.json"
    n = write_rows(export, checkpoint, models=4, replicates=1, seed=2, light=False)
    store = Store(work / "store")
    try:
        store.import_checkpoint(ckpt, validate=False)
        report = store.import_results(export, validate=False)
        print(f"{n:,} rows written, {report.rows:,} imported ({report.triples:,} triples)", flush=True)
        # The update as GraphStore.update_graph runs it (no recount), then the recount after it.
        _, update_s = _timed(lambda: GraphStore.update_graph(store, FLIP))
        recounted, recount_s = _timed(lambda: recount_runs(store))
        assert len(recounted) == 1
        tallies = _median(partial(_read, store, FROM_TALLIES), args.repeat)
        results = _median(partial(_read, store, FROM_RESULTS), args.repeat)
        rates = [sorted(tuple(str(r[v]) for v in ("m", "verified", "passed")) for r in store.query(q)) for q in BOTH]
        assert rates[0] == rates[1], rates  # the recounted tallies are the results' counts
        with_summaries = {q: _median(partial(_read, store, q), args.repeat) for q in SUMMARISED}
        store.oxigraph.update(drop_summaries())  # the marker goes too: the queries read the results
        without = {q: _median(partial(_read, store, q), args.repeat) for q in SUMMARISED}
    finally:
        store.close()
        if args.workdir is None:  # a failed run leaves no store of hundreds of MB in /tmp either
            shutil.rmtree(work, ignore_errors=True)
    print(f"update (one verdict flipped): {update_s * 1000:.1f} ms; recount of the run after it: {recount_s:.2f} s")
    print(f"pass rate by model: tallies {tallies * 1000:.1f} ms, from the results {results * 1000:.1f} ms")
    for q in SUMMARISED:
        print(f"{q}: summaries {with_summaries[q] * 1000:.1f} ms, without {without[q] * 1000:.1f} ms")
    reads = results - tallies + sum(without[q] - with_summaries[q] for q in SUMMARISED)
    print(f"one read of each without them costs {reads:.2f} s more; the recount {recount_s:.2f} s once")
    print(f"load after: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
