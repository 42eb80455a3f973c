"""Verification-results benchmark, one run, ratios against baselines measured beside it.

1. Import: a synthetic results export of ``--rows`` full rows (rubric scores, token usage,
   per-field results, failures; benchmarks/generate_results.py) into an embedded on-disk store,
   against the floor of the same work: ``json.load`` of the file plus pyoxigraph's raw
   ``bulk_load`` of the very triples the import produced (dumped, then loaded into a fresh
   store). Target: import ≤ 2× that floor.
2. Query: pass rate per answering model (mean of non-null verify_result) over ``--query-rows``
   stored results (template-only rows), embedded store, median of ``--repeat`` runs. Target
   ≤ 1 s. Beside it, the same question asked of a Karenina results database (SQLite, the layout
   of verification.md §12 with Karenina's indexes) holding the same rows.

    python benchmarks/bench_results.py [--rows 100000] [--query-rows 1000000] [--repeat 5]
        [--workdir DIR] [--out results.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pyoxigraph as ox

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from karenina_rdf import Store  # noqa: E402
from karenina_rdf.results._export import write_export  # noqa: E402
from karenina_rdf.results._runs import list_runs  # noqa: E402


def _module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


gen = _module(HERE / "generate.py", "generate")
genr = _module(HERE / "generate_results.py", "generate_results")

PASS_RATE_SQL = """SELECT metadata_answering_interface, metadata_answering_model_name,
  AVG(CAST(template_verify_result AS REAL)), COUNT(template_verify_result), COUNT(*)
FROM verification_results WHERE run_id = ?
GROUP BY metadata_answering_interface, metadata_answering_model_name"""

# Grouped as Karenina's SQL groups (interface and model name), to compare the same numbers.
# From the run tallies the importer writes (docs/data-model.md §9) ...
PASS_RATE_TALLIES = """SELECT (CONCAT(?interface, ":", ?name) AS ?model) (SUM(?n) AS ?results)
  (SUM(?v) AS ?verified) (SUM(?p) / SUM(?v) AS ?pass_rate)
WHERE { ?t a karenina:Tally ; karenina:answeringModel ?m ; karenina:results ?n ; karenina:verified ?v ;
  karenina:passed ?p . ?m karenina:interface ?interface ; schema:name ?name }
GROUP BY ?interface ?name"""
# ... and from the results themselves, for comparison.
PASS_RATE_SPARQL = """SELECT (CONCAT(?interface, ":", ?name) AS ?model) (COUNT(?r) AS ?results)
  (COUNT(?v) AS ?verified) (SUM(IF(?v, 1, 0)) / COUNT(?v) AS ?pass_rate)
WHERE { ?r a karenina:VerificationResult ; earl:subject ?m .
  OPTIONAL { ?r karenina:verifyResult ?v FILTER(DATATYPE(?v) = xsd:boolean) }
  ?m karenina:interface ?interface ; schema:name ?name }
