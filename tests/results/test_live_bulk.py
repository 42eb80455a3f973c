"""A live run (results written while the run goes) on a store on disk: big batches go through
pyoxigraph's bulk loader and become visible by one small transaction (their types and
positions). What is stored must not depend on the path taken, and a batch whose transaction never
ran (the process ended between the two) must be gone when the run is resumed, so that running its
tasks again stores each result once."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from karenina_rdf import Store
from karenina_rdf.results import LiveRun, _live
from karenina_rdf.store import GraphStore
from tests.conftest import EXAMPLES
from tests.results.test_results import exported, rows_of, synthetic, write

BATCH = 7


def _open(path: Path, run: str = "live", *, resume: bool = False) -> tuple[Store, LiveRun, list[dict[str, Any]]]:
    store = Store(path)
    if not resume:
        store.import_paths([EXAMPLES / "molecular-biology.jsonld"])
    head, rows = synthetic(40, seed=5, job=run)
    (bench,) = [b.iri for b in store.benchmarks()]
    header = {k: head[k] for k in ("format_version", "metadata", "shared_data")}
    return store, LiveRun(store, run, benchmark=bench, header=header, resume=resume), rows


def _graph_lines(store: Store, live: LiveRun) -> set[str]:
    """The run graph's triples, with the graph's own name left out."""
    g = live.graph.value
    return {
        f"{q.subject} {q.predicate} {q.object}".replace(g, "GRAPH")
        for q in store.oxigraph.quads_for_pattern(None, None, None, live.graph)
    }


@pytest.mark.parametrize("bulk_lines", [0, 10**9], ids=["bulk-loaded", "transactions"])
def test_a_live_run_stores_the_same_whichever_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bulk_lines: int
) -> None:
    monkeypatch.setattr(_live, "BULK_LINES", bulk_lines)
    store, live, rows = _open(tmp_path / "s")
    assert live.mapper.commit_lines is not None  # on disk: the results' types and positions kept apart
    for i in range(0, len(rows), BATCH):
        assert live.add(rows[i : i + BATCH]) == list(range(len(rows[i : i + BATCH])))
    live.finish(live.header["metadata"]["job_summary"], "completed")
    got = rows_of(exported(store, "live"))
    # The same rows an import of them gives back (itself byte-identical to the file, test_results).
    imported = Store.memory()
    imported.import_paths([EXAMPLES / "molecular-biology.jsonld"])
    head, _ = synthetic(40, seed=5, job="live")
    run = imported.import_results(write(tmp_path / "run.json", head, rows)).run_id
    assert got == rows_of(exported(imported, run))
    assert store.runs()[0].results == len(rows)
    lines = _graph_lines(store, live)
    store.close()
    # Both loads leave the very same triples.
    monkeypatch.setattr(_live, "BULK_LINES", 10**9 if bulk_lines == 0 else 0)
    other, live2, _ = _open(tmp_path / "t")
    for i in range(0, len(rows), BATCH):
        live2.add(rows[i : i + BATCH])
    live2.finish(live2.header["metadata"]["job_summary"], "completed")
    assert _graph_lines(other, live2) == lines
    other.close()


class _CrashBeforeCommit:
    """The store as LiveRun sees it, ending the process (an exception here) at the transaction
    that would make a bulk-loaded batch visible."""

    def __init__(self, real: ox.Store) -> None:
        self.real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def load(self, data: bytes, **kw: Any) -> None:
        if b"vocab:position>" in data:
            raise KeyboardInterrupt  # as the process dying there would leave it
        self.real.load(data, **kw)


def test_a_batch_cut_off_before_it_showed_is_run_again_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_live, "BULK_LINES", 0)
    store, live, rows = _open(tmp_path / "s")
    first, cut = rows[:BATCH], rows[BATCH : 2 * BATCH]
    live.add(first)
    real = store.oxigraph
    monkeypatch.setattr(GraphStore, "oxigraph", property(lambda self, real=real: _CrashBeforeCommit(real)))
    with pytest.raises(KeyboardInterrupt):
        live.add(cut)
    monkeypatch.undo()
    monkeypatch.setattr(_live, "BULK_LINES", 0)
    # The cut batch's bodies are in the graph, but nothing shows them: not exported, not counted.
    assert len(rows_of(exported(store, "live"))) == len(first)
    store.close()
    del store, live, real  # RocksDB's lock goes with the last reference
    gc.collect()

    store, again, _ = _open(tmp_path / "s", resume=True)
    assert len(again.stored_keys()) == len(first)  # the cut batch is to be run again
    prefix = f"{again.iri}/results/"
    left = {str(q.subject)[1:-1] for q in store.oxigraph.quads_for_pattern(None, None, None, again.graph)}
    assert len({s[len(prefix) :].split("/")[0] for s in left if s.startswith(prefix)}) == len(first)
    # Run again, its tasks give other timings: the old values must not stay beside the new.
    rerun = [dict(r, metadata=dict(r["metadata"], execution_time=99.5, timestamp="2026-11-26 03:00:00")) for r in cut]
    again.add(rerun)
    again.add(rows[2 * BATCH :])
    again.finish(again.header["metadata"]["job_summary"], "completed")
    got = rows_of(exported(store, "live"))
    lines = _graph_lines(store, again)
    store.close()
    clean, clean_live = _clean_live(tmp_path / "clean", [*first, *rerun, *rows[2 * BATCH :]])
    assert got == rows_of(exported(clean, "live"))
    assert lines == _graph_lines(clean, clean_live)  # not a triple more than a run never cut
    clean.close()


def _clean_live(path: Path, rows: list[dict[str, Any]]) -> tuple[Store, LiveRun]:
    store, live, _ = _open(path)
    for i in range(0, len(rows), BATCH):
        live.add(rows[i : i + BATCH])
    live.finish(live.header["metadata"]["job_summary"], "completed")
    return store, live
