"""The HTML pages of the endpoint (karenina_rdf/web/pages/_routes.py), through the ASGI app: status, content
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
from markupsafe import escape

from karenina_rdf import Benchmark, Question, Store, create_app, named_queries
from karenina_rdf.rdf._ids import question_iri, segment
from karenina_rdf.web.pages._benchmarks import PAGE_SIZE
from karenina_rdf.web.pages._display import editor_text
from tests.conftest import EXAMPLES, ROOT, load_json
from tests.helpers.web_pages import result_path

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
    hostile.set_question_author(hostile_qid, {"name": "<script>x</script>", "url": "javascript:alert(1)"})
    hostile.set_question_sources(hostile_qid, [{"title": "<i>t</i>", "url": "javascript:alert(2)"}])
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
    texts = [q.question for q in Benchmark(store, paths["big"].rsplit("/", 1)[1]).question_views()]
    shown = [t for p in (1, 2, 3) for _, t in _rows(_get(client, f"{paths['big']}?page={p}").text)]
    assert shown == texts


@pytest.mark.parametrize(
    ("needle", "words"),
    [("kinase", ["kinase"]), ("KINASE", ["kinase"]), ("tp53 ", ["tp53"]), ("no such text at all", ["zzz-none"])],
)
def test_search_box(site: tuple[Store, TestClient, dict[str, str]], needle: str, words: list[str]) -> None:
    """The search box finds, through the full-text index, the questions having each word as a
    word of their text, answer, keywords or template (told here by a regular expression over
    what Benchmark reads), with their count; the ones shown are among them."""
    store, client, paths = site
    bench = Benchmark(store, paths["big"].rsplit("/", 1)[1])

    def has(q: Question, word: str) -> bool:
        text = " ".join([q.question, q.raw_answer or "", " ".join(q.keywords or []), q.answer_template or ""])
        return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text, re.I) is not None

    matching = {q.question for q in bench.question_views() if all(has(q, w) for w in words)}
    page = _get(client, paths["big"] + "?" + f"q={needle}").text
    assert f'value="{needle.strip()}"' in page
    if not matching:
        assert "No question matches" in page
        return
    assert f"{len(matching)} question{'s' if len(matching) != 1 else ''} match" in page
    shown = [t for _, t in _rows(page)]
    assert len(shown) == min(len(matching), PAGE_SIZE) and set(shown) <= matching


def test_positions_out_of_order(tmp_path: Path) -> None:
    """A hand-edited graph whose positions are not 0..n-1 is still paged in order."""
    store = Store.memory()
    result = store.import_checkpoint(_synthetic(tmp_path, 130, seed=5))
    texts = [q.question for q in Benchmark(store, result.iri).question_views()]
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


# -- verification runs ------------------------------------------------------------------------------------------
# Everything below is checked against numbers computed here from the results files themselves.
RESULTS = EXAMPLES / "results"
EARL_OUTCOMES = {"passed": "passed", "failed": "failed", "cantTell": "can't tell", "inapplicable": "inapplicable"}
SYNTHETIC_RUN = "synthetic-run"
HOSTILE_RUN = 'hostile <b>run</b> "1"'


def _load_generator(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, TestClient, dict[str, list[Any]]]]:
    """The examples with their three runs; a synthetic run of 120 questions × 3 models × 2 judges
    (failures of every group, results without a verdict; several pages); a run with hostile text.
    The third item maps each run id to its rows, as the files have them."""
    tmp = tmp_path_factory.mktemp("runs")
    store = Store.memory()
    report = store.import_paths([EXAMPLES])
    assert not report.errors, report.errors
    runs = {r.run_id: load_json(Path(r.source or ""))["results"] for r in report.results}
    # The synthetic benchmark and its run (benchmarks/generate*.py, deterministic).
    checkpoint = _synthetic(tmp, 120, seed=7)
    store.import_checkpoint(checkpoint)
    synthetic = tmp / "synthetic-results.json"
    _load_generator("generate_results").write_results(
        load_json(checkpoint), synthetic, models=3, judges=2, seed=5, job_id=SYNTHETIC_RUN
    )
    store.import_results(synthetic)
    runs[SYNTHETIC_RUN] = load_json(synthetic)["results"]
    # One losartan row of the pharmacology run under a hostile run id, with a hostile response,
    # turned into a failure before any verdict (a timeout: verify_result null).
    hostile = load_json(RESULTS / "pharmacology-2026-05.json")
    hostile["metadata"]["job_id"] = HOSTILE_RUN
    hostile["results"] = hostile["results"][9:10]
    row = hostile["results"][0]
    row["template"].update(raw_llm_response=HOSTILE, verify_result=None, template_verification_performed=False)
    row["metadata"]["failure"] = {
        "category": "timeout", "stage": "generate_answer", "reason": "<i>slow</i>", "details": None, "group": "retry"
    }  # fmt: skip
    (tmp / "hostile.json").write_text(json.dumps(hostile), encoding="utf-8")
    store.import_results(tmp / "hostile.json")
    runs[HOSTILE_RUN] = hostile["results"]
    yield store, TestClient(create_app(store)), runs
    store.close()


def _esc(value: str) -> str:
    """As the pages escape text (Jinja2's autoescape)."""
    return str(escape(value))


def _label(identity: dict[str, Any]) -> str:
    """Karenina's ModelIdentity.display_string (what the pages call a model)."""
    text = f"{identity['interface']}:{identity['model_name']}"
    if identity.get("config_id"):
        text += f" ({identity['config_id']})"
    if identity.get("tools"):
        text += " +[" + ", ".join(identity["tools"]) + "]"
    return text


def _model_path(identity: dict[str, Any]) -> str:
    """docs/data-model.md §9: {base}models/{interface}/{model name}[/{hash}]."""
    from karenina_rdf.results._map import model_iri

    return "/" + model_iri("", identity)


def _verdict(row: dict[str, Any]) -> bool | None:
    value = (row.get("template") or {}).get("verify_result")
    return value if isinstance(value, bool) else None


def _outcome(row: dict[str, Any]) -> str:
    """The EARL outcome, by the rule of docs/data-model.md §9."""
    verdict, template = _verdict(row), row.get("template") or {}
    if verdict is not None:
        return "passed" if verdict else "failed"
    if row["metadata"].get("failure") or template.get("template_verification_performed"):
        return "cantTell"
    return "inapplicable"


def _tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    verdicts = [v for v in map(_verdict, rows) if v is not None]
    return {
        "results": len(rows),
        "passed": sum(verdicts),
        "failed": len(verdicts) - sum(verdicts),
        "verified": len(verdicts),
        "failures": sum(1 for r in rows if r["metadata"].get("failure")),
        "rate": f"{100 * sum(verdicts) / len(verdicts):.0f} %" if verdicts else "—",
    }


def _counts(fragment: str) -> dict[str, str]:
    """The text of every element marked data-count="…" (a table cell or a figure), by name."""
    found = re.findall(r'<(td|span)\b[^>]*data-count="([a-z-]+)"[^>]*>(.*?)</\1>', fragment, re.S)
    return {k: re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", v))).strip() for _, k, v in found}


def _row_of(page: str, attribute: str, value: str) -> str:
    found = re.search(rf'<tr {attribute}="{re.escape(_esc(value))}"[^>]*>(.*?)</tr>', page, re.S)
    assert found, f"no row {attribute}={value!r}"
    return found.group(1)


def _run_path(run_id: str) -> str:
    return "/runs/" + segment(run_id)


def _number(text: str) -> int:
    return int(re.sub(r"<[^>]+>", "", text).replace(",", "").strip())


RUN_PAGES = [
    ("/runs", ["Verification runs", "pharmacology-2026-05", "molecular-biology-2026-06", 'action="/compare"']),
    ("/runs/pharmacology-2026-05", ["Run <code", "Pass rate by answering model", "Pass rate by judge", "Failures",
                                    "Pharmacology examples", "/runs/pharmacology-2026-05/results.json", "Imports",
                                    "names_target", "mechanism_recall", "Verification configuration"]),
    ("/runs/pharmacology-2026-05.html", ["Pass rate by answering model"]),
    ("/compare?run=molecular-biology-2026-05", ["Answering models compared", "<svg", "heatmap-scale", "By run"]),
    ("/compare", ["Answering models compared", "<svg"]),
    ("/models/langchain/gpt-4o", ["langchain:gpt-4o", "karenina:Model", "pharmacology-2026-05"]),
    (LOSARTAN, ['id="results"', "pharmacology-2026-05", "result</a>"]),
    ("/runs/nope", None),
    ("/compare?run=nope", None),
    ("/models/nope", None),
]  # fmt: skip


@pytest.mark.parametrize(("url", "expected"), RUN_PAGES, ids=[u for u, _ in RUN_PAGES])
def test_run_page_loads(
    runs_site: tuple[Store, TestClient, dict[str, list[Any]]], url: str, expected: list[str] | None
) -> None:
    _, client, _ = runs_site
    r = _get(client, url)
    if expected is None:
        assert r.status_code == 404
        return
    assert r.status_code == 200, r.text[:500]
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    for text in [*expected, 'href="/runs"']:
        assert text in r.text, f"{text!r} missing from {url}"
    for ref in re.findall(r'<(?:script|link)\b[^>]*?(?:src|href)="([^"]*)"', r.text):
        assert ref.startswith("/"), ref
    assert "<script" not in r.text  # no page of results needs JavaScript


def test_index_links_the_runs(runs_site: tuple[Store, TestClient, dict[str, list[Any]]]) -> None:
    _, client, runs = runs_site
    page = _get(client, "/").text
    assert f'<a class="strong" href="/runs">{len(runs)} verification runs</a>' in page


def test_runs_list(runs_site: tuple[Store, TestClient, dict[str, list[Any]]]) -> None:
    store, client, runs = runs_site
    page = _get(client, "/runs").text
    shown = re.findall(r'<tr data-run="([^"]+)"', page)
    assert sorted(html.unescape(s) for s in shown) == sorted(runs)
    for run_id, rows in runs.items():
        cells = _row_of(page, "data-run", run_id)
        expected = _tally(rows)
        counts = _counts(cells)
        assert _number(counts["results"]) == expected["results"], run_id
        assert _number(counts["failures"]) == expected["failures"], run_id
        assert f'<span class="pct">{expected["rate"]}</span>' in cells or expected["rate"] == "—", run_id
        assert f"{expected['passed']:,} of {expected['verified']:,} verified" in cells, run_id
        assert f'href="{_esc(_run_path(run_id))}"' in cells
        for role in ("answering", "parsing"):
            for identity in {json.dumps(r["metadata"][role], sort_keys=True) for r in rows}:
                model = json.loads(identity)
                assert f'href="{_model_path(model)}">{_esc(_label(model))}</a>' in cells, (run_id, role)
        assert f'value="{_esc(run_id)}"' in cells  # the compare checkbox
    # Newest first, by the job's start time (then by id, the pharmacology run and its hostile copy
    # share theirs).
    newest = sorted(store.runs(), key=lambda r: (r.started or "", r.run_id), reverse=True)
    assert [html.unescape(s) for s in shown] == [r.run_id for r in newest]


@pytest.mark.parametrize("run_id", ["pharmacology-2026-05", "molecular-biology-2026-05", "molecular-biology-2026-06",
                                    SYNTHETIC_RUN])  # fmt: skip
def test_run_page_numbers(runs_site: tuple[Store, TestClient, dict[str, list[Any]]], run_id: str) -> None:
    _, client, runs = runs_site
    rows = runs[run_id]
    page = _get(client, _run_path(run_id)).text
    expected = _tally(rows)
    summary = _counts(page.split('id="summary"', 1)[1].split("</div>\n</div>", 1)[0])
    assert {k: summary[k] for k in ("results", "verified", "passed", "failures")} == {
        k: f"{expected[k]:,}" for k in ("results", "verified", "passed", "failures")
    }
    assert summary["pass-rate"] == expected["rate"]
    for role, table in (("answering", "models"), ("parsing", "judges")):
        section = page.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
        labels = sorted({_label(r["metadata"][role]) for r in rows})
        assert len(re.findall(r"<tr data-model=", section)) == len(labels)
        for label in labels:
            mine = [r for r in rows if _label(r["metadata"][role]) == label]
            want = _tally(mine)
            counts = _counts(_row_of(section, "data-model", label))
            assert {k: _number(counts[k]) for k in ("results", "passed", "failed", "failures")} == {
                k: want[k] for k in ("results", "passed", "failed", "failures")
            }, (run_id, label)
            assert counts["pass-rate"] == want["rate"], (run_id, label)
    failures = [r["metadata"]["failure"] for r in rows if r["metadata"].get("failure")]
    for key, table in (("category", "failure-categories"), ("group", "failure-groups")):
        section = page.split(f'id="{table}"', 1)[1].split("</table>", 1)[0] if failures else ""
        names = sorted({f[key] for f in failures})
        for name in names:
            shown = _counts(_row_of(section, f"data-{key}", name))["failures"]
            assert _number(shown) == sum(1 for f in failures if f[key] == name), (run_id, name)
        assert len(re.findall(rf"<tr data-{key}=", section)) == len(names)
    # The first page of the table: file order, and every link leads somewhere.
    table = page.split('id="result-table"', 1)[1].split("</table>", 1)[0]
    positions = [int(n) for n in re.findall(r'<td class="num muted">(\d+)</td>', table)]
    assert positions == list(range(1, min(len(rows), PAGE_SIZE) + 1))
    hrefs = set(re.findall(r'href="([^"]+)"', table))
    assert hrefs and all(client.get(h, headers=HTML).status_code == 200 for h in sorted(hrefs)[:60])


def _table_rows(page: str) -> list[dict[str, str]]:
    table = page.split('id="result-table"', 1)[1].split("</table>", 1)[0]
    out = []
    for body in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1], re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)
        out.append({"cells": cells, "text": re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))})
    return out


