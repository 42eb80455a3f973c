"""Round trips: every corpus checkpoint → store → checkpoint → store again."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store
from tests.conftest import CANONICAL, EXAMPLES, corpus_params, load_json


def _quads(store: Store, iri: str) -> set[tuple[str, str, str]]:
    graph = store.graph_of(iri)[1]
    return {
        (str(q.subject), str(q.predicate), str(q.object))
        for q in store.oxigraph.quads_for_pattern(None, None, None, graph)
    }


def _view(store: Store, iri: str) -> dict[str, Any]:
    """Everything the domain views show of a benchmark, as plain data."""
    b = Benchmark(store, iri)
    return {
        "id": b.id,
        "name": b.name,
        "description": b.description,
        "version": b.version,
        "creator": b.creator,
        "dates": (b.created_at, b.modified_at),
        "custom": b.get_all_custom_properties(),
        "global_rubric": [t.model_dump() for t in b.info().global_rubric],
        "questions": [q.model_dump(exclude={"iri"}) for q in b.question_views()],
    }


@pytest.mark.parametrize(
    "path", corpus_params(loadable_only=True) + [pytest.param(p, id=p.name) for p in sorted(EXAMPLES.glob("*.jsonld"))]
)
def test_round_trip(path: Path | None, tmp_path: Path) -> None:
    assert path is not None
    first = Store.memory()
    iri = first.import_checkpoint(path).iri
    out = tmp_path / "out.jsonld"
    first.save(iri, out)

    second = Store.memory()
    assert second.import_checkpoint(out).iri == iri
    # No blank nodes and minted IRIs: isomorphism is equality of the triple sets.
    assert _quads(second, iri) == _quads(first, iri)
    assert _view(second, iri) == _view(first, iri)

    exported = load_json(out)
    original = load_json(path)
    if path.name in CANONICAL or path.parent == EXAMPLES:
        exported.pop("dateModified"), original.pop("dateModified")
        assert exported == original
        # Byte-level too: the same json.dump(indent=2, ensure_ascii=False) layout, no trailing newline.
        assert out.read_text(encoding="utf-8") == json.dumps(load_json(out), indent=2, ensure_ascii=False)


def test_streamed_export_equals_document(store: Store) -> None:
    iri = store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
    buf = io.StringIO()
    store.save(iri, buf)
    assert json.loads(buf.getvalue()) == store.export_checkpoint(iri)


def test_empty_benchmark_export_layout(store: Store) -> None:
    b = Benchmark.create("Empty", store=store)
    buf = io.StringIO()
    store.save(b.iri, buf)
    assert '"dataFeedElement": [],' in buf.getvalue()


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # Legacy shapes Karenina normalises on save are written in the canonical form.
        (lambda d: d["dataFeedElement"][0].__setitem__("keywords", ["a", "b"]), ["a", "b"]),
        (lambda d: d["dataFeedElement"][0]["item"].__setitem__("keywords", ["x", "x", "y"]), ["x", "x", "y"]),
    ],
    ids=["item-level keywords move to the question", "keyword order and repeats kept"],
)
def test_keywords_round_trip(store: Store, edit: Any, expected: list[str]) -> None:
    doc = load_json(EXAMPLES / "molecular-biology.jsonld")
    doc["dataFeedElement"][0]["item"].pop("keywords", None)
    edit(doc)
    iri = store.import_checkpoint(doc).iri
    item = store.export_checkpoint(iri)["dataFeedElement"][0]
    assert "keywords" not in item
    assert item["item"]["keywords"] == expected
