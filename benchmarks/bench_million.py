"""One million questions in one store (issue 20, point 5): ten 100k benchmarks, results runs,
then the named queries, full-text search, pass rates, validate, export, delete and serve at 1M.

Every step is a CLI command as a user would type it, run under ``nice -n 5 /usr/bin/time -v`` so
its wall time, CPU (user+sys) and peak resident memory are those of that process alone; the
machine's load average is printed beside every figure. The run is resumable: each finished step
is recorded in ``WORKDIR/state.json`` and skipped next time, so a long build can be stopped and
picked up again.

    python benchmarks/bench_million.py --benchmarks 10 --size 100000 --workdir /tmp/i20m
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
CLI = str(Path(sys.executable).with_name("karenina-rdf"))
LIMIT_MB = 4096  # point 5: nothing above 4 GB resident


def _du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=False).stdout
    return int(out.split()[0]) / 1024 if out else 0.0


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _parse_time_v(text: str) -> dict[str, float]:
    """Wall, user, sys and max RSS from GNU time -v's report."""
    out: dict[str, float] = {}
    for key, pat in (
        ("user_s", r"User time \(seconds\): ([\d.]+)"),
        ("sys_s", r"System time \(seconds\): ([\d.]+)"),
        ("rss_mb", r"Maximum resident set size \(kbytes\): (\d+)"),
    ):
        m = re.search(pat, text)
        if m:
            out[key] = float(m.group(1)) / (1024 if key == "rss_mb" else 1)
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)
    if m:
        parts = [float(p) for p in m.group(1).split(":")]
        out["wall_s"] = sum(p * 60**i for i, p in enumerate(reversed(parts)))
    return out


