"""Full-text search benchmark: the store's full-text index (SQLite FTS5) against today's scan
(the CONTAINS query `search` used to be, and `search_questions` reading every question), and
against tantivy on the same rows, all in one run.

A store of ``--benchmarks`` generated benchmarks of N questions each (benchmarks/generate.py,
seeds 0, 1, …) plus the three examples is built in a temporary folder (or ``--store`` reuses
one built earlier by this script). Each search runs once to warm up, then ``--repeat`` times;
figures are medians (p50) in milliseconds. The target of issue 20: p50 ≤ 50 ms at 100k questions
and ≤ 200 ms at 1M for a common word returning the first 100 hits with their total count.

    python benchmarks/bench_text_search.py [--questions 100000] [--benchmarks 1] [--repeat 7]
        [--store DIR] [--keep] [--baseline-repeat 1] [--karenina]

tantivy runs when the ``tantivy`` package imports (it is not a dependency: put it on
``TANTIVY_PATH``, e.g. ``pip install --target /tmp/tantivy tantivy``). ``--karenina`` also
times Karenina's own ``search_questions`` in its environment (tests/helpers/karenina_ref.py)
on the first generated checkpoint.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
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


def tantivy_index(rows: list[Row], folder: Path) -> tuple[Any, float]:
    import tantivy

    analyzer = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("iri", stored=True, tokenizer_name="raw")
    for field in ("question", "answer", "keywords", "template"):
        builder.add_text_field(field, stored=False, tokenizer_name="folded", index_option="position")
    schema = builder.build()
    folder.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(schema, path=str(folder))
    index.register_tokenizer("folded", analyzer)
    start = time.perf_counter()
    writer = index.writer(heap_size=256_000_000, num_threads=2)
    for r in rows:
        writer.add_document(
            tantivy.Document(iri=r.iri, question=r.question, answer=r.answer, keywords=r.keywords, template=r.template)
        )
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index, time.perf_counter() - start


def tantivy_search(index: Any, query: str) -> tuple[int, list[str]]:
    fields = ["question", "answer", "keywords", "template"]
    parsed = index.parse_query(query, fields, conjunction_by_default=True)
    searcher = index.searcher()
    result = searcher.search(parsed, limit=100, count=True)
    return result.count, [searcher.doc(addr)["iri"][0] for _, addr in result.hits]


def scaled(store: Store, work: Path, copies: int, repeat: int, with_tantivy: bool) -> None:
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
                f"{r.bench}/copy-{k}",
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
    print(f"\nthe index alone at {copies} × {len(rows):,} = {copies * len(rows):,} questions (the same rows under")
    print(f"{copies} benchmark IRIs; no store of that size): FTS5 built in {built:.0f} s, {_size(path) / 1e6:,.0f} MB")
    tan = None
    if with_tantivy:
        many = [
            Row(r.bench, r.question_id, f"{r.iri}/copy-{k}", r.position, r.question, r.answer, r.keywords, r.template)
            for k in range(copies)
            for r in rows
        ]
        tan, took = tantivy_index(many, work / "tantivy-scaled")
        del many
        print(f"tantivy built in {took:.0f} s, {_size(work / 'tantivy-scaled') / 1e6:,.0f} MB")
    print("| search | query | hits | FTS5 p50 ms | tantivy p50 ms |")
    print("|---|---|---|---|---|")
    for label, query in SEARCHES:
        fts_ms, hits = p50(lambda q=query: index.search(q), repeat)
        tan_ms = "—"
        if tan is not None:
            try:
                tan_ms = f"{p50(lambda q=query: tantivy_search(tan, q), repeat)[0]:,.1f}"
            except ValueError:
                tan_ms = "refused"
        print(f"| {label} | `{query}` | {hits.total:,} | {fts_ms:,.1f} | {tan_ms} |", flush=True)
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
    args = parser.parse_args(argv)
    if os.environ.get("TANTIVY_PATH"):
        sys.path.insert(0, os.environ["TANTIVY_PATH"])
    work = Path(tempfile.mkdtemp(prefix="bench-text-"))
    try:
        if args.store is None:
            store_path, first = build_store(work, args.questions, args.benchmarks)
        else:
            store_path, first = args.store, args.store.parent / "bench-0.jsonld"
        (store_path / INDEX_FILE).unlink(missing_ok=True)  # measure the build
        for leftover in store_path.glob(INDEX_FILE + "-*"):
            leftover.unlink()
        store = Store(store_path)
        total_questions = sum(s.questions for s in store.benchmarks())
        print(f"\nstore: {total_questions:,} questions in {len(store.benchmarks())} benchmarks\n")
        start = time.perf_counter()
        store.fulltext.sync()
        built = time.perf_counter() - start
        index_size = _size(store_path / INDEX_FILE) + sum(_size(p) for p in store_path.glob(INDEX_FILE + "-*"))
        print(f"FTS5 index built from the graphs in {built:.1f} s, {index_size / 1e6:.0f} MB")
        start = time.perf_counter()
        store.fulltext.sync()
        print(f"in-step check before a search: {(time.perf_counter() - start) * 1000:.2f} ms\n")

        tantivy_ix = None
        try:
            import tantivy  # noqa: F401
        except ImportError:
            print("tantivy: not importable (set TANTIVY_PATH); left out\n")
        else:
            start = time.perf_counter()
            rows = [r for b in store.catalog.benchmarks() for r in store.fulltext.rows(b)]
            read = time.perf_counter() - start
            tantivy_ix, indexed = tantivy_index(rows, work / "tantivy")
            print(
                f"tantivy index: rows read from the graphs in {read:.1f} s (the same read as FTS5's build), "
                f"indexed in {indexed:.1f} s, {_size(work / 'tantivy') / 1e6:.0f} MB\n"
            )
            del rows

        print("first 100 hits + total count, p50 ms:")
        print("| search | query | hits | scan today (CONTAINS, first 100) | FTS5 | ratio | tantivy | ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for label, query in SEARCHES:
            fts_ms, hits = p50(lambda q=query: store.search_text(q), args.repeat)
            needle = query.strip('"').rstrip("*")
            scan_ms, _ = p50(lambda n=needle: sum(1 for _ in store.query(FIRST_100, phrase=n)), args.baseline_repeat)
            if tantivy_ix is not None:
                try:
                    tan_ms, (tan_count, _) = p50(lambda q=query: tantivy_search(tantivy_ix, q), args.repeat)
                    tan = f"{tan_ms:,.1f} ({tan_count:,} hits) | {scan_ms / tan_ms:,.0f}×"
                except ValueError as exc:  # its query parser refused the query
                    tan = f"refused ({str(exc)[:60]}) | —"
            else:
                tan = "— | —"
            ratio = scan_ms / fts_ms
            print(
                f"| {label} | `{query}` | {hits.total:,} | {scan_ms:,.0f} | {fts_ms:,.1f} | {ratio:,.0f}× | {tan} |",
                flush=True,
            )

        if args.scale > 1:
            scaled(store, work, args.scale, args.repeat, tantivy_ix is not None)

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
