"""A published site as a visitor meets it: the examples published under
``http://127.0.0.1:PORT/kb/``, served by a plain static file server (``python -m http.server``)
and visited with Debian's chromium driven by Playwright. Each kind of page loads without a
console error and without a request to another host, and every link on it answers 200."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.servers import free_port, static_site
from tests.web.test_browser import ARGS, CHROMIUM, Watch
from tests.web.test_publish import _source

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright (pip package playwright) is not installed"
)
pytestmark = [
    pytest.mark.slow,  # a static server and a real browser
    pytest.mark.skipif(
        not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)),
        reason=f"no chromium at {CHROMIUM} (Debian package chromium)",
    ),
]
# Every link's URL, resolved (an SVG link's ``href`` is no string).
HREFS = "els => els.map(e => new URL(e.getAttribute('href'), document.baseURI).href)"
PHARMA = "benchmarks/urn:uuid:karenina-checkpoint-1795172400.0/"
LOSARTAN = PHARMA + "questions/urn:uuid:question-which-receptor-does-losartan-block-39636e14/"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The examples published under /kb/ of a static server on 127.0.0.1."""
    from karenina_rdf.web import publish

    root = tmp_path_factory.mktemp("static")
    port = free_port()
    base = f"http://127.0.0.1:{port}/kb/"
    store = _source()
    publish(store, [], base, root / "kb")
    store.close()
    with static_site(root, port, base):
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.mark.parametrize(
    ("path", "heading", "text"),
    [
        ("", "Benchmarks", "Molecular biology examples"),
        (PHARMA, "Pharmacology examples", "Which receptor does losartan block?"),
        (LOSARTAN, "Which receptor does losartan block?", "The angiotensin II type 1 (AT1) receptor."),
        ("runs/", "Verification runs", "molecular-biology-2026-06"),
        ("runs/pharmacology-2026-05/", "Run pharmacology-2026-05", "Pass rate by answering model"),
        ("compare/molecular-biology-2026-06/", "Answering models compared", "By run"),
        ("models/langchain/gpt-4o/", "langchain:gpt-4o", "pharmacology-2026-05"),
    ],
    ids=["index", "benchmark", "question", "runs", "run", "compare", "model"],
)
def test_published_page_loads_and_its_links_resolve(
    browser: Any, site: str, path: str, heading: str, text: str
) -> None:
    origin = site.split("/kb/")[0]
    context = browser.new_context()
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    watch = Watch(origin)
    watch.attach(tab)
    try:
        response = tab.goto(site + path, wait_until="networkidle")
        assert response is not None and response.status == 200
        assert tab.locator("h1").first.inner_text().startswith(heading)
        assert tab.get_by_text(text, exact=False).first.is_visible()
        hrefs = tab.eval_on_selector_all("a[href], link[href]", HREFS)
        internal = sorted({h.split("#")[0] for h in hrefs if h.startswith(origin + "/")})
        assert len(internal) > 3
        broken = [h for h in internal if context.request.get(h).status != 200]
        assert broken == []
        watch.check()
    finally:
        context.close()


def test_a_resource_iri_without_slash_reaches_its_page(browser: Any, site: str) -> None:
    """The IRI itself (no trailing slash), as a citation names it: the static server redirects
    to the folder and its page loads."""
    context = browser.new_context()
    tab = context.new_page()
    try:
        response = tab.goto(site + LOSARTAN.rstrip("/"), wait_until="networkidle")
        assert response is not None and response.status == 200
        assert tab.locator("h1").first.inner_text() == "Which receptor does losartan block?"
        turtle = context.request.get(site + LOSARTAN.rstrip("/") + ".ttl")
        assert turtle.status == 200 and "losartan" in turtle.text().lower()
    finally:
        context.close()
