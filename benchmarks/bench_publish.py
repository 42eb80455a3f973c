"""Publish benchmark: how long ``karenina-rdf publish`` takes for a synthetic benchmark from
``generate.py``, and what it writes (resources, pages, files, bytes).

The checkpoint is imported into a store in memory (not timed), then published under a public
base into a temporary folder, which is removed afterwards unless ``--keep DIR`` is given.

    python benchmarks/bench_publish.py [--questions 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="publish into this (new or empty) folder and keep it")
    args = parser.parse_args(argv)

    from karenina_rdf import Store
    from karenina_rdf.web import publish

    spec = importlib.util.spec_from_file_location("generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    work = Path(tempfile.mkdtemp(prefix="karenina-rdf-bench-publish-"))
    try:
        checkpoint = generate.write_checkpoint(work / "bench.jsonld", args.questions, seed=1)
        store = Store.memory()
        store.import_checkpoint(checkpoint, validate=False)
        out = args.keep or work / "site"
        start = time.perf_counter()
        report = publish(store, [], "https://bench.example.org/kb/", out)
        seconds = time.perf_counter() - start
        print(
            json.dumps(
                {
                    "questions": args.questions,
                    "seconds": round(seconds, 1),
                    "resources": report.resources,
                    "pages": report.pages,
                    "files": report.files,
                    "megabytes": round(report.bytes / 1e6, 1),
                    "moved": len(report.moved),
                }
            )
        )
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
