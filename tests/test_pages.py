"""The HTML pages of the endpoint (karenina_rdf/_pages.py), through the ASGI app: status, content
type, what each page shows, escaping, pagination, the question filter and the alternate links."""

from __future__ import annotations

import copy
import html
import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from karenina_rdf import Benchmark, Store, named_queries
from karenina_rdf._endpoint import create_app
from karenina_rdf._ids import question_iri
from karenina_rdf._page_data import PAGE_SIZE
from karenina_rdf._page_terms import editor_text

from .conftest import EXAMPLES, ROOT, load_json

HTML = {"accept": "text/html"}
PHARMA = "/benchmarks/urn:uuid:karenina-checkpoint-1795172400.0"
MOLBIO = "/benchmarks/urn:uuid:karenina-checkpoint-1795168800.0"
COPY = "/benchmarks/urn:uuid:pharmacology-copy"
LOSARTAN = PHARMA + "/questions/urn:uuid:question-which-receptor-does-losartan-block-39636e14"
IMATINIB_ID = "urn:uuid:question-what-is-the-primary-molecular-target-of-imatinib-af35ccf9"
HOSTILE = '<script>alert("x")</script> & what does <b>this</b> do?'


def _synthetic(tmp: Path, n: int, seed: int) -> Path:
    spec = importlib.util.spec_from_file_location("generate", ROOT / "benchmarks" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp / f"synthetic-{n}.jsonld"
    module.write_checkpoint(path, n, seed=seed)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, TestClient, dict[str, str]]]:
    """The three examples, a copy of one under another id, a benchmark with hostile text and a
    250-question synthetic one (three pages)."""
    store = Store.memory()
    for path in sorted(EXAMPLES.glob("*.jsonld")):
        store.import_checkpoint(path)
    doc = copy.deepcopy(load_json(EXAMPLES / "pharmacology.jsonld"))
    doc["@id"], doc["name"] = "urn:uuid:pharmacology-copy", "Pharmacology copy"
    doc["creator"] = {"@type": "Person", "name": "Ada Lovelace", "url": "https://example.org/ada"}
    store.import_checkpoint(doc, name="copy of pharmacology.jsonld")
    hostile = Benchmark.create("Escaping <i>test</i>", "A description with <em>markup</em>", store=store)
    hostile_qid = hostile.add_question(HOSTILE, "<b>bold</b> answer", custom_metadata={"note": "<tag>"})
    big = store.import_checkpoint(_synthetic(tmp_path_factory.mktemp("pages"), 250, seed=3))
    client = TestClient(create_app(store))
    base = store.base_iri[:-1]
    paths = {
        "hostile": hostile.iri[len(base) :],
        "hostile_question": question_iri(hostile.iri, hostile_qid)[len(base) :],
        "big": big.iri[len(base) :],
    }
    yield store, client, paths
    store.close()


def _get(client: TestClient, url: str, **headers: str) -> Any:
    return client.get(url, headers={**HTML, **headers})


