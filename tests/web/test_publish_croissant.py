"""``publish`` describes each benchmark as a Croissant dataset (MLCommons' format for ML
datasets, 1.1): ``croissant.json`` beside the benchmark's page, embedded in that page, and the
JSON files its record sets read. Checked with ``mlcroissant``, MLCommons' own library: the
description validates, and (slow: over HTTP from a static server, as a data loader meets it) its
records equal the questions the store holds, Karenina's own reading of the examples, and the
results in Karenina's results files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyoxigraph as ox
import pytest
import rdflib
from rdflib.compare import isomorphic

from karenina_rdf import Store
from karenina_rdf.authoring import Benchmark
from karenina_rdf.web import publish
from tests.conftest import EXAMPLES, ROOT
from tests.helpers.karenina_ref import karenina
from tests.helpers.servers import free_port, static_site
from tests.web.test_publish import _source

mlc = pytest.importorskip("mlcroissant", reason="mlcroissant (pip package, the test extra) is not installed")

BASE = "https://bench.example.org/kb/"
# IRIs a Croissant file names besides the public base's: the vocabularies of its context.
VOCABULARIES = (
    "https://schema.org/",
    "http://mlcommons.org/croissant/",
    "http://purl.org/dc/terms/",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
)
# What mlcroissant may warn about, and why: a Karenina checkpoint has no licence field (a custom
# property "license" becomes one; the examples have none).
EXPLAINED = ('Property "https://schema.org/license" is recommended, but does not exist.',)
# The record sets, by benchmark (examples/*.jsonld): results only where a published run answered.
RECORD_SETS = {
    "Bioinformatics methods examples": ["questions", "global_rubric"],
    "Molecular biology examples": ["questions", "global_rubric", "results"],
    "Pharmacology examples": ["questions", "global_rubric", "results"],
}


@pytest.fixture(scope="module")
def source() -> Iterator[Store]:
    store = _source()
    yield store
    store.close()


def _publish(source: Store, base: str, folder: Path) -> dict[str, Path]:
    """The site's croissant.json files, by benchmark name."""
    report = publish(source, [], base, folder)
    found = {}
    for iri in report.benchmarks:
        path = folder / unquote(iri[len(base) :]) / "croissant.json"
        found[json.loads(path.read_text(encoding="utf-8"))["name"]] = path
    return found


@pytest.fixture(scope="module")
def site(source: Store, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("croissant") / "site"
    return folder, _publish(source, BASE, folder)


def _benchmark(source: Store, name: str) -> Benchmark:
    (iri,) = [iri for iri in source.catalog.benchmarks() if Benchmark(source, iri).name == name]
    return Benchmark(source, iri)


def _issues(path: Path) -> tuple[list[str], list[str]]:
    dataset = mlc.Dataset(jsonld=str(path))
    issues = dataset.metadata.ctx.issues
    strip = lambda found: sorted(i.split("] ", 1)[-1] for i in found)  # noqa: E731 (the node's name goes)
    return strip(issues.errors), strip(issues.warnings)


@pytest.mark.parametrize("name", sorted(RECORD_SETS))
def test_mlcroissant_validates_it(name: str, site: tuple[Path, dict[str, Path]]) -> None:
    path = site[1][name]
    errors, warnings = _issues(path)
    assert errors == [] and set(warnings) <= set(EXPLAINED), warnings
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.1" and doc["@type"] == "sc:Dataset"
    assert [rs["name"] for rs in doc["recordSet"]] == RECORD_SETS[name]


@pytest.mark.parametrize("name", sorted(RECORD_SETS))
def test_files_are_the_sites_own_with_their_sha256(name: str, site: tuple[Path, dict[str, Path]]) -> None:
    folder, paths = site
    doc = json.loads(paths[name].read_text(encoding="utf-8"))
    page = paths[name].parent
    assert doc["url"] == BASE + page.relative_to(folder).as_posix() + "/"
    assert len(doc["distribution"]) == len(RECORD_SETS[name])
    for fo in doc["distribution"]:
        assert fo["contentUrl"].startswith(BASE)
        data = (folder / unquote(fo["contentUrl"][len(BASE) :])).read_bytes()
        assert fo["sha256"] == hashlib.sha256(data).hexdigest() and fo["contentSize"] == f"{len(data)} B"
        assert (page / fo["name"]).read_bytes() == data


def _triples(text: str, base: str) -> set[ox.Triple]:
    return {q.triple for q in ox.parse(text, format=ox.RdfFormat.JSON_LD, base_iri=base)}


def _graph(triples: set[ox.Triple]) -> rdflib.Graph:
    """As an rdflib graph, to compare two parses up to their blank nodes' names."""
    return rdflib.Graph().parse(data=ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES), format="nt")


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._open = dict(attrs)
        if tag == "a":
            self.links.append(str(dict(attrs).get("href")))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.scripts.append((self._open, data))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None


