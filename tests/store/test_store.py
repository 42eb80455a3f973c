"""The store: importing the corpus, identity, atomicity, replacement, deletion, persistence, SPARQL."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import pyoxigraph as ox
import pytest

from karenina_rdf import SCHEMA, AmbiguousBenchmarkError, BenchmarkNotFoundError, CheckpointError, Store, StoreError
from tests.conftest import CORPUS, EXAMPLES, NOT_CHECKPOINTS, corpus_params, load_json, needs_corpus

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def _all_quads(store: Store) -> set[ox.Quad]:
    return set(store.oxigraph.quads_for_pattern(None, None, None, None))


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_file(store: Store, path: Path) -> None:
    before = _all_quads(store)
    if path.name in NOT_CHECKPOINTS:
        with pytest.raises(CheckpointError) as info:
            store.import_checkpoint(path)
        assert NOT_CHECKPOINTS[path.name] in str(info.value)
        assert str(path) in str(info.value)
        assert _all_quads(store) == before
        return
    result = store.import_checkpoint(path)
    doc = load_json(path)
    assert result.status == "imported"
    assert result.questions == len(doc["dataFeedElement"])
    assert [b.iri for b in store.benchmarks()] == [result.iri]
    # No blank nodes anywhere in the store.
    assert not any(isinstance(t, ox.BlankNode) for q in _all_quads(store) for t in (q.subject, q.object))


@needs_corpus
def test_same_file_same_triples() -> None:
    path = CORPUS / "generated__all_features.jsonld"
    a, b = Store.memory(), Store.memory()
    iri = a.import_checkpoint(path).iri
    b.import_checkpoint(path)

    def triples(s: Store) -> set[tuple[str, str, str]]:
        graph = s.graph_of(iri)[1]
        return {
            (str(q.subject), str(q.predicate), str(q.object))
            for q in s.oxigraph.quads_for_pattern(None, None, None, graph)
        }

    assert triples(a) == triples(b)


def test_reimport_replaces_and_same_content_is_unchanged(store: Store) -> None:
    path = EXAMPLES / "pharmacology.jsonld"
    first = store.import_checkpoint(path)
    assert store.import_checkpoint(path).status == "unchanged"
    doc = load_json(path)
    doc["dataFeedElement"] = doc["dataFeedElement"][:2]
    again = store.import_checkpoint(doc)
    assert (again.status, again.iri, again.questions) == ("replaced", first.iri, 2)
    assert len(store.benchmarks()) == 1
    assert store.benchmarks()[0].questions == 2
    # The replaced generation's graph is gone.
    assert len([g for g in store.oxigraph.named_graphs()]) == 2  # the live graph and the catalog


def test_same_name_different_benchmarks_do_not_collide(store: Store) -> None:
    doc = load_json(EXAMPLES / "pharmacology.jsonld")
    other = dict(doc, **{"@id": "urn:example:other-pharmacology"})
    a = store.import_checkpoint(doc)
    b = store.import_checkpoint(other)
    assert a.iri != b.iri
    assert [s.questions for s in store.benchmarks()] == [4, 4]
    with pytest.raises(AmbiguousBenchmarkError, match="urn:example:other-pharmacology"):
        store.resolve("Pharmacology examples")
    assert store.resolve("urn:example:other-pharmacology") == b.iri
    assert store.resolve(a.iri) == a.iri


def test_benchmark_without_id_is_identified_by_name_and_version(store: Store) -> None:
    doc = load_json(EXAMPLES / "pharmacology.jsonld")
    del doc["@id"]
    r = store.import_checkpoint(doc)
    assert r.benchmark_id == "urn:karenina-rdf:benchmark:Pharmacology%20examples:1.0.0"
    assert "@id" not in store.export_checkpoint(r.iri)
    assert store.import_checkpoint(dict(doc, version="2.0.0")).iri != r.iri


def test_resolve_unknown_names_what_is_stored(store: Store) -> None:
    store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    with pytest.raises(BenchmarkNotFoundError, match="'Pharmacology examples'"):
        store.resolve("nope")


def test_failed_import_leaves_store_exactly_as_before(store: Store) -> None:
    good = load_json(EXAMPLES / "pharmacology.jsonld")
    store.import_checkpoint(good)
    before = _all_quads(store)
    bad = json.loads(json.dumps(good))
    bad["dataFeedElement"][3]["item"]["rating"] = [
        {
            "@type": "Rating",
            "name": "x",
            "bestRating": 1,
            "worstRating": 5,
            # A question's trait that Karenina's trait model refuses when it loads the file.
            "additionalType": "karenina:QuestionSpecificRegexTrait",
            "additionalProperty": [{"@type": "PropertyValue", "name": "pattern", "value": "(unclosed"}],
        }
    ]
    with pytest.raises(CheckpointError, match="regex pattern does not compile"):
        store.import_checkpoint(bad)
    assert _all_quads(store) == before


def test_import_folder_with_one_bad_file(store: Store, tmp_path: Path) -> None:
    for p in EXAMPLES.glob("*.jsonld"):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    (tmp_path / "broken.jsonld").write_text('{"@context": {}, "@type": "DataFeed", "name": "x"', encoding="utf-8")
    report = store.import_paths([tmp_path])
    assert len(report.imported) == 3
    assert len(report.errors) == 1 and "broken.jsonld:1" in report.errors[0]
    assert len(store.benchmarks()) == 3


def test_delete(store: Store) -> None:
    r = store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    store.import_checkpoint(EXAMPLES / "molecular-biology.jsonld")
    store.delete("Pharmacology examples")
    assert [b.name for b in store.benchmarks()] == ["Molecular biology examples"]
    assert not any(q.subject.value.startswith(r.iri) for q in _all_quads(store))
    with pytest.raises(BenchmarkNotFoundError):
        store.delete(r.iri)


def test_on_disk_store_persists_and_cleans_orphans(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Store(path) as s:
        r = s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
        # What an import killed between bulk load and catalog update leaves behind.
        s.oxigraph.add(
            ox.Quad(
                ox.NamedNode(r.iri),
                ox.NamedNode("urn:x"),
                ox.Literal("stray"),
                ox.NamedNode(r.iri + "/graph/0123456789abcdef"),
            )
        )
    with Store(path) as s:
        assert [b.questions for b in s.benchmarks()] == [4]
        assert ox.NamedNode(r.iri + "/graph/0123456789abcdef") not in set(s.oxigraph.named_graphs())


def test_query_links_questions_across_benchmarks(store: Store) -> None:
    store.import_paths([EXAMPLES])
    rows = list(
        store.query(
            """SELECT ?text (COUNT(DISTINCT ?b) AS ?n) WHERE {
             ?q a schema:Question ; schema:text ?text ; karenina:textMd5 ?md5 ; schema:isPartOf ?b .
             ?q2 karenina:textMd5 ?md5 ; schema:isPartOf ?b2 . FILTER(?b != ?b2)
           } GROUP BY ?text"""
        )
    )
    assert [(r["text"].value, int(r["n"].value)) for r in rows] == [
        ("What is the primary molecular target of imatinib?", 2)
    ]


def _pvs(docs: list[dict], name: str) -> list[tuple[dict, object]]:
    """(owner, value) of every additionalProperty called ``name`` in the documents."""
    found: list[tuple[dict, object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            pvs = node.get("additionalProperty")
            for pv in pvs if isinstance(pvs, list) else []:
                if pv.get("name") == name:
                    found.append((node, pv.get("value")))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for d in docs:
        walk(d)
    return found


EXAMPLE_DOCS = [load_json(p) for p in sorted(EXAMPLES.glob("*.jsonld"))]


@pytest.mark.parametrize(
    ("sparql", "expected"),
    [
        (
            "SELECT (COUNT(*) AS ?n) WHERE { ?q karenina:finished false }",
            sum(v is False for _, v in _pvs(EXAMPLE_DOCS, "finished")),
        ),
        (
            "SELECT (COUNT(*) AS ?n) WHERE { ?t karenina:maxScore ?m FILTER(datatype(?m) = xsd:integer && ?m = 5) }",
            sum(v == 5 for _, v in _pvs(EXAMPLE_DOCS, "max_score")),
        ),
        (
            "SELECT (COUNT(*) AS ?n) WHERE { ?t a karenina:RegexRubricTrait ; karenina:caseSensitive false }",
            sum(v is False for _, v in _pvs(EXAMPLE_DOCS, "case_sensitive")),
        ),
        (
            "SELECT (COUNT(*) AS ?n) WHERE { ?q karenina:author ?a FILTER(datatype(?a) = rdf:JSON) }",
            len(_pvs(EXAMPLE_DOCS, "author")),
        ),
        (
            "SELECT (COUNT(*) AS ?n) WHERE { ?t a schema:SoftwareSourceCode ; karenina:templateId ?id }",
            sum(len(d["dataFeedElement"]) for d in EXAMPLE_DOCS),
        ),
    ],
    ids=[
        "finished is xsd:boolean",
        "max_score is xsd:integer",
        "regex settings typed",
        "author is rdf:JSON",
        "templates keep template_id",
    ],
)
def test_settings_are_typed_data(store: Store, sparql: str, expected: int) -> None:
    assert expected > 0, "the examples must exercise this setting"
    store.import_paths([EXAMPLES])
    assert int(next(iter(store.query(sparql)))["n"].value) == expected


@pytest.mark.parametrize("path", corpus_params(loadable_only=True))
def test_agrees_with_a_json_ld_processor(store: Store, path: Path) -> None:
    """Whatever context the file uses (C1-C8), our schema:text values are the ones a JSON-LD
    processor reads from it, and every schema.org term is stored under https://schema.org/."""
    theirs = {
        q.object.value
        for q in ox.parse(path=str(path), format=ox.RdfFormat.JSON_LD, base_iri="http://example.org/")
        if q.predicate.value in ("http://schema.org/text", "https://schema.org/text")
    }
    store.import_checkpoint(path)
    ours = {r["t"].value for r in store.query("SELECT ?t WHERE { ?x schema:text ?t }")}
    assert ours == theirs
    assert not any("http://schema.org/" in str(q) for q in _all_quads(store))