def timed(cmd: list[str], *, log: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one command niced under GNU time; its figures, the load before/after, its exit code."""
    before = _loadavg()
    tfile = log.with_suffix(".time")
    t0 = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.run(
            ["nice", "-n", "5", "/usr/bin/time", "-v", "-o", str(tfile), *cmd],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            check=False,
        )
    wall = time.perf_counter() - t0
    fig = _parse_time_v(tfile.read_text()) if tfile.exists() else {}
    fig.setdefault("wall_s", wall)
    fig["cpu_s"] = fig.get("user_s", 0.0) + fig.get("sys_s", 0.0)
    return {**fig, "rc": proc.returncode, "load_before": before, "load_after": _loadavg(), "cmd": " ".join(cmd)}


class State:
    """The steps done so far (WORKDIR/state.json): a step recorded there is not run again."""

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / "state.json"
        self.data: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {}

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        tmp.replace(self.path)


def _fmt(fig: dict[str, Any]) -> str:
    flag = "  ** over 4 GB **" if fig.get("rss_mb", 0) > LIMIT_MB else ""
    rc = "" if fig.get("rc", 0) == 0 else f"  rc={fig['rc']}"
    return (
        f"wall {fig.get('wall_s', 0):7.1f} s  cpu {fig.get('cpu_s', 0):7.1f} s  "
        f"max RSS {fig.get('rss_mb', 0):6.0f} MB  load {fig['load_before']} -> {fig['load_after']}{rc}{flag}"
    )


def step(state: State, key: str, cmd: list[str], workdir: Path, **extra: Any) -> dict[str, Any]:
    if key in state:
        return state[key]
    fig = timed(cmd, log=workdir / "logs" / f"{key}.log")
    fig.update(extra)
    state.put(key, fig)
    print(f"  {key:<32} {_fmt(fig)}", flush=True)
    if fig["rc"] != 0:
        print(f"  {key} failed: see {workdir / 'logs' / (key + '.log')}", flush=True)
    return fig


def _bench_name(size: int, i: int) -> str:
    return f"Synthetic biomedical benchmark ({size} questions, seed {i})"  # generate.py's default


def build(args: argparse.Namespace, state: State) -> None:
    """Generate and import the benchmarks one after another, the examples, then the results runs."""
    wd: Path = args.workdir
    store = str(wd / "store")
    print(f"== build: {args.benchmarks} benchmarks of {args.size} questions into {store}", flush=True)
    for i in range(args.benchmarks):
        src = wd / f"bench-{i}.jsonld"
        if f"gen-{i}" not in state:
            step(state, f"gen-{i}", [PY, str(HERE / "generate.py"), str(args.size), str(src), "--seed", str(i)], wd)
        fig = step(state, f"import-{i}", [CLI, "import", "--store", store, "--quiet", str(src)], wd)
        if "store_mb" not in fig:
            fig["store_mb"] = _du_mb(wd / "store")
            state.put(f"import-{i}", fig)
        print(f"  {'':<32} store {fig['store_mb']:.0f} MB on disk after benchmark {i + 1}", flush=True)
    # The three examples (and their runs): a keyword only they carry is the selective lookup.
    examples = ROOT / "examples"
    step(
        state,
        "import-examples",
        [CLI, "import", "--store", store, "--quiet", *map(str, sorted(examples.glob("*.jsonld")))],
        wd,
    )
    results = [str(p) for p in sorted((examples / "results").glob("*.json"))]
    step(state, "results-import-examples", [CLI, "results", "import", "--store", store, "--quiet", *results], wd)
    for r in range(min(args.runs, args.benchmarks)):
        out = wd / f"results-{r}.json"
        step(
            state,
            f"gen-results-{r}",
            [
                PY,
                str(HERE / "generate_results.py"),
                str(wd / f"bench-{r}.jsonld"),
                str(out),
                "--models",
                "3",
                "--seed",
                str(r),
                "--rows",
                str(args.run_rows),
                "--job-id",
                f"million-run-{r}",
            ],
            wd,
        )
        fig = step(
            state,
            f"results-import-{r}",
            [CLI, "results", "import", "--store", store, "--quiet", "-b", _bench_name(args.size, r), str(out)],
            wd,
        )
        if "store_mb" not in fig:
            fig["store_mb"] = _du_mb(wd / "store")
            state.put(f"results-import-{r}", fig)


# In-process figures (p50 of several runs) in a child under GNU time, so its peak RSS is known.
SEARCHES = [
    ("common word", "expression"),
    ("word", "tumour"),
    ("rare word", "kinase"),
    ("prefix", "tum*"),
    ("phrase", '"xenopus laevis"'),
]
NAMED = [
    ("questions-by-keyword", {"keyword": "genomics"}, "selective keyword"),
    # The frequent keyword (~200,000 rows at 1M) is timed as the CLI command only: minutes a run.
    ("pass-rate-by-model", {}, ""),
    ("pass-rate-by-benchmark", {}, ""),
    ("pass-rate-by-judge", {}, ""),
    ("questions-per-benchmark", {}, ""),
    ("benchmarks-by-author", {"author": "karenina"}, ""),
    ("search", {"phrase": "kinase"}, "rare word"),
]


def _p50(fn: Any, repeat: int, slow_s: float = 5.0) -> tuple[float, Any, int]:
    """p50 in ms of ``repeat`` runs after a warm-up, and how many runs; a first run over
    ``slow_s`` is the figure alone (one run: minutes per run at 1M would not fit a session)."""
    t0 = time.perf_counter()
    out = fn()
    first = (time.perf_counter() - t0) * 1000
    if first > slow_s * 1000:
        return first, out, 1
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return times[len(times) // 2], out, repeat


def _rows(result: Any) -> int:
    n = 0
    for row in result:
        for value in row:
            _ = None if value is None else value.value  # every value decoded, as a user reads it
        n += 1
    return n


def child(kind: str, store_path: str, repeat: int, out: str) -> int:
    """The in-process measurements (run as ``--child KIND``)."""
    sys.path.insert(0, str(ROOT))
    from karenina_rdf import Store

    figures: dict[str, Any] = {}
    t0 = time.perf_counter()
    store = Store(store_path)
    figures["open_ms"] = (time.perf_counter() - t0) * 1000
    if kind == "index":
        # The first search after imports indexes every benchmark not yet in the index.
        t0 = time.perf_counter()
        hits = store.search_text("expression", limit=100)
        figures["first_search_s"] = time.perf_counter() - t0
        figures["total"] = hits.total
    elif kind == "search":
        for label, query in SEARCHES:
            ms, hits, n = _p50(lambda q=query: store.search_text(q, limit=100), repeat)
            figures[label] = {"query": query, "p50_ms": ms, "total": hits.total, "returned": len(hits.hits), "runs": n}
    elif kind == "named":
        for name, params, label in NAMED:
            ms, rows, runs = _p50(lambda n=name, p=params: _rows(store.query(n, **p)), repeat)
            figures[" ".join([name, *(f"{k}={v}" for k, v in params.items())])] = {
                "p50_ms": ms,
                "rows": rows,
                "label": label,
                "runs": runs,
            }
    elif kind == "memory":
        # Baseline: the same bound query texts on an in-memory pyoxigraph copy of ONE 100k benchmark
        # (its live graph, the catalog and the runs' graphs), as bench_queries_memory.py does for 100k.
        import pyoxigraph as ox

        from karenina_rdf.rdf import PREFIXES
        from karenina_rdf.sparql import find_query

        t0 = time.perf_counter()
        memory = ox.Store()
        keep = _baseline_graphs(store)
        for g in keep:
            memory.bulk_extend(store.oxigraph.quads_for_pattern(None, None, None, g))
        figures["load_s"] = time.perf_counter() - t0
        figures["quads"] = len(memory)
        for name, params, label in NAMED:
            if name == "search" or label == "frequent keyword":
                # search is answered by the full-text index, not by the quads; in memory the frequent
                # keyword took 43 s for 1,980 rows at 10k (docs/performance.md): minutes at 100k.
                continue
            text = find_query(name).bind(params, search=store.fulltext.scores)
            ms, rows, runs = _p50(
                lambda t=text: _rows(memory.query(t, prefixes=dict(PREFIXES), use_default_graph_as_union=True)), repeat
            )
            figures[" ".join([name, *(f"{k}={v}" for k, v in params.items())])] = {
                "p50_ms": ms,
                "rows": rows,
                "label": label,
                "runs": runs,
            }
    store.close()
    Path(out).write_text(json.dumps(figures))
    return 0


def _baseline_graphs(store: Any) -> list[Any]:
    """The graphs an in-memory copy of benchmark 0 (seed 0) with the runs needs: every named graph
    but the other generated benchmarks' live graphs."""
    import pyoxigraph as ox

    others = set()
    for row in store.oxigraph.query(
        "SELECT ?g WHERE { GRAPH ?g { ?b a <https://schema.org/DataFeed> ; <https://schema.org/name> ?n } "
        "FILTER(STRSTARTS(?n, 'Synthetic biomedical benchmark') && !CONTAINS(?n, 'seed 0)')) }"
    ):
        others.add(row[0])
    return [g for g in store.oxigraph.named_graphs() if g not in others] + [ox.DefaultGraph()]


def _child_step(state: State, key: str, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    out = args.workdir / "logs" / f"{key}.json"
    fig = step(
        state,
        key,
        [
            PY,
            str(Path(__file__).resolve()),
            "--child",
            kind,
            "--workdir",
            str(args.workdir),
            "--repeat",
            str(args.repeat),
            "--out",
            str(out),
        ],
        args.workdir,
    )
    if "figures" not in fig and out.exists():
        fig["figures"] = json.loads(out.read_text())
        state.put(key, fig)
    return fig


def at_scale(args: argparse.Namespace, state: State) -> None:
    """The figures at full size, the cheap and the asked-for first: what returns hundreds of
    thousands of rows (the frequent keyword, every hit of a common word) and the delete last."""
    wd: Path = args.workdir
    store = str(wd / "store")
    cli = [CLI]
    print(f"== at {args.benchmarks * args.size:,} questions", flush=True)
    step(state, "list", [*cli, "list", "--store", store], wd)
    step(
        state,
        "cli-keyword-selective",
        [*cli, "query", "questions-by-keyword", "-p", "keyword=genomics", "--format", "csv", "--store", store],
        wd,
    )
    step(state, "cli-pass-rate-by-model", [*cli, "query", "pass-rate-by-model", "--store", store], wd)
    step(state, "cli-results-runs", [*cli, "results", "runs", "--store", store], wd)
    _child_step(state, "search-index", "index", args)
    _child_step(state, "search-p50", "search", args)
    step(
        state,
        "cli-search-rare",
        [*cli, "query", "search", "-p", "phrase=kinase", "--format", "csv", "--store", store],
        wd,
    )
    _child_step(state, "named-p50", "named", args)
    step(state, "validate-stored", [*cli, "validate", "--stored", "--quiet", "--store", store], wd)
    last = args.benchmarks - 1
    step(
        state,
        "export",
        [*cli, "export", _bench_name(args.size, last), "-o", str(wd / "export.jsonld"), "--quiet", "--store", store],
        wd,
    )
    serve(args, state)
    step(
        state,
        "cli-keyword-frequent",
        [*cli, "query", "questions-by-keyword", "-p", "keyword=rare disease", "--format", "csv", "--store", store],
        wd,
    )
    fig = step(state, "delete", [*cli, "delete", _bench_name(args.size, last), "--quiet", "--store", store], wd)
    if "store_mb" not in fig:
        fig["store_mb"] = _du_mb(wd / "store")
        state.put("delete", fig)
    step(
        state,
        "cli-search-common",
        [*cli, "query", "search", "-p", "phrase=expression", "--format", "csv", "--store", store],
        wd,
    )
    if args.memory_baseline:
        _child_step(state, "memory-baseline", "memory", args)


def _tree_hwm_mb(pid: int) -> dict[int, float]:
    """Peak resident memory (VmHWM) of a process and its descendants, from /proc."""
    out: dict[int, float] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        m = re.search(r"VmHWM:\s+(\d+) kB", status)
        if m:
            out[p] = int(m.group(1)) / 1024
        todo.extend(int(k) for k in kids)
    return out


def _get(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[float, int, int]:
    import urllib.request

    t0 = time.perf_counter()
    req = urllib.request.Request(url, data=data, headers=headers or {})
    with urllib.request.urlopen(req, timeout=600) as resp:
        body = resp.read()
        status = resp.status
    return (time.perf_counter() - t0) * 1000, status, len(body)


def serve(args: argparse.Namespace, state: State) -> None:
    """`karenina-rdf serve` on the store: time to answer, one page, pass rates, one SPARQL query,
    and the peak resident memory of the server and its query workers."""
    if "serve" in state:
        return
    import urllib.parse

    wd: Path = args.workdir
    port = args.port
    log = wd / "logs" / "serve.log"
    before = _loadavg()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["nice", "-n", "5", CLI, "serve", "--store", str(wd / "store"), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    fig: dict[str, Any] = {"load_before": before, "cmd": f"karenina-rdf serve --store {wd / 'store'} --port {port}"}
    t0 = time.perf_counter()
    try:
        while True:
            try:
                fig["first_page_ms"], _, _ = _get(base + "/")
                break
            except OSError:
                if proc.poll() is not None or time.perf_counter() - t0 > 600:
                    raise
                time.sleep(0.5)
        fig["ready_s"] = time.perf_counter() - t0
        fig["index_page_ms"], _, fig["index_page_bytes"] = _get(base + "/")
        # A benchmark's page (its first page of questions): the first generated one the index links.
        import urllib.request

        with urllib.request.urlopen(base + "/", timeout=600) as resp:
            links = re.findall(r'href="(/benchmarks/[^"/?#]+)"', resp.read().decode())
        if links:
            fig["benchmark_page"] = links[0]
            fig["benchmark_page_ms"], _, fig["benchmark_page_bytes"] = _get(base + links[0])
            fig["benchmark_search_ms"], _, _ = _get(base + links[0] + "?q=expression")
        fig["pass_rate_page_ms"], _, _ = _get(base + "/query/pass-rate-by-model")
        q = "SELECT (COUNT(*) AS ?n) WHERE { ?q a <https://schema.org/Question> }"
        fig["sparql_count_ms"], _, _ = _get(
            base + "/sparql?" + urllib.parse.urlencode({"query": q}),
            headers={"Accept": "application/sparql-results+json"},
        )
        kw = find_keyword_query()
        fig["sparql_keyword_ms"], _, fig["sparql_keyword_bytes"] = _get(
            base + "/sparql?" + urllib.parse.urlencode({"query": kw}), headers={"Accept": "text/csv"}
        )
        hwm = _tree_hwm_mb(proc.pid)
        fig["rss_mb"] = max(hwm.values(), default=0.0)
        fig["rss_by_process_mb"] = {str(k): round(v) for k, v in hwm.items()}
        fig["rc"] = 0
    except Exception as exc:
        fig["rc"] = 1
        fig["error"] = repr(exc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    fig["load_after"] = _loadavg()
    fig["wall_s"] = time.perf_counter() - t0
    state.put("serve", fig)
    print(f"  {'serve':<32} {_fmt(fig)}", flush=True)


def find_keyword_query() -> str:
    return (
        "PREFIX schema: <https://schema.org/> SELECT ?q ?text WHERE { "
        '?q schema:keywords "genomics" ; schema:text ?text }'
    )


def report(args: argparse.Namespace, state: State) -> None:
    """Every figure beside its baseline."""
    print("\n== report", flush=True)
    first = state.data.get("import-0")
    for i in range(args.benchmarks):
        fig = state.data.get(f"import-{i}")
        if not fig:
            continue
        ratio = f"{fig['wall_s'] / first['wall_s']:.2f}x the first" if first and first.get("wall_s") else ""
        print(f"  import {i + 1:>2}: {_fmt(fig)}  store {fig.get('store_mb', 0):,.0f} MB  {ratio}")
    for key, fig in state.data.items():
        if key.startswith(("import-", "gen-")) and key != "import-examples":
            continue
        line = f"  {key:<26} {_fmt(fig)}" if "load_before" in fig and fig.get("load_before") else f"  {key}"
        print(line)
        for label, value in (fig.get("figures") or {}).items():
            print(f"      {label}: {value}")
    mem = (state.data.get("memory-baseline") or {}).get("figures") or {}
    disk = (state.data.get("named-p50") or {}).get("figures") or {}
    if mem and disk:
        print("\n  named queries: 1M on disk (p50) against one 100k benchmark in memory (target: within 5x)")
        for name, m in mem.items():
            if not isinstance(m, dict) or name not in disk:
                continue
            d = disk[name]
            print(
                f"    {name:<48} {d['p50_ms']:>10.1f} ms ({d['rows']:>7} rows)  memory {m['p50_ms']:>10.1f} ms "
                f"({m['rows']:>7} rows)  {d['p50_ms'] / max(m['p50_ms'], 1e-9):6.1f}x"
            )
    over = [k for k, f in state.data.items() if isinstance(f, dict) and f.get("rss_mb", 0) > LIMIT_MB]
    print(f"\n  over 4 GB resident: {', '.join(over) if over else 'none'}")


def markdown(args: argparse.Namespace, state: State) -> None:
    """The figures as the tables of docs/performance.md § One million questions."""
    d = state.data
    first = d.get("import-0") or {}
    print(
        "| # | questions stored after | wall s | CPU s | wall ÷ first | max RSS MB | store MB | load before → after |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for i in range(args.benchmarks):
        f = d.get(f"import-{i}")
        if not f:
            continue
        print(
            f"| {i + 1} | {(i + 1) * args.size:,} | {f['wall_s']:.1f} | {f['cpu_s']:.1f} | "
            f"{f['wall_s'] / first['wall_s']:.2f}× | {f['rss_mb']:,.0f} | {f.get('store_mb', 0):,.0f} | "
            f"{f['load_before']} → {f['load_after']} |"
        )
    print()
    print("| step | command | wall s | CPU s | max RSS MB | load before → after |")
    print("|---|---|---:|---:|---:|---|")
    for key, f in d.items():
        if key.startswith("gen-") or (key.startswith("import-") and key != "import-examples"):
            continue
        cmd = f.get("cmd", "").replace(str(Path(sys.executable).with_name("karenina-rdf")), "karenina-rdf")
        cmd = cmd.replace(sys.executable, "python").replace(str(ROOT) + "/", "")
        print(
            f"| {key} | `{cmd}` | {f.get('wall_s', 0):.1f} | {f.get('cpu_s', 0):.1f} | {f.get('rss_mb', 0):,.0f} | "
            f"{f.get('load_before', '')} → {f.get('load_after', '')} |"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmarks", type=int, default=10)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/i20m"))
    ap.add_argument("--runs", type=int, default=3, help="results runs, one on each of the first RUNS benchmarks")
    ap.add_argument("--run-rows", type=int, default=30_000, help="rows of each run (questions x 3 models)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs of each in-process figure (p50)")
    ap.add_argument("--port", type=int, default=18931)
    ap.add_argument("--memory-baseline", action="store_true", help="also time the queries on an in-memory 100k copy")
    ap.add_argument("--build-only", action="store_true", help="stop after the imports")
    ap.add_argument("--markdown", action="store_true", help="print the recorded figures as markdown tables")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, str(args.workdir / "store"), args.repeat, args.out)
    args.workdir.mkdir(parents=True, exist_ok=True)
    (args.workdir / "logs").mkdir(exist_ok=True)
    state = State(args.workdir)
    if args.markdown:
        markdown(args, state)
        return 0
    # The children run this checkout's code, whatever the venv's karenina-rdf points at.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    build(args, state)
    if not args.build_only:
        at_scale(args, state)
    report(args, state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
