"""Versions of a benchmark: a re-import keeps the replaced generation (store._versions).

Versions are made from Karenina-written checkpoints of the corpus, edited as JSON (and, in the
slow test, by Karenina's own API); every diff is checked against the two checkpoint files'
items compared directly here, not through the store."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from karenina_rdf import NotFoundError, Store
from karenina_rdf._errors import InvalidValueError
from karenina_rdf.cli import app
from karenina_rdf.store import _versions
from tests.conftest import CORPUS, EXAMPLES, needs_corpus

pytestmark = needs_corpus

ALL_FEATURES = CORPUS / "generated__all_features.jsonld"
WITH_RUBRICS = CORPUS / "tests__fixtures__checkpoints__with_rubrics.jsonld"
MULTI = CORPUS / "tests__fixtures__checkpoints__multi_question.jsonld"
DATES = ("dateCreated", "dateModified")
PARTS = {"text": "text", "acceptedAnswer": "answer", "hasPart": "template", "rating": "rubric"}


# -- the independent reading: the checkpoint files' items, compared as JSON --------------------
def expected_diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Added, removed and changed question ids (with the parts) of two checkpoint documents,
    read straight from their items."""

    def parts(item: dict[str, Any]) -> dict[str, Any]:
        q = item["item"]
        out = {name: q.get(key) for key, name in PARTS.items()}
        meta = {k: v for k, v in q.items() if k not in PARTS and k not in DATES}
        meta |= {"item:" + k: v for k, v in item.items() if k not in ("item", "@id", *DATES)}
        out["metadata"] = meta
        return out

    a = {i["@id"]: parts(i) for i in old.get("dataFeedElement", [])}
    b = {i["@id"]: parts(i) for i in new.get("dataFeedElement", [])}
    order = ("text", "answer", "template", "rubric", "metadata")
    return {
        "added": [q for q in b if q not in a],
        "removed": [q for q in a if q not in b],
        "changed": [{"id": q, "parts": [p for p in order if a[q][p] != b[q][p]]} for q in b if q in a and a[q] != b[q]],
    }


def got_diff(d: _versions.BenchmarkDiff) -> dict[str, Any]:
    return {
        "added": list(d.added),
        "removed": list(d.removed),
        "changed": [{"id": c.id, "parts": list(c.parts)} for c in d.changed],
    }


# -- edits, each one version ------------------------------------------------------------------
def _q(doc: dict[str, Any], n: int = 0) -> dict[str, Any]:
    item: dict[str, Any] = doc["dataFeedElement"][n]["item"]
    return item


def edit_text(doc: dict[str, Any]) -> None:
    _q(doc)["text"] += " (reworded)"


def edit_answer(doc: dict[str, Any]) -> None:
    _q(doc, 1)["acceptedAnswer"]["text"] = "a different reference answer"


def edit_template(doc: dict[str, Any]) -> None:
    q = _q(doc, -1)
    code = "class Answer(BaseAnswer):\n    value: str\n\n    def verify(self) -> bool:\n        return True\n"
    q["hasPart"] = {
        "@type": "SoftwareSourceCode",
        "name": "Answer Template",
        "text": code,
        "programmingLanguage": "Python",
    }


def edit_rubric(doc: dict[str, Any]) -> None:
    trait = {
        "@type": "Rating",
        "name": "cites sources",
        "description": "Cites a source",
        "bestRating": 1.0,
        "worstRating": 0.0,
        "additionalType": "karenina:QuestionSpecificRegexTrait",
        "additionalProperty": [{"@type": "PropertyValue", "name": "pattern", "value": "\\[\\d+\\]"}],
    }
    _q(doc).setdefault("rating", []).append(trait)


def edit_metadata(doc: dict[str, Any]) -> None:
    q = _q(doc, 1)
    q["keywords"] = [*q.get("keywords", []), "versioned"]
    q.setdefault("additionalProperty", []).append({"@type": "PropertyValue", "name": "custom_batch", "value": "b2"})


def add_question(doc: dict[str, Any]) -> None:
    item = copy.deepcopy(doc["dataFeedElement"][0])
    item["@id"] = "urn:uuid:question-added-in-v2"
    item["item"]["text"] = "A question added in the second version?"
    doc["dataFeedElement"].append(item)


def remove_question(doc: dict[str, Any]) -> None:
    del doc["dataFeedElement"][1]


