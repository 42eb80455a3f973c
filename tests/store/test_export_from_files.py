"""Exporting from the generation's files (store._file_export): the same bytes as the export that
reads the graph, for every corpus checkpoint and generated benchmarks, and the graph whenever the
files cannot be trusted (edited, rebased, removed, cut short, laid out otherwise, no files)."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store, StoreError
from karenina_rdf.store import _file_export, _files
from karenina_rdf.store import _store as store_module
from tests.conftest import EXAMPLES, NOT_CHECKPOINTS, corpus_params
from tests.helpers.bench_scripts import benchmark_script

PHARMA = EXAMPLES / "pharmacology.jsonld"


class Reads:
    """Which way each export went: the files (``item_documents``) or the graph (``_items_json``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files = self.graph = 0
        real_files = _file_export.FileSource.item_documents
        real_graph = store_module.GraphStore._items_json

        def from_files(source: _file_export.FileSource, *a: Any, **k: Any) -> Iterator[dict[str, Any]]:
            self.files += 1
            return real_files(source, *a, **k)

        def from_graph(*a: Any, **k: Any) -> Iterator[dict[str, Any]]:
            self.graph += 1
            return real_graph(*a, **k)

        monkeypatch.setattr(_file_export.FileSource, "item_documents", from_files)
        monkeypatch.setattr(store_module.GraphStore, "_items_json", staticmethod(from_graph))

    def took(self) -> str:
        way = {(1, 0): "files", (0, 1): "graph", (1, 1): "files, then graph"}.get((self.files > 0, self.graph > 0))
        self.files = self.graph = 0
        return way or "?"


def _saved(store: Store, ref: str) -> bytes:
    buf = io.StringIO()
    store.save(ref, buf)
    return buf.getvalue().encode("utf-8")


def _saved_to_path(store: Store, ref: str, folder: Path) -> bytes:
    target = folder / "export.jsonld"
    store.save(ref, target)
    return target.read_bytes()


def _from_graph(store: Store, ref: str, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, dict[str, Any]]:
    """The export that reads the graph: the files exist but are not opened."""
    with monkeypatch.context() as m:
        m.setattr(_file_export.FileSource, "open", classmethod(lambda *a: None))
        return _saved(store, ref), store.export_checkpoint(ref)


def _generator() -> ModuleType:
    return benchmark_script("generate")


def _edited(doc: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    edit(out)
    return out


def _shadowed(doc: dict[str, Any]) -> None:
    # Two items with one question id: the first is kept whole as JSON (checkpoint._map shadowed).
    items = doc["dataFeedElement"]
    first = copy.deepcopy(items[1])
    first["item"]["acceptedAnswer"]["text"] = "an answer Karenina does not read"
    items.insert(0, first)
    items.append(copy.deepcopy(items[2]) | {"dateModified": "2026-11-21T00:00:00"})


def _derived_ids(doc: dict[str, Any]) -> None:
    doc.pop("@id")  # the benchmark's identity from its name and version
    del doc["dataFeedElement"][0]["@id"]  # Karenina derives the question id
    doc["dataFeedElement"][1]["@id"] = ""  # derived, and written back empty


def _no_template(doc: dict[str, Any]) -> None:
    del doc["dataFeedElement"][0]["item"]["hasPart"]


def _empty_lists(doc: dict[str, Any]) -> None:
    doc["rating"] = []
    doc["additionalProperty"] = []
    doc["dataFeedElement"][0]["item"]["rating"] = []


PHARMA_DOC = json.loads(PHARMA.read_text(encoding="utf-8"))
VARIANTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "as it is": lambda d: None,
    "items shadowed by a later one with their id": _shadowed,
    "derived benchmark and question ids": _derived_ids,
    "a question without a template": _no_template,
    "lists written empty": _empty_lists,
    "no questions": lambda d: d.update(dataFeedElement=[]),
}


def _same_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: Path | dict[str, Any], reference: bytes | None = None
) -> None:
    reads = Reads(monkeypatch)
    with Store(tmp_path / "store") as s:
        bench = s.import_checkpoint(source).iri
        graph = s.graph_of(bench)[1]
        assert _files.files(s, graph) is not None, "the import kept no files"
        expected, expected_doc = _from_graph(s, bench, monkeypatch)
        assert reads.took() == "graph"
        assert _saved(s, bench) == expected
        assert reads.took() == "files"
        assert _saved_to_path(s, bench, tmp_path) == expected
        assert reads.took() == "files"
        assert s.export_checkpoint(bench) == expected_doc
        assert reads.took() == "files"
        buf = io.StringIO()
        s.save_version(bench, "latest", buf)  # the live version is written as `save` writes it
        assert buf.getvalue().encode("utf-8") == expected
        assert reads.took() == "files"
    if reference is not None:
        assert expected == reference