@pytest.mark.parametrize(("query", "first", "count", "current"),
                         [("", 1, 100, 1), ("?page=2", 101, 100, 2), ("?page=7", 601, None, 7),
                          ("?page=99", 601, None, 7), ("?page=0", 1, 100, 1), ("?page=x", 1, 100, 1)])  # fmt: skip
def test_run_results_paging(
    runs_site: tuple[Store, TestClient, dict[str, list[Any]]], query: str, first: int, count: int | None, current: int
) -> None:
    _, client, runs = runs_site
    rows = runs[SYNTHETIC_RUN]
    assert 600 < len(rows) <= 700, "the synthetic run has 7 pages"
    page = _get(client, _run_path(SYNTHETIC_RUN) + query).text
    shown = _table_rows(page)
    count = count if count is not None else len(rows) - 600
    positions = [int(re.sub(r"\D", "", r["cells"][0])) for r in shown]
    assert positions == list(range(first, first + count))
    for r, n in zip(shown, positions, strict=True):
        row = rows[n - 1]
        meta = row["metadata"]
        assert meta["question_text"][:60] in r["text"]
        assert _label(meta["answering"]) in r["text"] and _label(meta["parsing"]) in r["text"]
        assert EARL_OUTCOMES[_outcome(row)] in r["text"]
        failure = meta.get("failure")
        assert (failure["category"] in r["text"]) if failure else ("—" in r["cells"][7])
    assert f"Page {current} of 7" in page
    assert ('rel="next"' in page) == (current < 7) and ('rel="prev"' in page) == (current > 1)


