"""Endpoint load benchmark: ``karenina-rdf serve`` against ``oxigraph serve`` on the same quads,
under a query mix at 1, 8 and 32 concurrent clients, in one run on loopback.

What is measured, per server and number of clients: throughput (requests completed in the timed
window ÷ its length), p50 and p99 latency (nearest rank, over every request completed in the
window), errors (non-2xx answers and transport failures, counted and shown, never dropped) and
the CPU the server process used in the window (in cores). Then the ratios ours ÷ Oxigraph
against the targets: throughput ≥ 0.8×, p99 ≤ 1.5×. Then the same mix at 4 clients with and
without a fifth client that keeps a deliberately slow query (a cartesian COUNT sized to take
``--slow-seconds`` on this store) running: the server must keep answering the others meanwhile.

The data: one checkpoint of N questions from ``generate.py`` (seed 0) plus the three
``examples/*.jsonld``, imported into an embedded store without validation; that store's quads
are dumped as N-Quads and bulk-loaded with ``oxigraph load``, and Oxigraph serves them with
``--union-default-graph``, which is the dataset our endpoint shows (the union of the benchmark
graphs and the catalog). Before anything is timed, every query of the mix runs on both servers
and the answers are compared (rows, triples or boolean): a different count stops the run.

The mixes (weights in the tables): "site" is what a benchmark site serves: a question by IRI, a
CONSTRUCT of one question as Turtle, an ASK, a keyword lookup, the benchmark list, a text search
on a frequent word, the count of questions per benchmark, a page of 100 questions by position at
a random OFFSET and a text search on a rare word (the last two scan the whole benchmark: about
1 s each at 100k). "light" leaves those two out, so that what a server adds to each request
(HTTP, routing, serialization) weighs more than the engine's scans. Each client draws from the mix with its
own seeded RNG, so both servers get the same sequence of queries. Every query is sent as
``GET /sparql?query=…`` (ours) or ``GET /query?query=…`` (Oxigraph), same text, same ``Accept``.

The load comes from a separate process (asyncio, one httpx.AsyncClient with one keep-alive
connection per simulated client); the servers are separate processes too, on 127.0.0.1 only.
CPU use of the server, of the load generator and of every other process is read from /proc for
each timed window, so a row disturbed by something else on the machine shows it. The per-query
table also times pyoxigraph alone, in-process, on each server's store folder: the engine's share
of a request, apart from HTTP. ``--compact`` runs ``Store.optimize()`` on our store after the
import (our importer does not), to see what the store's physical layout costs.

    python benchmarks/bench_endpoint.py [--sizes 100000] [--duration 20] [--warmup 3]
        [--concurrency 1,8,32] [--mixes site,light] [--repeat 10] [--slow-seconds 7]
        [--timeout 60] [--max-running N] [--compact] [--workdir DIR] [--out FILE] [--keep]

At 100k the run takes about 13 minutes and needs about 4 GB of free disk under ``--workdir``
(removed at the end unless ``--keep``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from tests.helpers.servers import Server

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

RESULTS_JSON = "application/sparql-results+json"
TURTLE = "text/turtle"
MAX_REQUESTS_PER_CLIENT = 1_000_000  # a bound on every client loop besides its deadline
TARGET_THROUGHPUT, TARGET_P99 = 0.8, 1.5  # ours ÷ Oxigraph server
SLOW_CLIENTS = 4  # mix clients during the slow-query test


# -- the query mix ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """One query of the mix. ``template`` holds the placeholders %QUESTION% (an IRI in <>),
    %MD5%, %BENCHMARK% (an IRI in <>) and %OFFSET%, filled for every request."""

    key: str
    label: str
    weight: int
    template: str
    accept: str = RESULTS_JSON
    heavy: bool = False  # left out of the light mix


@dataclass(frozen=True)
class MixData:
    """What the templates are filled with: sampled questions, the big benchmark, page offsets."""

    questions: tuple[tuple[str, str], ...]  # (IRI, text MD5)
    benchmark: str
    offsets: tuple[int, ...]


def _named(name: str, params: dict[str, str] | None = None) -> str:
    """A named query's text (queries/*.rq) with its parameters bound, comment lines dropped."""
    from karenina_rdf.sparql._named import find_query

    text = find_query(name).bind(params or {})
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")).strip()