def only_dates(doc: dict[str, Any]) -> None:
    doc["dateModified"] = "2030-01-01T00:00:00"
    for item in doc["dataFeedElement"]:
        item["dateModified"] = "2030-01-01T00:00:00"


def many(doc: dict[str, Any]) -> None:
    for f in (edit_text, edit_answer, edit_metadata, add_question, remove_question):
        f(doc)


EDITS: list[tuple[Path, Callable[[dict[str, Any]], None]]] = [
    (ALL_FEATURES, edit_text),
    (ALL_FEATURES, edit_answer),
    (ALL_FEATURES, edit_template),
    (ALL_FEATURES, edit_rubric),
    (ALL_FEATURES, edit_metadata),
    (ALL_FEATURES, add_question),
    (ALL_FEATURES, remove_question),
    (ALL_FEATURES, only_dates),
    (ALL_FEATURES, many),
    (WITH_RUBRICS, edit_answer),
    (WITH_RUBRICS, many),
    (MULTI, edit_template),
    (MULTI, edit_rubric),
]


def _versions_of(
    store: Store, path: Path, edit: Callable[[dict[str, Any]], None]
) -> tuple[dict[str, Any], dict[str, Any], str]:
    v1 = json.loads(path.read_text(encoding="utf-8"))
    v2 = copy.deepcopy(v1)
    edit(v2)
    store.import_checkpoint(v1, name="v1.jsonld")
    result = store.import_checkpoint(v2, name="v2.jsonld")
    assert result.status == "replaced"
    return v1, v2, result.iri


@pytest.mark.parametrize("engine", ["triples", "items"])
@pytest.mark.parametrize(("path", "edit"), EDITS, ids=[f"{p.stem[-20:]}-{e.__name__}" for p, e in EDITS])
def test_diff_equals_the_files_compared_directly(
    path: Path, edit: Callable[[dict[str, Any]], None], engine: str
) -> None:
    """Both ways of computing a diff (the graphs' triples, the default; the exported items)
    give what comparing the two files' items gives."""
    with Store.memory() as store:
        v1, v2, bench = _versions_of(store, path, edit)
        d = _versions.diff(store, bench, engine=engine)
        assert (d.old, d.new) == (1, 2)
        assert got_diff(d) == expected_diff(v1, v2)
        # Backwards too: what was added was removed, parts the same.
        back = _versions.diff(store, bench, 2, 1, engine=engine)
        assert got_diff(back) == expected_diff(v2, v1)
        if edit is only_dates:
            assert d.empty  # a date alone is not a change


@pytest.mark.parametrize(
    ("edit", "parts"),
    [
        (edit_rubric, []),
        (lambda d: d.__setitem__("rating", d.get("rating", [])[:1]), ["global rubric"]),
        (lambda d: d.__setitem__("description", "new words"), ["description"]),
        (lambda d: d.__setitem__("name", "Renamed"), ["name"]),
        (
            lambda d: d["additionalProperty"].append({"@type": "PropertyValue", "name": "team", "value": "x"}),
            ["properties"],
        ),
        (lambda d: (d.__setitem__("version", "9.9.9"), edit_text(d)), ["version"]),
    ],
)
def test_benchmark_parts(edit: Callable[[dict[str, Any]], None], parts: list[str]) -> None:
    with Store.memory() as store:
        _, _, bench = _versions_of(store, ALL_FEATURES, edit)
        assert list(store.diff(bench).benchmark_parts) == parts
        assert list(_versions.diff(store, bench, engine="items").benchmark_parts) == parts