@pytest.mark.parametrize("name", sorted(RECORD_SETS))
def test_only_public_iris_and_the_page_embeds_the_same_graph(name: str, site: tuple[Path, dict[str, Path]]) -> None:
    """Read as RDF (JSON-LD, each relative @id resolved against where it is published), the
    file names only IRIs under the public base besides vocabularies; the benchmark's page
    embeds the same JSON, so a dataset search engine reading the page gets the same triples."""
    paths = site[1]
    text = paths[name].read_text(encoding="utf-8")
    page_url = json.loads(text)["url"]
    triples = _triples(text, page_url + "croissant.json")
    iris = {t.value for tr in triples for t in (tr.subject, tr.predicate, tr.object) if isinstance(t, ox.NamedNode)}
    outside = {i for i in iris if not i.startswith((BASE, *VOCABULARIES))}
    assert len(triples) > 100 and outside == set()
    assert ox.NamedNode(page_url) in {tr.subject for tr in triples}  # the dataset is its page's IRI
    assert not any(t in text for t in ("127.0.0.1", "file:", "localhost"))
    parser = _Scripts()
    parser.feed((paths[name].parent / "index.html").read_text(encoding="utf-8"))
    embedded = [body for attrs, body in parser.scripts if attrs.get("type") == "application/ld+json"]
    assert len(embedded) == 1
    assert json.loads(embedded[0]) == json.loads(text)
    assert isomorphic(_graph(_triples(embedded[0], page_url)), _graph(triples))
    assert urlsplit(page_url).path + "croissant.json" in parser.links  # and a visible link to the file


# -- the records, loaded by mlcroissant over HTTP ----------------------------------------------


@pytest.fixture(scope="module")
def served(
    source: Store, tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: pytest.MonkeyPatch
) -> Iterator[dict[str, Path]]:
    """The examples published under http://127.0.0.1:PORT/kb/ and served there by a plain
    static file server; mlcroissant's download cache in a folder of the test's own."""
    from mlcroissant._src.core import constants

    root = tmp_path_factory.mktemp("croissant-served")
    monkeypatch_module.setattr(constants, "DOWNLOAD_PATH", root / "cache" / "download")
    monkeypatch_module.setattr(constants, "EXTRACT_PATH", root / "cache" / "extract")
    port = free_port()
    paths = _publish(source, f"http://127.0.0.1:{port}/kb/", root / "kb")
    with static_site(root, port, f"http://127.0.0.1:{port}/kb/"):
        yield paths


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def _records(path: Path, record_set: str) -> list[dict[str, Any]]:
    """The record set's records as mlcroissant yields them, its text (bytes) decoded and the
    record set's name taken off the keys. The same way as docs/publishing.md shows."""
    dataset = mlc.Dataset(jsonld=str(path))
    out = []
    for record in dataset.records(record_set=record_set):
        row = {}
        for key, value in record.items():
            name = key.split("/", 1)[1]
            row[name] = [v.decode() for v in value] if isinstance(value, list) else value.decode()
        out.append(row)
    return out


