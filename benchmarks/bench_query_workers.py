"""What the query worker processes cost: the light mix of ``bench_endpoint.py`` against this
checkout's ``karenina-rdf serve`` (queries in worker processes), the same with
``--no-query-processes`` (queries on the server's threads) and, with ``--baseline DIR``, the
``serve`` of another checkout (e.g. ``git archive a3e7088 | tar -x -C DIR``), all in one run.

Each server gets its own copy of the same store (one process holds a RocksDB store). The load
comes from one separate process (``bench_endpoint.run_load``: one httpx keep-alive connection per
client, seeded query sequences, so every server gets the same requests). Windows are short and
the servers take turns, round after round, so that what else runs on the machine falls on all of
them alike; each row reports the CPU of the other processes in its window. Server CPU counts the
server and its worker processes.

    python benchmarks/bench_query_workers.py [--size 10000] [--clients 8] [--duration 5]
        [--rounds 6] [--baseline DIR] [--workdir DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_endpoint as be  # noqa: E402

from tests.helpers.servers import Server, _wait, free_port  # noqa: E402


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live children."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == pid:
            total += sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
        elif int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _run_load(spec: be.LoadSpec) -> be.LoadResult:
    be._cpu_seconds = _tree_cpu  # count the worker processes as the server's (in the load process)
    return be.run_load(spec)


def start(label: str, checkout: Path, store: Path, folder: Path, *options: str) -> Server:
    port = free_port()
    log = folder / f"{label.replace(' ', '-')}.log"
    command = [sys.executable, "-c", "from karenina_rdf.cli import main; main()", "serve"]
    command += ["--store", str(store), "--port", str(port), "--timeout", "60", *options]
    # cwd first on sys.path: the checkout's karenina_rdf.
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=checkout)
    server = Server(label, f"http://127.0.0.1:{port}", process, log)
    try:
        _wait(server.url + "/sparql", process, log)
    except BaseException:
        server.stop()
        raise
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=5.0, help="timed seconds per window")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to serve the same data")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-qw-", dir=args.workdir))
    servers: dict[str, Server] = {}
    try:
        print("preparing the data …", file=sys.stderr, flush=True)
        prep = be.prepare(root, args.size, 0, 1.0, False)
        kinds = tuple(k for k in be.build_kinds() if not k.heavy)
        plan: list[tuple[str, Path, tuple[str, ...]]] = [
            ("worker processes", ROOT, ()),
            ("threads (--no-query-processes)", ROOT, ("--no-query-processes",)),
        ]
        if args.baseline is not None:
            plan.append((f"baseline {args.baseline.name}", args.baseline.resolve(), ()))
        folder = root / "servers"
        folder.mkdir()
        for i, (label, checkout, options) in enumerate(plan):
            store = root / f"store-{i}"
            shutil.copytree(prep.store, store)
            servers[label] = start(label, checkout, store, folder, *options)
        for server in servers.values():
            be.settle(server.process.pid)
        rows: dict[str, list[be.RunStats]] = {label: [] for label in servers}
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            for r in range(args.rounds):
                order = list(servers)
                order = order[r % len(order) :] + order[: r % len(order)]
                for label in order:
                    server = servers[label]
                    spec = be.LoadSpec(
                        url=server.url + "/sparql",
                        server_pid=server.process.pid,
                        kinds=kinds,
                        data=prep.data,
                        clients=args.clients,
                        warmup=args.warmup,
                        duration=args.duration,
                        seed=r,
                        timeout=120.0,
                    )
                    stats = be.RunStats.of(pool.submit(_run_load, spec).result(), kinds)
                    rows[label].append(stats)
                    print(
                        f"round {r + 1} {label}: {stats.throughput:.1f} req/s, errors {stats.errors}, "
                        f"other processes {stats.other_cores:.2f} cores",
                        file=sys.stderr,
                        flush=True,
                    )
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    lines = [
        "## Query worker processes: the light mix, one run",
        "",
        *be.machine_facts(),
        "",
        f"`{' '.join([Path(sys.executable).name, *sys.argv])}`",
        "",
        f"{args.size:,} questions, {args.clients} clients, {args.rounds} rounds of {args.duration:g} s windows "
        f"(after {args.warmup:g} s of warm-up each), the servers in turn.",
        "",
        "| server | req/s per round | median req/s | p50 / p99 ms (median) | server CPU ms per request (median) "
        "| other processes' cores (median) | errors |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for label, stats in rows.items():
        lines.append(
            f"| {label} | {', '.join(f'{s.throughput:.0f}' for s in stats)} "
            f"| {statistics.median(s.throughput for s in stats):.1f} "
            f"| {statistics.median(s.p50 for s in stats):.1f} / {statistics.median(s.p99 for s in stats):.1f} "
            f"| {statistics.median(s.server_ms_per_request for s in stats):.2f} "
            f"| {statistics.median(s.other_cores for s in stats):.2f} | {sum(s.errors for s in stats)} |"
        )
    labels = list(rows)
    new = rows[labels[0]]
    lines.append("")
    for other in labels[1:]:
        ratios = [o.throughput / n.throughput for n, o in zip(new, rows[other], strict=True) if n.throughput]
        lines.append(
            f"- {other} ÷ worker processes, per round: {', '.join(f'{x:.2f}' for x in ratios)}; "
            f"median {statistics.median(ratios):.2f}× (the workers are that much slower; the target is ≤ 1.2×)"
        )
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
