"""The results pages show what the optional stages recorded (issue 19, point 2): per result, the
abstention and sufficiency verdicts with the judge's reasoning, the deep-judgment excerpts and
reasoning (templates and rubric traits) and the dynamic traits' presence; per run, how many
results abstained and how many were insufficient.

The run is a Karenina results file (examples/results, format 2.2) whose rows are given the
stage fields of Karenina's ``VerificationResult`` (``VerificationResultTemplate``'s
``abstention_*`` / ``sufficiency_*``, ``VerificationResultDeepJudgment``,
``VerificationResultDeepJudgmentRubric``, ``VerificationResultRubric``'s dynamic-rubric
fields), imported into a store and read through the real app. tests/runner/test_stages.py and
test_stages_djr.py show the same pages for results our runner produced (slow: sandbox, Karenina).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from karenina_rdf import Store, create_app
from tests.conftest import EXAMPLES, load_json
from tests.helpers.web_pages import result_path

HTML = {"accept": "text/html"}
RUN = "stage-pages-run"
QUIET_RUN = "stage-pages-quiet"

ABSTAINED = 'The response says "I cannot say" & gives no <answer>.'
INSUFFICIENT = "target: nothing in the response maps to it."
SUFFICIENT = "target: named (COX-1)."
QUOTE = "irreversibly acetylates <COX-1>"
DJ_REASONING = "The quote names COX-1 & its acetylation."
RUBRIC_QUOTE = "Aspirin irreversibly inhibits"
RUBRIC_REASONING = "Evidence: the quote states the mechanism.\nConclusion: met."


def _template(**fields: Any) -> Callable[[dict[str, Any]], None]:
    """A row change: these fields set on the row's template part."""
    return lambda row: row["template"].update(fields)


