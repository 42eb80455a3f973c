"""Versions on the web: ``serve`` answers {B}/v/N (page, RDF, checkpoint, diff.json) and the
benchmark page lists the history; ``publish`` writes the same under the public base. Karenina
is the judge of a version's checkpoint (slow test)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyoxigraph as ox
import pytest
from fastapi.testclient import TestClient

from karenina_rdf import EndpointSettings, Store, create_app
from karenina_rdf.web import publish
from tests.conftest import CORPUS, needs_corpus
from tests.helpers.karenina_ref import karenina
from tests.store.test_versions import edit_answer, edit_text, expected_diff, got_diff, many
from tests.web.test_publish import _check_links

pytestmark = needs_corpus

ALL_FEATURES = CORPUS / "generated__all_features.jsonld"
BASE = "https://bench.example.org/kb/"


def _three_versions(store: Store) -> tuple[str, list[dict[str, Any]]]:
    """Versions 1-3 of the all-features benchmark; version 1 dropped, so 2 and 3 are kept and 4 is live."""
    docs = [json.loads(ALL_FEATURES.read_text(encoding="utf-8"))]
    for edit in (many, edit_text, edit_answer):
        doc = copy.deepcopy(docs[-1])
        edit(doc)
        docs.append(doc)
    bench = ""
    for n, doc in enumerate(docs, 1):
        bench = store.import_checkpoint(doc, name=f"v{n}.jsonld").iri
    store.drop_version(bench, 1)
    return bench, docs


@pytest.fixture(scope="module")
def versioned() -> Any:
    with Store.memory() as store:
        bench, docs = _three_versions(store)
        yield store, bench, docs


SERVED = [
    ("", 200, "text/html"),
    ("/v/2", 200, "text/html"),
    ("/v/4", 200, "text/html"),
    ("/v/3.ttl", 200, "text/turtle"),
    ("/v/4.jsonld", 200, "application/ld+json"),
    ("/v/3/checkpoint.jsonld", 200, "application/ld+json"),
    ("/v/3/diff.json", 200, "application/json"),
    ("/v/2/diff.json", 404, None),  # the first kept version has nothing before it
    ("/v/1", 404, None),  # dropped
    ("/v/5", 404, None),
    ("/v/0", 404, None),
]


@pytest.mark.parametrize(("suffix", "status", "media"), SERVED)
def test_serve_answers_each_version(versioned: Any, suffix: str, status: int, media: str | None) -> None:
    store, bench, docs = versioned
    client = TestClient(create_app(store, EndpointSettings(query_processes=False)))
    path = bench[len(store.base_iri) - 1 :]
    got = client.get(path + suffix, headers={"accept": "text/html"})
    assert got.status_code == status
    if media is None:
        return
    assert got.headers["content-type"].startswith(media)
    if suffix == "":
        # The history: each version linked, and each diff.
        for n in (2, 3, 4):
            assert f'href="{path}/v/{n}"' in got.text
        assert f'href="{path}/v/3/diff.json"' in got.text and f'href="{path}/v/4/diff.json"' in got.text
    if suffix.endswith("diff.json"):
        assert got_diff(store.diff(bench, 2, 3)) == got_diff(type(store.diff(bench))(**got.json()))
        assert got_diff(store.diff(bench, 2, 3)) == expected_diff(docs[1], docs[2])
    if suffix.endswith("checkpoint.jsonld"):
        assert got.json() == store.export_version(bench, 3)


def test_publish_writes_each_version(versioned: Any, tmp_path: Path) -> None:
    store, bench, docs = versioned
    report = publish(store, [bench], BASE, tmp_path / "site")
    public = report.benchmarks[0]
    folder = tmp_path / "site" / unquote(public[len(BASE) :])
    listed = store.versions(bench)
    assert [v.number for v in listed] == [2, 3, 4]
    for i, v in enumerate(listed):
        here = folder / "v" / str(v.number)
        assert (here / "index.html").is_file()
        for suffix, fmt in (
            (".ttl", ox.RdfFormat.TURTLE),
            (".nt", ox.RdfFormat.N_TRIPLES),
            (".jsonld", ox.RdfFormat.JSON_LD),
        ):
            triples = list(ox.parse(path=str(folder / "v" / f"{v.number}{suffix}"), format=fmt))
            iris = {t.value for q in triples for t in (q.subject, q.object) if isinstance(t, ox.NamedNode)}
            assert f"{public}/v/{v.number}" in iris
            assert not any(i.startswith(store.base_iri) for i in iris)  # public IRIs only
            assert (f"{public}/v/{listed[i - 1].number}" in iris) == (i > 0)  # prov:wasRevisionOf
        # The checkpoint is the version as stored; Karenina's items, so equal to the file it came from.
        assert json.loads((here / "checkpoint.jsonld").read_text(encoding="utf-8")) == store.export_version(
            bench, v.number
        )
        assert (here / "diff.json").is_file() == (i > 0)
        if i > 0:
            diff = json.loads((here / "diff.json").read_text(encoding="utf-8"))
            assert diff["benchmark"] == public
            assert (diff["old"], diff["new"]) == (listed[i - 1].number, v.number)
            assert got_diff(type(store.diff(bench))(**diff)) == expected_diff(docs[v.number - 2], docs[v.number - 1])
    page = (folder / "index.html").read_text(encoding="utf-8")
    for v in listed:
        assert f'href="/kb/{public[len(BASE) :]}/v/{v.number}/"' in page
    dump = (tmp_path / "site" / "catalog.ttl").read_text(encoding="utf-8")
    assert "dcat:hasVersion" in dump and "dcat:previousVersion" in dump
    # Every link of every page (the history, each version's links) is a file of the site.
    pages, resources = _check_links(tmp_path / "site", "/kb/")
    assert pages == report.pages and resources >= 3


@pytest.mark.slow
def test_karenina_loads_a_version_and_its_edits_diff_as_compared_directly(tmp_path: Path) -> None:
    """Karenina edits a corpus checkpoint through its own API and saves version 2; both are
    imported; the diff equals the two files compared directly, and the version 1 we export loads
    in Karenina with the questions Karenina read from the original file."""
    v2 = tmp_path / "v2.jsonld"
    script = """
        import json, sys
        from pathlib import Path
        from karenina import Benchmark
        b = Benchmark.load(Path(sys.argv[1]))
        ids = b.get_question_ids()
        b.update_question_metadata(ids[0], question="Reworded by Karenina?")
        b.update_question_metadata(ids[1], raw_answer="A new answer from Karenina")
        b.remove_question(ids[2])
        b.add_question("Added by Karenina?", "Yes", question_id="urn:uuid:added-by-karenina")
        b.save(Path(sys.argv[2]))
        print(json.dumps(ids))
    """
    karenina(script, str(ALL_FEATURES), str(v2))
    with Store(tmp_path / "store") as store:
        bench = store.import_checkpoint(ALL_FEATURES).iri
        store.import_checkpoint(v2)
        old = json.loads(ALL_FEATURES.read_text(encoding="utf-8"))
        new = json.loads(v2.read_text(encoding="utf-8"))
        assert got_diff(store.diff(bench)) == expected_diff(old, new)
        store.save_version(bench, 1, tmp_path / "v1-export.jsonld")
    read = """
        import json, sys
        from pathlib import Path
        from karenina import Benchmark
        out = []
        for p in sys.argv[1:]:
            b = Benchmark.load(Path(p))
            qs = {q: b.get_question(q) for q in b.get_question_ids()}
            out.append({q: [d["question"], d["raw_answer"]] for q, d in qs.items()})
        print(json.dumps(out))
    """
    ours, theirs = karenina(read, str(tmp_path / "v1-export.jsonld"), str(ALL_FEATURES))
    assert ours == theirs