@pytest.mark.parametrize("path", corpus_params(loadable_only=True))
def test_every_corpus_checkpoint_exports_the_same_bytes_from_its_files(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert path.name not in NOT_CHECKPOINTS
    _same_either_way(tmp_path, monkeypatch, path)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_layout_of_items_exports_the_same_bytes_from_its_files(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _same_either_way(tmp_path, monkeypatch, _edited(PHARMA_DOC, VARIANTS[name]))


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.jsonld")), ids=lambda p: p.name)
def test_the_examples_export_as_they_came_in_from_their_files(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _same_either_way(tmp_path, monkeypatch, example, reference=example.read_bytes())


@pytest.mark.parametrize(
    "questions", [pytest.param(2_000, id="2k, 2 files"), pytest.param(20_000, id="20k", marks=pytest.mark.slow)]
)
def test_a_generated_benchmark_exports_the_same_bytes_from_its_files(
    questions: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = tmp_path / "generated.jsonld"
    _generator().write_checkpoint(checkpoint, questions, seed=3)
    # The generator writes Karenina's canonical form: the export is the file itself.
    _same_either_way(tmp_path, monkeypatch, checkpoint, reference=checkpoint.read_bytes())
    with Store(tmp_path / "store") as s:
        assert len(_files.files(s, s.graphs()[0]) or []) > 1  # items read across file boundaries


# -- when the graph is read instead ---------------------------------------------------------------
def _edit_in_place(s: Store, bench: str, tmp_path: Path) -> None:
    Benchmark(s, bench).add_question("Which receptor does the compound XQ-17 block?", "AT1")


def _update_graph(s: Store, bench: str, tmp_path: Path) -> None:
    graph = s.graph_of(bench)[1]
    s.update_graph(
        f"DELETE {{ GRAPH {graph} {{ ?a <https://schema.org/text> ?t }} }} "
        f'INSERT {{ GRAPH {graph} {{ ?a <https://schema.org/text> "BCR-ABL" }} }} '
        f"WHERE {{ GRAPH {graph} {{ ?q <https://schema.org/acceptedAnswer> ?a . ?a <https://schema.org/text> ?t . "
        f'FILTER(CONTAINS(?t, "BCR-ABL")) }} }}'
    )


def _rebase(s: Store, bench: str, tmp_path: Path) -> None:
    s.rebase("https://example.org/moved/")


def _files_removed(s: Store, bench: str, tmp_path: Path) -> None:
    _files.forget(s, s.graph_of(bench)[1])


def _cut_short(s: Store, bench: str, tmp_path: Path) -> None:
    part = (_files.files(s, s.graph_of(bench)[1]) or [])[0]
    part.write_bytes(part.read_bytes()[:-10])


# Each case, and what its export then holds: the edit (a text the original lacks), or the file
# imported (the content did not change, only where it can be read from).
GRAPH_READ: dict[str, tuple[Callable[[Store, str, Path], None], bytes | None]] = {
    "edited in place (Benchmark)": (_edit_in_place, b'"text": "Which receptor does the compound XQ-17 block?"'),
    "edited by a SPARQL update": (_update_graph, b'"text": "BCR-ABL"'),
    "rebased": (_rebase, None),
    "files removed": (_files_removed, None),
    "a file cut short": (_cut_short, None),
}


@pytest.mark.parametrize("case", list(GRAPH_READ))
def test_the_graph_is_read_when_the_files_cannot_be_trusted(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step, edit = GRAPH_READ[case]
    reads = Reads(monkeypatch)
    with Store(tmp_path / "store") as s:
        bench = s.import_checkpoint(PHARMA).iri
        assert _saved(s, bench) == PHARMA.read_bytes()
        assert reads.took() == "files"
        step(s, bench, tmp_path)
        bench = s.resolve(PHARMA_DOC["@id"])
        saved = _saved(s, bench)
        assert reads.took() == "graph"
        if edit is None:
            assert saved == PHARMA.read_bytes()
        else:
            assert edit not in PHARMA.read_bytes()
            assert edit in saved


def test_a_store_in_memory_reads_the_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    with Store.memory() as s:
        bench = s.import_checkpoint(PHARMA).iri
        assert _saved(s, bench) == PHARMA.read_bytes()
    assert reads.took() == "graph"


def test_a_replaced_benchmark_exports_its_new_files_and_its_kept_version_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = tmp_path / "changed.jsonld"
    changed.write_text(PHARMA.read_text(encoding="utf-8").replace("imatinib", "imatinib mesylate", 1), "utf-8")
    reads = Reads(monkeypatch)
    with Store(tmp_path / "store") as s:
        bench = s.import_checkpoint(PHARMA).iri
        assert s.import_checkpoint(changed).status == "replaced"
        assert _saved(s, bench) == changed.read_bytes()
        assert reads.took() == "files"
        buf = io.StringIO()
        s.save_version(bench, 1, buf)  # a kept version: the version archive
        assert buf.getvalue().encode("utf-8") == PHARMA.read_bytes()
        assert reads.took() == "graph"


# -- files not laid out as the mapper writes them ----------------------------------------------
def _reversed_lines(lines: list[bytes]) -> list[bytes]:
    return lines[:1] + lines[1:][::-1]  # the benchmark's first line stays first


def _header_in_the_middle(lines: list[bytes]) -> list[bytes]:
    # The benchmark's last triple (after its items) moved between two items.
    middle = next(i for i, line in enumerate(lines) if b"/items/" in line.split(b" ")[0] and i > len(lines) // 2)
    return lines[:middle] + lines[-1:] + lines[middle:-1]


def _items_swapped(lines: list[bytes]) -> list[bytes]:
    # Two whole items (each one run of lines) change places: out of the checkpoint's order.
    starts = [i for i, line in enumerate(lines) if b"<https://schema.org/dataFeedElement>" in line]
    a, b, end = starts[0], starts[1], starts[2]
    return lines[:a] + lines[b:end] + lines[a:b] + lines[end:]


def _item_in_two_runs(lines: list[bytes]) -> list[bytes]:
    # The first item's last line moved after the second item.
    starts = [i for i, line in enumerate(lines) if b"<https://schema.org/dataFeedElement>" in line]
    last_of_first, end = starts[1] - 1, starts[2]
    return lines[:last_of_first] + lines[last_of_first + 1 : end] + [lines[last_of_first]] + lines[end:]


LAYOUTS: dict[str, Callable[[list[bytes]], list[bytes]]] = {
    "an item in two runs": _item_in_two_runs,
    "lines reversed": _reversed_lines,
    "a header triple between items": _header_in_the_middle,
    "two items swapped": _items_swapped,
}


def _relaid(s: Store, bench: str, layout: Callable[[list[bytes]], list[bytes]]) -> None:
    """Rewrite the one file of ``bench`` in another order (same lines, same size: still trusted)."""
    (part,) = _files.files(s, s.graph_of(bench)[1]) or []
    part.write_bytes(b"".join(layout(part.read_bytes().splitlines(keepends=True))))
    assert _files.files(s, s.graph_of(bench)[1]) == [part]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_files_laid_out_otherwise_fall_back_to_the_graph(
    layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = Reads(monkeypatch)
    with Store(tmp_path / "store") as s:
        bench = s.import_checkpoint(PHARMA).iri
        _relaid(s, bench, LAYOUTS[layout])
        # A file the export owns is emptied and written again from the graph; so is a document.
        assert _saved_to_path(s, bench, tmp_path) == PHARMA.read_bytes()
        assert reads.took() in ("graph", "files, then graph")
        assert json.dumps(s.export_checkpoint(bench), indent=2, ensure_ascii=False).encode() == PHARMA.read_bytes()
        reads.took()
        # A stream holds part of it already (the header is written before an item is read):
        # refused with one line, the files removed, and the next export reads the graph.
        with pytest.raises(StoreError, match="not laid out as expected") as caught:
            s.save(bench, io.StringIO())
        assert "\n" not in str(caught.value)
        assert reads.took() == "files"
        assert _files.files(s, s.graph_of(bench)[1]) is None
        assert _saved(s, bench) == PHARMA.read_bytes()
        assert reads.took() == "graph"