def test_versions_are_listed_chained_and_exported() -> None:
    v1 = json.loads(ALL_FEATURES.read_text(encoding="utf-8"))
    v2 = copy.deepcopy(v1)
    remove_question(v2)
    with Store.memory() as store:
        bench = store.import_checkpoint(ALL_FEATURES).iri
        store.import_checkpoint(v2, name="second")
        store.import_checkpoint(v1, name="third")  # back to the first content: a third version
        listed = store.versions(bench)
        assert [(v.number, v.revision_of, v.latest) for v in listed] == [(1, None, False), (2, 1, False), (3, 2, True)]
        assert [v.source for v in listed] == [str(ALL_FEATURES), "second", "third"]
        assert [v.questions for v in listed] == [len(v1["dataFeedElement"]), len(v2["dataFeedElement"])] * 1 + [
            len(v1["dataFeedElement"])
        ]
        assert [v.label for v in listed] == [v1["version"]] * 3  # the checkpoint's own version
        assert listed[0].file_hash is not None and listed[1].file_hash is None  # a file, then documents
        assert listed[0].content_hash == listed[2].content_hash != listed[1].content_hash
        assert [v.iri for v in listed] == [f"{bench}/v/{n}" for n in (1, 2, 3)]
        # Each version exports as the checkpoint it was imported from.
        assert store.export_version(bench, 1) == store.export_version(bench, 3) == store.export_checkpoint(bench)
        assert store.export_version(bench, 2) == store.export_version(bench, "previous")
        assert len(store.export_version(bench, 2)["dataFeedElement"]) == len(v2["dataFeedElement"])
        assert store.diff(bench, 1, 3).empty
        # The catalog says it in PROV and schema.org.
        said = {
            (str(r["v"].value), str(r["p"].value))
            for r in store.query(
                "SELECT ?v ?p WHERE { GRAPH <urn:karenina-rdf:catalog> { ?v ?p ?o FILTER(?p IN "
                "(prov:wasRevisionOf, schema:version, prov:generatedAtTime)) } }"
            )
        }
        assert (f"{bench}/v/2", _versions.WAS_REVISION_OF) in said
        assert (f"{bench}/v/3", _versions.WAS_REVISION_OF) in said  # the live version has its node too
        assert (bench, _versions.WAS_REVISION_OF) in said
        assert (f"{bench}/v/1", _versions.GENERATED_AT) in said


@pytest.mark.parametrize(
    ("version", "error"),
    [(3, InvalidValueError), ("latest", InvalidValueError), (9, NotFoundError), ("nope", NotFoundError)],
)
def test_what_cannot_be_dropped(version: int | str, error: type[Exception]) -> None:
    with Store.memory() as store:
        bench = store.import_checkpoint(ALL_FEATURES).iri
        for edit in (edit_text, edit_answer):
            doc = json.loads(ALL_FEATURES.read_text(encoding="utf-8"))
            edit(doc)
            store.import_checkpoint(doc)
        with pytest.raises(error):
            store.drop_version(bench, version)
        assert [v.number for v in store.versions(bench)] == [1, 2, 3]


def test_dropping_relinks_and_frees_the_archive(tmp_path: Path) -> None:
    docs = []
    for edit in (edit_text, edit_answer, edit_metadata):
        doc = json.loads(ALL_FEATURES.read_text(encoding="utf-8"))
        edit(doc)
        docs.append(doc)
    with Store(tmp_path / "s") as store:
        bench = store.import_checkpoint(ALL_FEATURES).iri
        for doc in docs:
            store.import_checkpoint(doc)
        store.drop_version(bench, 2)
        assert [(v.number, v.revision_of) for v in store.versions(bench)] == [(1, None), (3, 1), (4, 3)]
        assert store.diff(bench, 1, 3) == store.diff(bench, 1, "3")
        kept = {ox.NamedNode(v.graph) for v in store.versions(bench) if not v.latest}
    # The archive persists and holds exactly the kept versions' graphs; numbers are not reused.
    with Store(tmp_path / "s") as store:
        archive = _versions.archive(store)
        assert archive is not None and set(archive.named_graphs()) == kept
        store.import_checkpoint(ALL_FEATURES)
        assert [v.number for v in store.versions(bench)] == [1, 3, 4, 5]
        store.delete(bench)
        assert set(archive.named_graphs()) == set()
        assert not list(store.query(f"SELECT * WHERE {{ ?v <{_versions.IS_VERSION_OF}> ?b }}"))


def test_an_orphan_in_the_archive_is_dropped_on_open(tmp_path: Path) -> None:
    with Store(tmp_path / "s") as store:
        store.import_checkpoint(ALL_FEATURES)
        archive = _versions.archive(store, create=True)
        assert archive is not None
        archive.add(ox.Quad(ox.NamedNode("urn:x:s"), ox.NamedNode("urn:x:p"), ox.Literal("o"), ox.NamedNode("urn:x:g")))
        del archive  # RocksDB's lock goes with the last reference
    with Store(tmp_path / "s") as store:
        archive = _versions.archive(store)
        assert archive is not None and list(archive.named_graphs()) == []