GROUP BY ?interface ?name"""


def write_rows(path: Path, checkpoint: dict[str, Any], models: int, replicates: int, seed: int, light: bool) -> int:
    rows = genr.generate_rows(checkpoint, models=models, replicates=replicates, seed=seed, light=light)
    head = genr.header(checkpoint, models=models, judges=1, job_id=f"bench-{seed}", rows=0, seed=seed)
    with open(path, "w", encoding="utf-8") as fh:
        return int(write_export(fh, head, rows))


def _median(runs: list[float]) -> float:
    return statistics.median(runs)


def bench_import(work: Path, rows: int) -> dict[str, Any]:
    # About 10 % of generated questions are unfinished and get no rows: ask for enough of them.
    questions = max(1, round(rows / 4 / 0.9))
    checkpoint = gen.generate_checkpoint(questions, seed=1)
    ckpt = work / "checkpoint.jsonld"
    ckpt.write_text(json.dumps(checkpoint, ensure_ascii=False), encoding="utf-8")
    export = work / "results.json"
    t = time.perf_counter()
    n = write_rows(export, checkpoint, models=4, replicates=1, seed=2, light=False)
    print(f"  wrote {n:,} rows, {export.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s", flush=True)
    del checkpoint
    store = Store(work / "store")
    store.import_checkpoint(ckpt, validate=False)
    t = time.perf_counter()
    result = store.import_results(export)
    ours = time.perf_counter() - t
    graph = store.run_graphs()[0]
    dump = work / "run.nt"
    store.oxigraph.dump(str(dump), format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
    store.close()
    t = time.perf_counter()
    with open(export, encoding="utf-8") as fh:
        doc = json.load(fh)
    parse = time.perf_counter() - t
    del doc
    raw = ox.Store(str(work / "raw"))
    t = time.perf_counter()
    raw.bulk_load(path=str(dump), format=ox.RdfFormat.N_TRIPLES, to_graph=ox.NamedNode("urn:run"))
    raw.flush()
    load = time.perf_counter() - t
    del raw
    return {
        "rows": result.rows,
        "triples": result.triples,
        "mb": export.stat().st_size / 1e6,
        "ours": ours,
        "parse": parse,
        "load": load,
        "ratio": ours / (parse + load),
    }


def bench_query(work: Path, rows: int, repeat: int) -> dict[str, Any]:
    replicates = 5
    questions = max(1, round(rows / (4 * replicates) / 0.9))
    checkpoint = gen.generate_checkpoint(questions, seed=3)
    export = work / "light.json"
    t = time.perf_counter()
    n = write_rows(export, checkpoint, models=4, replicates=replicates, seed=4, light=True)
    print(
        f"  wrote {n:,} light rows, {export.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s", flush=True
    )
    store = Store(work / "qstore")
    t = time.perf_counter()
    imported = store.import_results(export)
    import_s = time.perf_counter() - t
    print(f"  imported {imported.rows:,} rows ({imported.triples:,} triples) in {import_s:.1f} s", flush=True)
    store.oxigraph.optimize()

    def timed(query: str) -> tuple[list[tuple[str, str]], float]:
        answer = [(s["model"].value, s["pass_rate"].value) for s in store.query(query)]
        runs = []
        for _ in range(repeat):
            t = time.perf_counter()
            list(store.query(query))
            runs.append(time.perf_counter() - t)
        return answer, _median(runs)

    ours, tallies_s = timed(PASS_RATE_TALLIES)
    raw, raw_s = timed(PASS_RATE_SPARQL)
    named_s = None
    if (ROOT / "queries" / "pass-rate-by-model.rq").exists():
        t = time.perf_counter()
        list(store.query("pass-rate-by-model"))
        named_s = time.perf_counter() - t
    run_id = list_runs(store)[0].run_id
    store.close()
    # Karenina's SQL path: the same rows in a results database with Karenina's layout.
    kdb = _module(ROOT / "tests" / "helpers" / "karenina_db.py", "karenina_db")
    db = work / "karenina.db"
    head = json.loads(export.read_text(encoding="utf-8").split(',"results":[', 1)[0] + "}")
    t = time.perf_counter()
    with open(export, encoding="utf-8") as fh:
        doc = json.load(fh)
    kdb.write_db(db, [(run_id, "bench", head, doc["results"])], benchmark_name="bench")
    del doc
    print(f"  wrote the SQLite database in {time.perf_counter() - t:.1f} s", flush=True)
    con = sqlite3.connect(db)
    sql_rows = con.execute(PASS_RATE_SQL, (run_id,)).fetchall()
    sql_runs = []
    for _ in range(repeat + 1):
        t = time.perf_counter()
        con.execute(PASS_RATE_SQL, (run_id,)).fetchall()
        sql_runs.append(time.perf_counter() - t)
    con.close()
    ours_rates = {m: round(float(v), 9) for m, v in ours}
    sql_rates = {f"{i}:{m}": round(v, 9) for i, m, v, _, _ in sql_rows}
    assert ours_rates == sql_rates == {m: round(float(v), 9) for m, v in raw}, (ours_rates, sql_rates, raw)
    return {
        "rows": imported.rows,
        "triples": imported.triples,
        "import_s": import_s,
        "sparql": tallies_s,
        "raw": raw_s,
        "named": named_s,
        "sql": _median(sql_runs[1:]),
        "models": len(ours),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--query-rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=None, help="where a folder of this run's files goes (kept)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    # A folder of its own, even inside --workdir: the benchmark never empties a folder it was given.
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-results-", dir=args.workdir))
    lines = [f"machine: {platform.machine()}, Python {platform.python_version()}, pyoxigraph {ox.__version__}"]
    print(f"1. import of {args.rows:,} rows", flush=True)
    a = bench_import(work, args.rows)
    lines.append(
        f"import {a['rows']:,} rows ({a['mb']:.0f} MB, {a['triples']:,} triples): ours {a['ours']:.1f} s; "
        f"json.load {a['parse']:.1f} s + bulk_load {a['load']:.1f} s = {a['parse'] + a['load']:.1f} s; "
        f"ratio {a['ratio']:.2f}× (target ≤ 2×)"
    )
    print(lines[-1], flush=True)
    print(f"2. pass rate per model over {args.query_rows:,} results", flush=True)
    b = bench_query(work, args.query_rows, args.repeat)
    named = f"; named query pass-rate-by-model (once) {b['named'] * 1000:.0f} ms" if b["named"] is not None else ""
    lines.append(
        f"pass rate per model, {b['rows']:,} results ({b['triples']:,} triples, imported in {b['import_s']:.0f} s), "
        f"{b['models']} models: embedded, from the run tallies {b['sparql'] * 1000:.0f} ms (target ≤ 1000 ms), "
        f"joining the results themselves {b['raw'] * 1000:.0f} ms{named}; Karenina's SQLite layout "
        f"{b['sql'] * 1000:.0f} ms; ratio tallies/SQLite {b['sparql'] / b['sql']:.2f}×, "
        f"results/SQLite {b['raw'] / b['sql']:.1f}×"
    )
    print(lines[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
