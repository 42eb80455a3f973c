"""Whole-process CLI timings of import, `validate --stored`, export and delete, for this tree and
a baseline tree, alternated in the same run, beside Karenina's own `Benchmark.load` and `save`
(issue 20, point 3).

    python benchmarks/bench_speed.py --sizes 20000 --rounds 2
    python benchmarks/bench_speed.py --sizes 100000 --rounds 1 --baseline main

The baseline is `git archive <ref>` of this repository unpacked in a temporary folder, and so is
the tree measured (`--this`, default HEAD: commit first), so edits made while it runs do not count. Every step
is a fresh `karenina-rdf` process (interpreter start and imports included, as a user waits for
it), run with PYTHONPATH set to the tree under test; the two trees take turns, the first one
alternating by round, so a load that drifts during the run touches both. Inputs come from
`generate.py` (seed 0). Karenina runs in its own venv (tests/helpers/karenina_ref.py builds it):
`load` is timed as a whole process too; `save` in process, after its load. Print `uptime` beside
the figures: the machine is shared. Every step is printed twice: wall-clock seconds, then CPU
seconds (user + system of the process and all its threads), which a loaded machine moves less.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KARENINA_VENVS = Path(os.environ.get("KARENINA_RDF_CACHE") or Path.home() / ".cache" / "karenina-rdf")
CLI = "import sys; from karenina_rdf.cli import main; sys.argv[0] = 'karenina-rdf'; main()"


def karenina_python() -> Path | None:
    found = sorted(KARENINA_VENVS.glob("venv-*/bin/python"))
    return found[-1] if found else None


class Took(float):
    """Wall-clock seconds, with the CPU seconds (user + system, every thread) of the same step:
    on a shared machine the wall clock moves with the other users' load, CPU time much less."""

    cpu: float

    def __new__(cls, wall: float, cpu: float) -> Took:
        took = super().__new__(cls, wall)
        took.cpu = cpu
        return took


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> tuple[Took, str]:
    cpu = _children_cpu()
    start = time.perf_counter()
    # In an empty folder: `python -c` puts the working directory first on sys.path, before
    # PYTHONPATH, so this repository (or a stray module in /tmp) would shadow the tree measured.
    with tempfile.TemporaryDirectory() as empty:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=empty)
    took = Took(time.perf_counter() - start, _children_cpu() - cpu)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[:4])}… failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return took, proc.stdout


