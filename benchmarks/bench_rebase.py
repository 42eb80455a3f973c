"""Rebase benchmark: ``Store.rebase`` on a generated benchmark (benchmarks/generate.py), beside
importing the same checkpoint (the baseline, measured in the same run) and, for comparison, the
alternative it does not take on the embedded store: one SPARQL update in one pyoxigraph
transaction. With ``--remote``, also on an Oxigraph server (``oxigraph serve``, one SPARQL update
request).

Every step runs in a fresh child interpreter, so its peak RSS is that step's alone. Figures are
ratios against the import measured in the same run: absolute seconds move with the machine's load.

    python benchmarks/bench_rebase.py [--sizes 10000,100000] [--workdir DIR] [--update] [--remote]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NEW = "https://bench.example.org/kb/"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(step: str, src: str, work: str) -> dict[str, Any]:
    from karenina_rdf import Store
    from karenina_rdf.store._rebase import rebase_update

    start = time.perf_counter()
    store = Store(work)
    if step == "import":
        n = store.import_checkpoint(src, validate=False).triples
    elif step == "index":
        n = store.search_text("cancer", limit=1).total
    elif step == "rebase":
        n = store.rebase(NEW).quads
    elif step == "update":  # the alternative: the server's update, run in one embedded transaction
        old = store.base_iri
        store.oxigraph.update(rebase_update(old, NEW))
        n = len(store.oxigraph)
    else:  # search after: the index must be in step (nothing indexed again)
        n = store.search_text("cancer", limit=1).total
    store.close()
    return {"s": time.perf_counter() - start, "mb": _peak_mb(), "n": n}


def _run(step: str, src: Path, work: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", step, str(src), work], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--update", action="store_true", help="also time the one-transaction SPARQL update")
    parser.add_argument("--remote", action="store_true", help="also on an Oxigraph server (oxigraph serve)")
    parser.add_argument("--child", nargs=3, metavar=("STEP", "SRC", "WORK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(*args.child)))
        return
    root = args.workdir or Path(tempfile.mkdtemp(prefix="bench-rebase-"))
    root.mkdir(parents=True, exist_ok=True)
    for n in (int(x) for x in args.sizes.split(",")):
        src = root / f"gen-{n}.jsonld"
        if not src.exists():
            subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(src)], check=True)
        row: dict[str, Any] = {"questions": n}
        steps = ["import", "index", "rebase", "search"]
        work = str(root / f"store-{n}")
        shutil.rmtree(work, ignore_errors=True)
        for step in steps:
            row[step] = _run(step, src, work)
        if args.update:
            shutil.rmtree(work, ignore_errors=True)
            _run("import", src, work)
            row["update"] = _run("update", src, work)
        shutil.rmtree(work, ignore_errors=True)
        if args.remote:
            folder = root / f"oxigraph-{n}"
            shutil.rmtree(folder, ignore_errors=True)
            port = _free_port()
            binary = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")
            server = subprocess.Popen(
                [binary, "serve", "--location", str(folder), "--bind", f"127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                time.sleep(2)
                url = f"http://127.0.0.1:{port}"
                row["remote-import"] = _run("import", src, url)
                row["remote-rebase"] = _run("rebase", src, url)
            finally:
                server.terminate()
                server.wait(timeout=30)
                shutil.rmtree(folder, ignore_errors=True)
        base = row["import"]["s"]
        for value in row.values():
            if isinstance(value, dict):
                value["x_import"] = round(value["s"] / base, 2)
        print(json.dumps(row))


if __name__ == "__main__":
    main()
