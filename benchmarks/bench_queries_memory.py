"""Named queries on the store on disk against the same query text on an in-memory pyoxigraph copy
of the same quads, side by side in one run (issue 20, point 1: on disk within 3× at 100k).

For each size N: one generated benchmark of N questions, the three example benchmarks and their
runs, and a generated results run of ``--results`` rows (so the results queries have work),
imported without validation into an embedded store under ``--workdir`` (kept and reused: an
import of 100k takes minutes). Its quads are then loaded into ``pyoxigraph.Store()``. Every named
query (``queries/*.rq``), with parameters from :data:`PARAMS`, runs on both with the
dataset ``Store.query`` gives it (the union default graph), once to warm up and ``--repeat``
times; every row is read into Python. The table gives the p50 in ms on disk (through
``Store.query``, what a user calls), in memory, and their ratio; a query returning over
:data:`TARGET_ROWS` rows is outside the target and marked so.

    python benchmarks/bench_queries_memory.py [--sizes 10000,100000] [--repeat 5] [--results 10000]
        [--workdir /tmp/i20q] [--only NAME,...] [--skip LABEL,...] [--slow SECONDS] [--baseline DIR]

A reused store made before the runs' summaries existed gets them first (``summarise_runs``, timed
and printed). ``--baseline DIR``: for each query with a file ``DIR/NAME.rq`` (e.g. the raw
aggregations in tests/sparql/earlier, the texts before the queries read summaries),
that text is timed too, on disk and in memory, in the same run: before and after side by side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import pyoxigraph as ox  # noqa: E402

from karenina_rdf import Store  # noqa: E402
from karenina_rdf.rdf._vocab import PREFIXES  # noqa: E402
from karenina_rdf.results import summarise_runs  # noqa: E402
from karenina_rdf.sparql._named import NamedQuery, find_query, named_queries, parse_query_file  # noqa: E402

# Parameters of the queries that need some (the others run with their defaults): values found in
# the generated data or the examples, so each query has rows to return.
PARAMS: dict[str, list[dict[str, str]]] = {
    "questions-by-keyword": [{"keyword": "genomics"}, {"keyword": "rare disease"}],
    "benchmarks-by-author": [{"author": "karenina"}],
    "benchmarks-by-property": [{"property": "domain"}],
    "search": [{"phrase": "kinase"}],
    "run-comparison": [{"run_a": "molecular-biology-2026-05", "run_b": "molecular-biology-2026-06"}],
    "question-history": [{"question_id": "FIRST_RESULT_QUESTION"}],  # filled from the store
}
TARGET_ROWS = 10_000


def build(n: int, workdir: Path, results: int) -> tuple[Path, float | None]:
    """The store of size ``n`` under ``workdir`` (made once; None as load time when reused)."""
    folder = workdir / f"store-{n}-r{results}"
    if (folder / "ready").exists():
        return folder, None
    src = workdir / f"bench-{n}.jsonld"
    if not src.exists():
        subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(src)], check=True)
    export = workdir / f"results-{n}-r{results}.json"
    if results and not export.exists():
        cmd = [sys.executable, str(HERE / "generate_results.py"), str(src), str(export), "--rows", str(results)]
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    start = time.perf_counter()
    store = Store(folder)
    store.import_checkpoint(src, validate=False)
    store.import_paths([ROOT / "examples"], validate=False)
    if results:
        store.import_results(export)
    store.close()
    (folder / "ready").write_text("")
    return folder, time.perf_counter() - start


def memory_copy(store: Store) -> ox.Store:
    """An in-memory pyoxigraph store with the same quads (hidden graphs too: none after imports)."""
    copy = ox.Store()
    copy.bulk_extend(store.oxigraph.quads_for_pattern(None, None, None, None))
    return copy


def _rows(results: Any) -> int:
    rows = 0
    for solution in results:
        tuple(solution)  # every value decoded, as a caller reading the rows does
        rows += 1
    return rows


def _disk(store: Store, name: str, params: dict[str, str], query: NamedQuery | None = None) -> int:
    if query is not None:  # a baseline text: bound as Store.query binds a named one
        return _rows(store.query(query.bind(params, search=store.fulltext.scores)))
    return _rows(store.query(name, **params))


def _memory(
    memory: ox.Store,
    store: Store,
    name: str,
    params: dict[str, str],
    dataset: dict[str, Any],
    query: NamedQuery | None = None,
) -> int:
    """The same text in memory, bound in the timed part as Store.query binds it (a search
    parameter asks the store's full-text index, on both sides)."""
    text = (query or find_query(name)).bind(params, search=store.fulltext.scores)
    return _rows(memory.query(text, prefixes=dict(PREFIXES), **dataset))


def _p50(run: Callable[[], int], repeat: int, slow_s: float) -> tuple[float, int]:
    """p50 of ``repeat`` runs after a warm-up; one run when the warm-up took over ``slow_s``."""
    start = time.perf_counter()
    rows = run()
    if time.perf_counter() - start > slow_s:
        repeat = 1
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), rows


