"""The graph export's items read by one process against two, each reading half of the items
through ``pyoxigraph.Store.read_only`` of a snapshot (issue 20 point 3: the lever left for an
edited benchmark, which its import's files no longer describe). Prints CPU seconds (this
process and its children) and wall clock, alternating, and whether both wrote the same text.

    python benchmarks/bench_export_processes.py STORE [--rounds 2]

STORE is an on-disk store holding the benchmark (the first one listed is exported).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox

from karenina_rdf.checkpoint._export import _dumps, item_json
from karenina_rdf.rdf._graph import node_index, ordered_items


def items_text(store: ox.Store, graph: ox.NamedNode, bench: str, lo: int, hi: int, out: Path) -> None:
    with open(out, "w", encoding="utf-8") as fh:
        for item in ordered_items(store, graph, bench)[lo:hi]:
            question = bench + "/questions/" + item[len(bench) + len("/items/") :]
            fh.write(_dumps(item_json(node_index(store, graph, [item, question]), item), "    ") + ",\n")


def cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        path, graph, bench, lo, hi, out = sys.argv[2:]
        items_text(ox.Store.read_only(path), ox.NamedNode(graph), bench, int(lo), int(hi), Path(out))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("store", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from karenina_rdf import Store

    s = Store(args.store)
    bench, graph = s.graph_of(s.benchmarks()[0].benchmark_id)
    n = len(ordered_items(s.oxigraph, graph, bench))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for mode in ["one", "two"] * args.rounds:
            load = Path("/proc/loadavg").read_text().split()[:3]
            c, w = cpu(), time.perf_counter()
            if mode == "one":
                items_text(s.oxigraph, graph, bench, 0, n, work / "one.txt")
            else:
                snap = s.snapshot()  # hard links: nobody writes it, so read_only is defined
                half = n // 2
                child = [sys.executable, __file__, "--child", str(snap), graph.value, bench]
                procs = [
                    subprocess.Popen([*child, str(lo), str(hi), str(work / f"half{lo}.txt")])
                    for lo, hi in ((0, half), (half, n))
                ]
                for p in procs:
                    p.wait()
                with open(work / "two.txt", "w", encoding="utf-8") as out:
                    for lo in (0, half):
                        out.write((work / f"half{lo}.txt").read_text(encoding="utf-8"))
                shutil.rmtree(snap)
            print(f"{mode}: cpu {cpu() - c:.2f} s, wall {time.perf_counter() - w:.2f} s (load average {load})")
        print("same text:", (work / "one.txt").read_bytes() == (work / "two.txt").read_bytes())
    s.close()


if __name__ == "__main__":
    main()
