"""Validation benchmark: our SHACL engine and checks beside pyshacl, and import with validation.

Every step runs in a fresh child interpreter (its peak RSS is that step alone, plus the
interpreter and its imports), on benchmarks from ``generate.py``. Figures are ratios against
baselines measured in the same run: import without validation for the import, pyshacl (the
reference engine) for the validators.

    python benchmarks/bench_validate.py [--sizes 1000,10000,100000] [--pyshacl-max 10000]
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

HERE = Path(__file__).resolve().parent


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _child(step: str, src: str, work: str) -> dict[str, Any]:
    """Run one step in this (fresh) process; imports happen before the clock starts."""
    from karenina_rdf import Store, validate, validate_store
    from karenina_rdf.validation._shacl import validate_store_graph
    from karenina_rdf.validation._shapes import store_graph_to_rdflib, validate_graph_pyshacl

    start = time.perf_counter()
    if step == "file":  # a checkpoint file, before import: parse, map in memory, validate
        n = len(validate(src).findings)
    else:
        store = Store(work)
        if step in ("import", "import-plain"):
            n = len(store.import_checkpoint(src, validate=step == "import").warnings)
        else:
            ref = store.benchmarks()[0].iri
            if step == "engine":  # the shapes only, our engine
                n = len(validate_store_graph(store.oxigraph, [store.graph_of(ref)[1]]).results)
            elif step in ("store", "store-cold"):  # `karenina-rdf validate --stored`: shapes + checks
                n = sum(len(r.findings) for r in validate_store(store))
            else:  # pyshacl over the rdflib copy of the stored graph (the copy is timed too)
                n = len(validate_graph_pyshacl(store_graph_to_rdflib(store, store.graph_of(ref)[1])).results)
        store.close()
    return {"s": time.perf_counter() - start, "mb": _peak_mb(), "n": n}


def run_step(step: str, src: Path, work: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", step, str(src), str(work)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.splitlines()[-1]))


def bench_size(n: int, root: Path, pyshacl_max: int) -> list[str]:
    src = root / f"bench-{n}.jsonld"
    subprocess.run([sys.executable, str(HERE / "generate.py"), str(n), str(src)], check=True, capture_output=True)
    plain = run_step("import-plain", src, root / f"plain-{n}")
    shutil.rmtree(root / f"plain-{n}")
    store = root / f"ours-{n}"
    imp = run_step("import", src, store)
    engine = run_step("engine", src, store)
    full = run_step("store", src, store)  # the import left the template-check cache warm
    shutil.rmtree(store / "cache", ignore_errors=True)
    cold = run_step("store-cold", src, store)  # as after `import --no-validate`: every template parsed
    shacl = run_step("pyshacl", src, store) if n <= pyshacl_max else None
    file = run_step("file", src, root)
    shutil.rmtree(store)
    src.unlink()

    def row(name: str, r: dict[str, Any] | None, note: str = "") -> str:
        if r is None:
            return f"| {name} | skipped (see flag --pyshacl-max) | | |"
        return f"| {name} | {r['s']:.2f} | {r['mb']:.0f} | {note} |"

    vs = (lambda r: f"{shacl['s'] / r['s']:.1f}× faster than pyshacl") if shacl else (lambda r: "")
    return [
        f"### N = {n:,} questions",
        "",
        "| step | seconds | peak MB | note |",
        "|---|---:|---:|---|",
        row("import, `validate=False` (baseline)", plain),
        row("import, validating (the default)", imp, f"{imp['s'] / plain['s']:.2f}× the baseline"),
        row("our engine, shapes only, stored benchmark", engine, vs(engine)),
        row("`validate_store` (shapes + Python checks), after a validating import", full, vs(full)),
        row("`validate_store`, template-check cache empty", cold, vs(cold)),
        row("pyshacl over the rdflib copy (reference)", shacl, f"{shacl['n']} results" if shacl else ""),
        row("`validate(file)` (parse + map in memory + all)", file, f"{file['n']} findings"),
        "",
        f"Targets: import validating ≤ 1.5× baseline: {_verdict(imp['s'] / plain['s'] <= 1.5)}; "
        f"stored ≤ 10 s and ≤ 1.5 GB (set for 100k): {_verdict(cold['s'] <= 10 and cold['mb'] <= 1536)} "
        f"(cache empty), {_verdict(full['s'] <= 10 and full['mb'] <= 1536)} (after import); "
        f"file ≤ 1 s (set for 1k): {_verdict(file['s'] <= 1)}",
        "",
    ]


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["--child"]:  # internal: one measured step, result as JSON on stdout
        step, src, work = args_in[1:4]
        print(json.dumps(_child(step, src, work)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000", help="question counts (default: %(default)s)")
    parser.add_argument("--workdir", type=Path, default=None, help="where inputs and stores go")
    parser.add_argument(
        "--pyshacl-max", type=int, default=10_000, help="skip pyshacl above this many questions (default: %(default)s)"
    )
    args = parser.parse_args(args_in)
    root = Path(tempfile.mkdtemp(prefix="bench-val-", dir=args.workdir))
    try:
        print(f"Python {sys.version.split()[0]}\n")
        for n in (int(s) for s in args.sizes.split(",") if s.strip()):
            print("\n".join(bench_size(n, root, args.pyshacl_max)), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
