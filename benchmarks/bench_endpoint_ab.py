"""This checkout's ``karenina-rdf serve``, another checkout's (``--baseline DIR``, e.g.
``git archive main | tar -x -C DIR``) and ``oxigraph serve``, all on the same data, in one run,
under a mix of ``bench_endpoint.py`` at N clients: the before/after of a change to the endpoint,
each against Oxigraph's server in the same rounds.

The data is what ``bench_endpoint.py`` prepares (a generated checkpoint plus the examples, our
store and Oxigraph's folder), made once under ``--data DIR`` and reused by later runs. Each of our
servers gets its own copy of the store. The load comes from one separate process
(``bench_endpoint.run_load``); windows are short and the servers take turns, round after round
(the order reversed every other round), so that what else runs on the machine falls on all of
them alike. Per window: requests per second, p50/p99, CPU of the server with its worker
processes in ms per request, and the cores the other processes of the machine took.

With ``--cpu-requests N`` it then sends each server N light-mix requests (after N/6 of warm-up)
from ``--clients`` keep-alive clients and reports the CPU a request took in the server process
and in its children (the query workers) apart, read from ``/proc``: on a machine shared with
other work, CPU per request holds up where requests per second measures who got the cores.

    python benchmarks/bench_endpoint_ab.py --data DIR [--size 10000] [--baseline DIR]
        [--mixes light,site] [--clients 8] [--rounds 3] [--duration 10] [--warmup 1]
        [--cpu-requests 0]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import pickle
import random
import shutil
import statistics
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_endpoint as be  # noqa: E402
from bench_query_workers import _run_load  # noqa: E402

from tests.helpers.servers import Server, _wait, free_port  # noqa: E402


def start_ours(code: Path, store: Path, folder: Path) -> Server:
    port = free_port()
    log = folder / f"serve-{code.name}.log"
    command = [sys.executable, "-c", "from karenina_rdf.cli import main; main()", "serve"]
    command += ["--store", str(store), "--port", str(port), "--timeout", "60"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=str(code), env=env)
    server = Server(code.name, f"http://127.0.0.1:{port}", process, log)
    try:
        _wait(server.url + "/sparql", process, log)
    except BaseException:
        server.stop()
        raise
    return server


def _cpu_apart(pid: int) -> tuple[float, float]:
    """CPU seconds of the process and of its live children, apart."""
    tick = os.sysconf("SC_CLK_TCK")
    own = children = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == pid:
            own = (int(fields[11]) + int(fields[12])) / tick
        elif int(fields[1]) == pid:
            children += (int(fields[11]) + int(fields[12])) / tick
    return own, children


async def _send_many(url: str, kinds: tuple[be.Kind, ...], data: be.MixData, count: int, clients: int) -> None:
    import httpx

    weights = [k.weight for k in kinds]
    left = [count]

    async def client(i: int) -> None:
        rng = random.Random(i)
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(timeout=120, limits=limits) as http:
            while left[0] > 0:
                left[0] -= 1
                kind = kinds[rng.choices(range(len(kinds)), weights)[0]]
                response = await http.get(
                    url, params={"query": be.instance(kind, data, rng)}, headers={"Accept": kind.accept}
                )
                response.raise_for_status()

    await asyncio.gather(*(client(i) for i in range(clients)))


def cpu_per_request(url: str, pid: int, kinds: tuple[be.Kind, ...], data: be.MixData, count: int, clients: int) -> str:
    asyncio.run(_send_many(url, kinds, data, max(1, count // 6), clients))  # warm-up
    own0, kids0 = _cpu_apart(pid)
    asyncio.run(_send_many(url, kinds, data, count, clients))
    own1, kids1 = _cpu_apart(pid)
    load = Path("/proc/loadavg").read_text().split()[0]
    own, kids = 1000 * (own1 - own0) / count, 1000 * (kids1 - kids0) / count
    return f"{own:.2f} | {kids:.2f} | {own + kids:.2f} | {load}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="prepared data (made there if absent)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to serve the same data")
    parser.add_argument("--mixes", default="light,site")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10.0, help="timed seconds per window")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--cpu-requests", type=int, default=0, help="light-mix requests per server for CPU")
    args = parser.parse_args(argv)
    saved = args.data / "prepared.pickle"
    if not saved.exists():
        args.data.mkdir(parents=True, exist_ok=True)
        print(f"preparing {args.size:,} questions under {args.data} …", file=sys.stderr, flush=True)
        saved.write_bytes(pickle.dumps(be.prepare(args.data, args.size, 0, 7.0, False)))
    prep: be.Prepared = pickle.loads(saved.read_bytes())
    folder = args.data / "servers"
    folder.mkdir(exist_ok=True)
    codes = [ROOT] + ([args.baseline.resolve()] if args.baseline else [])
    every = be.build_kinds()
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    servers: dict[str, tuple[Server, str]] = {}
    try:
        for i, code in enumerate(codes):
            store = args.data / f"store-{i}"
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(prep.store, store)
            servers[f"{code.name} ({'this' if i == 0 else 'baseline'})"] = (start_ours(code, store, folder), "/sparql")
        servers["oxigraph serve"] = (be.start_oxigraph_server(folder, prep.oxigraph_data), "/query")
        for server, _ in servers.values():
            be.settle(server.process.pid)
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            for mix in [m for m in args.mixes.split(",") if m]:
                kinds = tuple(every if mix == "site" else [k for k in every if not k.heavy])
                rates: dict[str, list[float]] = {name: [] for name in servers}
                print(f"\nmix {mix}, {args.clients} clients, {args.duration:g} s windows")
                print("| round | server | req/s | p50 ms | p99 ms | CPU ms/request | other processes' cores | errors |")
                print("|---:|---|---:|---:|---:|---:|---:|---:|")
                for r in range(args.rounds):
                    for name in list(servers)[:: 1 if r % 2 == 0 else -1]:
                        server, path = servers[name]
                        spec = be.LoadSpec(
                            url=server.url + path,
                            server_pid=server.process.pid,
                            kinds=kinds,
                            data=prep.data,
                            clients=args.clients,
                            warmup=args.warmup,
                            duration=args.duration,
                            seed=0,
                            timeout=120,
                        )
                        result = pool.submit(_run_load, spec).result()  # CPU: the server and its workers
                        latencies = sorted(ms for _, ms in result.latencies)
                        rate = len(latencies) / args.duration
                        rates[name].append(rate)
                        other = (result.machine_cpu - result.server_cpu - result.client_cpu) / args.duration
                        p50 = latencies[len(latencies) // 2] if latencies else float("nan")
                        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0.0
                        cpu = 1000 * result.server_cpu / max(1, len(latencies))
                        print(
                            f"| {r + 1} | {name} | {rate:,.1f} | {p50:,.1f} | {p99:,.1f} | {cpu:.2f} | {other:.2f} "
                            f"| {result.errors} |",
                            flush=True,
                        )
                ox = rates["oxigraph serve"]
                for name, values in rates.items():
                    if name == "oxigraph serve":
                        continue
                    ratios = [a / b for a, b in zip(values, ox, strict=True) if b]
                    print(
                        f"\n{name} ÷ oxigraph serve, per round: {', '.join(f'{x:.2f}' for x in ratios)}; "
                        f"median {statistics.median(ratios):.2f}× ({statistics.median(values):,.1f} against "
                        f"{statistics.median(ox):,.1f} req/s)"
                    )
        if args.cpu_requests:
            light = tuple(k for k in every if not k.heavy)
            print(f"\nCPU per request, light mix, {args.clients} clients, {args.cpu_requests:,} requests each")
            print("| server | server process ms | its children ms | total ms | load average |")
            print("|---|---:|---:|---:|---:|")
            for name, (server, path) in servers.items():
                row = cpu_per_request(
                    server.url + path, server.process.pid, light, prep.data, args.cpu_requests, args.clients
                )
                print(f"| {name} | {row} |", flush=True)
    finally:
        for server, _ in servers.values():
            server.stop()
    print(f"\nload average after: {Path('/proc/loadavg').read_text().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