def build_kinds() -> list[Kind]:
    from karenina_rdf.rdf._vocab import sparql_prefixes

    search = (
        "SELECT ?q ?text WHERE { ?q a schema:Question ; schema:text ?text . "
        'FILTER(CONTAINS(LCASE(?text), "%WORD%")) } LIMIT 20'
    )
    kinds = [
        Kind("question", "question by IRI (all its triples)", 6, "SELECT ?p ?o WHERE { %QUESTION% ?p ?o }"),
        Kind(
            "construct",
            "CONSTRUCT one question, its answer and template (Turtle)",
            3,
            "CONSTRUCT { ?s ?p ?o } WHERE { { BIND(%QUESTION% AS ?s) } "
            "UNION { %QUESTION% schema:acceptedAnswer|schema:hasPart ?s } ?s ?p ?o }",
            accept=TURTLE,
        ),
        Kind("ask", "ASK: is this text (MD5) stored", 3, 'ASK { ?q karenina:textMd5 "%MD5%" }'),
        Kind(
            "keyword",
            "keyword lookup, selective (questions-by-keyword genomics)",
            3,
            _named("questions-by-keyword", {"keyword": "genomics"}),
        ),
        Kind(
            "list",
            "benchmark list",
            3,
            "SELECT ?b ?name ?version ?modified WHERE { ?b a schema:DataFeed ; schema:name ?name . "
            "OPTIONAL { ?b schema:version ?version } OPTIONAL { ?b schema:dateModified ?modified } } ORDER BY ?name",
        ),
        Kind(
            "search-frequent",
            "text search, frequent word (melanoma), LIMIT 20",
            2,
            search.replace("%WORD%", "melanoma"),
        ),
        Kind("count", "questions per benchmark (questions-per-benchmark)", 1, _named("questions-per-benchmark")),
        Kind(
            "page",
            "benchmark page: 100 questions ORDER BY position, random OFFSET",
            1,
            "SELECT ?pos ?question_id ?text WHERE { { SELECT ?item ?pos WHERE { %BENCHMARK% schema:dataFeedElement "
            "?item . ?item karenina:position ?pos } ORDER BY ?pos LIMIT 100 OFFSET %OFFSET% } "
            "?item schema:item ?q . ?q schema:identifier ?question_id ; schema:text ?text } ORDER BY ?pos",
            heavy=True,
        ),
        Kind(
            "search-rare",
            "text search, rare word (losartan), LIMIT 20",
            1,
            search.replace("%WORD%", "losartan"),
            heavy=True,
        ),
    ]
    head = sparql_prefixes()
    return [Kind(k.key, k.label, k.weight, head + k.template, k.accept, k.heavy) for k in kinds]


def instance(kind: Kind, data: MixData, rng: random.Random) -> str:
    """The kind's text for one request; always draws the same two numbers from ``rng``."""
    iri, md5 = data.questions[rng.randrange(len(data.questions))]
    offset = data.offsets[rng.randrange(len(data.offsets))]
    return (
        kind.template.replace("%QUESTION%", f"<{iri}>")
        .replace("%MD5%", md5)
        .replace("%BENCHMARK%", f"<{data.benchmark}>")
        .replace("%OFFSET%", str(offset))
    )


def slow_query(rows: int) -> str:
    """A cartesian COUNT of ``rows`` × ``rows`` solutions: its time grows with rows²."""
    return (
        "PREFIX schema: <https://schema.org/>\nPREFIX karenina: <urn:karenina:vocab:>\n"
        f"SELECT (COUNT(*) AS ?n) WHERE {{ {{ SELECT ?a WHERE {{ ?a schema:identifier ?x }} LIMIT {rows} }} "
        f"{{ SELECT ?b WHERE {{ ?b karenina:textMd5 ?y }} LIMIT {rows} }} }}"
    )


# -- the load generator (runs in its own process) --------------------------------------------------
@dataclass(frozen=True)
class LoadSpec:
    url: str  # the query URL: .../sparql or .../query
    server_pid: int
    kinds: tuple[Kind, ...]
    data: MixData
    clients: int
    warmup: float
    duration: float
    seed: int
    timeout: float
    slow_text: str | None = None  # a client that keeps this query running, when given


@dataclass
class LoadResult:
    window: float
    latencies: list[tuple[int, float]] = field(default_factory=list)  # (kind index, ms), in the window
    unfinished: list[int] = field(default_factory=list)  # kind indexes of requests in flight at the end
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    slow: list[tuple[float, float, int]] = field(default_factory=list)  # (start s, seconds, status)
    slow_cover: float = 0.0  # share of the window with a slow query in flight
    server_cpu: float = 0.0  # CPU seconds of the server process in the window
    client_cpu: float = 0.0  # CPU seconds of this process in the window
    machine_cpu: float = 0.0  # CPU seconds of the whole machine in the window (all processes)


def _machine_cpu_seconds() -> float:
    """Busy CPU of the whole machine (user, nice, system, irq, softirq, steal), from /proc."""
    try:
        ticks = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    except (OSError, ValueError):
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _send(client: httpx.AsyncClient, url: str, text: str, accept: str) -> tuple[int, str]:
    """(status, error text); status 0 for a transport failure."""
    import httpx

    try:
        response = await client.get(url, params={"query": text}, headers={"Accept": accept})
    except httpx.HTTPError as exc:
        return 0, f"{type(exc).__name__}: {exc}"
    if 200 <= response.status_code < 300:
        return response.status_code, ""
    return response.status_code, response.text[:200].strip()