def test_no_keep_version() -> None:
    doc = json.loads(ALL_FEATURES.read_text(encoding="utf-8"))
    edit_text(doc)
    with Store.memory() as store:
        bench = store.import_checkpoint(ALL_FEATURES).iri
        store.import_checkpoint(doc, keep_version=False)
        listed = store.versions(bench)
        assert [(v.number, v.revision_of, v.latest) for v in listed] == [(2, None, True)]
        with pytest.raises(NotFoundError):
            store.diff(bench)
        assert _versions.archive(store) is None  # nothing was ever kept


# -- live queries see the latest version only -------------------------------------------------
NAMED = [
    ("questions-per-benchmark", {}),
    ("benchmark-summary", {}),
    ("traits-by-kind", {}),
    ("unfinished-questions", {}),
    ("questions-without-template", {}),
    ("evaluation-modes", {}),
    ("same-question", {}),
    ("questions-by-keyword", {"keyword": "pharmacology"}),
    ("pass-rate-by-model", {}),
    ("question-model-matrix", {}),
]


def _rows(store: Store) -> dict[str, list[str]]:
    out = {}
    for name, params in NAMED:
        rows = store.query(name, **params)
        out[name] = sorted(repr(sorted((str(k), str(v)) for k, v in zip(rows.variables, r, strict=True))) for r in rows)
    return out


@pytest.mark.parametrize("on_disk", [False, True])
def test_named_queries_see_the_latest_version_only(tmp_path: Path, on_disk: bool) -> None:
    """Re-importing a benchmark (changed, then the first file again) leaves every named query's
    rows, the search index, the export and validation as the first import made them, and the
    store keeps querying over pyoxigraph's union default graph."""
    pharma = EXAMPLES / "pharmacology.jsonld"
    changed = json.loads(pharma.read_text(encoding="utf-8"))
    many(changed)
    with Store(tmp_path / "s" if on_disk else None) as store:
        report = store.import_paths([EXAMPLES])
        assert report.ok, report.errors
        bench = store.resolve("Pharmacology examples")
        before = _rows(store)
        hits = store.search_text("aspirin").total
        exported = store.export_checkpoint(bench)
        store.import_checkpoint(changed)
        assert _rows(store) != before  # the change is seen…
        assert store.import_checkpoint(copy.deepcopy(changed), name="again").status == "unchanged"  # no version
        store.import_checkpoint(pharma)  # the first file again: version 3
        assert [v.number for v in store.versions(bench)] == [1, 2, 3]
        assert _rows(store) == before  # …and gone with it: the kept versions are in no query
        assert store.search_text("aspirin").total == hits
        assert store.export_checkpoint(bench) == exported
        assert store.dataset() == {"use_default_graph_as_union": True}
        assert {g.value for g in store.graphs()} == {s.graph for s in store.benchmarks()}


# -- the command line -------------------------------------------------------------------------
def test_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    path = str(tmp_path / "store")
    doc = json.loads(ALL_FEATURES.read_text(encoding="utf-8"))
    many(doc)
    v2 = tmp_path / "v2.jsonld"
    v2.write_text(json.dumps(doc), encoding="utf-8")

    def run(*args: str) -> tuple[int, str, str]:
        r = runner.invoke(app, [*args, "--store", path])
        return r.exit_code, r.stdout, r.stderr

    assert run("import", str(ALL_FEATURES))[0] == 0
    assert run("import", str(v2))[0] == 0
    name = doc["name"]
    code, listed, _ = run("versions", name, "--format", "json")
    assert code == 0
    assert [(v["number"], v["source"], v["latest"]) for v in json.loads(listed)] == [
        (1, str(ALL_FEATURES), False),
        (2, str(v2), True),
    ]
    code, text, _ = run("versions", name)
    assert code == 0 and "2 (latest)" in text and str(v2) in text
    code, out, _ = run("diff", name, "--format", "json")
    assert code == 0
    assert got_diff(_versions.BenchmarkDiff.model_validate(json.loads(out))) == expected_diff(
        json.loads(ALL_FEATURES.read_text(encoding="utf-8")), doc
    )
    want = expected_diff(json.loads(ALL_FEATURES.read_text(encoding="utf-8")), doc)
    code, text, _ = run("diff", name, "1", "2")
    assert code == 0
    assert text.splitlines() == [
        f"version 1 → 2: {len(want['added'])} added, {len(want['removed'])} removed, {len(want['changed'])} changed",
        *(f"+ {q}" for q in want["added"]),
        *(f"- {q}" for q in want["removed"]),
        *(f"~ {c['id']}: {', '.join(c['parts'])}" for c in want["changed"]),
    ]
    code, out, _ = run("export", name, "--version", "1")
    assert code == 0 and len(json.loads(out)["dataFeedElement"]) == len(doc["dataFeedElement"])
    for args, message in [
        (("diff", name, "7"), "no version '7'"),
        (("versions", name, "--drop", "2"), "is the live version"),
        (("versions", name, "--format", "xml"), "--format 'xml'"),
        (("diff", "nope"), "no benchmark with id, IRI or name 'nope'"),
    ]:
        code, _, err = run(*args)
        assert code == 1 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    code, text, _ = run("versions", name, "--drop", "1")
    assert code == 0 and "dropped version 1" in text
    code, _, err = run("diff", name)
    assert code == 1 and "is its first" in err