def _config(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="query-config">(.*?)</script>', page, re.S)
    assert found, "the editor page carries its configuration"
    config: dict[str, Any] = json.loads(found.group(1))
    return config


# -- every page: status, type, key content ------------------------------------------------------
PAGES = [
    ("/", ["Pharmacology examples", "Molecular biology examples", "Bioinformatics methods examples",
           "Pharmacology copy"]),
    (PHARMA, ["Pharmacology examples", "Four questions on drugs", "names_target", "no_dosage_advice",
              "Which receptor does losartan block?", "checkpoint.jsonld", "Global rubric", "pharmacology"]),
    (LOSARTAN, ["Which receptor does losartan block?", "The angiotensin II type 1 (AT1) receptor.",
                '<div class="highlight">', '<span class="k">class</span>', "4a225841c1245831a5f69582bb21a271",
                "receptor_specificity", "J. Okafor", "drug-targets", "cardiovascular", "difficulty"]),
    (LOSARTAN + "/template", ["schema:SoftwareSourceCode", '<span class="k">def</span>', "karenina:templateId"]),
    (LOSARTAN + "/answer", ["schema:Answer", "The angiotensin II type 1 (AT1) receptor."]),
    (LOSARTAN + "/traits/receptor_specificity", ["schema:Rating", "karenina:LLMRubricTrait", "rdf:JSON"]),
    (PHARMA + "/items/urn:uuid:question-which-receptor-does-losartan-block-39636e14",
     ["schema:DataFeedItem", f'href="{LOSARTAN}"', "Which receptor does losartan block?"]),
    (PHARMA + "/creator", None),  # a string creator: no node, so a 404
    (COPY, ["Pharmacology copy", "Ada Lovelace"]),
    (COPY + "/creator", ["schema:Person", "Ada Lovelace", "https://example.org/ada"]),
    (LOSARTAN + ".html", ["Which receptor does losartan block?", '<span class="k">class</span>']),
    ("/query", ['id="yasgui"', "/static/yasgui/yasgui.min.js", "/static/yasgui/yasgui.min.css",
                "questions-by-keyword"]),
    ("/sparql", ['id="yasgui"', "Named queries"]),
    ("/queries", ["Questions by keyword", 'action="/query/questions-by-keyword"',
                  'formaction="/queries/questions-by-keyword"', "/static/queries.js"]),
    ("/query/questions-by-keyword?keyword=genomics", ['id="yasgui"']),
]  # fmt: skip


@pytest.mark.parametrize(("url", "expected"), PAGES, ids=[u for u, _ in PAGES])
def test_page(site: tuple[Store, TestClient, dict[str, str]], url: str, expected: list[str] | None) -> None:
    _, client, _ = site
    r = _get(client, url)
    if expected is None:
        assert r.status_code == 404
        return
    assert r.status_code == 200, r.text[:500]
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.text.startswith("<!doctype html>")
    for text in expected:
        assert text in r.text, f"{text!r} missing from {url}"
    for nav in (
        'href="/"',
        'href="/queries"',
        'href="/query"',
        'href="/.well-known/void"',
        'href="/sparql?format=turtle"',
    ):
        assert nav in r.text
    # Everything the page loads comes from this server.
    for ref in re.findall(r'<(?:script|link)\b[^>]*?(?:src|href)="([^"]*)"', r.text):
        assert ref.startswith("/"), ref


def test_query_form_targets(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    """The two buttons of a named-query form: the editor page, and the results in a chosen format."""
    _, client, _ = site
    page = _get(client, "/queries").text
    form = page.split('id="q-questions-by-keyword"', 1)[1].split("</form>", 1)[0]
    assert 'name="keyword"' in form and "required" in form
    assert re.findall(r'<option value="(\w+)">', form) == ["json", "csv", "tsv", "xml"]
    for fmt, media in [
        ("json", "application/sparql-results+json"),
        ("csv", "text/csv"),
        ("tsv", "text/tab"),
        ("xml", "application/sparql-results+xml"),
    ]:
        r = client.get(f"/queries/questions-by-keyword?keyword=genomics&format={fmt}")
        assert r.status_code == 200 and r.headers["content-type"].startswith(media)
        assert "What kind of protein does the CFTR gene encode?" in r.text
    assert _get(client, "/query/questions-by-keyword?keyword=genomics&format=csv").status_code == 200


def test_unknown_pages(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    _, client, _ = site
    assert _get(client, PHARMA + "/questions/nope").status_code == 404
    assert _get(client, "/query/no-such-query").status_code == 404
    bad = _get(client, "/query/questions-by-keyword?colour=red")
    assert bad.status_code == 400 and "has no parameter" in bad.text and 'id="yasgui"' in bad.text


# -- index counts ---------------------------------------------------------------------------------
def test_index_counts_match_the_summary_query(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    store, client, _ = site
    page = _get(client, "/").text
    rows = re.findall(r'<tr>\s*<td><a class="strong" href="([^"]+)">(.*?)</a>(.*?)</tr>', page, re.S)
    shown = {}
    for _, name, cells in rows:
        counts = dict(re.findall(r'data-count="([a-z-]+)">([\d,]+)', cells))
        shown[html.unescape(name)] = {k: int(v.replace(",", "")) for k, v in counts.items()}
    expected = {}
    for row in store.query("benchmark-summary"):
        traits = int(row["global_traits"].value if row["global_traits"] else 0) + int(
            row["question_traits"].value if row["question_traits"] else 0
        )
        expected[row["name"].value] = {
            "questions": int(row["questions"].value),
            "finished": int(row["finished"].value),
            "with-template": int(row["with_template"].value) if row["with_template"] else 0,
            "traits": traits,
        }
    assert shown == expected
    assert shown["Pharmacology examples"] == {"questions": 4, "finished": 3, "with-template": 4, "traits": 6}
    assert shown["Escaping <i>test</i>"]["with-template"] == 0  # only Karenina's default template


# -- alternates and downloads ---------------------------------------------------------------------
ALTERNATES = [
    (".ttl", "text/turtle"),
    (".nt", "application/n-triples"),
    (".jsonld", "application/ld+json"),
    (".rdf", "application/rdf+xml"),
]


@pytest.mark.parametrize("path", [PHARMA, LOSARTAN, LOSARTAN + "/answer", LOSARTAN + "/template"])
def test_alternate_links(site: tuple[Store, TestClient, dict[str, str]], path: str) -> None:
    _, client, _ = site
    page = _get(client, path).text
    for suffix, media in ALTERNATES:
        assert f'<link rel="alternate" type="{media}" href="{path}{suffix}"' in page
        assert f'href="{path}{suffix}"' in page.split("</head>", 1)[1], "and a visible link"
        r = client.get(path + suffix)
        assert r.status_code == 200 and r.headers["content-type"].startswith(media)


def test_benchmark_downloads(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    store, client, _ = site
    page = _get(client, PHARMA).text
    assert f'<link rel="alternate" type="application/ld+json" href="{PHARMA}/checkpoint.jsonld"' in page
    checkpoint = client.get(PHARMA + "/checkpoint.jsonld")
    assert checkpoint.status_code == 200 and checkpoint.json()["name"] == "Pharmacology examples"
    graph = store.graph_of("Pharmacology examples")[1].value
    graph_path = graph[len(store.base_iri) - 1 :]
    assert f'href="{graph_path}.ttl"' in page and f'href="{graph_path}.nt"' in page
    assert client.get(graph_path + ".ttl").headers["content-type"].startswith("text/turtle")
    graph_page = _get(client, graph_path)
    assert graph_page.status_code == 200 and "Graph" in graph_page.text and "Subject" in graph_page.text


# -- escaping ---------------------------------------------------------------------------------------
def test_escaping(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    _, client, paths = site
    pages = {
        "index": _get(client, "/").text,
        "benchmark": _get(client, paths["hostile"]).text,
        "question": _get(client, paths["hostile_question"]).text,
    }
    for name, page in pages.items():
        assert "<script>alert" not in page, name
        assert "<i>test</i>" not in page and "&lt;i&gt;test&lt;/i&gt;" in page, name
    assert (
        "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; what does &lt;b&gt;this&lt;/b&gt; do?"
        in pages["question"]
    )
    assert "&lt;b&gt;bold&lt;/b&gt; answer" in pages["question"] and "&lt;tag&gt;" in pages["question"]
    assert "&lt;em&gt;markup&lt;/em&gt;" in pages["benchmark"]
    assert "Karenina's default placeholder" in pages["question"]  # add_question's default template


# -- "also in" ----------------------------------------------------------------------------------------
def test_also_in(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    _, client, paths = site
    page = _get(client, LOSARTAN).text
    also = page.split('id="also-in"', 1)[1]
    copy_question = COPY + "/questions/urn:uuid:question-which-receptor-does-losartan-block-39636e14"
    assert f'href="{copy_question}">Pharmacology copy</a>' in also
    assert "same id" in also and "same text" in also
    # imatinib: the same question in the molecular-biology example, in the copy too
    imatinib = _get(client, f"{PHARMA}/questions/{IMATINIB_ID}").text.split('id="also-in"', 1)[1]
    assert f'href="{MOLBIO}/questions/{IMATINIB_ID}">Molecular biology examples</a>' in imatinib
    assert f'href="{COPY}/questions/{IMATINIB_ID}">Pharmacology copy</a>' in imatinib
    alone = _get(client, paths["hostile_question"]).text.split('id="also-in"', 1)[1]
    assert "No other stored benchmark has this question" in alone


# -- pagination and filter ------------------------------------------------------------------------------
def _rows(page: str) -> list[tuple[int, str]]:
    table = page.split('id="question-table"', 1)[1].split("</table>", 1)[0]
    return [
        (int(n), html.unescape(text))
        for n, text in re.findall(
            r'<td class="num muted">(\d+)</td>\s*<td class="qtext">\s*<a [^>]*title="([^"]*)"', table
        )
    ]


@pytest.mark.parametrize(
    ("query", "first", "count", "current"),
    [("", 1, PAGE_SIZE, 1), ("?page=2", 101, PAGE_SIZE, 2), ("?page=3", 201, 50, 3), ("?page=99", 201, 50, 3),
     ("?page=0", 1, PAGE_SIZE, 1), ("?page=x", 1, PAGE_SIZE, 1)],
)  # fmt: skip
def test_pagination(
    site: tuple[Store, TestClient, dict[str, str]], query: str, first: int, count: int, current: int
) -> None:
    _, client, paths = site
    page = _get(client, paths["big"] + query).text
    rows = _rows(page)
    assert [n for n, _ in rows] == list(range(first, first + count))
    assert f"Page {current} of 3" in page
    assert ('rel="next"' in page) == (current < 3) and ('rel="prev"' in page) == (current > 1)


def test_rows_follow_checkpoint_order(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    store, client, paths = site
    texts = [q.question for q in Benchmark(store, paths["big"].rsplit("/", 1)[1])]
    shown = [t for p in (1, 2, 3) for _, t in _rows(_get(client, f"{paths['big']}?page={p}").text)]
    assert shown == texts


@pytest.mark.parametrize("needle", ["kinase", "KINASE", "tp53 ", "no such text at all"])
def test_filter(site: tuple[Store, TestClient, dict[str, str]], needle: str) -> None:
    store, client, paths = site
    bench = Benchmark(store, paths["big"].rsplit("/", 1)[1])
    matching = [q.question for q in bench if needle.strip().lower() in q.question.lower()]
    page = _get(client, paths["big"] + "?" + f"q={needle}").text
    assert f'value="{needle.strip()}"' in page
    if not matching:
        assert "No question text contains" in page
        return
    assert f"{len(matching)} question{'s' if len(matching) != 1 else ''} match" in page
    assert [t for _, t in _rows(page)] == matching[:PAGE_SIZE]


def test_positions_out_of_order(tmp_path: Path) -> None:
    """A hand-edited graph whose positions are not 0..n-1 is still paged in order."""
    store = Store.memory()
    result = store.import_checkpoint(_synthetic(tmp_path, 130, seed=5))
    texts = [q.question for q in Benchmark(store, result.iri)]
    store.update_graph(
        f"DELETE {{ GRAPH ?g {{ ?i <urn:karenina:vocab:position> ?p }} }} "
        f"INSERT {{ GRAPH ?g {{ ?i <urn:karenina:vocab:position> ?q }} }} "
        f"WHERE {{ GRAPH ?g {{ <{result.iri}> <https://schema.org/dataFeedElement> ?i . "
        f"?i <urn:karenina:vocab:position> ?p BIND(?p * 3 + 7 AS ?q) }} }}"
    )
    client = TestClient(create_app(store))
    path = result.iri[len(store.base_iri) - 1 :]
    shown = [t for p in (1, 2) for _, t in _rows(_get(client, f"{path}?page={p}").text)]
    assert shown == texts
    store.close()


# -- the SPARQL editor and the named queries --------------------------------------------------------------
def test_editor_page_configuration(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    _, client, _ = site
    config = _config(_get(client, "/query").text)
    assert config["endpoint"] == "/sparql"
    assert config["prefixes"]["schema"] == "https://schema.org/"
    assert config["initial"] is None
    assert set(config["queries"]) == set(named_queries())
    assert config["defaultQuery"].startswith("PREFIX schema: <https://schema.org/>")
    opened = _config(_get(client, "/query/questions-by-keyword?keyword=genomics&format=json").text)
    assert opened["initial"]["title"] == "Questions by keyword"
    assert 'VALUES (?keyword) { ("genomics") }' in opened["initial"]["text"]


@pytest.mark.parametrize("name", sorted(named_queries()))
def test_editor_text_runs(site: tuple[Store, TestClient, dict[str, str]], name: str) -> None:
    """What a click in the list puts in the editor is a query the endpoint runs as it stands."""
    _, client, _ = site
    text = editor_text(named_queries()[name])
    assert text.count("PREFIX schema:") == 1
    r = client.post("/sparql", data={"query": text}, headers={"accept": "application/sparql-results+json"})
    assert r.status_code == 200, r.text
    assert "results" in r.json()


def test_editor_text_binds_what_it_is_given() -> None:
    named = named_queries()["questions-by-keyword"]
    assert 'VALUES (?keyword) { ("genomics") }' in editor_text(named)  # the description's example
    assert 'VALUES (?keyword) { ("x\\" } DROP ALL #") }' in editor_text(named, {"keyword": 'x" } DROP ALL #'})
    by_property = named_queries()["benchmarks-by-property"]
    assert 'VALUES (?property ?value) { ("domain" UNDEF) }' in editor_text(by_property)
    assert 'VALUES (?property ?value) { ("domain" "genomics") }' in editor_text(by_property, {"value": "genomics"})
    assert "VALUES (?benchmark) { (UNDEF) }" in editor_text(named_queries()["benchmark-summary"])


def test_static_files(site: tuple[Store, TestClient, dict[str, str]]) -> None:
    _, client, _ = site
    for path, media in [
        ("/static/site.css", "text/css"),
        ("/static/pygments.css", "text/css"),
        ("/static/query.js", "text/javascript"),
        ("/static/queries.js", "text/javascript"),
        ("/static/favicon.svg", "image/svg+xml"),
        ("/static/yasgui/yasgui.min.js", "text/javascript"),
        ("/static/yasgui/yasgui.min.css", "text/css"),
        ("/static/yasgui/LICENSE", ""),
    ]:
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith(media), path
