"""What a query costs in a query worker process, against pyoxigraph in this process, without HTTP:
the worker's frame (``ASK {}``, one at a time) and the light mix of ``bench_endpoint.py`` from T
threads at once through a ``QueryPool`` admitting N queries at a time (``--running``), or on one
read-only store in this process (what a threaded server such as ``oxigraph serve`` does, minus
its HTTP). CPU is read from ``/proc`` (the workers) and ``time.process_time`` (this process).

The data is what ``bench_endpoint.py`` / ``bench_endpoint_ab.py`` prepared under ``--data``; the
store is compacted and checkpointed into a scratch folder once.

    python benchmarks/bench_worker_cost.py --data DIR [--requests 3000] [--threads 8]
        [--running 2,3,8] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_endpoint as be  # noqa: E402
import pyoxigraph as ox  # noqa: E402

from karenina_rdf.rdf import PREFIXES  # noqa: E402
from karenina_rdf.sparql._pool import QueryPool  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
UNION = {"use_default_graph_as_union": True}


def per_child() -> dict[int, float]:
    """CPU seconds of each live child of this process, by pid."""
    me, out = os.getpid(), {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                out[int(entry)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


def children_cpu() -> float:
    return sum(per_child().values())


def compacted_snapshot(store: Path, scratch: Path) -> Path:
    """A copy of ``store`` under ``scratch``, compacted (as `karenina-rdf serve` does on start),
    and a checkpoint of it, which the workers and this process read."""
    shutil.copytree(store, scratch / "store")
    source = ox.Store(str(scratch / "store"))
    source.optimize()
    snapshot = scratch / "snapshot"
    source.backup(str(snapshot))
    del source
    return snapshot


def new_pool(snapshot: Path, scratch: Path, **options: Any) -> QueryPool:
    # The pool deletes what it was given when it closes: a hard-linked copy.
    copy = scratch / f"pool-{time.monotonic_ns()}"
    subprocess.run(["cp", "-al", str(snapshot), str(copy)], check=True)
    pool = QueryPool(**options)
    pool.publish(copy, UNION)
    pool.start(pool.size)
    deadline = time.monotonic() + 60
    while len(pool.status()["idle"]) < pool.size and time.monotonic() < deadline:
        time.sleep(0.1)
    return pool


def run_in(pool: QueryPool, text: str) -> None:
    pool.run(
        text,
        base="http://127.0.0.1/sparql",
        prefixes=PREFIXES,
        dataset=None,
        results_format="json",
        graphs_format="turtle",
        max_bytes=1 << 30,
        deadline=time.monotonic() + 60,
        timeout=60,
    )


def through(pool: QueryPool, text: str, graph: bool) -> None:
    run_in(pool, text)  # the worker serializes a graph as Turtle, a result as JSON


def fixed_cost(store: Any, pool: QueryPool, count: int) -> str:
    prefixes = dict(PREFIXES)
    started = time.process_time()
    for _ in range(count):
        result: Any = store.query("ASK {}", prefixes=prefixes, use_default_graph_as_union=True)
        result.serialize(None, ox.QueryResultsFormat.JSON)
    here = (time.process_time() - started) / count * 1e6
    for _ in range(100):
        run_in(pool, "ASK {}")
    kids, own = children_cpu(), time.process_time()
    for _ in range(count):
        run_in(pool, "ASK {}")
    kids, own = children_cpu() - kids, time.process_time() - own
    return f"| `ASK {{}}`, one at a time | {here:.0f} µs | {kids / count * 1e6:.0f} µs | {own / count * 1e6:.0f} µs |"


def mix(prep: Any, count: int) -> list[tuple[str, bool]]:
    kinds = [k for k in be.build_kinds() if not k.heavy]
    rng = random.Random(0)
    out = []
    for _ in range(count):
        kind = rng.choices(kinds, [k.weight for k in kinds])[0]
        out.append((be.instance(kind, prep.data, rng), kind.accept == be.TURTLE))
    return out


def timed(requests: list[tuple[str, bool]], threads: int, run: Any) -> tuple[float, float, float]:
    """(CPU seconds of the workers, of this process, wall seconds) for ``requests`` from ``threads``."""

    def drive(part: list[tuple[str, bool]]) -> None:
        for text, graph in part:
            run(text, graph)

    def go(items: list[tuple[str, bool]]) -> None:
        pool = [threading.Thread(target=drive, args=(items[i::threads],)) for i in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()

    go(requests[: 50 * threads])  # warm-up
    kids, own, wall = children_cpu(), time.process_time(), time.perf_counter()
    go(requests)
    return children_cpu() - kids, time.process_time() - own, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--running", default="2,3,8", help="queries admitted at once, one pool each")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    prep = pickle.loads((args.data / "prepared.pickle").read_bytes())
    requests = mix(prep, args.requests)
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    with tempfile.TemporaryDirectory(prefix="worker-cost-") as scratch_name:
        scratch = Path(scratch_name)
        snapshot = compacted_snapshot(prep.store, scratch)
        store = ox.Store.read_only(str(snapshot))
        prefixes = dict(PREFIXES)

        def here(text: str, graph: bool) -> None:
            result: Any = store.query(text, prefixes=prefixes, use_default_graph_as_union=True)
            if graph:
                ox.serialize(result, None, ox.RdfFormat.TURTLE, prefixes=prefixes)
            else:
                result.serialize(None, ox.QueryResultsFormat.JSON)

        print("\n| query | pyoxigraph in this process | worker CPU | parent CPU |\n|---|---:|---:|---:|")
        pool = new_pool(snapshot, scratch, heavy_slots=1, reserve=1)
        try:
            print(fixed_cost(store, pool, 4000), flush=True)
        finally:
            pool.close()
        print(
            f"\nlight mix, {args.requests:,} requests from {args.threads} threads\n"
            "| where | round | CPU ms a query: workers | this process | queries/s | load |\n"
            "|---|---:|---:|---:|---:|---:|"
        )
        for r in range(args.repeat):
            _, own_cpu, wall = timed(requests, args.threads, here)
            load = Path("/proc/loadavg").read_text().split()[0]
            print(
                f"| pyoxigraph in this process, {args.threads} threads | {r + 1} | — | "
                f"{own_cpu / args.requests * 1000:.2f} | {args.requests / wall:,.0f} | {load} |",
                flush=True,
            )
            for running in [int(n) for n in args.running.split(",") if n]:
                pool = new_pool(snapshot, scratch, heavy_slots=8, reserve=2, running=running)
                try:
                    kids, own_cpu, wall = timed(requests, args.threads, partial(through, pool))
                finally:
                    pool.close()
                load = Path("/proc/loadavg").read_text().split()[0]
                print(
                    f"| workers, {running} admitted at once | {r + 1} | {kids / args.requests * 1000:.2f} | "
                    f"{own_cpu / args.requests * 1000:.2f} | {args.requests / wall:,.0f} | {load} |",
                    flush=True,
                )
    print(f"\nload average after: {Path('/proc/loadavg').read_text().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