def _part(name: str, value: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """A row change: the part ``name`` (deep_judgment, deep_judgment_rubric) set to ``value``."""
    return lambda row: row.__setitem__(name, copy.deepcopy(value))


# A row a check failed: the abstention check ran, and the verdict is False.
_FAILED_BY_A_CHECK: dict[str, Any] = {"abstention_check_performed": True, "verify_result": False}
_abstained = _template(
    **_FAILED_BY_A_CHECK, abstention_detected=True, abstention_override_applied=True, abstention_reasoning=ABSTAINED
)
_insufficient = _template(
    **_FAILED_BY_A_CHECK, abstention_detected=False, sufficiency_check_performed=True, sufficiency_detected=False,
    sufficiency_override_applied=True, sufficiency_reasoning=INSUFFICIENT,
)  # fmt: skip
_sufficient = _template(sufficiency_check_performed=True, sufficiency_detected=True, sufficiency_reasoning=SUFFICIENT)
_deep_judgment = _part(
    "deep_judgment",
    {
        "deep_judgment_enabled": True,
        "deep_judgment_mode": "full",
        "deep_judgment_performed": True,
        "extracted_excerpts": {
            "target": [{"text": QUOTE, "confidence": "high", "similarity_score": 0.97}],
            "dose": [{"text": "", "confidence": "none", "explanation": "not stated"}],
        },
        "attribute_reasoning": {"target": DJ_REASONING, "dose": "No dose is given."},
        "deep_judgment_stages_completed": ["excerpts", "reasoning", "parameters"],
        "deep_judgment_model_calls": 3,
        "deep_judgment_excerpt_retry_count": 1,
        "attributes_without_excerpts": ["dose"],
        "deep_judgment_search_enabled": False,
        "hallucination_risk_assessment": None,
    },
)
_deep_judgment_rubric = _part(
    "deep_judgment_rubric",
    {
        "deep_judgment_rubric_performed": True,
        "extracted_rubric_excerpts": {"mechanism": [{"text": RUBRIC_QUOTE, "confidence": "medium",
                                                     "similarity_score": 0.91}]},
        "rubric_trait_reasoning": {"mechanism": RUBRIC_REASONING},
        "deep_judgment_rubric_scores": {"mechanism": True, "clarity": False},
        "standard_rubric_scores": {},
        "trait_metadata": {"mechanism": {"stages_completed": ["excerpt_extraction", "reasoning_generation",
                                                              "score_extraction"],
                                         "model_calls": 3, "had_excerpts": True, "excerpt_retry_count": 0},
                           "clarity": {"stages_completed": ["excerpt_extraction"], "model_calls": 3,
                                       "had_excerpts": False, "excerpt_retry_count": 2}},
        "traits_without_valid_excerpts": ["clarity"],
        "rubric_hallucination_risk_assessment": None,
        "total_deep_judgment_model_calls": 6,
        "total_traits_evaluated": 2,
        "total_excerpt_retries": 0,  # Karenina's default: stored as no triple, shown as 0
    },
)  # fmt: skip


def _dynamic(row: dict[str, Any]) -> None:
    rubric = row["rubric"]
    rubric.update(
        llm_trait_scores={**(rubric.get("llm_trait_scores") or {}), "explains_mechanism": 4},
        dynamic_rubric_promoted_traits=["explains_mechanism"],
        dynamic_rubric_skipped_traits={"mentions_literature": "concept not present in response"},
        trait_provenance={**(rubric.get("trait_provenance") or {}), "explains_mechanism": "dynamic"},
    )


# (row index in the run, what the row is given)
ROWS: list[tuple[int, Any]] = [(0, _abstained), (1, _abstained), (2, _insufficient), (3, _sufficient),
                               (4, _deep_judgment), (5, _deep_judgment_rubric), (6, _dynamic)]  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[int, str], dict[str, str]]]:
    """The pharmacology run with the stage fields on some rows, and a run without any check; the
    result page of each changed row, by its index; the two run pages."""
    tmp: Path = tmp_path_factory.mktemp("stage-pages")
    source = load_json(EXAMPLES / "results" / "pharmacology-2026-05.json")
    with Store.memory() as store:
        store.import_paths([EXAMPLES / "pharmacology.jsonld"])
        staged = copy.deepcopy(source)
        staged["metadata"]["job_id"] = RUN
        for index, change in ROWS:
            assert staged["results"][index]["rubric"] is not None or change is not _dynamic
            change(staged["results"][index])
        quiet = copy.deepcopy(source)
        quiet["metadata"]["job_id"] = QUIET_RUN
        for name, doc in (("staged", staged), ("quiet", quiet)):
            (tmp / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
            store.import_results(tmp / f"{name}.json")
        client = TestClient(create_app(store))
        runs = {run: client.get(f"/runs/{run}", headers=HTML).text for run in (RUN, QUIET_RUN)}
        pages = {index: client.get(result_path(store, RUN, index), headers=HTML).text for index, _ in ROWS}
        yield client, pages, runs


def _section(page: str, section_id: str) -> str:
    assert f'id="{section_id}"' in page, f"no section {section_id}"
    return page.split(f'id="{section_id}"', 1)[1].split("</section>", 1)[0]


def test_the_run_page_counts_abstained_and_insufficient_results(
    site: tuple[TestClient, dict[int, str], dict[str, str]],
) -> None:
    _, _, runs = site
    assert 'data-count="abstained">2<' in runs[RUN]
    assert 'data-count="insufficient">1<' in runs[RUN]
    # A run where no check ran shows no such counts (they would read as "none abstained").
    assert 'data-count="abstained"' not in runs[QUIET_RUN]


# (row, section, what the section must hold (escaped as the page escapes text), what it must not)
SHOWN: list[tuple[int, str, list[str], list[str]]] = [
    (0, "checks", ['data-verdict="abstained"', ABSTAINED], ['data-verdict="answered"']),
    (2, "checks", ['data-verdict="answered"', 'data-verdict="insufficient"', INSUFFICIENT], []),
    (3, "checks", ['data-verdict="sufficient"', SUFFICIENT], ['data-verdict="abstained"']),
    (4, "deep-judgment", [QUOTE, DJ_REASONING, "none: not stated", "0.97", "No dose is given.",
                          "3 judge calls · 1 excerpt retries"], ["None"]),
    (5, "deep-judgment-rubric", [RUBRIC_QUOTE, RUBRIC_REASONING.splitlines()[0], "no valid excerpts", "0.91",
                                 "2 traits scored in steps · 6 judge calls · 0 excerpt retries"], ["None"]),
    (6, "dynamic-traits", ["explains_mechanism", "present: evaluated", "mentions_literature",
                           "skipped: concept not present in response"], []),
]  # fmt: skip


@pytest.mark.parametrize(("index", "section", "shown", "absent"), SHOWN, ids=[f"{s[1]}-{s[0]}" for s in SHOWN])
def test_a_result_page_shows_what_the_stage_recorded(
    site: tuple[TestClient, dict[int, str], dict[str, str]],
    index: int,
    section: str,
    shown: list[str],
    absent: list[str],
) -> None:
    _, pages, _ = site
    part = (
        _section(pages[index], "scores").split('id="dynamic-traits"', 1)[1]
        if section == "dynamic-traits"
        else _section(pages[index], section)
    )
    for text in shown:
        assert (text if text.startswith("data-") else str(escape(text))) in part, text
    for text in absent:
        assert text not in part, text


def test_pages_without_stage_fields_show_no_stage_sections(
    site: tuple[TestClient, dict[int, str], dict[str, str]],
) -> None:
    _, pages, _ = site
    for section in ("checks", "deep-judgment", "deep-judgment-rubric", "dynamic-traits"):
        assert f'id="{section}"' not in pages[1 if section != "checks" else 6]
