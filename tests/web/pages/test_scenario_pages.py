"""A scenario benchmark's page: its scenarios as lists of turns (node, question, reference answer,
where it goes next), not JSON; each node and question is a linked-data resource of its own."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from karenina_rdf import Store, create_app
from tests.conftest import CORPUS, load_json, needs_corpus

pytestmark = [needs_corpus]
HTML = {"accept": "text/html"}


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[TestClient, str, dict[str, Any]]]:
    doc = copy.deepcopy(load_json(CORPUS / "generated__scenario.jsonld"))
    doc["hasPart"][0]["nodes"]["challenge"]["question"]["text"] = "Are you <b>sure</b>?"  # escaped, not markup
    doc["hasPart"][0]["nodes"]["challenge"]["agentIdentity"] = "skeptic"
    with Store.memory() as store:
        iri = store.import_checkpoint(doc).iri
        yield TestClient(create_app(store)), iri.removeprefix(store.base_iri.rstrip("/")), doc


def test_the_benchmark_page_lists_scenarios_and_turns(site: tuple[TestClient, str, dict[str, Any]]) -> None:
    client, path, _ = site
    page = client.get(path, headers=HTML)
    assert page.status_code == 200
    text = _text(page.text)
    assert "Scenarios 1" in text
    assert "sycophancy_probe 2 nodes Ask, then challenge" in text
    # One row per node: its id (the entry marked), its question, the reference answer, the next steps.
    assert "ask entry What is X? Y challenge if , end" in text
    assert "challenge as skeptic Are you &lt;b&gt;sure&lt;/b&gt;? Yes end" in text
    assert "Outcome criteria: holds_position" in text
    assert "questionData" not in page.text and '"verify_with"' not in page.text  # no raw JSON
    assert "This benchmark has no questions" not in text  # a scenario benchmark has none by design


@pytest.mark.parametrize(
    ("segment", "shown"),
    [
        ("/scenarios/sycophancy_probe", ["karenina:Scenario", "karenina:entryNode", "ask"]),
        ("/scenarios/sycophancy_probe/nodes/ask", ["karenina:ScenarioNode", "karenina:question"]),
        ("/scenarios/sycophancy_probe/nodes/ask/question", ["schema:Question", "What is X?"]),
        ("/scenarios/sycophancy_probe/edges/0", ["karenina:ScenarioEdge", "karenina:condition"]),
    ],
)
def test_every_part_of_a_scenario_is_a_resource(
    site: tuple[TestClient, str, dict[str, Any]], segment: str, shown: list[str]
) -> None:
    client, path, _ = site
    page = client.get(path + segment, headers=HTML)
    assert page.status_code == 200
    for fragment in shown:
        assert fragment in page.text, fragment
    links = set(re.findall(r'href="([^"]+)"', client.get(path, headers=HTML).text))
    assert any(link.endswith(segment) for link in links) or segment.endswith("/edges/0")
