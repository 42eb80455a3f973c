"""Full-text search benchmark: the store's full-text index (SQLite FTS5 tables, ranked by their
tantivy copy) against FTS5 ranking alone (what a reader falls back to) and against the scan it
replaced (the CONTAINS query `search` used to be, and `search_questions` reading every
question), all in one run.

A store of ``--benchmarks`` generated benchmarks of N questions each (benchmarks/generate.py,
seeds 0, 1, …) plus the three examples is built in a temporary folder (or ``--store`` reuses
one built earlier by this script). Each search runs once to warm up, then ``--repeat`` times;
figures are medians (p50) in milliseconds. The target of issue 20: p50 ≤ 50 ms at 100k questions
and ≤ 200 ms at 1M for a common word returning the first 100 hits with their total count.

    python benchmarks/bench_text_search.py [--questions 100000] [--benchmarks 1] [--repeat 7]
        [--store DIR] [--keep] [--baseline-repeat 1] [--karenina]

``--karenina`` also
times Karenina's own ``search_questions`` in its environment (tests/helpers/karenina_ref.py)
on the first generated checkpoint.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from karenina_rdf import Benchmark, Store  # noqa: E402
from karenina_rdf.sparql import INDEX_FILE, Row  # noqa: E402
from karenina_rdf.sparql._fulltext import RANKED_DIR  # noqa: E402

# (label, query): the common word is the ("a common word returning the first 100 hits").
SEARCHES = [
    ("common word", "expression"),
    ("word", "tumour"),
    ("prefix", "tum*"),
    ("phrase", '"xenopus laevis"'),
    ("accents", "meniere"),
    ("no match", "zzzzqqq"),
]
# Today's `search` named query (before the index), kept here as the baseline.
SCAN = """SELECT ?benchmark ?question_id ?text ?answer ?found_in WHERE {
  ?q schema:isPartOf ?b ; schema:identifier ?question_id ; schema:text ?text .
  OPTIONAL { ?q schema:acceptedAnswer ?a . ?a schema:text ?answer }
  BIND(LCASE(?phrase) AS ?needle)
  BIND(CONTAINS(LCASE(?text), ?needle) AS ?in_question)
  BIND(COALESCE(CONTAINS(LCASE(?answer), ?needle), false) AS ?in_answer)
  FILTER(?in_question || ?in_answer)
  BIND(IF(?in_question && ?in_answer, "question and answer", IF(?in_question, "question", "answer")) AS ?found_in)
  ?b schema:name ?benchmark .
}
ORDER BY ?benchmark ?question_id"""
FIRST_100 = SCAN.replace("ORDER BY ?benchmark ?question_id", "ORDER BY ?benchmark ?question_id LIMIT 100")


def p50(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    out = run()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), out


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_store(folder: Path, questions: int, benchmarks: int) -> tuple[Path, Path]:
    gen = _generator()
    store = Store(folder / "store")
    first = folder / "bench-0.jsonld"
    for seed in range(benchmarks):
        path = folder / f"bench-{seed}.jsonld"
        gen.write_checkpoint(path, questions, seed=seed, name=f"Synthetic {seed}")
        start = time.perf_counter()
        store.import_checkpoint(path, validate=False)
        print(f"imported {questions:,} questions (seed {seed}) in {time.perf_counter() - start:.1f} s", flush=True)
        if seed:
            path.unlink()
    store.import_paths(sorted((ROOT / "examples").glob("*.jsonld")), validate=False)
    store.close()
    return folder / "store", first


class fts_only:
    """Within it, ``index`` ranks with FTS5 alone, as a reader without the tantivy copy does."""

    def __init__(self, index: Any) -> None:
        self.index, self.ranker = index, index.ranker

    def __enter__(self) -> None:
        self.index.ranker = None

    def __exit__(self, *exc: object) -> None:
        self.index.ranker = self.ranker


def scaled(store: Store, work: Path, copies: int, repeat: int) -> None:
    """The index alone at ``copies`` × the store's questions: every row indexed again under
    ``copies`` benchmark IRIs (the same texts: no store of that size is built)."""
    from karenina_rdf.sparql import TextIndex

    rows = [r for b in store.catalog.benchmarks() for r in store.fulltext.rows(b)]
    path = work / "scaled.sqlite"
    index = TextIndex(path)
    start = time.perf_counter()
    for k in range(copies):
        copy = [
            Row(
                f"copy-{k}",  # the benchmark these rows are indexed under
                r.question_id,
                f"{r.iri}/copy-{k}",
                r.position,
                r.question,
                r.answer,
                r.keywords,
                r.template,
            )
            for r in rows
        ]
        index.replace_benchmark(f"copy-{k}", copy, "x")
    built = time.perf_counter() - start
    ranked = work / "text-index.tantivy"
    print(f"\nthe index alone at {copies} × {len(rows):,} = {copies * len(rows):,} questions (the same rows under")
    print(
        f"{copies} benchmark IRIs; no store of that size): built in {built:.0f} s (FTS5 and its tantivy copy),"
        f" FTS5 {_size(path) / 1e6:,.0f} MB, tantivy {_size(ranked) / 1e6:,.0f} MB"
    )
    print("| search | query | hits | FTS5 alone p50 ms | ranked (tantivy) p50 ms |")
    print("|---|---|---|---|---|")
    for label, query in SEARCHES:
        with fts_only(index):
            fts_ms, hits = p50(lambda q=query: index.search(q), repeat)
        ranked_ms, ranked_hits = p50(lambda q=query: index.search(q), repeat)
        assert ranked_hits.total == hits.total, (query, ranked_hits.total, hits.total)
        print(f"| {label} | `{query}` | {hits.total:,} | {fts_ms:,.1f} | {ranked_ms:,.1f} |", flush=True)
    index.close()


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=100_000, help="questions per benchmark")
    parser.add_argument("--benchmarks", type=int, default=1, help="generated benchmarks in the store")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--baseline-repeat", type=int, default=1, help="timed runs of the (slow) scans")
    parser.add_argument("--store", type=Path, default=None, help="a store this script built earlier")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (prints it)")
    parser.add_argument("--karenina", action="store_true", help="time Karenina's search_questions too")
    parser.add_argument("--skip-old-search-questions", action="store_true")
    parser.add_argument("--scale", type=int, default=0, help="also the index alone at SCALE × the store's rows")
    parser.add_argument("--scale-only", action="store_true", help="with --scale: only the index alone")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-text-"))
    try:
        if args.store is None:
            store_path, first = build_store(work, args.questions, args.benchmarks)
        else:
            store_path, first = args.store, args.store.parent / "bench-0.jsonld"
        (store_path / INDEX_FILE).unlink(missing_ok=True)  # measure the build
        for leftover in store_path.glob(INDEX_FILE + "-*"):
            leftover.unlink()
        shutil.rmtree(store_path / RANKED_DIR, ignore_errors=True)
        store = Store(store_path)
        total_questions = sum(s.questions for s in store.benchmarks())
        print(f"\nstore: {total_questions:,} questions in {len(store.benchmarks())} benchmarks\n")
        start = time.perf_counter()
        store.fulltext.sync()
        built = time.perf_counter() - start
        index_size = _size(store_path / INDEX_FILE) + sum(_size(p) for p in store_path.glob(INDEX_FILE + "-*"))
        print(
            f"index built from the graphs in {built:.1f} s: FTS5 {index_size / 1e6:.0f} MB,"
            f" its tantivy copy {_size(store_path / RANKED_DIR) / 1e6:.0f} MB"
        )
        start = time.perf_counter()
        store.fulltext.sync()
        print(f"in-step check before a search: {(time.perf_counter() - start) * 1000:.2f} ms\n")

        if args.scale_only:
            scaled(store, work, args.scale, args.repeat)
            store.close()
            return 0
        print("first 100 hits + total count, p50 ms (`Store.search_text`):")
        print("| search | query | hits | scan (CONTAINS, first 100) | FTS5 alone | ratio | ranked (tantivy) | ratio |")
        print("|---|---|---|---|---|---|---|---|")
        index = store.fulltext.index
        for label, query in SEARCHES:
            with fts_only(index):
                fts_ms, hits = p50(lambda q=query: store.search_text(q), args.repeat)
            ranked_ms, ranked = p50(lambda q=query: store.search_text(q), args.repeat)
            assert ranked.total == hits.total, (query, ranked.total, hits.total)
            needle = query.strip('"').rstrip("*")
            scan_ms, _ = p50(lambda n=needle: sum(1 for _ in store.query(FIRST_100, phrase=n)), args.baseline_repeat)
            print(
                f"| {label} | `{query}` | {hits.total:,} | {scan_ms:,.0f} | {fts_ms:,.1f} | {scan_ms / fts_ms:,.0f}×"
                f" | {ranked_ms:,.1f} | {scan_ms / ranked_ms:,.0f}× |",
                flush=True,
            )

        if args.scale > 1:
            scaled(store, work, args.scale, args.repeat)

        print("\nthe named query `search` (every hit, joined with benchmark name and texts), p50 ms:")
        word = SEARCHES[0][1]
        ours_ms, n = p50(lambda: sum(1 for _ in store.query("search", phrase=word)), max(1, args.repeat // 2))
        scan_ms, m = p50(lambda: sum(1 for _ in store.query(SCAN, phrase=word)), args.baseline_repeat)
        print(
            f"`{word}`: index {ours_ms:,.0f} ms ({n:,} rows) | scan {scan_ms:,.0f} ms ({m:,} rows)"
            f" | {scan_ms / ours_ms:.1f}×"
        )
        func = (
            "SELECT ?q ?score WHERE { ?q a schema:Question . BIND(karenina:textScore(?q, ?w) AS ?score) "
            "FILTER(BOUND(?score)) } ORDER BY DESC(?score) LIMIT 100"
        )
        fn_ms, _ = p50(lambda: sum(1 for _ in store.query(func, w=word)), max(1, args.repeat // 2))
        print(f"karenina:textScore over every question, first 100: {fn_ms:,.0f} ms")

        print("\nBenchmark.search_questions (Karenina's semantics: substring of the question text), p50 ms:")
        bench = next(Benchmark(store, s.benchmark_id) for s in store.benchmarks() if s.questions == args.questions)
        from karenina_rdf.authoring._search import search_hits

        for term in ("tumour", "umou", "xenopus laevis"):
            ids_ms, ids = p50(lambda t=term: search_hits(bench, [t], True, None, False, False), args.repeat)
            full_ms, _ = p50(lambda t=term: bench.search_questions(t), max(1, args.repeat // 3))
            print(
                f"`{term}`: {len(ids):,} hits; finding them {ids_ms:,.0f} ms;"
                f" with the Question values {full_ms:,.0f} ms"
            )
        if not args.skip_old_search_questions:
            start = time.perf_counter()  # the old path: every question read, then matched
            old = [q.id for q in bench if "tumour" in q.question.lower()]
            took = time.perf_counter() - start
            print(f"old path (every question read, then matched), `tumour`: {took:,.1f} s ({len(old):,} hits)")
        if args.karenina and first.exists():
            from tests.helpers.karenina_ref import karenina

            script = (
                "import json, sys, time, statistics\nfrom karenina import Benchmark\n"
                "b = Benchmark.load(sys.argv[1])\nb.search_questions('tumour')\nts = []\n"
                "for _ in range(5):\n    t = time.perf_counter(); n = len(b.search_questions('tumour'))\n"
                "    ts.append((time.perf_counter() - t) * 1000)\n"
                "print(json.dumps([statistics.median(ts), n]))\n"
            )
            k_ms, k_n = karenina(script, str(first))
            print(f"Karenina's search_questions('tumour') in memory: {k_ms:,.0f} ms ({k_n:,} hits)")
        store.close()
    finally:
        if args.keep:
            print(f"\nkept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
