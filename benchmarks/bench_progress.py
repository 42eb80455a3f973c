"""What the progress bars cost: a CLI import without bars (stderr to a file, --no-progress) and
with bars (stderr on a pseudo-terminal), whole processes taking turns; wall time and the child's
CPU time (user + sys, the steadier figure on a shared machine) of each, then the medians.

    python benchmarks/bench_progress.py [--questions 20000] [--pairs 3] [--micro]

``--micro`` also times, in process, one redraw of four bars and one ``advance`` call.
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
CLI = [sys.executable, "-c", "import sys; from karenina_rdf.cli import main; sys.argv[0] = 'karenina-rdf'; main()"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _import(checkpoint: Path, store: Path, bars: bool) -> tuple[float, float]:
    shutil.rmtree(store, ignore_errors=True)
    args = [*CLI, "import", str(checkpoint), "--store", str(store)]
    c0, t0 = _cpu(), time.perf_counter()
    if bars:
        main, child = os.openpty()
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=child, env=ENV)
        os.close(child)
        drawn = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
        p.wait()
        os.close(main)
        assert "━".encode() in drawn, drawn[-500:]
    else:
        with tempfile.TemporaryFile() as err:
            p = subprocess.Popen([*args, "--no-progress"], stdout=subprocess.DEVNULL, stderr=err, env=ENV)
            p.wait()
            err.seek(0)
            assert "━".encode() not in err.read()
    assert p.returncode == 0
    return time.perf_counter() - t0, _cpu() - c0


def _micro() -> None:
    from rich.console import Console

    sys.path.insert(0, str(ROOT))
    from karenina_rdf.cli._progress import Bars

    with open(os.devnull, "w") as sink:
        bars = Bars(Console(file=sink, force_terminal=True, width=80), "import")
        bars.bars.start()
        tasks = [bars.start(p, 20_000, "items") for p in ("mapping", "loading", "checking", "validating")]
        for t in tasks:
            t.advance(5_000)
        t0 = time.process_time()
        for _ in range(200):
            bars.bars.refresh()
        redraw = (time.process_time() - t0) / 200
        t0 = time.process_time()
        for _ in range(200_000):
            tasks[0].advance()
        advance = (time.process_time() - t0) / 200_000
        bars.bars.stop()
    print(f"one redraw of four bars: {redraw * 1e3:.2f} ms CPU; one advance: {advance * 1e9:.0f} ns CPU")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=20_000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--micro", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-progress-") as tmp:
        work = Path(tmp)
        checkpoint = work / f"b{a.questions}.jsonld"
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "generate.py"), str(a.questions), str(checkpoint)],
            check=True,
            capture_output=True,
        )
        print("load before:", Path("/proc/loadavg").read_text().strip(), flush=True)
        pairs = []
        for i in range(a.pairs):
            off, on = _import(checkpoint, work / "off", False), _import(checkpoint, work / "on", True)
            pairs.append((off, on))
            print(
                f"pair {i + 1}: no bars {off[0]:.1f} s wall, {off[1]:.1f} s CPU | "
                f"bars {on[0]:.1f} s wall, {on[1]:.1f} s CPU",
                flush=True,
            )
        for k, what in ((1, "CPU"), (0, "wall")):
            off_m = statistics.median(p[0][k] for p in pairs)
            on_m = statistics.median(p[1][k] for p in pairs)
            print(f"median {what}: no bars {off_m:.1f} s, bars {on_m:.1f} s, ratio {on_m / off_m:.3f}")
        print("load after:", Path("/proc/loadavg").read_text().strip())
    if a.micro:
        _micro()


if __name__ == "__main__":
    main()
