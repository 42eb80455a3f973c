"""The synthetic checkpoint generator (benchmarks/generate.py): deterministic, Karenina-shaped."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from karenina_rdf import Store
from tests.helpers.bench_scripts import benchmark_script


def _generator() -> ModuleType:
    return benchmark_script("generate")


def test_deterministic_and_round_trips(tmp_path: Path) -> None:
    gen = _generator()
    a, b, c = tmp_path / "a.jsonld", tmp_path / "b.jsonld", tmp_path / "c.jsonld"
    gen.write_checkpoint(a, 300, seed=7)
    gen.write_checkpoint(b, 300, seed=7)
    gen.write_checkpoint(c, 300, seed=8)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    store = Store.memory()
    result = store.import_checkpoint(a)
    assert (result.questions, result.warnings) == (300, ())
    out = tmp_path / "out.jsonld"
    store.save(result.iri, out)
    # The generator writes Karenina's canonical form, so the export is byte-identical.
    assert out.read_bytes() == a.read_bytes()
    doc = json.loads(a.read_text(encoding="utf-8"))
    lengths = [len(i["item"]["hasPart"]["text"]) for i in doc["dataFeedElement"]]
    assert 450 <= sum(lengths) / len(lengths) <= 800