def test_base_iri_is_kept_with_the_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Store(path, base_iri="http://example.org/kb") as s:
        assert s.base_iri == "http://example.org/kb/"
        iri = s.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
        assert iri.startswith("http://example.org/kb/benchmarks/")
    with Store(path) as s:  # reopened without saying: the store's own base
        assert s.import_checkpoint(EXAMPLES / "pharmacology.jsonld").status == "unchanged"
    with pytest.raises(StoreError, match=re.escape("mints IRIs under 'http://example.org/kb/'")):
        Store(path, base_iri="http://other.org/")


@pytest.mark.parametrize("base", ["not an iri", "no-scheme/path", "http://exa mple.org/"])
def test_bad_base_iri(base: str) -> None:
    with pytest.raises(StoreError, match="base IRI"):
        Store.memory(base_iri=base)


@needs_corpus
def test_scenarios_with_the_same_name_stay_apart(store: Store) -> None:
    doc = load_json(CORPUS / "generated__scenario.jsonld")
    twin = json.loads(json.dumps(doc["hasPart"][0]))
    twin["description"] = "a second scenario with the same name"
    doc["hasPart"].append(twin)
    iri = store.import_checkpoint(doc).iri
    assert store.export_checkpoint(iri)["hasPart"] == doc["hasPart"]