async def _run_load(spec: LoadSpec) -> LoadResult:
    import httpx

    clock = time.perf_counter
    start = clock()
    window_start = start + spec.warmup
    window_end = window_start + spec.duration
    weights = [k.weight for k in spec.kinds]
    result = LoadResult(window=spec.duration)
    samples: set[str] = set()

    def limits() -> httpx.Limits:
        return httpx.Limits(max_connections=1, max_keepalive_connections=1)

    async def mix_client(i: int) -> None:
        rng = random.Random(spec.seed * 1_000 + i)
        timed = False
        async with httpx.AsyncClient(timeout=spec.timeout, limits=limits()) as client:
            for _ in range(MAX_REQUESTS_PER_CLIENT):
                if clock() >= window_end:
                    break
                if not timed and clock() >= window_start:
                    # The timed window starts the same sequence on every server, however many
                    # requests the warm-up got through.
                    rng, timed = random.Random(spec.seed * 1_000 + i + 500), True
                k = rng.choices(range(len(spec.kinds)), weights)[0]
                kind = spec.kinds[k]
                text = instance(kind, spec.data, rng)
                t0 = clock()
                status, error = await _send(client, spec.url, text, kind.accept)
                t1 = clock()
                if t0 < window_end < t1:
                    result.unfinished.append(k)
                if not window_start <= t1 <= window_end:
                    continue
                result.latencies.append((k, (t1 - t0) * 1000))
                if error:
                    result.errors += 1
                    message = f"{status} on {kind.key}: {error}"
                    if len(samples) < 5 and message not in samples:
                        samples.add(message)
                        result.error_samples.append(message)

    async def slow_client(text: str) -> None:
        async with httpx.AsyncClient(timeout=spec.timeout, limits=limits()) as client:
            for _ in range(MAX_REQUESTS_PER_CLIENT):
                if clock() >= window_end:
                    break
                t0 = clock()
                status, error = await _send(client, spec.url, text, RESULTS_JSON)
                result.slow.append((t0 - window_start, clock() - t0, status))
                if error:
                    result.error_samples.append(f"slow query: {status} {error}")

    async def meter() -> None:
        await asyncio.sleep(max(0.0, window_start - clock()))
        cpu0, own0, all0 = _cpu_seconds(spec.server_pid), time.process_time(), _machine_cpu_seconds()
        await asyncio.sleep(max(0.0, window_end - clock()))
        result.server_cpu = _cpu_seconds(spec.server_pid) - cpu0
        result.client_cpu = time.process_time() - own0
        result.machine_cpu = _machine_cpu_seconds() - all0

    tasks = [mix_client(i) for i in range(spec.clients)] + [meter()]
    if spec.slow_text:
        tasks.append(slow_client(spec.slow_text))
    await asyncio.gather(*tasks)
    covered = 0.0
    for begin, seconds, _ in result.slow:
        covered += max(0.0, min(begin + seconds, spec.duration) - max(begin, 0.0))
    result.slow_cover = covered / spec.duration
    return result


def run_load(spec: LoadSpec) -> LoadResult:
    return asyncio.run(_run_load(spec))


def run_sequential(
    url: str, kinds: Sequence[Kind], data: MixData, repeat: int, seed: int, timeout: float
) -> dict[str, list[float]]:
    """One client, each kind alone: one warm-up request, then ``repeat`` timed ones (ms)."""
    import httpx

    out: dict[str, list[float]] = {}
    with httpx.Client(timeout=timeout) as client:
        for kind in kinds:
            rng = random.Random(seed)
            times: list[float] = []
            for i in range(repeat + 1):
                text = instance(kind, data, rng)
                t0 = time.perf_counter()
                response = client.get(url, params={"query": text}, headers={"Accept": kind.accept})
                elapsed = (time.perf_counter() - t0) * 1000
                response.raise_for_status()
                if i:
                    times.append(elapsed)
            out[kind.key] = times
    return out


def time_one(url: str, text: str, timeout: float) -> tuple[float, str]:
    """Seconds and body of one request (the slow query, alone)."""
    import httpx

    t0 = time.perf_counter()
    response = httpx.get(url, params={"query": text}, headers={"Accept": RESULTS_JSON}, timeout=timeout)
    elapsed = time.perf_counter() - t0
    response.raise_for_status()
    return elapsed, response.text


# -- data and servers -------------------------------------------------------------------------
@dataclass
class Prepared:
    store: Path
    oxigraph_data: Path
    data: MixData
    quads: int
    slow_rows: int
    slow_embedded_s: float
    steps: dict[str, float]


