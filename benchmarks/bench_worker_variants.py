"""Does a query worker's set-up cost CPU? The light mix of ``bench_endpoint.py`` through a
``QueryPool`` whose workers are started in one of several ways, each against the others in the
same run (rounds in turn, the order reversed every other round), and against pyoxigraph on one
read-only store in this process (T threads, what a threaded server such as ``oxigraph serve``
does, minus its HTTP). CPU per query is read from ``/proc`` (the workers) and
``time.process_time`` (this process).

Variants (``--variants``, comma-separated):

- ``base``: the workers as ``karenina-rdf serve`` starts them.
- ``no-seccomp``: without the seccomp filter that keeps them off the network. **A benchmark
  only**: the endpoint never runs a worker without it (``_worker.main`` refuses to answer if the
  kernel refuses the filter).
- ``malloc``: glibc tunables in the workers' environment: a fixed mmap threshold (32 MiB), no
  trimming below 256 MiB, 16 MiB of top padding, 2,000 chunks per tcache bin.
- ``tcache``: only the last of those (``glibc.malloc.tcache_count=2000``).
- ``arena1``: ``MALLOC_ARENA_MAX=1``.
- ``running1``: one query admitted at a time (the gate at 1) instead of the default.
- ``pinned``: each worker pinned to one core (``sched_setaffinity``), round robin.
- ``in-process-N``: no workers: pyoxigraph in this process, N threads.

The data is what ``bench_endpoint.py`` / ``bench_endpoint_ab.py`` prepared under ``--data``; the
store is compacted and checkpointed into a scratch folder once.

    python benchmarks/bench_worker_variants.py --data DIR [--requests 3000] [--threads 8]
        [--rounds 3] [--variants base,no-seccomp,malloc,running1,in-process-2]
"""

from __future__ import annotations

import argparse
import io
import os
import pickle
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_worker_cost as bwc  # noqa: E402
import pyoxigraph as ox  # noqa: E402

from karenina_rdf.rdf import PREFIXES  # noqa: E402
from karenina_rdf.sparql import _pool  # noqa: E402

BOOTSTRAP = _pool._BOOTSTRAP
# The same bootstrap with _isolation.block_network_here replaced by a no-op before main runs.
NO_SECCOMP = BOOTSTRAP.replace(
    "importlib.import_module('_karenina_query._worker')",
    "importlib.import_module('_karenina_query._isolation').__dict__.__setitem__("
    "'block_network_here', lambda: False) or importlib.import_module('_karenina_query._worker')",
)
assert NO_SECCOMP != BOOTSTRAP, "the worker bootstrap changed: update this benchmark"
TUNABLES = (
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456:"
    "glibc.malloc.top_pad=16777216:glibc.malloc.tcache_count=2000"
)
# variant: (bootstrap, extra environment of the workers)
STARTS: dict[str, tuple[str, dict[str, str]]] = {
    "base": (BOOTSTRAP, {}),
    "no-seccomp": (NO_SECCOMP, {}),
    "malloc": (BOOTSTRAP, {"GLIBC_TUNABLES": TUNABLES}),
    "tcache": (BOOTSTRAP, {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=2000"}),
    "arena1": (BOOTSTRAP, {"MALLOC_ARENA_MAX": "1"}),
    "running1": (BOOTSTRAP, {}),
    "pinned": (BOOTSTRAP, {}),
}


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def through_pool(variant: str, snapshot: Path, scratch: Path, requests: list[tuple[str, bool]], threads: int) -> str:
    bootstrap, env = STARTS[variant]
    saved = dict(os.environ)
    os.environ.update(env)
    _pool._BOOTSTRAP = bootstrap  # read when a worker starts: new_pool waits until all have
    try:
        pool = bwc.new_pool(snapshot, scratch, heavy_slots=8, reserve=2, running=1 if variant == "running1" else 0)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        _pool._BOOTSTRAP = BOOTSTRAP
    try:
        if variant == "pinned":
            cores = sorted(os.sched_getaffinity(0))
            for i, pid in enumerate(pool.status()["idle"]):
                os.sched_setaffinity(pid, {cores[i % len(cores)]})
        bwc.timed(requests[: 50 * threads], threads, partial(bwc.through, pool))  # warm-up
        before, own, wall = bwc.per_child(), time.process_time(), time.perf_counter()
        bwc.timed(requests, threads, partial(bwc.through, pool))
        after, own, wall = bwc.per_child(), time.process_time() - own, time.perf_counter() - wall
    finally:
        pool.close()
    spent = sorted((after[p] - before.get(p, 0.0) for p in after), reverse=True)
    busy = " ".join(f"{s:.1f}" for s in spent if s >= 0.05)
    n = len(requests)
    return f"{sum(spent) / n * 1000:.2f} | {own / n * 1000:.2f} | {n / wall:,.0f} | {busy}"


def in_process(snapshot: Path, requests: list[tuple[str, bool]], threads: int) -> str:
    store = ox.Store.read_only(str(snapshot))
    prefixes = dict(PREFIXES)

    def here(text: str, graph: bool) -> None:
        # As a worker does: the same arguments, the result serialized into a file-like sink.
        result: Any = store.query(
            text, base_iri="http://127.0.0.1/sparql", prefixes=prefixes, use_default_graph_as_union=True
        )
        sink = io.BytesIO()
        if graph:
            ox.serialize(result, sink, ox.RdfFormat.TURTLE, prefixes=prefixes)
        else:
            result.serialize(sink, ox.QueryResultsFormat.JSON)

    bwc.timed(requests[: 50 * threads], threads, here)
    own, wall = time.process_time(), time.perf_counter()
    bwc.timed(requests, threads, here)
    own, wall = time.process_time() - own, time.perf_counter() - wall
    n = len(requests)
    return f"— | {own / n * 1000:.2f} | {n / wall:,.0f} | "


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=8, help="clients sending queries at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default="base,no-seccomp,malloc,running1,in-process-2")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in STARTS and not (v.startswith("in-process-") and v.removeprefix("in-process-").isdigit()):
            parser.error(f"unknown variant {v!r}; known: {', '.join(STARTS)}, in-process-N")
    prep = pickle.loads((args.data / "prepared.pickle").read_bytes())
    requests = bwc.mix(prep, args.requests)
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    print(
        f"\nlight mix, {args.requests:,} queries from {args.threads} threads after {50 * args.threads} of warm-up\n"
        "| variant | round | CPU ms a query: workers | this process | queries/s | CPU s per busy worker | load |\n"
        "|---|---:|---:|---:|---:|---|---:|",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="worker-variants-") as scratch_name:
        scratch = Path(scratch_name)
        snapshot = bwc.compacted_snapshot(prep.store, scratch)
        for r in range(args.rounds):
            for v in variants if r % 2 == 0 else variants[::-1]:
                if v.startswith("in-process-"):
                    row = in_process(snapshot, requests, int(v.removeprefix("in-process-")))
                else:
                    row = through_pool(v, snapshot, scratch, requests, args.threads)
                print(f"| {v} | {r + 1} | {row} | {load()} |", flush=True)
    print(f"\nload average after: {Path('/proc/loadavg').read_text().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