def ours(tree: Path, checkpoint: Path, work: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("KARENINA_RDF_STORE", None)
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    cli = [sys.executable, "-c", CLI]
    out: dict[str, float] = {}
    where = "import karenina_rdf; print(karenina_rdf.__file__)"
    assert timed([sys.executable, "-c", where], env)[1].startswith(str(tree)), f"{tree} is not the one imported"
    out["import"], _ = timed([*cli, "import", str(checkpoint), "--store", str(store)], env)
    # validate exits 1 for a benchmark that does not conform
    validate = [*cli, "validate", "--stored", "--store", str(store)]
    out["validate --stored"], _ = timed(validate, env, ok=(0, 1))
    out["validate --stored (again)"], _ = timed(validate, env, ok=(0, 1))
    name = _name(checkpoint)
    out["export"], _ = timed([*cli, "export", name, "-o", str(work / "out.jsonld"), "--store", str(store)], env)
    changed = work.parent / "changed.jsonld"
    out["replace (a changed file)"], _ = timed([*cli, "import", str(changed), "--store", str(store)], env)
    out["delete"], _ = timed([*cli, "delete", name, "--store", str(store)], env)
    shutil.rmtree(store, ignore_errors=True)
    return out


def shared(tree: Path, checkpoint: Path, work: Path) -> dict[str, float]:
    """Replacing and deleting a benchmark in a store that holds a second one of the same size
    (the store cannot simply be cleared): import A and B, replace A by a changed file, delete A."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("KARENINA_RDF_STORE", None)
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    cli = [sys.executable, "-c", CLI]
    other, changed = work.parent / "other.jsonld", work.parent / "changed.jsonld"
    out: dict[str, float] = {}
    out["import A"], _ = timed([*cli, "import", str(checkpoint), "--store", str(store)], env)
    out["import B (another, same size)"], _ = timed([*cli, "import", str(other), "--store", str(store)], env)
    out["replace A (a changed file)"], _ = timed([*cli, "import", str(changed), "--store", str(store)], env)
    out["delete A (B stays)"], _ = timed([*cli, "delete", _name(checkpoint), "--store", str(store)], env)
    shutil.rmtree(store, ignore_errors=True)
    return out


OTHERS = 3  # benchmarks beside A in the "several" scenario


def several(tree: Path, checkpoint: Path, work: Path) -> dict[str, float]:
    """Replacing and deleting a benchmark in a store that holds three more of the same size
    (the rebuilds that drop a graph cheaply beside one other are too dear here)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("KARENINA_RDF_STORE", None)
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    cli = [sys.executable, "-c", CLI]
    changed = work.parent / "changed.jsonld"
    out: dict[str, float] = {}
    out["import A"], _ = timed([*cli, "import", str(checkpoint), "--store", str(store)], env)
    for i in range(1, OTHERS + 1):
        timed([*cli, "import", str(work.parent / f"other{i}.jsonld"), "--store", str(store)], env)
    out["replace A (a changed file)"], _ = timed([*cli, "import", str(changed), "--store", str(store)], env)
    out["delete A (the others stay)"], _ = timed([*cli, "delete", _name(checkpoint), "--store", str(store)], env)
    shutil.rmtree(store, ignore_errors=True)
    return out


def _name(checkpoint: Path) -> str:
    import json

    with open(checkpoint, encoding="utf-8") as fh:
        head = fh.read(4096)
    # The generator writes the benchmark's name near the top; reading the whole file is not needed.
    key = '"name": '
    at = head.index(key) + len(key)
    return str(json.JSONDecoder().raw_decode(head[at:])[0])


def karenina(python: Path, checkpoint: Path, work: Path) -> dict[str, float]:
    load_script = f"from karenina import Benchmark; Benchmark.load({str(checkpoint)!r})"
    save_script = (
        "import time; from karenina import Benchmark; "
        f"b = Benchmark.load({str(checkpoint)!r}); t, c = time.perf_counter(), time.process_time(); "
        f"b.save({str(work / 'karenina-out.jsonld')!r}); print(time.perf_counter() - t, time.process_time() - c)"
    )
    load, _ = timed([str(python), "-c", load_script])
    _, printed = timed([str(python), "-c", save_script])
    wall, cpu = (float(x) for x in printed.strip().splitlines()[-1].split())
    return {"load": load, "save": Took(wall, cpu)}


def baseline_tree(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="20000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", default="main", help="git ref of the baseline tree")
    parser.add_argument("--this", default="HEAD", help="git ref of the tree measured (frozen while it runs)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument(
        "--scenario",
        choices=("single", "shared", "several"),
        default="single",
        help=(
            "single: one benchmark, every step; shared: replace and delete beside a second benchmark; "
            f"several: beside {OTHERS} more"
        ),
    )
    args = parser.parse_args()
    kpython = karenina_python()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        trees = {
            "baseline": baseline_tree(args.baseline, work / "baseline"),
            "this tree": baseline_tree(args.this, work / "this"),
        }
        print(f"uptime at start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        for n in (int(s) for s in args.sizes.split(",")):
            checkpoint = work / f"bench{n}.jsonld"
            generate = [sys.executable, str(ROOT / "benchmarks" / "generate.py"), str(n)]
            subprocess.run([*generate, str(checkpoint)], check=True)
            if args.scenario == "shared":
                subprocess.run([*generate, str(work / "other.jsonld"), "--seed", "1"], check=True)
            if args.scenario == "several":
                for i in range(1, OTHERS + 1):
                    subprocess.run([*generate, str(work / f"other{i}.jsonld"), "--seed", str(i)], check=True)
            text = checkpoint.read_text(encoding="utf-8")
            changed = text.replace('"description": "', '"description": "Changed. ', 1)  # a new content hash
            (work / "changed.jsonld").write_text(changed, encoding="utf-8")
            del text, changed
            times: dict[str, dict[str, list[float]]] = {name: {} for name in [*trees, "Karenina"]}
            for r in range(args.rounds):
                order = list(trees) if r % 2 == 0 else list(reversed(trees))
                for name in order:
                    steps = {"single": ours, "shared": shared, "several": several}[args.scenario]
                    for step, took in steps(trees[name], checkpoint, work / ("run-" + name.replace(" ", "-"))).items():
                        times[name].setdefault(step, []).append(took)
                if kpython is not None and args.scenario == "single":
                    for step, took in karenina(kpython, checkpoint, work).items():
                        times["Karenina"].setdefault(step, []).append(took)
            report(n, times)
        print(f"uptime at end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


def report(n: int, times: dict[str, dict[str, list[float]]]) -> None:
    rounds = len(next(iter(times["this tree"].values())))
    for kind in ("wall", "cpu"):

        def med(name: str, step: str, kind: str = kind) -> float | None:
            got = times.get(name, {}).get(step)
            if not got:
                return None
            return statistics.median(x.cpu if kind == "cpu" and isinstance(x, Took) else x for x in got)

        k_load, k_save = med("Karenina", "load"), med("Karenina", "save")
        what = "wall-clock seconds" if kind == "wall" else "CPU seconds, user + system, every thread"
        print(f"\n### N = {n:,} questions (median of {rounds} rounds, {what})\n")
        print("| step | baseline | this tree | this ÷ baseline | Karenina | this ÷ Karenina |")
        print("|---|---:|---:|---:|---:|---:|")
        for step in times["this tree"]:
            base, this = med("baseline", step), med("this tree", step)
            assert base is not None and this is not None
            ref = {"import": k_load, "export": k_save}.get(step)
            ref_cells = f"{ref:.2f} ({'load' if step == 'import' else 'save'}) | {this / ref:.2f}×" if ref else " | "
            print(f"| {step} | {base:.2f} | {this:.2f} | {this / base:.2f}× | {ref_cells} |")
        print()
        for name in ("baseline", "this tree"):
            imp = med(name, "import") or med(name, "import A")
            for step in times["this tree"]:
                took = med(name, step)
                if imp and took and step.startswith(("replace", "delete")):
                    print(f"{step} ÷ import ({name}): {took / imp:.2f}×")

    def raw(x: float) -> object:
        return (round(x, 2), round(x.cpu, 2)) if isinstance(x, Took) else round(x, 2)

    raws = {name: {s: [raw(x) for x in v] for s, v in steps.items()} for name, steps in times.items()}
    print("raw (wall, cpu):", raws)


if __name__ == "__main__":
    main()