@pytest.mark.parametrize("selection", ["model", "judge", "outcome=cantTell", "outcome=failed", "model+outcome=passed"])
def test_run_results_filter(runs_site: tuple[Store, TestClient, dict[str, list[Any]]], selection: str) -> None:
    _, client, runs = runs_site
    rows = runs[SYNTHETIC_RUN]
    model, judge = rows[0]["metadata"]["answering"], rows[0]["metadata"]["parsing"]
    base = "http://127.0.0.1:8000"
    params: dict[str, str] = {}
    keep = list(rows)
    if "model" in selection:
        params["model"] = base + _model_path(model)
        keep = [r for r in keep if r["metadata"]["answering"] == model]
    if "judge" in selection:
        params["judge"] = base + _model_path(judge)
        keep = [r for r in keep if r["metadata"]["parsing"] == judge]
    if "outcome" in selection:
        params["outcome"] = selection.split("outcome=", 1)[1]
        keep = [r for r in keep if _outcome(r) == params["outcome"]]
    assert keep, "the filter selects something"
    from urllib.parse import urlencode as encode

    page = _get(client, _run_path(SYNTHETIC_RUN) + "?" + encode(params)).text
    assert f'<h2 id="results">Results <span class="count">{len(keep):,}</span>' in page
    shown = [int(re.sub(r"\D", "", r["cells"][0])) for r in _table_rows(page)]
    assert shown == [rows.index(r) + 1 for r in keep][:PAGE_SIZE]


