"""The pages in a real browser: Debian's chromium driven by Playwright against the endpoint served
by uvicorn on 127.0.0.1. Every page must load without a console error or an uncaught exception
and without a request to any other host; the SPARQL editor (vendored YASGUI) must run a typed
query and a named query from its list and show their results.

``KARENINA_RDF_SCREENSHOTS=1`` also writes docs/screenshot-benchmark.png and
docs/screenshot-query.png.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Store
from tests.conftest import EXAMPLES, ROOT
from tests.helpers.servers import free_port

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = os.environ.get("KARENINA_RDF_SCREENSHOTS") == "1"
PHARMA = "/benchmarks/urn:uuid:karenina-checkpoint-1795172400.0"
LOSARTAN = PHARMA + "/questions/urn:uuid:question-which-receptor-does-losartan-block-39636e14"
MOLBIO_RUNS = "/compare?run=molecular-biology-2026-05&run=molecular-biology-2026-06"
TYPED_QUERY = """PREFIX schema: <https://schema.org/>
# Every question with its benchmark and reference answer
SELECT ?benchmark ?question ?answer WHERE {
  ?q a schema:Question ; schema:isPartOf ?b ; schema:text ?question ;
     schema:acceptedAnswer/schema:text ?answer .
  ?b schema:name ?benchmark .
}
ORDER BY ?benchmark ?question"""

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright (pip package playwright) is not installed"
)
pytestmark = [
    pytest.mark.slow,  # drives a real browser (chromium through Playwright) against a served endpoint
    pytest.mark.skipif(
        not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)),
        reason=f"no chromium at {CHROMIUM} (Debian package chromium)",
    ),
]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The endpoint over the three examples, served by uvicorn in a thread of this process."""
    import uvicorn

    from karenina_rdf import create_app

    store = Store.memory()
    for path in sorted(EXAMPLES.glob("*.jsonld")):
        store.import_checkpoint(path, name=f"examples/{path.name}")  # a short label for the screenshots
    for path in sorted((EXAMPLES / "results").glob("*.json")):
        store.import_results(path)
    port = free_port()
    config = uvicorn.Config(create_app(store), host="127.0.0.1", port=port, log_level="warning", access_log=False)
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the endpoint did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=30)
    store.close()


@dataclass
class Watch:
    """What a page did that it should not: console errors, uncaught exceptions, requests to
    another host."""

    origin: str
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("request", self._request)

    def _request(self, request: Any) -> None:
        url = request.url
        if not (url.startswith(self.origin + "/") or url.startswith(("data:", "blob:", "about:"))):
            self.outside.append(url)

    def check(self) -> None:
        assert self.errors == []
        assert self.outside == []


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[tuple[Any, Watch]]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})  # fresh localStorage
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    watch = Watch(server)
    watch.attach(tab)
    yield tab, watch
    context.close()


def _screenshot(tab: Any, name: str) -> None:
    if SCREENSHOTS:
        tab.screenshot(path=str(ROOT / "docs" / name), full_page=True)


@pytest.mark.parametrize(
    ("path", "heading", "text"),
    [
        ("/", "Benchmarks", "Molecular biology examples"),
        (PHARMA, "Pharmacology examples", "Which receptor does losartan block?"),
        (LOSARTAN, "Which receptor does losartan block?", "The angiotensin II type 1 (AT1) receptor."),
        ("/queries", "Named queries", "Questions by keyword"),
        ("/runs", "Verification runs", "molecular-biology-2026-06"),
        ("/runs/pharmacology-2026-05", "Run pharmacology-2026-05", "Pass rate by answering model"),
        (MOLBIO_RUNS, "Answering models compared", "By run"),
        ("/models/langchain/gpt-4o", "langchain:gpt-4o", "pharmacology-2026-05"),
    ],
    ids=["index", "benchmark", "question", "queries", "runs", "run", "compare", "model"],
)
def test_page_loads_clean(page: tuple[Any, Watch], server: str, path: str, heading: str, text: str) -> None:
    tab, watch = page
    response = tab.goto(server + path, wait_until="networkidle")
    assert response is not None and response.status == 200
    assert tab.locator("h1").first.inner_text().startswith(heading)
    assert tab.get_by_text(text, exact=False).first.is_visible()
    if path == LOSARTAN:
        assert tab.locator(".highlight .k").first.inner_text() == "class"  # highlighted on the server
    if path == PHARMA:
        _screenshot(tab, "screenshot-benchmark.png")
    if path == LOSARTAN:
        assert tab.locator("#results table tbody tr").count() == 8  # the pharmacology run's 8 results
    watch.check()


