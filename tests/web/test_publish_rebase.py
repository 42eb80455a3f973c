"""``publish`` never emits an IRI under another base than the public one, whatever base the store
mints under: the local-only default (tests/web/test_publish.py), another public address, or the
public base itself after ``rebase``. It says when it rewrites, and points to ``rebase``."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox
import pytest

from karenina_rdf import Store
from karenina_rdf.rdf import DEFAULT_BASE_IRI
from tests.conftest import EXAMPLES
from tests.web.test_publish import VOCABULARIES, _dump, _files, _rdf_files

PUBLIC = "https://bench.example.org/kb/"


def _store(base: str, rebase_to: str | None) -> Store:
    store = Store.memory(base_iri=base)
    store.import_checkpoint(EXAMPLES / "pharmacology.jsonld", name="examples/pharmacology.jsonld")
    for path in sorted((EXAMPLES / "results").glob("pharmacology*.json")):
        store.import_results(path)
    if rebase_to is not None:
        store.rebase(rebase_to)
    return store


# (store created under, rebased to, the note publish must give; None: no note)
CASES = [
    pytest.param(
        "https://old.example/store/", None, "rewritten to https://bench.example.org/kb/", id="another-public-base"
    ),
    pytest.param(DEFAULT_BASE_IRI, "https://elsewhere.example/", "karenina-rdf rebase", id="rebased-elsewhere"),
    pytest.param(DEFAULT_BASE_IRI, PUBLIC, None, id="rebased-to-the-public-base"),
]


@pytest.mark.parametrize(("base", "rebase_to", "note"), CASES)
def test_published_files_hold_only_public_iris(
    tmp_path: Path, base: str, rebase_to: str | None, note: str | None
) -> None:
    from karenina_rdf.web import publish

    store = _store(base, rebase_to)
    notes: list[str] = []
    told: Callable[[str], None] = notes.append
    with store:
        stored_base = store.base_iri
        report = publish(store, [], PUBLIC, tmp_path / "site", note=told)
    folder = tmp_path / "site"
    assert len(report.benchmarks) == 1 and len(report.runs) == 1
    if note is None:
        assert notes == [] and report.rewritten_from is None
    else:
        assert len(notes) == 1 and note in notes[0] and f"karenina-rdf rebase {PUBLIC}" in notes[0]
        assert report.rewritten_from == stored_base and not report.default_base
    outside, checked = set(), 0
    quads = [q for path, fmt in _rdf_files(folder) for q in ox.parse(path=str(path), format=fmt)] + _dump(folder)
    for q in quads:
        for term in (q.subject, q.predicate, q.object, q.graph_name):
            if isinstance(term, ox.NamedNode) and term.value.startswith(("http:", "https:")):
                checked += 1
                if not term.value.startswith((PUBLIC, *VOCABULARIES)):
                    outside.add(term.value)
    assert checked > 1_000 and outside == set()
    # Nor in any literal, page or download: no trace of any base the store had.
    for trace in {base, stored_base, DEFAULT_BASE_IRI} - {PUBLIC}:
        leaks = [p for p in _files(folder) if p.suffix != ".gz" and trace.encode() in p.read_bytes()]
        assert leaks == [] and trace.encode() not in gzip.decompress((folder / "dump.nq.gz").read_bytes())