class Loads(NamedTuple):
    kind: str
    started: list[str]

    def overlapped(self) -> bool:
        """Loading began before mapping ended: several chunk files, or the pipe opened."""
        return len(self.started) > 3 if self.kind == "chunks" else self.started == ["pipe"]


@pytest.fixture(params=["pipe", "chunks"])
def tiny_chunks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Loads:
    """Exercise the big-import path on small files, through each sink: chunk files bulk-loaded
    by a second thread (what checkpoints use), and the named pipe read by one bulk load (what
    results use on an embedded store).
    Records the loads started while mapping: the pipe when it opens, each chunk file when it is
    handed to the loader."""
    from karenina_rdf.checkpoint import _map as _checkpoint
    from karenina_rdf.store import _loading, _store

    monkeypatch.setattr(_loading, "CHUNK", 40)
    monkeypatch.setattr(_loading, "SMALL", 10)
    monkeypatch.setattr(_checkpoint.TripleSink, "_BLOCK", 7)  # chunks rotate between written blocks
    loads = Loads(request.param, [])
    sink = _loading.ChunkSink if request.param == "chunks" else _loading.PipeSink
    monkeypatch.setattr(_store, "open_sink", lambda store, graph, folder, **_: sink(store, graph, folder))
    if request.param == "chunks":
        real_submit = _loading.ChunkSink._submit

        def submit(self: Any, path: Path) -> None:
            loads.started.append(path.name)
            real_submit(self, path)

        monkeypatch.setattr(_loading.ChunkSink, "_submit", submit)
    else:
        real_open = _loading.PipeSink._open

        def open_(self: Any) -> None:
            loads.started.append("pipe")
            real_open(self)

        monkeypatch.setattr(_loading.PipeSink, "_open", open_)
    return loads