def test_heatmap(page: tuple[Any, Watch], server: str) -> None:
    """The comparison's inline SVG: drawn, one cell per question and model, each with its tooltip,
    and wholly inside its figure."""
    tab, watch = page
    tab.goto(server + MOLBIO_RUNS, wait_until="networkidle")
    svg = tab.locator("svg.heatmap")
    assert svg.is_visible()
    cells = tab.locator("svg.heatmap rect.cell")
    assert cells.count() == 3 * 3  # 3 questions × 3 answering models
    titles = [cells.nth(i).locator("title").text_content() or "" for i in range(cells.count())]
    assert all(" — " in t and ("passed" in t or "not run" in t or "no verdict" in t) for t in titles)
    box, figure = svg.bounding_box(), tab.locator("figure.heatmap-figure").bounding_box()
    assert box is not None and figure is not None and box["width"] > 400 and box["height"] > 150
    first = cells.first.bounding_box()
    assert first is not None and first["width"] > 20  # drawn, not collapsed
    # A question label leads to its question page.
    tab.locator("svg.heatmap .rows a").first.click()
    tab.wait_for_url("**/questions/**")
    assert "Results" in tab.content()
    watch.check()


def test_runs_navigation(page: tuple[Any, Watch], server: str) -> None:
    """Runs → a run → one of its results → its answering model, by clicking."""
    tab, watch = page
    tab.goto(server + "/", wait_until="networkidle")
    tab.get_by_role("link", name="Runs", exact=True).click()
    tab.wait_for_url("**/runs")
    tab.get_by_role("link", name="pharmacology-2026-05", exact=True).click()
    tab.wait_for_url("**/runs/pharmacology-2026-05")
    tab.locator("#result-table a", has_text="result").first.click()
    tab.wait_for_url("**/runs/pharmacology-2026-05/results/*")
    assert tab.locator("h1").inner_text() == "Which enzyme does aspirin irreversibly inhibit?"
    assert tab.locator("#usage table tbody tr").count() == 4  # three stages and the total
    tab.locator("#result-summary a", has_text="langchain:gpt-4o").click()
    tab.wait_for_url("**/models/langchain/gpt-4o")
    assert tab.locator("#model-runs tbody tr").count() == 3
    # Compare two runs from the list, by ticking them.
    tab.goto(server + "/runs", wait_until="networkidle")
    tab.locator('input[value="molecular-biology-2026-05"]').check()
    tab.locator('input[value="molecular-biology-2026-06"]').check()
    tab.get_by_role("button", name="Compare the ticked runs").click()
    tab.wait_for_url("**/compare?run=*")
    assert tab.locator("svg.heatmap rect.cell").count() == 9
    watch.check()


def test_navigation(page: tuple[Any, Watch], server: str) -> None:
    """Index → benchmark → question by clicking, as a reader would."""
    tab, watch = page
    tab.goto(server + "/", wait_until="networkidle")
    tab.get_by_role("link", name="Pharmacology examples").click()
    tab.wait_for_url(f"**{PHARMA}")
    tab.get_by_role("link", name="Which receptor does losartan block?").click()
    tab.wait_for_url(f"**{LOSARTAN}")
    assert "Also in" in tab.content()
    watch.check()


def _results(tab: Any) -> str:
    tab.locator(".yasr table tbody tr >> visible=true").first.wait_for(state="visible")
    text: str = tab.locator(".yasr table >> visible=true").inner_text()
    return text


