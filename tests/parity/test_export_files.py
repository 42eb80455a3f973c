"""Exports read from the generation's files (store._file_export), judged by Karenina: for every
corpus checkpoint Karenina loads, the benchmark Karenina builds with every feature, and items
shadowed by a later one with their id, Karenina loads our export (written from the files of an
on-disk store) as the same benchmark it loads from the original: its re-save of both is the same
(`dateModified` aside, the time of saving)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Store
from tests.conftest import corpus_files, needs_corpus
from tests.helpers.karenina_ref import karenina
from tests.parity.test_load import BUILD_RICH, RESAVE, _without_save_time
from tests.store.test_export_from_files import PHARMA_DOC, VARIANTS, Reads, _edited

pytestmark = [pytest.mark.slow, needs_corpus]  # Karenina runs in a subprocess of its own environment


def _sources(folder: Path) -> dict[str, Path]:
    out = {p.name: p for p in corpus_files() if p.suffix == ".jsonld"}
    rich = folder / "rich.jsonld"
    karenina(BUILD_RICH, str(rich))
    out["built by Karenina with every feature"] = rich
    shadowed = folder / "shadowed.jsonld"
    shadowed.write_text(json.dumps(_edited(PHARMA_DOC, VARIANTS["items shadowed by a later one with their id"])))
    out["items shadowed by a later one with their id"] = shadowed
    return out


LOADS = r"""
import json, sys
from karenina import Benchmark

ok = {}
for source in sys.argv[1:]:
    try:
        Benchmark.load(source)
        ok[source] = True
    except Exception:
        ok[source] = False
print(json.dumps(ok))
"""


def test_karenina_loads_what_the_files_export_as_it_loads_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = _sources(tmp_path)
    loads = karenina(LOADS, *map(str, sources.values()))
    sources = {name: path for name, path in sources.items() if loads[str(path)]}
    reads = Reads(monkeypatch)
    ours: dict[str, Path] = {}
    with Store(tmp_path / "store") as s:
        for i, (name, path) in enumerate(sources.items()):
            bench = s.import_checkpoint(path).iri
            ours[name] = tmp_path / f"ours-{i}.jsonld"
            s.save(bench, ours[name])
            assert reads.took() == "files", name
    pairs: list[Any] = []
    resaved: dict[str, tuple[Path, Path]] = {}
    for i, name in enumerate(sources):
        theirs, again = tmp_path / f"karenina-{i}.jsonld", tmp_path / f"karenina-ours-{i}.jsonld"
        resaved[name] = (theirs, again)
        pairs += [str(sources[name]), str(theirs), str(ours[name]), str(again)]
    karenina(RESAVE, *pairs)
    assert len(sources) >= 12  # the corpus's checkpoints, the built one, the shadowed items
    for name, (theirs, again) in resaved.items():
        assert _without_save_time(again.read_bytes()) == _without_save_time(theirs.read_bytes()), name
