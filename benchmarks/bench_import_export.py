"""Import/export benchmark: karenina-rdf beside pyoxigraph's raw bulk_load and rdflib's parse.

Every step runs in a fresh child interpreter, so its peak RSS is that step alone (plus the
interpreter and its imports) and no step warms a cache for the next. Figures are ratios against
baselines measured in the same run: absolute seconds move from run to run, ratios hold.

    python benchmarks/bench_import_export.py [--sizes 1000,10000,100000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BASE_IRI = "http://127.0.0.1:8000/"  # without a base pyoxigraph silently drops relative @ids
HERE = Path(__file__).resolve().parent


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _child(step: str, src: str, work: str, ref: str) -> dict[str, Any]:
    """Run one step in this (fresh) process; imports happen before the clock starts."""
    if step == "raw":
        import pyoxigraph as ox

        start = time.perf_counter()
        store = ox.Store(work)
        store.bulk_load(path=src, format=ox.RdfFormat.JSON_LD, base_iri=BASE_IRI)
        store.flush()
        n = len(store)
    elif step == "rdflib":
        import rdflib

        start = time.perf_counter()
        n = len(rdflib.Graph().parse(src, format="json-ld", publicID=BASE_IRI))
    else:
        from karenina_rdf import Store

        start = time.perf_counter()
        ours = Store(work)  # opening is part of each step: a CLI user pays it every time
        if step == "import":
            result = ours.import_checkpoint(src, validate=False)  # validation: bench_validate.py
            ref, n = result.iri, result.triples
        elif step == "export":
            ours.save(ref, src)
            n = Path(src).stat().st_size
        else:  # delete
            n = ours.delete(ref).questions
        ours.close()
    return {"s": time.perf_counter() - start, "mb": _peak_mb(), "n": n, "ref": ref}


def run_step(step: str, src: Path, work: Path, ref: str = "") -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", step, str(src), str(work), ref]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.splitlines()[-1]))


def idle_mb() -> float:
    """Peak RSS of a child that only imports the libraries: the floor under every figure."""
    code = (
        "import resource, pyoxigraph, rdflib, karenina_rdf; "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)


def bench_size(n: int, root: Path, rdflib_max: int) -> list[str]:
    src = root / f"bench-{n}.jsonld"
    # Generated in a child too, so the generator's memory never sits in this process.
    subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(src)], check=True, capture_output=True)
    mb_in = src.stat().st_size / 2**20
    raw = run_step("raw", src, root / f"raw-{n}")
    shutil.rmtree(root / f"raw-{n}")  # free the disk before the next step writes its own store
    rdf = run_step("rdflib", src, root) if n <= rdflib_max else None
    ours_dir = root / f"ours-{n}"
    imp = run_step("import", src, ours_dir)
    exp = run_step("export", root / f"export-{n}.jsonld", ours_dir, imp["ref"])
    # Karenina's writer and ours share one canonical form, so a faithful round trip is identical.
    same = (root / f"export-{n}.jsonld").read_bytes() == src.read_bytes()
    dele = run_step("delete", src, ours_dir, imp["ref"])
    shutil.rmtree(ours_dir)
    for f in (src, root / f"export-{n}.jsonld"):
        f.unlink()

    def row(name: str, r: dict[str, Any] | None, base: dict[str, Any], note: str = "") -> str:
        if r is None:
            return f"| {name} | skipped (see flag --rdflib-max) | | | |"
        return f"| {name} | {r['s']:.2f} | {r['mb']:.0f} | {r['s'] / base['s']:.2f}× | {note} |"

    return [
        f"### N = {n:,} questions ({mb_in:.1f} MB JSON-LD, {imp['n']:,} triples ours, {raw['n']:,} quads raw)",
        "",
        "| step | seconds | peak MB | × raw bulk_load | note |",
        "|---|---:|---:|---:|---|",
        row("pyoxigraph `bulk_load` (raw baseline)", raw, raw),
        row("rdflib `Graph.parse`", rdf, raw, f"{rdf['n']:,} triples" if rdf else ""),
        row("karenina-rdf `import_checkpoint`", imp, raw),
        row(
            "karenina-rdf `save` (export)",
            exp,
            raw,
            f"{exp['s'] / imp['s']:.2f}× our import; {'byte-identical to' if same else 'DIFFERS from'} input",
        ),
        row("karenina-rdf `delete`", dele, raw, f"{dele['s'] / imp['s']:.2f}× our import"),
        "",
        # The targets (stated for 100k; shown at every size to see the trend).
        f"Targets: import ≤ 2× raw: {_verdict(imp['s'] / raw['s'] <= 2)}; import peak "
        f"< 1.5 GB: {_verdict(imp['mb'] < 1536)}; export ≤ 2× import: "
        f"{_verdict(exp['s'] / imp['s'] <= 2)}",
        "",
    ]


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["--child"]:  # internal: one measured step, result as JSON on stdout
        step, src, work, ref = args_in[1:5]
        print(json.dumps(_child(step, src, work, ref)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--sizes", default="1000,10000,100000", help="comma-separated question counts (default: %(default)s)"
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where inputs and stores go (default: a temporary directory)"
    )
    parser.add_argument(
        "--rdflib-max",
        type=int,
        default=10_000,
        help="skip rdflib above this many questions; it is slow (default: %(default)s)",
    )
    args = parser.parse_args(args_in)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    root = Path(tempfile.mkdtemp(prefix="bench-ie-", dir=args.workdir))
    try:
        print(
            f"Python {sys.version.split()[0]}; idle child (interpreter + libraries) peak "
            f"{idle_mb():.0f} MB, included in every peak below\n"
        )
        for n in sizes:
            print("\n".join(bench_size(n, root, args.rdflib_max)), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)  # inputs of 100k are ~200 MB: never leave them
    return 0


if __name__ == "__main__":
    sys.exit(main())