def prepare(root: Path, n: int, seed: int, slow_seconds: float, compact: bool) -> Prepared:
    import pyoxigraph as ox

    from karenina_rdf import Store
    from karenina_rdf.rdf._vocab import sparql_prefixes
    from tests.helpers.servers import oxigraph_binary

    steps: dict[str, float] = {}
    src = root / f"bench-{n}.jsonld"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(src)], check=True, capture_output=True)
    steps["generate"] = time.perf_counter() - t0
    store_path = root / "store"
    dump = root / "dump.nq"
    t0 = time.perf_counter()
    store = Store(store_path)
    try:
        big = store.import_checkpoint(src, validate=False)
        for example in sorted((ROOT / "examples").glob("*.jsonld")):
            store.import_checkpoint(example, validate=False)
        steps["import (ours)"] = time.perf_counter() - t0
        if store.dataset() != {"use_default_graph_as_union": True}:
            raise RuntimeError(f"the store hides graphs ({store.dataset()}): Oxigraph's union would differ")
        rows = store.oxigraph.query(
            sparql_prefixes() + "SELECT ?q ?md5 WHERE { ?q a schema:Question ; karenina:textMd5 ?md5 }",
            use_default_graph_as_union=True,
        )
        assert isinstance(rows, ox.QuerySolutions)
        every = sorted((r["q"].value, r["md5"].value) for r in rows)
        questions = tuple(random.Random(seed).sample(every, min(1000, len(every))))
        offsets = tuple(range(0, max(1, big.questions - 99), 100))
        data = MixData(questions, big.iri, offsets)
        if compact:
            t0 = time.perf_counter()
            store.oxigraph.optimize()
            steps["Store.optimize() of ours (--compact)"] = time.perf_counter() - t0
        slow_rows, slow_s = _calibrate(store, len(every), slow_seconds)
        t0 = time.perf_counter()
        store.oxigraph.dump(str(dump), format=ox.RdfFormat.N_QUADS)
        steps["dump N-Quads"] = time.perf_counter() - t0
        quads = len(store.oxigraph)
    finally:
        store.close()
    src.unlink()
    binary = oxigraph_binary()
    if binary is None:
        raise RuntimeError("the oxigraph server binary is not installed (pip install oxigraph)")
    location = root / "oxigraph-data"
    t0 = time.perf_counter()
    subprocess.run([binary, "load", "--location", str(location), "--file", str(dump)], check=True, capture_output=True)
    steps["oxigraph load"] = time.perf_counter() - t0
    dump.unlink()
    return Prepared(store_path, location, data, quads, slow_rows, slow_s, steps)


def engine_times(
    location: Path, kinds: Sequence[Kind], data: MixData, repeat: int, seed: int
) -> dict[str, list[float]]:
    """pyoxigraph alone, in this process, on a store folder opened read-only: query and serialize
    to bytes, per kind, with the parameters the one-client HTTP measurement uses (ms). This is the
    engine's share of a request, on that folder's physical layout."""
    import pyoxigraph as ox

    store = ox.Store.read_only(str(location))
    out: dict[str, list[float]] = {}
    for kind in kinds:
        rng = random.Random(seed)
        times: list[float] = []
        for i in range(repeat + 1):
            text = instance(kind, data, rng)
            t0 = time.perf_counter()
            results = store.query(text, use_default_graph_as_union=True)
            if isinstance(results, ox.QueryTriples):
                ox.serialize(results, None, ox.RdfFormat.TURTLE)
            else:
                results.serialize(None, ox.QueryResultsFormat.JSON)
            if i:
                times.append((time.perf_counter() - t0) * 1000)
        out[kind.key] = times
    del store  # closes it
    return out


def _calibrate(store: Any, available: int, target: float) -> tuple[int, float]:
    """Rows per side of the slow query so that it takes about ``target`` seconds embedded."""
    rows = min(2000, available)
    for _ in range(4):
        t0 = time.perf_counter()
        list(store.oxigraph.query(slow_query(rows), use_default_graph_as_union=True))
        elapsed = time.perf_counter() - t0
        if elapsed > target * 0.7 or rows >= available:
            return rows, elapsed
        rows = min(available, int(rows * math.sqrt(target / max(elapsed, 1e-3))))
    return rows, elapsed


def settle(pid: int, limit: float = 300.0) -> tuple[float, float]:
    """Waits until the process has used under 0.05 cores for 3 s in a row (a server may compact
    its store in the background after opening it); returns (seconds waited, CPU seconds used)."""
    start, first = time.monotonic(), _cpu_seconds(pid)
    last, quiet = first, 0
    while quiet < 3 and time.monotonic() - start < limit:
        time.sleep(1.0)
        now = _cpu_seconds(pid)
        quiet = quiet + 1 if now - last < 0.05 else 0
        last = now
    return time.monotonic() - start, last - first


