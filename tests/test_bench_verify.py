"""benchmarks/bench_verify.py at a tiny size: with --all-stages both replay runs complete and
every stage of the second one ran under replay (what the timed figure in docs/performance.md
measures). No timings are asserted."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import sys
from pathlib import Path

import pytest

from karenina_rdf import Store
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # two runs with sandbox workers


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_verify", ROOT / "benchmarks" / "bench_verify.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_verify"] = module
    spec.loader.exec_module(module)
    return module


def test_all_stages_smoke(tmp_path: Path) -> None:
    out = tmp_path / "out.md"
    args = ["--questions", "5", "--replicates", "1", "--all-stages", "--workdir", str(tmp_path), "--out", str(out)]
    assert _bench().main(args) == 0  # type: ignore[attr-defined]
    text = out.read_text(encoding="utf-8")
    tasks = int(re.search(r"tasks: (\d+) \(template_only", text).group(1))  # type: ignore[union-attr]
    assert tasks > 0
    assert f"every stage on: {tasks} tasks" in text and "ratio every-stage / template_only replay run" in text
    assert text.count(f"stored results: {tasks}") == 2
    (work,) = tmp_path.glob("bench-verify-*")
    store = Store(work / "store-all")
    buf = io.StringIO()
    store.export_results("replay", buf)
    store.close()
    rows = json.loads(buf.getvalue())["results"]
    assert len(rows) == tasks
    assert [r["metadata"]["failure"] for r in rows if r["metadata"].get("failure")] == []
    template = [r["template"] for r in rows]
    assert all(t["abstention_check_performed"] and t["sufficiency_check_performed"] for t in template)
    assert all(r["deep_judgment"]["deep_judgment_performed"] for r in rows)
    assert all(r["deep_judgment_rubric"]["deep_judgment_rubric_performed"] for r in rows)
    # The embedding check runs where the parsed answer was wrong (half the answers), from replay.
    embedded = [t for t in template if t["embedding_check_performed"]]
    assert embedded and all(t["embedding_similarity_score"] is not None for t in embedded)
    promoted = {tuple(r["rubric"]["dynamic_rubric_promoted_traits"] or ()) for r in rows}
    assert promoted == {("explains_mechanism", "mentions_literature")}