# -- every backend: embedded, Oxigraph server, Virtuoso -----------------------------------------
def test_versions_on_each_backend(backend: tuple[str, Store]) -> None:
    """On a server the replaced graph stays there as the version's graph, hidden from queries
    (the dataset names the live graphs); dropping and deleting remove it."""
    _, store = backend
    v1 = json.loads(ALL_FEATURES.read_text(encoding="utf-8"))
    v2 = copy.deepcopy(v1)
    many(v2)
    bench = store.import_checkpoint(v1, name="v1").iri
    rows = _rows_of(store)
    store.import_checkpoint(v2, name="v2")
    store.import_checkpoint(copy.deepcopy(v1), name="v3")
    assert [(v.number, v.revision_of) for v in store.versions(bench)] == [(1, None), (2, 1), (3, 2)]
    assert got_diff(store.diff(bench, 1, 2)) == expected_diff(v1, v2)
    assert store.export_version(bench, 1) == store.export_checkpoint(bench)
    assert _rows_of(store) == rows  # only the live version is seen
    kept = [ox.NamedNode(v.graph) for v in store.versions(bench) if not v.latest and v.graph]
    store.drop_version(bench, 2)
    assert [(v.number, v.revision_of) for v in store.versions(bench)] == [(1, None), (3, 1)]
    store.delete(bench)
    if store.remote is not None:
        assert not any(store.oxigraph.contains_named_graph(g) for g in kept)
    assert not list(store.query(f"SELECT * WHERE {{ ?v <{_versions.IS_VERSION_OF}> ?b }}"))


def _rows_of(store: Store) -> list[list[str]]:
    query = "SELECT ?q ?text WHERE { ?q a schema:Question ; schema:text ?text } ORDER BY ?q ?text"
    return [[str(t) for t in r] for r in store.query(query)]


def test_items_without_an_id_are_told_apart() -> None:
    """An item may have no ``@id`` in a file (Karenina derives the question id): each question is
    still compared with itself, by the id the store gives it, never merged with the others."""
    from karenina_rdf import Benchmark

    v1 = json.loads(ALL_FEATURES.read_text(encoding="utf-8"))
    # Two of its questions share a text, so without ids they would be one question (Karenina
    # derives the id from the text): keep one of each text.
    texts = {i["item"]["text"]: i for i in reversed(v1["dataFeedElement"])}
    v1["dataFeedElement"] = [i for i in v1["dataFeedElement"] if texts[i["item"]["text"]] is i]
    for item in v1["dataFeedElement"]:
        del item["@id"]
    v2 = copy.deepcopy(v1)
    edit_answer(v2)
    edit_metadata(v2)
    with Store.memory() as store:
        bench = store.import_checkpoint(v1).iri
        ids = Benchmark(store, bench).get_question_ids()
        store.import_checkpoint(v2)
        assert Benchmark(store, bench).get_question_ids() == ids  # answers and metadata keep the id
        for doc in (v1, v2):
            for item, qid in zip(doc["dataFeedElement"], ids, strict=True):
                item["@id"] = qid
        assert got_diff(store.diff(bench)) == expected_diff(v1, v2)
        assert [c.parts for c in store.diff(bench).changed] == [("answer", "metadata")]
