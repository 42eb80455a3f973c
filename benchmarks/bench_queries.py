"""Named-query benchmark: every query of queries/ on the embedded store, on Oxigraph server and on
Virtuoso, side by side in one run, with rdflib's SPARQL engine over the same triples as baseline.

The store holds one generated benchmark of N questions plus the three example benchmarks (so a
keyword such as "genomics" is a selective lookup across benchmarks, and "rare disease" a frequent
one). Each query runs once to warm up, then ``--repeat`` times; the table gives the median (p50)
in milliseconds and its ratio to the embedded store. Servers are started on 127.0.0.1 on free
ports in a temporary folder (tests/helpers/servers.py) and stopped at the end.

    python benchmarks/bench_queries.py [--sizes 10000,100000] [--servers oxigraph,virtuoso]
        [--repeat 5] [--rdflib-max 10000] [--rdflib-limit 60]

rdflib runs each query once, in a forked child stopped after ``--rdflib-limit`` seconds.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from karenina_rdf import Store  # noqa: E402
from karenina_rdf.rdf._vocab import PREFIXES  # noqa: E402
from karenina_rdf.sparql._named import find_query  # noqa: E402

# (label, query, parameters)
CASES: list[tuple[str, str, dict[str, str]]] = [
    ("keyword lookup, selective", "questions-by-keyword", {"keyword": "genomics"}),
    ("keyword lookup, frequent", "questions-by-keyword", {"keyword": "rare disease"}),
    ("full-text search", "search", {"phrase": "kinase"}),
    ("questions per benchmark", "questions-per-benchmark", {}),
    ("same question", "same-question", {}),
    ("near-duplicates", "near-duplicates", {}),
    ("unfinished questions", "unfinished-questions", {}),
    ("questions without template", "questions-without-template", {}),
    ("evaluation modes", "evaluation-modes", {}),
    ("traits by kind", "traits-by-kind", {}),
    ("benchmarks by author", "benchmarks-by-author", {"author": "karenina"}),
    ("benchmarks by property", "benchmarks-by-property", {"property": "domain"}),
    ("benchmark summary", "benchmark-summary", {}),
]
TARGETS_MS = {"keyword lookup, selective": 20.0, "questions per benchmark": 500.0}  # embedded, 100k


def _time(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    """(p50 ms, rows), or (NaN, 0) when the backend refuses the query (reported in the table)."""
    from karenina_rdf import StoreError

    try:
        rows = run()  # warm-up (and the row count)
    except StoreError as exc:
        print(f"  refused: {exc}"[:300], file=sys.stderr, flush=True)
        return float("nan"), 0
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), rows


def _ours(store: Store, name: str, params: dict[str, str]) -> Callable[[], int]:
    def run() -> int:
        return sum(1 for _ in store.query(name, **params))

    return run


def _rdflib_graph(store: Store) -> Any:
    import pyoxigraph as ox
    import rdflib

    graph = rdflib.Graph()
    for g in store.graphs():
        data = store.oxigraph.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=g)
        graph.parse(data=(data or b"").decode("utf-8"), format="nt")
    return graph


def _rdflib(graph: Any, name: str, params: dict[str, str], limit: float) -> tuple[float, int] | None:
    """One run of the query through rdflib's engine, in a forked child (it shares the parsed
    graph) that is stopped after ``limit`` seconds: some joins take rdflib hours (see
    ../shared/spec/rdf-engines.md). None when it ran out of time."""
    import multiprocessing as mp

    text = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items()) + find_query(name).bind(params)
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child() -> None:
        start = time.perf_counter()
        rows = sum(1 for _ in graph.query(text))
        send.send(((time.perf_counter() - start) * 1000, rows))

    process = ctx.Process(target=child)
    process.start()
    answer = receive.recv() if receive.poll(limit) else None
    process.kill()
    process.join()
    return answer


def _load(store: Store, src: Path) -> float:
    start = time.perf_counter()
    store.import_checkpoint(src, validate=False)
    store.import_paths([ROOT / "examples"], validate=False)
    return time.perf_counter() - start


def bench_size(n: int, root: Path, servers: list[str], repeat: int, rdflib_max: int, rdflib_limit: float) -> list[str]:
    from tests.helpers.servers import start_oxigraph, start_virtuoso

    src = root / f"bench-{n}.jsonld"
    subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(src)], check=True, capture_output=True)
    columns: dict[str, dict[str, tuple[float, int]]] = {}
    loads: dict[str, float] = {}
    embedded = Store(root / f"embedded-{n}")
    loads["embedded"] = _load(embedded, src)
    columns["embedded"] = {label: _time(_ours(embedded, q, p), repeat) for label, q, p in CASES}
    print(f"  {n:,} embedded: {columns['embedded']}", file=sys.stderr, flush=True)
    if n <= rdflib_max:
        graph = _rdflib_graph(embedded)
        columns["rdflib"] = {}
        for label, q, p in CASES:
            answer = _rdflib(graph, q, p, rdflib_limit)
            columns["rdflib"][label] = answer if answer is not None else (float("inf"), 0)
        del graph
    embedded.close()
    for name in servers:
        folder = root / f"{name}-{n}"
        folder.mkdir()
        server = (start_oxigraph if name == "oxigraph" else start_virtuoso)(folder)
        try:
            remote = Store(server.url)
            loads[name] = _load(remote, src)
            columns[name] = {label: _time(_ours(remote, q, p), repeat) for label, q, p in CASES}
            print(f"  {n:,} {name}: load {loads[name]:.1f} s, {columns[name]}", file=sys.stderr, flush=True)
            remote.close()
        finally:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    src.unlink()

    names = list(columns)
    lines = [
        f"### N = {n:,} questions (+ the 3 example benchmarks)",
        "",
        "Load (import without validation): " + ", ".join(f"{k} {v:.1f} s" for k, v in loads.items()),
        "",
        "| query | rows | " + " | ".join(_header(c) for c in names) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    for label, _, _ in CASES:
        base = columns["embedded"][label][0]
        cells = []
        for c in names:
            ms, _ = columns[c][label]
            if ms == float("inf"):
                cells.append(f"> {rdflib_limit * 1000:,.0f} (stopped)")
                continue
            if ms != ms:  # NaN: the server refused the query
                cells.append("refused (see stderr)")
                continue
            cells.append(f"{ms:,.1f}" + ("" if c == "embedded" else f" ({ms / base:.1f}×)"))
        lines.append(f"| {label} | {columns['embedded'][label][1]:,} | " + " | ".join(cells) + " |")
    verdicts = [
        f"{label} ≤ {limit:g} ms: {'met' if columns['embedded'][label][0] <= limit else 'MISSED'}"
        for label, limit in TARGETS_MS.items()
    ]
    lines += ["", "Targets on the embedded store (set for 100k): " + "; ".join(verdicts), ""]
    return lines


def _header(column: str) -> str:
    return "rdflib ms (one run)" if column == "rdflib" else f"{column} p50 ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000", help="question counts (default: %(default)s)")
    parser.add_argument("--servers", default="oxigraph,virtuoso", help="servers to compare (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per query (default: %(default)s)")
    parser.add_argument("--rdflib-max", type=int, default=10_000, help="skip rdflib above this many questions")
    parser.add_argument("--rdflib-limit", type=float, default=60.0, help="stop an rdflib query after this many seconds")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-q-", dir=args.workdir))
    servers = [s for s in args.servers.split(",") if s]
    try:
        print(f"Python {sys.version.split()[0]}\n")
        for n in (int(s) for s in args.sizes.split(",") if s.strip()):
            lines = bench_size(n, root, servers, args.repeat, args.rdflib_max, args.rdflib_limit)
            print("\n".join(lines), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
