"""Versions benchmark: what keeping the replaced generation of a benchmark costs (time and
disk), how long ``versions`` and ``diff`` take, and what a named query costs with a version
kept beside the live benchmark, for a synthetic benchmark from ``generate.py``.

Two on-disk stores take the same steps, one keeping versions (the default) and one with
``keep_version=False``: import version 1, re-import an edited version 2 (1% of the questions
reworded, 1% with a new answer, 0.5% removed, 0.5% added). Each step is timed in process; the
load average is printed at both ends (the machine may be shared: compare the two stores'
figures with each other, within one run).

    python benchmarks/bench_versions.py [--questions 10000]
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUERIES = ("questions-per-benchmark", "benchmark-summary", "unfinished-questions", "traits-by-kind")


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _timed(job: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = job()
    return time.perf_counter() - start, value


def edited(doc: dict[str, Any], n: int) -> dict[str, Any]:
    """Version 2: 1% reworded, 1% new answers, 0.5% removed, 0.5% added (copies of others)."""
    new = copy.deepcopy(doc)
    items = new["dataFeedElement"]
    step = 100
    for i in range(0, len(items), step):
        items[i]["item"]["text"] += " (reworded)"
    for i in range(1, len(items), step):
        items[i]["item"]["acceptedAnswer"]["text"] = "a new reference answer"
    gone = set(range(2, len(items), 2 * step))
    added = []
    for k, i in enumerate(range(3, len(items), 2 * step)):
        item = copy.deepcopy(items[i])
        item["@id"] = f"urn:uuid:added-in-v2-{k}"
        item["item"]["text"] = f"A question added in version 2, number {k}?"
        added.append(item)
    new["dataFeedElement"] = [it for i, it in enumerate(items) if i not in gone] + added
    return new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    args = parser.parse_args(argv)

    from karenina_rdf import Store
    from karenina_rdf.store import _versions

    spec = importlib.util.spec_from_file_location("generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    print(f"load average at the start: {os.getloadavg()}")
    work = Path(tempfile.mkdtemp(prefix="karenina-rdf-bench-versions-"))
    try:
        v1 = generate.generate_checkpoint(args.questions, seed=1)
        v2 = edited(v1, args.questions)
        rows = []
        for keep in (True, False):
            path = work / ("keep" if keep else "no-keep")
            with Store(path) as store:
                t1, r1 = _timed(lambda s=store: s.import_checkpoint(copy.deepcopy(v1), name="v1", validate=False))
                q_before = {q: _timed(lambda s=store, q=q: list(s.query(q)))[0] for q in QUERIES}
                t2, _ = _timed(
                    lambda s=store, k=keep: s.import_checkpoint(
                        copy.deepcopy(v2), name="v2", validate=False, keep_version=k
                    )
                )
                q_after = {q: _timed(lambda s=store, q=q: list(s.query(q)))[0] for q in QUERIES}
                tl, listed = _timed(lambda s=store, b=r1.iri: s.versions(b))
                row = {
                    "store": "keep versions" if keep else "--no-keep-version",
                    "import v1 s": t1,
                    "re-import v2 s": t2,
                    "versions s": tl,
                    "versions": len(listed),
                    "union default graph": store.dataset() == {"use_default_graph_as_union": True},
                }
                if keep:
                    td, d = _timed(lambda s=store, b=r1.iri: s.diff(b))
                    ti, _ = _timed(lambda s=store, b=r1.iri: _versions.diff(s, b, engine="triples"))
                    te, _ = _timed(lambda s=store, b=r1.iri: s.export_version(b, 1))
                    row |= {
                        "diff s": td,
                        "diff s, engine=triples": ti,
                        "diff": f"{len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed",
                        "export v1 s": te,
                    }
                for q in QUERIES:
                    row[f"{q} before/after s"] = f"{q_before[q]:.3f} / {q_after[q]:.3f}"
            row["store MB"] = _du(path) / 1e6
            row["archive MB"] = _du(path / _versions.ARCHIVE) / 1e6 if (path / _versions.ARCHIVE).exists() else 0.0
            rows.append(row)
        for row in rows:
            print()
            for k, v in row.items():
                print(f"  {k}: {v:.2f}" if isinstance(v, float) else f"  {k}: {v}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