def _heatmap(page: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """Column labels, row labels (their full text), cell titles and cell states of the heatmap."""
    svg = page.split("<svg", 1)[1].split("</svg>", 1)[0]
    columns = [html.unescape(t) for t in re.findall(r'<text class="column-label"[^>]*><title>(.*?)</title>', svg)]
    rows = [html.unescape(t) for t in re.findall(r'<text class="row-label"[^>]*><title>(.*?)</title>', svg)]
    cells = re.findall(r'<rect class="cell"[^>]*data-state="([a-z-]+)"[^>]*><title>(.*?)</title></rect>', svg, re.S)
    return columns, rows, [html.unescape(t) for _, t in cells], [s for s, _ in cells]


def _expected_cells(rows: list[dict[str, Any]]) -> tuple[list[str], list[str], list[str]]:
    """What the heatmap of these rows shows, computed from the files: columns (model labels in
    order), row texts (questions by id) and every cell's title."""
    models = sorted({_label(r["metadata"]["answering"]) for r in rows}, key=str.lower)
    by_question: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_question.setdefault(r["metadata"]["question_id"], []).append(r)
    texts, titles = [], []
    for qid in sorted(by_question):
        text = by_question[qid][0]["metadata"]["question_text"]
        texts.append(text)
        for m in models:
            mine = [r for r in by_question[qid] if _label(r["metadata"]["answering"]) == m]
            t = _tally(mine)
            if not mine:
                titles.append(f"{text} — {m}: not run")
            elif not t["verified"]:
                titles.append(f"{text} — {m}: no verdict in {t['results']} result{'s' if t['results'] != 1 else ''}")
            else:
                titles.append(
                    f"{text} — {m}: {t['rate']} passed ({t['passed']} of {t['verified']} verified; "
                    f"{t['results']} result{'s' if t['results'] != 1 else ''}, {t['failures']} with a failure)"
                )
    return models, texts, titles


@pytest.mark.parametrize(
    "chosen",
    [["molecular-biology-2026-05"], ["molecular-biology-2026-05", "molecular-biology-2026-06"],
     ["pharmacology-2026-05"], ["pharmacology-2026-05", "molecular-biology-2026-06"], [HOSTILE_RUN],
     ["pharmacology-2026-05", HOSTILE_RUN]],
    ids=lambda c: "+".join(c),
)  # fmt: skip
def test_heatmap(runs_site: tuple[Store, TestClient, dict[str, list[Any]]], chosen: list[str]) -> None:
    _, client, runs = runs_site
    page = _get(client, "/compare?" + "&".join(f"run={segment(c)}" for c in chosen)).text
    columns, row_texts, titles, states = _heatmap(page)
    models, texts, expected = _expected_cells([r for c in chosen for r in runs[c]])
    assert columns == models
    assert row_texts == texts
    assert len(titles) == len(texts) * len(models), "one cell per question and model"
    assert titles == expected
    assert states.count("not-run") == sum(t.endswith(": not run") for t in expected)
    assert states.count("no-verdict") == sum(": no verdict in " in t for t in expected)
    assert 'id="heatmap-title"' in page and "heatmap-scale" in page and "no verdict" in page and "not run" in page
    for r in chosen:
        assert f'value="{_esc(r)}" checked' in page
    svg = page.split("<svg", 1)[1].split("</svg>", 1)[0]
    for href in set(re.findall(r'<a href="([^"]+)"', svg)):
        assert client.get(href, headers=HTML).status_code == 200, href


def test_heatmap_pages_and_order(runs_site: tuple[Store, TestClient, dict[str, list[Any]]]) -> None:
    _, client, runs = runs_site
    rows = runs[SYNTHETIC_RUN]
    _, texts, expected = _expected_cells(rows)
    assert len(texts) > 100, "two pages of questions"
    first = _heatmap(_get(client, f"/compare?run={SYNTHETIC_RUN}").text)
    second = _heatmap(_get(client, f"/compare?run={SYNTHETIC_RUN}&page=2").text)
    assert first[1] + second[1] == texts
    assert first[2] + second[2] == expected
    # Hardest first: by pooled pass rate, questions without a verdict last, ties by question id.
    by_question: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_question.setdefault(r["metadata"]["question_id"], []).append(r)

    def key(qid: str) -> tuple[bool, float, str]:
        t = _tally(by_question[qid])
        return (not t["verified"], t["passed"] / t["verified"] if t["verified"] else 0.0, qid)

    hardest = [by_question[q][0]["metadata"]["question_text"] for q in sorted(by_question, key=key)]
    shown = _heatmap(_get(client, f"/compare?run={SYNTHETIC_RUN}&sort=pass-rate").text)[1]
    assert shown == hardest[:100]


def test_compare_defaults_to_the_latest_run(runs_site: tuple[Store, TestClient, dict[str, list[Any]]]) -> None:
    store, client, _ = runs_site
    latest = max(store.runs(), key=lambda r: (r.started or "", r.run_id))
    page = _get(client, "/compare").text
    assert f'value="{_esc(latest.run_id)}" checked' in page
    assert page.count(" checked") == 1


def test_question_results(runs_site: tuple[Store, TestClient, dict[str, list[Any]]]) -> None:
    _, client, runs = runs_site
    qid = "urn:uuid:question-which-receptor-does-losartan-block-39636e14"
    mine = [(run_id, r) for run_id, rows in runs.items() for r in rows if r["metadata"]["question_id"] == qid]
    page = _get(client, LOSARTAN).text
    section = page.split('<section id="results">', 1)[1].split("</section>", 1)[0]
    assert f'<span class="count">{len(mine)}</span>' in section
    shown = _table_rows(section)
    assert len(shown) == len(mine)
    for run_id in {r for r, _ in mine}:
        assert sum(html.unescape(run_id) in r["text"] for r in shown) == sum(1 for r, _ in mine if r == run_id)
    verdicts = [v for v in (_verdict(r) for _, r in mine) if v is not None]
    assert f"{sum(verdicts)} of {len(verdicts)} verdicts passed" in section
    for href in set(re.findall(r'href="([^"]+)"', section)):
        assert client.get(href, headers=HTML).status_code == 200, href
    alone = _get(client, f"{PHARMA}/questions/urn:uuid:question-what-is-the-mechanism-of-action-of-metformin-0b5f5a0f")
    if alone.status_code == 200:
        assert "No stored verification run has a result for this question" in alone.text


@pytest.mark.parametrize(("run_id", "position"), [("pharmacology-2026-05", 0), ("pharmacology-2026-05", 1),
                                                  ("molecular-biology-2026-06", 4), (SYNTHETIC_RUN, 7)])  # fmt: skip
def test_result_page(runs_site: tuple[Store, TestClient, dict[str, list[Any]]], run_id: str, position: int) -> None:
    store, client, runs = runs_site
    row = runs[run_id][position]
    meta, template, rubric = row["metadata"], row.get("template") or {}, row.get("rubric") or {}
    path = result_path(store, run_id, position)
    page = _get(client, path).text
    text = html.unescape(page)
    summary = page.split('id="result-summary"', 1)[1].split("</dl>", 1)[0]
    assert f'href="{_run_path(run_id)}"' in summary
    assert _esc(meta["question_text"]) in summary and _esc(_label(meta["answering"])) in summary
    assert _esc(_label(meta["parsing"])) in summary
    assert f"outcome-{_outcome(row)}" in summary
    verdict = _verdict(row)
    assert {True: ">true<", False: ">false<", None: 'title="null"'}[verdict] in summary.split('id="verify-result"')[1]
    if meta.get("failure"):
        failure = page.split('id="failure"', 1)[1].split("</section>", 1)[0]
        assert meta["failure"]["category"] in failure and _esc(meta["failure"]["reason"]) in failure
    for stage, usage in (template.get("usage_metadata") or {}).items():
        cells = _row_of(page, "data-stage", stage)
        assert f'data-count="total">{usage["total_tokens"]:,}<' in cells
    for name, score in (template.get("field_scores") or {}).items():
        fields = page.split('id="fields"', 1)[1].split("</section>", 1)[0]
        assert f"<code>{name}</code>" in fields and str(score).rstrip("0").rstrip(".") in fields
    scores = page.split('id="scores"', 1)[1].split("</section>", 1)[0] if rubric else ""
    for kind in ("llm", "regex", "callable", "metric", "agentic"):
        for name in rubric.get(f"{kind}_trait_scores") or {}:
            assert f'<tr data-trait="{name}">' in scores
    stored_traits = re.findall(r'<a href="([^"]+/traits/[^"]+)" title="the trait it scores"', scores)
    scored = any(rubric.get(f"{kind}_trait_scores") for kind in ("llm", "regex", "callable", "metric"))
    if run_id != SYNTHETIC_RUN and scored:  # a row that failed before its rubric has no scores to link
        assert stored_traits, "scores link to the traits they score"
    for href in stored_traits:
        assert client.get(href, headers=HTML).status_code == 200
    if template.get("raw_llm_response") is not None:
        assert template["raw_llm_response"] in text.split('id="response"', 1)[1]
    if template.get("parsed_gt_response"):
        parsed = text.split('id="parsed"', 1)[1].split("</section>", 1)[0]
        assert json.dumps(template["parsed_gt_response"], indent=2, ensure_ascii=False) in parsed
    assert f'href="{path}.ttl"' in page


def test_model_page(runs_site: tuple[Store, TestClient, dict[str, list[Any]]]) -> None:
    _, client, runs = runs_site
    gpt41 = {"interface": "langchain", "model_name": "gpt-4.1", "tools": [], "config_id": None}
    page = _get(client, _model_path(gpt41)).text
    listed = re.findall(r'<tr data-run="([^"]+)"', page)
    using = sorted(
        rid for rid, rows in runs.items()
        if any(gpt41 in (r["metadata"]["answering"], r["metadata"]["parsing"]) for r in rows)
    )  # fmt: skip
    assert sorted(html.unescape(r) for r in listed) == using
    for run_id in using:
        counts = _counts(_row_of(page, "data-run", run_id))
        answered = [r for r in runs[run_id] if r["metadata"]["answering"] == gpt41]
        judged = [r for r in runs[run_id] if r["metadata"]["parsing"] == gpt41]
        assert (_number(counts["answered"]), _number(counts["judged"])) == (len(answered), len(judged))


def test_results_escaping(runs_site: tuple[Store, TestClient, dict[str, list[Any]]]) -> None:
    store, client, _ = runs_site
    pages = {
        "runs": _get(client, "/runs").text,
        "run": _get(client, _run_path(HOSTILE_RUN)).text,
        "result": _get(client, result_path(store, HOSTILE_RUN, 0)).text,
        "compare": _get(client, "/compare?run=" + segment(HOSTILE_RUN)).text,
        "question": _get(client, LOSARTAN).text,
    }
    for name, page in pages.items():
        assert "<b>run</b>" not in page and "<script>alert" not in page, name
        assert "hostile &lt;b&gt;run&lt;/b&gt; &#34;1&#34;" in page, name
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in pages["result"]


def _numbers(page: str) -> list[tuple[str, str]]:
    """Every counted figure of a page, in order (data-count cells and figures)."""
    return [(k, v) for k, v in re.findall(r'data-count="([a-z-]+)"[^>]*>([^<]*)', page)]


def test_runs_without_tallies(runs_site: tuple[Store, TestClient, dict[str, list[Any]]]) -> None:
    """A run whose graph has no tallies (imported before they were written, or stripped by an
    update that went around Store.update_graph, which recounts them) is counted from its results:
    the same figures on every page."""
    _, client, _ = runs_site
    bare = Store.memory()
    bare.import_paths([EXAMPLES])
    bare.oxigraph.update("DELETE WHERE { GRAPH ?g { ?t a <urn:karenina:vocab:Tally> ; ?p ?o } }")
    assert not bare.query("ASK { ?t a karenina:Tally }"), "no tally left"
    urls = ["/runs", "/runs/pharmacology-2026-05", "/runs/molecular-biology-2026-06", "/models/langchain/gpt-4.1"]
    with TestClient(create_app(bare)) as counted:
        for url in urls:
            mine = _get(counted, url).text
            theirs = _get(client, url).text
            if url == "/runs":  # the fixture has two runs more
                theirs = "".join(
                    f'<tr data-run="{r}"' + _row_of(theirs, "data-run", r)
                    for r in re.findall(r'<tr data-run="([^"]+)"', mine)
                )
                mine = "".join(
                    f'<tr data-run="{r}"' + _row_of(mine, "data-run", r)
                    for r in re.findall(r'<tr data-run="([^"]+)"', mine)
                )
            if url.startswith("/models/"):
                theirs = "".join(_row_of(theirs, "data-run", r) for r in re.findall(r'<tr data-run="([^"]+)"', mine))
                mine = "".join(_row_of(mine, "data-run", r) for r in re.findall(r'<tr data-run="([^"]+)"', mine))
            assert _numbers(mine) and _numbers(mine) == _numbers(theirs), url
    bare.close()


P53 = MOLBIO + "/questions/urn:uuid:question-what-is-the-main-function-of-the-protein-encoded-b-8dac577c"


def test_a_questions_author_and_sources_are_a_person_and_works(
    site: tuple[Store, TestClient, dict[str, str]],
) -> None:
    store, client, paths = site
    meta = _get(client, P53).text.split("<h2>Metadata</h2>", 1)[1]
    assert "<dt>Author</dt><dd>Zoë Lindqvist</dd>" in meta  # not the JSON Karenina stores
    assert (
        '<a href="https://www.uniprot.org/uniprotkb/P04637" rel="nofollow noopener">UniProtKB P04637 (P53_HUMAN)</a>'
        in meta
    )
    # In the graph, as schema.org describes them.
    rows = store.query(
        "SELECT ?name ?title ?url WHERE { ?q schema:author [ a schema:Person ; schema:name ?name ] ; "
        "schema:citation [ a schema:CreativeWork ; schema:name ?title ; schema:url ?url ] }"
    )
    assert {(r["name"].value, r["title"].value, r["url"].value) for r in rows} >= {
        ("Zoë Lindqvist", "UniProtKB P04637 (P53_HUMAN)", "https://www.uniprot.org/uniprotkb/P04637")
    }
    # A benchmark's author writes these: markup stays text, a javascript: address is no link.
    hostile = _get(client, paths["hostile_question"]).text.split("<h2>Metadata</h2>", 1)[1]
    assert "&lt;script&gt;x&lt;/script&gt;" in hostile and "&lt;i&gt;t&lt;/i&gt;" in hostile
    assert "javascript:" not in hostile