def _run(tab: Any) -> None:
    with tab.expect_response(lambda r: r.url.endswith("/sparql") and r.request.method == "POST") as answer:
        tab.locator(".yasqe_queryButton >> visible=true").click()
    assert answer.value.status == 200


def test_query_editor(page: tuple[Any, Watch], server: str) -> None:
    tab, watch = page
    tab.goto(server + "/query", wait_until="networkidle")
    editor = tab.locator(".yasqe .CodeMirror >> visible=true")
    editor.wait_for(state="visible")
    # The editor starts with the predeclared prefixes and a query that runs.
    start = tab.evaluate("window.kareninaYasgui.getTab().getQuery()")
    assert start.startswith("PREFIX schema: <https://schema.org/>") and "SELECT" in start
    endpoint = tab.evaluate("window.kareninaYasgui.getTab().getEndpoint()")
    assert endpoint == server + "/sparql"
    # No autocompleter that asks another host (LOV's class and property ones) is on.
    completers = tab.evaluate("window.kareninaYasgui.getTab().getYasqe().config.autocompleters")
    assert sorted(completers) == ["prefixes", "variables"]

    # Ask for completions of a property: the property completer, were it on, would call LOV.
    editor.click()
    tab.keyboard.press("Control+A")
    tab.keyboard.press("Delete")
    tab.keyboard.insert_text("PREFIX schema: <https://schema.org/>\nSELECT * WHERE { ?s schema:na")
    tab.keyboard.press("Control+Space")
    tab.keyboard.press("Escape")
    # Type a query in place of whatever is there and run it with the run button.
    tab.evaluate("window.kareninaYasgui.getTab().getYasqe().setValue('')")
    editor.click()
    tab.keyboard.insert_text(TYPED_QUERY)
    tab.keyboard.press("Escape")  # close an autocompletion list, if one opened
    assert tab.evaluate("window.kareninaYasgui.getTab().getQuery()") == TYPED_QUERY
    _run(tab)
    table = _results(tab)
    assert "Which receptor does losartan block?" in table
    assert "The angiotensin II type 1 (AT1) receptor." in table
    _screenshot(tab, "screenshot-query.png")

    # Load a named query from the list beside the editor and run it.
    tab.locator('button.named-query[data-query="questions-by-keyword"]').click()
    loaded = tab.evaluate("window.kareninaYasgui.getTab().getQuery()")
    assert 'VALUES (?keyword) { ("genomics") }' in loaded and "# title: Questions by keyword" in loaded
    _run(tab)
    tab.wait_for_function(
        "document.querySelector('.yasr table') && "
        "document.querySelector('.yasr table').innerText.includes('What kind of protein does the CFTR gene encode?')"
    )
    table = _results(tab)
    assert "Which receptor does losartan block?" not in table
    assert "Molecular biology examples" in table and "Bioinformatics methods examples" in table
    watch.check()


def test_named_query_opens_in_editor(page: tuple[Any, Watch], server: str) -> None:
    """The queries page's "Open in the SPARQL editor" puts the bound query in a tab of its own."""
    tab, watch = page
    tab.goto(server + "/queries", wait_until="networkidle")
    form = tab.locator("#q-benchmarks-by-property form")
    form.locator('input[name="property"]').fill("domain")
    form.get_by_role("button", name="Open in the SPARQL editor").click()
    tab.wait_for_url("**/query/benchmarks-by-property?property=domain")  # the empty optional value is left out
    tab.locator(".yasqe .CodeMirror >> visible=true").wait_for(state="visible")
    query = tab.evaluate("window.kareninaYasgui.getTab().getQuery()")
    assert 'VALUES (?property ?value) { ("domain" UNDEF) }' in query
    assert tab.evaluate("window.kareninaYasgui.getTab().getName()") == "Benchmarks by custom property"
    _run(tab)
    assert "pharmacology" in _results(tab)
    watch.check()