def test_pipelined_import_gives_the_same_graph(tmp_path: Path, tiny_chunks: Loads) -> None:
    path = EXAMPLES / "molecular-biology.jsonld"
    with Store(tmp_path / "a") as big:
        iri = big.import_checkpoint(path).iri
        assert tiny_chunks.overlapped()  # the background loader was fed while mapping went on
        pipelined = {
            (str(q.subject), str(q.predicate), str(q.object))
            for q in big.oxigraph.quads_for_pattern(None, None, None, big.graph_of(iri)[1])
        }
        assert big.export_checkpoint(iri) == load_json(path)
    small = Store.memory()
    small.import_checkpoint(path)
    direct = {
        (str(q.subject), str(q.predicate), str(q.object))
        for q in small.oxigraph.quads_for_pattern(None, None, None, small.graph_of(iri)[1])
    }
    assert pipelined == direct


def test_pipelined_import_failing_late_leaves_store_unchanged(tmp_path: Path, tiny_chunks: Loads) -> None:
    doc = load_json(EXAMPLES / "molecular-biology.jsonld")
    with Store(tmp_path / "s") as store:
        store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
        before = _all_quads(store)
        tiny_chunks.started.clear()
        doc["dataFeedElement"][-1]["item"].pop("text")  # found after earlier chunks were loaded
        bad = tmp_path / "bad.jsonld"
        bad.write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(CheckpointError, match="missing required field 'text'"):
            store.import_checkpoint(bad)
        assert tiny_chunks.overlapped()  # loading had begun before the error was found
        assert _all_quads(store) == before


def test_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    import os

    weird = Path(os.fsdecode(str(tmp_path).encode() + b"/x\xff.jsonld"))
    weird.write_bytes((EXAMPLES / "pharmacology.jsonld").read_bytes())
    with Store(tmp_path / "s") as store:
        result = store.import_checkpoint(weird)
        assert result.status == "imported" and "x\\udcff.jsonld" in (result.source or "")
        assert store.benchmarks()[0].source == result.source


def test_raw_updates_forget_content_hashes(store: Store) -> None:
    iri = store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").iri
    graph = store.graph_of(iri)[1]
    name = "<https://schema.org/name>"
    store.update_graph(
        f"DELETE {{ GRAPH {graph} {{ <{iri}> {name} ?n }} }} "
        f'INSERT {{ GRAPH {graph} {{ <{iri}> {name} "hacked" }} }} '
        f"WHERE {{ GRAPH {graph} {{ <{iri}> {name} ?n }} }}"
    )
    assert store.summary(iri).name == "hacked"
    assert store.import_checkpoint(EXAMPLES / "pharmacology.jsonld").status == "replaced"
    assert store.summary(iri).name == "Pharmacology examples"


def test_queries_do_not_see_a_graph_being_loaded(store: Store) -> None:
    r = store.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    count = "SELECT (COUNT(?q) AS ?n) WHERE { ?q a schema:Question }"
    assert int(next(iter(store.query(count)))["n"].value) == 4
    # What an import in progress looks like: a marked generation graph the catalog does not name.
    loading = ox.NamedNode(r.iri + "/graph/00000000000000aa")
    question = ox.NamedNode(r.iri + "/questions/x")
    store.oxigraph.add(ox.Quad(question, ox.NamedNode(RDF_TYPE), ox.NamedNode(SCHEMA + "Question"), loading))
    store.catalog.mark_pending(loading, True)
    assert int(next(iter(store.query(count)))["n"].value) == 4
    store.catalog.mark_pending(loading, False)


@pytest.mark.slow  # a second Python process holds the store
def test_a_store_another_process_holds_is_named_with_a_hint(tmp_path: Path) -> None:
    import subprocess
    import sys

    held = tmp_path / "held"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from karenina_rdf import Store; s = Store({str(held)!r}); print('open', flush=True); input()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreError) as err:
            Store(held)
        assert str(held) in str(err.value) and "another process" in str(err.value)
    finally:
        holder.communicate("\n", timeout=30)