def start_oxigraph_server(folder: Path, location: Path) -> Server:
    from tests.helpers.servers import Server, _wait, free_port, oxigraph_binary

    binary = oxigraph_binary()
    assert binary is not None
    port = free_port()
    log = folder / "oxigraph.log"
    command = [binary, "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}", "--union-default-graph"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = Server("oxigraph", f"http://127.0.0.1:{port}", process, log)
    try:
        _wait(server.url + "/query", server.process, server.log, 120)
    except BaseException:
        server.stop()
        raise
    return server


# -- answers compared -------------------------------------------------------------------------
def _answer(body: bytes, accept: str) -> tuple[str, int, list[str]]:
    """(what, count, canonical items) of a response: rows, triples or a boolean."""
    if accept == TURTLE:
        import pyoxigraph as ox

        triples = sorted(str(t) for t in ox.parse(body, format=ox.RdfFormat.TURTLE))
        return "triples", len(triples), triples
    doc = json.loads(body)
    if "boolean" in doc:
        return "boolean", int(doc["boolean"]), [str(doc["boolean"])]
    rows = sorted(json.dumps(b, sort_keys=True) for b in doc["results"]["bindings"])
    return "rows", len(rows), rows


def verify(urls: dict[str, str], kinds: Sequence[Kind], data: MixData, seed: int) -> tuple[dict[str, str], list[str]]:
    """Runs three instances of every kind on both servers; raises if a count differs. Returns
    the count of the first instance per kind (for the table) and notes on other differences."""
    import httpx

    counts: dict[str, str] = {}
    notes: list[str] = []
    with httpx.Client(timeout=120) as client:
        for kind in kinds:
            rng = random.Random(seed)
            for i in range(3):
                text = instance(kind, data, rng)
                answers = {}
                for name, url in urls.items():
                    response = client.get(url, params={"query": text}, headers={"Accept": kind.accept})
                    if response.status_code != 200:
                        raise RuntimeError(
                            f"{name} answered {response.status_code} to {kind.key}: {response.text[:300]}"
                        )
                    answers[name] = _answer(response.content, kind.accept)
                (what, n_ours, items_ours), (_, n_ox, items_ox) = answers["ours"], answers["oxigraph"]
                if n_ours != n_ox:
                    raise RuntimeError(
                        f"the servers disagree on {kind.key} ({what}: ours {n_ours}, oxigraph {n_ox}):\n{text}"
                    )
                if items_ours != items_ox:
                    notes.append(f"{kind.key}: same {what} count ({n_ours}) but different content")
                if i == 0:
                    counts[kind.key] = f"{n_ours:,} {what}" if what != "boolean" else ("true" if n_ours else "false")
    return counts, notes


# -- statistics and tables ------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class RunStats:
    throughput: float
    p50: float
    p99: float
    max: float
    completed: int
    errors: int
    server_cores: float
    client_cores: float
    other_cores: float  # every other process on the machine: noise in the figures
    error_samples: list[str]
    heavy_done: int  # completed requests of the heavy kinds (page, rare-word search)
    unfinished: int  # requests still in flight when the window closed
    heavy_unfinished: int

    @property
    def server_ms_per_request(self) -> float:
        return self.server_cores / self.throughput * 1000 if self.throughput else float("nan")

    @staticmethod
    def of(result: LoadResult, kinds: Sequence[Kind]) -> RunStats:
        ms = [m for _, m in result.latencies]
        return RunStats(
            throughput=len(ms) / result.window,
            p50=percentile(ms, 0.50),
            p99=percentile(ms, 0.99),
            max=max(ms, default=float("nan")),
            completed=len(ms),
            errors=result.errors,
            server_cores=result.server_cpu / result.window,
            client_cores=result.client_cpu / result.window,
            other_cores=max(0.0, result.machine_cpu - result.server_cpu - result.client_cpu) / result.window,
            error_samples=result.error_samples,
            heavy_done=sum(1 for k, _ in result.latencies if kinds[k].heavy),
            unfinished=len(result.unfinished),
            heavy_unfinished=sum(1 for k in result.unfinished if kinds[k].heavy),
        )


def _ms(value: float) -> str:
    return "n/a" if value != value else (f"{value:,.1f}" if value < 100 else f"{value:,.0f}")


def _verdict(ok: bool) -> str:
    return "met" if ok else "**MISSED**"


def mix_tables(
    mix: str, kinds: Sequence[Kind], results: dict[tuple[str, int], RunStats], levels: Sequence[int]
) -> list[str]:
    weights = ", ".join(f"{k.key} {k.weight}" for k in kinds)
    lines = [
        f"#### Mix “{mix}” ({weights})",
        "",
        "| server | clients | req/s | p50 ms | p99 ms | max ms | completed (heavy) | in flight at the end (heavy) "
        "| errors | server CPU ms per request | CPU cores: server | load generator | other processes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for server in ("ours", "oxigraph"):
        for c in levels:
            s = results[(server, c)]
            name = "karenina-rdf serve" if server == "ours" else "oxigraph serve"
            lines.append(
                f"| {name} | {c} | {s.throughput:,.1f} | {_ms(s.p50)} | {_ms(s.p99)} | {_ms(s.max)} | "
                f"{s.completed:,} ({s.heavy_done}) | {s.unfinished} ({s.heavy_unfinished}) | {s.errors:,} | "
                f"{_ms(s.server_ms_per_request)} | {s.server_cores:.2f} | "
                f"{s.client_cores:.2f} | {s.other_cores:.2f} |"
            )
    lines += [
        "",
        f"| clients | throughput ours ÷ oxigraph | ≥ {TARGET_THROUGHPUT}× | p99 ours ÷ oxigraph | ≤ {TARGET_P99}× |",
        "|---:|---:|---|---:|---|",
    ]
    for c in levels:
        ours, ox = results[("ours", c)], results[("oxigraph", c)]
        tr = ours.throughput / ox.throughput if ox.throughput else float("nan")
        pr = ours.p99 / ox.p99 if ox.p99 else float("nan")
        lines.append(
            f"| {c} | {tr:.3f}× | {_verdict(tr >= TARGET_THROUGHPUT)} | {pr:.3f}× | {_verdict(pr <= TARGET_P99)} |"
        )
    for (server, c), s in results.items():
        for sample in s.error_samples:
            lines.append(f"\nError sample ({server}, {c} clients): `{sample}`")
    return [*lines, ""]


def per_kind_table(
    kinds: Sequence[Kind],
    counts: dict[str, str],
    served: dict[str, dict[str, list[float]]],
    engine: dict[str, dict[str, list[float]]],
) -> list[str]:
    lines = [
        "| query | weight | answer (first instance) | engine on our store | engine on Oxigraph's store "
        "| ours served | Oxigraph served | ours − Oxigraph | ratio | ours served − engine | Oxigraph served − engine |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k in kinds:
        e_ours, e_ox = (statistics.median(engine[s][k.key]) for s in ("ours", "oxigraph"))
        ours, ox = (statistics.median(served[s][k.key]) for s in ("ours", "oxigraph"))
        lines.append(
            f"| {k.label} | {k.weight} | {counts[k.key]} | {_ms(e_ours)} | {_ms(e_ox)} | {_ms(ours)} | {_ms(ox)} | "
            f"{ours - ox:+.2f} | {ours / ox:.2f}× | {ours - e_ours:+.2f} | {ox - e_ox:+.2f} |"
        )
    return [*lines, ""]


@dataclass
class SlowStats:
    alone_s: float
    without: RunStats
    with_slow: RunStats
    slow_runs: list[tuple[float, float, int]]
    cover: float


def slow_table(mix: str, stats: dict[str, SlowStats]) -> list[str]:
    lines = [
        f"#### Mix “{mix}”, {SLOW_CLIENTS} clients, with and without a slow query running",
        "",
        "| server | slow query alone s | slow queries in window (s each, status) | window covered | req/s without "
        "| req/s with | ratio | p50 ms without → with | p99 ms without → with | max ms with | errors without / with "
        "| other processes' CPU without / with |",
        "|---|---:|---|---:|---:|---:|---:|---|---|---:|---|---|",
    ]
    for server, s in stats.items():
        name = "karenina-rdf serve" if server == "ours" else "oxigraph serve"
        runs = ", ".join(f"{sec:.1f} ({status})" for _, sec, status in s.slow_runs)
        ratio = s.with_slow.throughput / s.without.throughput if s.without.throughput else float("nan")
        lines.append(
            f"| {name} | {s.alone_s:.1f} | {runs} | {s.cover:.0%} | {s.without.throughput:,.1f} | "
            f"{s.with_slow.throughput:,.1f} | {ratio:.2f}× | {_ms(s.without.p50)} → {_ms(s.with_slow.p50)} | "
            f"{_ms(s.without.p99)} → {_ms(s.with_slow.p99)} | {_ms(s.with_slow.max)} | "
            f"{s.without.errors} / {s.with_slow.errors} | {s.without.other_cores:.2f} / {s.with_slow.other_cores:.2f} |"
        )
        for sample in s.with_slow.error_samples + s.without.error_samples:
            lines.append(f"\nError sample ({server}): `{sample}`")
    return [*lines, ""]


def machine_facts() -> list[str]:
    import importlib.metadata as md

    from tests.helpers.servers import oxigraph_binary

    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kb = 0
    binary = oxigraph_binary()
    server_version = (
        subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip() if binary else "absent"
    )
    versions = ", ".join(f"{p} {md.version(p)}" for p in ("pyoxigraph", "fastapi", "uvicorn", "uvloop", "httpx"))
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run([*git, "status", "--porcelain", "karenina_rdf"], capture_output=True, text=True).stdout
    code = f"commit {head or 'unknown'}" + (", with uncommitted changes in karenina_rdf/" if changed.strip() else "")
    return [
        f"- Machine: {os.cpu_count()} cores ({cpu}), {mem_kb / 2**20:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}",
        f"- Python {platform.python_version()}; {versions}; server binary: {server_version}; code: {code}",
        "- Servers and load generator share the cores (no pinning); everything on 127.0.0.1.",
    ]


# -- the run ----------------------------------------------------------------------------------
def bench_size(n: int, root: Path, args: argparse.Namespace, pool: ProcessPoolExecutor) -> list[str]:
    from tests.helpers.servers import start_endpoint

    print(f"[{n:,}] generating and loading the data …", file=sys.stderr, flush=True)
    prep = prepare(root, n, args.seed, args.slow_seconds, args.compact)
    all_kinds = build_kinds()
    mixes = {
        "site": tuple(all_kinds),
        "light": tuple(k for k in all_kinds if not k.heavy),
    }
    mixes = {m: mixes[m] for m in args.mixes.split(",") if m}
    servers: dict[str, Server] = {}
    folder = root / "servers"
    folder.mkdir(exist_ok=True)
    try:
        options = ["--timeout", f"{args.timeout:g}"]
        if args.max_running is not None:
            options += ["--max-running", str(args.max_running)]
        servers["ours"] = start_endpoint(folder, *options, store=prep.store)
        servers["oxigraph"] = start_oxigraph_server(folder, prep.oxigraph_data)
        urls = {"ours": servers["ours"].url + "/sparql", "oxigraph": servers["oxigraph"].url + "/query"}
        print(f"[{n:,}] waiting for the servers to be idle …", file=sys.stderr, flush=True)
        settled = {name: settle(server.process.pid) for name, server in servers.items()}
        print(f"[{n:,}] servers up: {urls}; comparing answers …", file=sys.stderr, flush=True)
        counts, notes = verify(urls, all_kinds, prep.data, args.seed)
        slow_text = slow_query(prep.slow_rows)
        slow_alone: dict[str, float] = {}
        slow_answers: dict[str, str] = {}
        for name, url in urls.items():
            seconds, body = time_one(url, slow_text, 300)
            slow_alone[name] = seconds
            slow_answers[name] = json.loads(body)["results"]["bindings"][0]["n"]["value"]
        if slow_answers["ours"] != slow_answers["oxigraph"]:
            raise RuntimeError(f"the servers disagree on the slow query's count: {slow_answers}")

        print(f"[{n:,}] per-query latency, one client …", file=sys.stderr, flush=True)
        medians = {
            name: pool.submit(run_sequential, url, all_kinds, prep.data, args.repeat, args.seed, 120).result()
            for name, url in urls.items()
        }

        def load(name: str, kinds: tuple[Kind, ...], clients: int, slow: str | None = None) -> LoadResult:
            spec = LoadSpec(
                url=urls[name],
                server_pid=servers[name].process.pid,
                kinds=kinds,
                data=prep.data,
                clients=clients,
                warmup=args.warmup,
                duration=args.duration,
                seed=args.seed,
                timeout=max(120.0, args.timeout * 2),
                slow_text=slow,
            )
            label = f"{name}, {clients} clients" + (", slow query running" if slow else "")
            print(f"[{n:,}]   {label} …", file=sys.stderr, flush=True)
            return pool.submit(run_load, spec).result()

        mix_results: dict[str, dict[tuple[str, int], RunStats]] = {}
        for mix, kinds in mixes.items():
            print(f"[{n:,}] mix {mix} …", file=sys.stderr, flush=True)
            mix_results[mix] = {}
            for i, c in enumerate(args.levels):
                # Servers take turns going first, so that neither always runs right after the other.
                for name in list(urls)[:: 1 if i % 2 == 0 else -1]:
                    mix_results[mix][(name, c)] = RunStats.of(load(name, kinds, c), kinds)
        slow_results: dict[str, dict[str, SlowStats]] = {}
        for mix, kinds in mixes.items():
            print(f"[{n:,}] slow query under mix {mix} …", file=sys.stderr, flush=True)
            slow_results[mix] = {}
            for name in urls:
                without = RunStats.of(load(name, kinds, SLOW_CLIENTS), kinds)
                during = load(name, kinds, SLOW_CLIENTS, slow_text)
                slow_results[mix][name] = SlowStats(
                    slow_alone[name], without, RunStats.of(during, kinds), during.slow, during.slow_cover
                )
    finally:
        for server in servers.values():
            server.stop()
    # On the folders as the servers left them: a server compacts its store after opening it.
    print(f"[{n:,}] engine alone, in-process, on each server's store folder …", file=sys.stderr, flush=True)
    engine = {
        name: engine_times(location, all_kinds, prep.data, args.repeat, args.seed)
        for name, location in (("ours", prep.store), ("oxigraph", prep.oxigraph_data))
    }

    lines = [
        f"### N = {n:,} questions (+ the 3 example benchmarks): {prep.quads:,} quads in each server",
        "",
        "Preparation: " + ", ".join(f"{k} {v:.1f} s" for k, v in prep.steps.items()),
        "",
        "Servers started, then left alone until idle (3 s under 0.05 cores): "
        + ", ".join(f"{name} after {w:.0f} s, having used {cpu:.1f} CPU s" for name, (w, cpu) in settled.items())
        + ".",
        "",
        f"Timed window {args.duration:g} s after a {args.warmup:g} s warm-up, per row; our endpoint runs with "
        f"`--timeout {args.timeout:g}` and "
        + (f"`--max-running {args.max_running}`" if args.max_running is not None else "its default `--max-running`")
        + "; Oxigraph with `--union-default-graph`. "
        "CPU is read from /proc over the window: the server process (all its threads), the load generator, and "
        "every other process on the machine (more than about 0.2 cores there means something else disturbed the "
        "row). The load generator's CPU per request is about the same for both servers and comes off the same 2 "
        "cores. “Heavy” are the page and rare-word search queries (about 1 s each alone at 100k); a request still "
        "in flight when the window closes is not counted, so a server that lets cheap queries overtake heavy "
        "ones completes more requests in the window.",
        "",
        "Answers compared on both servers before timing (3 instances of every query): same counts"
        + ("." if not notes else "; but: " + "; ".join(sorted(set(notes)))),
        "",
        f"#### Per query, one client, median of {args.repeat} requests (each with its own parameters), ms",
        "",
        "“engine”: pyoxigraph alone in this process on each server's store folder (opened read-only after "
        "the servers stopped), query plus serialization to bytes, same parameters; “served”: over HTTP from "
        "the load-generator process, one request at a time. “served − engine” is then what the HTTP layer "
        "(and the client) add.",
        "",
        *per_kind_table(all_kinds, counts, medians, engine),
    ]
    for mix, results in mix_results.items():
        lines += mix_tables(mix, mixes[mix], results, args.levels)
    lines += [
        f"Slow query: cartesian COUNT of {prep.slow_rows:,} × {prep.slow_rows:,} solutions "
        f"({prep.slow_embedded_s:.1f} s embedded, answer {slow_answers['ours']} on both servers), sent back to back "
        f"by one extra client during the whole window; “window covered” is the share of the window with it running.",
        "",
    ]
    for mix, stats in slow_results.items():
        lines += slow_table(mix, stats)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100000", help="question counts (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=20.0, help="timed seconds per row (default: %(default)s)")
    parser.add_argument(
        "--warmup", type=float, default=3.0, help="untimed seconds before each row (default: %(default)s)"
    )
    parser.add_argument("--concurrency", default="1,8,32", help="concurrent clients (default: %(default)s)")
    parser.add_argument("--mixes", default="site,light", help="site and/or light (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=10, help="requests per query, one client (default: %(default)s)")
    parser.add_argument("--slow-seconds", type=float, default=7.0, help="target time of the slow query")
    parser.add_argument("--timeout", type=float, default=60.0, help="our endpoint's --timeout (default: %(default)s)")
    parser.add_argument("--max-running", type=int, default=None, help="our endpoint's --max-running (default: its own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=None, help="where the temporary data goes")
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data")
    parser.add_argument(
        "--compact", action="store_true", help="Store.optimize() our store after the import (not done by default)"
    )
    args = parser.parse_args(argv)
    args.levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-ep-", dir=args.workdir))
    env = f"PYTHONPATH={shlex.quote(os.environ['PYTHONPATH'])} " if os.environ.get("PYTHONPATH") else ""
    command = env + shlex.join([sys.executable, *sys.argv])
    lines = [
        "## Endpoint under load: karenina-rdf serve vs oxigraph serve",
        "",
        *machine_facts(),
        "",
        f"`{command}`",
        "",
    ]
    try:
        # One long-lived process generates all the load, apart from the servers' processes.
        import multiprocessing

        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            for n in (int(s) for s in args.sizes.split(",") if s.strip()):
                lines += bench_size(n, root, args, pool)
    finally:
        if args.keep:
            print(f"data kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    text = "\n".join(lines)
    print(text, flush=True)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