def _rubric(rubric: Any) -> Any:
    """A question's rubric as the questions record set holds it (JSON of Karenina's Rubric fields)."""
    return json.loads(rubric) if rubric else None


@pytest.mark.slow  # a static HTTP server; mlcroissant (pandas) reads every record set
@pytest.mark.parametrize("name", sorted(RECORD_SETS))
def test_question_records_equal_the_stored_questions(name: str, served: dict[str, Path], source: Store) -> None:
    records = _records(served[name], "questions")
    bench = _benchmark(source, name)
    expected = [
        {
            "id": q.id,
            "question": q.question,
            "raw_answer": q.raw_answer,
            "keywords": list(q.keywords or []),
            "template_id": q.template_id if q.answer_template else "",
            "answer_template": q.answer_template or "",
            "question_rubric": [t.name for t in q.question_rubric or []],
        }
        for q in bench.question_views()
    ]
    got = [
        r | {"question_rubric": [t["name"] for ts in (_rubric(r["question_rubric"]) or {}).values() for t in ts]}
        for r in records
    ]
    assert got == expected and len(got) == bench.question_count
    traits = _records(served[name], "global_rubric")
    assert [(t["name"], t["trait_type"]) for t in traits] == [
        (t.name, t.trait_type) for t in bench.info().global_rubric
    ]
    assert all(json.loads(t["definition"])["name"] == t["name"] for t in traits)


def _karenina_results(name: str) -> list[dict[str, Any]]:
    """The results on a benchmark's questions, field by field from Karenina's results files."""
    questions = set(_question_ids(name))
    rows = []
    for path in sorted((EXAMPLES / "results").glob("*.json")):
        export = json.loads(path.read_text(encoding="utf-8"))
        for r in export["results"]:
            meta, template, rubric = r["metadata"], r.get("template") or {}, r.get("rubric") or {}
            if meta["question_id"] not in questions:
                continue
            scores = {
                k: v for key, found in rubric.items() if key.endswith("_trait_scores") for k, v in (found or {}).items()
            }
            verified = template.get("verify_result")
            rows.append(
                {
                    "run": export["metadata"]["job_id"],
                    "result_id": meta["result_id"],
                    "question_id": meta["question_id"],
                    "template_id": meta["template_id"],
                    "answering_model": meta["answering"]["model_name"],
                    "parsing_model": meta["parsing"]["model_name"],
                    "verified": "" if verified is None else json.dumps(verified),
                    "response": template.get("raw_llm_response") or "",
                    "rubric_scores": scores or None,
                    "timestamp": meta["timestamp"],
                }
            )
    return rows