def cases(store: Store, only: set[str] | None, skip: set[str]) -> list[tuple[str, str, dict[str, str]]]:
    first = next(iter(store.query("SELECT ?id WHERE { ?r karenina:questionId ?id } ORDER BY ?id LIMIT 1")), None)
    out = []
    for name in sorted(named_queries()):
        if only and name not in only:
            continue
        for params in PARAMS.get(name, [{}]):
            if params.get("question_id") == "FIRST_RESULT_QUESTION":
                params = {"question_id": first["id"].value if first else "none"}
            label = name + "".join(f" {k}={v}" for k, v in params.items() if k != "question_id")
            if label in skip:
                continue
            out.append((name, label, params))
    return out


def bench_size(
    n: int,
    workdir: Path,
    repeat: int,
    results: int,
    only: set[str] | None,
    slow_s: float,
    skip: set[str],
    baseline: Path | None = None,
) -> list[str]:
    folder, load = build(n, workdir, results)
    store = Store(folder)
    start = time.perf_counter()
    summarised = summarise_runs(store)
    summarise_s = time.perf_counter() - start
    start = time.perf_counter()
    memory = memory_copy(store)
    copy_s = time.perf_counter() - start
    quads = len(memory)
    load_avg = [Path("/proc/loadavg").read_text().split()[:3]]
    rows_table = []
    before: dict[str, tuple[float, float]] = {}
    for name, label, params in cases(store, only, skip):
        dataset = store.dataset()
        old = baseline / f"{name}.rq" if baseline is not None else None
        if old is not None and old.exists():
            raw = parse_query_file(old)
            b_disk, b_rows = _p50(partial(_disk, store, name, params, raw), repeat, slow_s)
            b_mem, b_mem_rows = _p50(partial(_memory, memory, store, name, params, dataset, raw), repeat, slow_s)
            assert b_rows == b_mem_rows, (label, b_rows, b_mem_rows)
            before[label] = (b_disk, b_mem)
            print(f"  {n:,} {label} (baseline): disk {b_disk:.1f} ms, memory {b_mem:.1f} ms", file=sys.stderr)
        disk_ms, rows = _p50(partial(_disk, store, name, params), repeat, slow_s)
        mem_ms, mem_rows = _p50(partial(_memory, memory, store, name, params, dataset), repeat, slow_s)
        assert rows == mem_rows, (label, rows, mem_rows)
        if label in before:
            assert rows == b_rows, (label, rows, b_rows)
        rows_table.append((label, rows, disk_ms, mem_ms))
        note = f"  {n:,} {label}: {rows} rows, disk {disk_ms:.1f} ms, memory {mem_ms:.1f} ms"
        print(note, file=sys.stderr, flush=True)
    load_avg.append(Path("/proc/loadavg").read_text().split()[:3])
    store.close()
    lines = [
        f"### N = {n:,} questions (+ the 3 examples, {results:,} generated results; {quads:,} quads)",
        "",
        ("Store reused" if load is None else f"Import without validation: {load:.1f} s")
        + f"; runs summarised first: {len(summarised)} in {summarise_s:.1f} s"
        + f"; in-memory copy loaded in {copy_s:.1f} s. Load average before / after: "
        + " / ".join(" ".join(x) for x in load_avg),
        "",
        "| query | rows | before: disk / memory p50 ms (ratio) | on disk p50 ms | in memory p50 ms | ratio | ≤ 3× |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for label, rows, disk_ms, mem_ms in rows_table:
        ratio = disk_ms / mem_ms if mem_ms > 0 else float("inf")
        verdict = "(over 10k rows)" if rows > TARGET_ROWS else ("yes" if ratio <= 3 else "**no**")
        b = before.get(label)
        was = f"{b[0]:,.1f} / {b[1]:,.1f} ({b[0] / b[1]:.1f}×)" if b and b[1] > 0 else ""
        lines.append(f"| {label} | {rows:,} | {was} | {disk_ms:,.1f} | {mem_ms:,.1f} | {ratio:.1f}× | {verdict} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000", help="question counts (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per query (default: %(default)s)")
    parser.add_argument("--results", type=int, default=10_000, help="generated results rows (default: %(default)s)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/i20q"), help="stores are kept here for reuse")
    parser.add_argument("--slow", type=float, default=2.0, help="one timed run after a warm-up this slow (s)")
    parser.add_argument("--only", default="", help="comma-separated query names (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated case labels to leave out (e.g. over 10k rows)")
    parser.add_argument("--baseline", type=Path, default=None, help="folder of earlier texts NAME.rq timed alongside")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    only = {s for s in args.only.split(",") if s} or None
    skip = {s for s in args.skip.split(",") if s}
    print(f"Python {sys.version.split()[0]}, pyoxigraph {ox.__version__}\n")
    for n in (int(s) for s in args.sizes.split(",") if s.strip()):
        lines = bench_size(n, args.workdir, args.repeat, args.results, only, args.slow, skip, args.baseline)
        print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