def _question_ids(name: str) -> list[str]:
    """The question ids of the example checkpoint named ``name`` (its DataFeedItems' ids)."""
    for path in EXAMPLES.glob("*.jsonld"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc["name"] == name:
            return [e["@id"] for e in doc["dataFeedElement"]]
    raise LookupError(name)


@pytest.mark.slow  # a static HTTP server; mlcroissant (pandas) reads every record set
@pytest.mark.parametrize("name", sorted(RECORD_SETS))
def test_result_records_equal_karenina_results_files(name: str, served: dict[str, Path]) -> None:
    expected = _karenina_results(name)
    if "results" not in RECORD_SETS[name]:
        assert expected == []
        return
    got = [
        r | {"rubric_scores": json.loads(r["rubric_scores"]) if r["rubric_scores"] else None}
        for r in _records(served[name], "results")
    ]
    assert sorted(got, key=lambda r: (r["run"], r["result_id"])) == sorted(
        expected, key=lambda r: (r["run"], r["result_id"])
    )
    assert len(got) >= 16


KARENINA_QUESTIONS = r"""
import json, sys
from karenina import Benchmark
from karenina.utils.checkpoint import generate_template_id
out = {}
for path in sys.argv[1:]:
    b = Benchmark.load(path)
    rows = []
    for q in b.get_all_questions():
        rubric = b.get_question_rubric(q["id"])
        code = q["answer_template"]
        rows.append({
            "id": q["id"], "question": q["question"], "raw_answer": q["raw_answer"],
            "keywords": q.get("keywords") or [], "template_id": generate_template_id(code) if code else "",
            "answer_template": code or "",
            "question_rubric": rubric.model_dump(mode="json") if rubric is not None else None,
        })
    g = b.get_global_rubric()
    traits = [t.model_dump(mode="json") for f in ("llm_traits", "regex_traits", "callable_traits", "metric_traits",
              "agentic_traits") for t in (getattr(g, f) or [])] if g is not None else []
    out[b.name] = {"questions": rows, "global_rubric": traits}
print(json.dumps(out))
"""


@pytest.mark.slow  # runs Karenina in its own environment, and a static HTTP server
def test_question_records_equal_what_karenina_reads(served: dict[str, Path]) -> None:
    """Every field of every question record, the rubrics as Karenina's model_dump, equals what
    Karenina's own Benchmark.load gives for the example checkpoints."""
    theirs = karenina(KARENINA_QUESTIONS, *map(str, sorted(EXAMPLES.glob("*.jsonld"))))
    assert sorted(theirs) == sorted(RECORD_SETS)
    for name, expected in theirs.items():
        got = [r | {"question_rubric": _rubric(r["question_rubric"])} for r in _records(served[name], "questions")]
        assert [r["id"] for r in got] == [r["id"] for r in expected["questions"]], name
        for mine, karenina_s in zip(got, expected["questions"], strict=True):
            assert mine == karenina_s, name
        traits = [json.loads(t["definition"]) for t in _records(served[name], "global_rubric")]
        assert traits == expected["global_rubric"], name


def test_report_counts_the_croissant_files(site: tuple[Path, dict[str, Path]]) -> None:
    """Each benchmark folder holds its description and exactly the files it names."""
    for name, path in site[1].items():
        doc = json.loads(path.read_text(encoding="utf-8"))
        named = {fo["name"] for fo in doc["distribution"]}
        written = {p.name for p in path.parent.iterdir() if p.is_file()} - {"index.html", "checkpoint.jsonld"}
        assert written == named | {"croissant.json", "croissant-tasks.jsonld"}, name


# -- Croissant Tasks: the problem, and each run's evaluation of each answering model -----------
TASKS = Path(__file__).parent / "croissant_tasks"  # MLCommons' ontology and shapes (README there)
CR = "http://mlcommons.org/croissant/"


def _tasks_graph(path: Path) -> rdflib.Graph:
    return rdflib.Graph().parse(path, format="json-ld")


def _shapes() -> rdflib.Graph:
    """MLCommons' shapes, less the one pyshacl (0.40) refuses as ill-formed: TaskProblemShape's
    "at least one of input, output, implementation is a Spec", a property shape with no
    sh:path. That rule is checked by :data:`HAS_A_SPEC` instead."""
    shapes = rdflib.Graph().parse(TASKS / "croissant-tasks-shapes.ttl")
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    pathless = [(s, o) for s, o in shapes.subject_objects(sh.property) if shapes.value(o, sh.path) is None]
    assert [str(s) for s, _ in pathless] == [CR + "TaskProblemShape"]  # that one, and no other
    for s, o in pathless:
        shapes.remove((s, sh.property, o))
    return shapes


HAS_A_SPEC = """
PREFIX cr: <http://mlcommons.org/croissant/>
ASK { ?p a cr:TaskProblem .
      FILTER NOT EXISTS {
        { ?p cr:input/a cr:InputSpec } UNION { ?p cr:output/a cr:OutputSpec }
        UNION { ?p cr:implementation/a cr:ImplementationSpec } } }
"""


@pytest.mark.parametrize("name", sorted(RECORD_SETS))
def test_tasks_conform_to_the_croissant_tasks_shapes(name: str, site: tuple[Path, dict[str, Path]]) -> None:
    from pyshacl import validate

    path = site[1][name].parent / "croissant-tasks.jsonld"
    conforms, _, text = validate(
        _tasks_graph(path),
        shacl_graph=_shapes(),
        ont_graph=rdflib.Graph().parse(TASKS / "croissant-tasks.ttl"),
        inference="rdfs",
    )
    assert conforms, text
    assert not _tasks_graph(path).query(HAS_A_SPEC).askAnswer  # the rule left out of the shapes
    # croissant.json names the problem; the problem's input is the Croissant dataset.
    doc = json.loads(site[1][name].read_text(encoding="utf-8"))
    problem = doc["subjectOf"]["@id"]
    g = _tasks_graph(path)
    assert (rdflib.URIRef(problem), rdflib.RDF.type, rdflib.URIRef(CR + "TaskProblem")) in g
    assert g.value(rdflib.URIRef(problem), rdflib.URIRef(CR + "input")) == rdflib.URIRef(doc["url"])


EVALUATIONS = """
PREFIX cr: <http://mlcommons.org/croissant/>
PREFIX sc: <https://schema.org/>
SELECT ?model ?run ?metric ?value WHERE {
  ?solution a cr:TaskSolution ; cr:implementation/sc:name ?model ; cr:evaluation ?e .
  ?e cr:evaluatedSolution ?solution ; sc:url ?run ; cr:evaluationResults [ cr:metric ?metric ; cr:value ?value ] .
}
"""


@pytest.mark.parametrize("name", sorted(RECORD_SETS))
def test_task_evaluations_count_karenina_results(name: str, site: tuple[Path, dict[str, Path]]) -> None:
    """Per run and answering model: results, template verifications, passes and pass rate, as
    counted in Karenina's results files; the evaluation names the run's published page."""
    folder = site[0]
    got = {}
    for row in _tasks_graph(site[1][name].parent / "croissant-tasks.jsonld").query(EVALUATIONS):
        run_page = str(row.run)  # type: ignore[union-attr]
        assert run_page.startswith(BASE) and (folder / unquote(run_page[len(BASE) :]) / "index.html").is_file()
        run = unquote(run_page.rstrip("/").rsplit("/", 1)[1])
        got[(run, str(row.model), str(row.metric))] = row.value.toPython()  # type: ignore[union-attr]
    expected: dict[tuple[str, str, str], Any] = {}
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in _karenina_results(name):
        groups.setdefault((r["run"], r["answering_model"]), []).append(r["verified"])
    for (run, model), verdicts in groups.items():
        verified = [v for v in verdicts if v]
        passed = verified.count("true")
        expected[(run, model, "results")] = len(verdicts)
        expected[(run, model, "template verifications")] = len(verified)
        expected[(run, model, "template passes")] = passed
        if verified:
            expected[(run, model, "template pass rate")] = round(Decimal(passed) / Decimal(len(verified)), 4)
    assert got == expected
    assert bool(got) == ("results" in RECORD_SETS[name])


@pytest.mark.slow  # a static HTTP server; mlcroissant reads the record sets
def test_the_docs_example_loads_the_questions(served: dict[str, Path], source: Store) -> None:
    """docs/publishing.md's Croissant example, run as written against the published examples
    (its public base swapped for the static server's): it gets the stored questions."""
    section = (ROOT / "docs" / "publishing.md").read_text(encoding="utf-8").split("## Croissant", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    page = json.loads(served["Pharmacology examples"].read_text(encoding="utf-8"))["url"]
    base = page.split("benchmarks/", 1)[0]
    assert BASE in code and page.replace(base, BASE) + "croissant.json" in code
    scope: dict[str, Any] = {}
    exec(compile(code.replace(BASE, base), "docs/publishing.md", "exec"), scope)
    stored = _benchmark(source, "Pharmacology examples").question_views()
    assert [q["id"].decode() for q in scope["questions"]] == [q.id for q in stored]
    assert scope["questions"][0]["question"].decode() == stored[0].question
    assert [t["name"] for ts in scope["rubric"].values() for t in ts] == [
        t.name for t in stored[0].question_rubric or []
    ]
    assert len(scope["results"]) == 16  # the pharmacology run's results
