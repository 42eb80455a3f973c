"""The result record a task produces: fresh fields, the failure classifier (verification spec §8,
first match wins), usage per stage, answers files, and what the judge prompts hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from karenina_rdf import CheckpointError
from karenina_rdf._errors import VerificationError
from karenina_rdf.results._model import METADATA, TEMPLATE
from karenina_rdf.runner import ChatResponse, Usage
from karenina_rdf.runner._prompts import answering_messages, parsing_messages
from karenina_rdf.runner._record import StageError, TaskState, classify, finalize, fresh_result, usage_metadata
from karenina_rdf.runner._recorded import read_answers
from karenina_rdf.runner.providers._base import json_object


def test_fresh_result_has_karenina_keys_in_order() -> None:
    r = fresh_result()
    assert list(r) == [
        "metadata",
        "template",
        "rubric",
        "deep_judgment",
        "deep_judgment_rubric",
        "evaluation_input",
        "used_full_trace",
        "trace_extraction_error",
    ]
    assert list(r["metadata"]) == [f.name for f in METADATA]
    assert list(r["template"]) == [f.name for f in TEMPLATE]
    assert r["metadata"]["caveats"] == [] and r["metadata"]["caveats"] is not fresh_result()["metadata"]["caveats"]


def _result(performed: bool = False, verdict: bool | None = None, **template: object) -> dict:
    r = fresh_result()
    r["template"].update(template_verification_performed=performed, verify_result=verdict, **template)
    return r


CASES = [
    # (name, result, state, expected (category, stage) or None)
    ("pass", _result(True, True), TaskState(), None),
    ("verify False is content", _result(True, False), TaskState(), ("content", "verify_template")),
    (
        "content beats an exhausted retry",
        _result(True, False),
        TaskState(error=StageError("timeout", "parse_template", "t", exhausted=True)),
        ("content", "verify_template"),
    ),
    (
        "exhausted retry category",
        _result(),
        TaskState(error=StageError("rate_limit", "generate_answer", "429", exhausted=True)),
        ("rate_limit", "generate_answer"),
    ),
    (
        "retry category not exhausted is unexpected",
        _result(),
        TaskState(error=StageError("timeout", "generate_answer", "slow", exhausted=False)),
        ("unexpected_error", "generate_answer"),
    ),
    ("abstention", _result(abstention_detected=True), TaskState(), ("abstention", "abstention_check")),
    ("insufficient", _result(sufficiency_detected=False), TaskState(), ("sufficiency", "sufficiency_check")),
    (
        "template validation",
        _result(),
        TaskState(error=StageError("template_validation", "validate_template", "bad"), template_error="template: bad"),
        ("template_validation", "validate_template"),
    ),
    (
        "parse stage error is parsing",
        _result(),
        TaskState(error=StageError("parsing", "parse_template", "no JSON")),
        ("parsing", "parse_template"),
    ),
    (
        "anything else",
        _result(),
        TaskState(error=StageError("unexpected_error", "verify_template", "sandbox (timeout)")),
        ("unexpected_error", "verify_template"),
    ),
]


@pytest.mark.parametrize(("name", "result", "state", "expected"), CASES, ids=[c[0] for c in CASES])
def test_classifier(name: str, result: dict, state: TaskState, expected: tuple[str, str] | None) -> None:
    failure = classify(result, state)
    if expected is None:
        assert failure is None
    else:
        assert failure is not None
        assert (failure["category"], failure["stage"]) == expected
        assert list(failure) == ["category", "stage", "reason", "details", "group"]


def test_usage_sums_per_stage_and_total() -> None:
    state = TaskState()
    state.add_call(
        "answer_generation", ChatResponse(text="a", usage=Usage(input_tokens=10, output_tokens=5), model="m1"), 0.5
    )
    state.add_call("parsing", ChatResponse(text="b", usage=Usage(input_tokens=7, output_tokens=3), model="j"), None)
    state.add_call("parsing", ChatResponse(text="c", usage=Usage(input_tokens=1, output_tokens=1), model="j"), 0.1)
    usage = usage_metadata(state)
    assert usage == {
        "answer_generation": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "model": "m1",
            "input_token_details": {},
            "output_token_details": {},
        },
        "parsing": {
            "input_tokens": 8,
            "output_tokens": 4,
            "total_tokens": 12,
            "model": "j",
            "input_token_details": {},
            "output_token_details": {},
        },
        "total": {"input_tokens": 18, "output_tokens": 9, "total_tokens": 27},
    }
    assert state.costs == {"answer_generation": 0.5, "parsing": None}  # one unknown price: unknown


def test_finalize_sets_retry_caveat_and_result_id() -> None:
    r = _result(True, True)
    r["metadata"].update(
        question_id="q", answering={"interface": "a", "model_name": "m", "tools": [], "config_id": None}
    )
    state = TaskState()
    state.add_call("parsing", ChatResponse(text="x", model="j", retries={"rate_limit": 2}), None)
    finalize(r, state, 0.0, 1.5, {"rate_limit": 5})
    meta = r["metadata"]
    assert meta["caveats"] == ["retries_used"]
    assert meta["retry_counts"]["rate_limit"] == {"used": 2, "budget": 5}
    assert meta["execution_time"] == 1.5
    assert len(meta["result_id"]) == 16 and meta["failure"] is None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": "x"}\n```', {"a": "x"}),
        ('Sure! Here it is: {"a": [1, 2]} hope it helps', {"a": [1, 2]}),
        ('[1] then {"b": {"c": null}}', {"b": {"c": None}}),
        ('{broken then {"ok": true}', {"ok": True}),
    ],
)
def test_json_object(reply: str, expected: dict) -> None:
    assert json_object(reply) == expected


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "the reply is empty"),
        ("no json here", "the reply holds no JSON object: 'no json here'"),
        ("[1, 2, 3]", "the reply holds no JSON object: '[1, 2, 3]'"),
        ('{"unterminated": ', "the reply holds no JSON object: '{\"unterminated\":'"),
    ],
)
def test_json_object_refuses(reply: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        json_object(reply)
    assert str(err.value) == message


def test_parsing_prompt_holds_question_response_schema_and_hints_only() -> None:
    schema = {"properties": {"capital": {"type": "string", "description": "The city", "extraction_hint": "a city"}}}
    system, user = parsing_messages("What is the capital?", "It is Paris.", schema)
    assert '"capital"' in system.content and "- capital: a city" in system.content
    assert "What is the capital?" in user.content and "It is Paris." in user.content


def test_answering_prompt_with_few_shot_examples() -> None:
    msgs = answering_messages("Q?", None, [{"question": "A?", "answer": "a"}])
    assert msgs[0].role == "system" and msgs[0].content
    assert msgs[1].content == "Question: A?\nAnswer: a\n\nQuestion: Q?\nAnswer:"
    assert answering_messages("Q?", "be brief", None)[0].content == "be brief"


def test_read_answers(tmp_path: Path) -> None:
    f = tmp_path / "answers.jsonl"
    rows = [
        {"question_id": "q1", "response": "one"},
        {"question_id": "q1", "response": "two", "answering_model": "openai_endpoint:gpt-4o", "replicate": 2},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    answers, identities, replicates = read_answers(f)
    assert answers == {("q1", "manual:recorded:", None): "one", ("q1", "openai_endpoint:gpt-4o:", 2): "two"}
    assert [i["interface"] for i in identities] == ["manual", "openai_endpoint"]
    assert replicates == 2


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "answers.jsonl:2: not JSON"),
        ("[1]", "answers.jsonl:2: each line must be a JSON object"),
        ('{"response": "x"}', "answers.jsonl:2 at /question_id: 'question_id' must be"),
        ('{"question_id": "q", "response": 3}', "answers.jsonl:2 at /response (question 'q'): 'response' must"),
        ('{"question_id": "q", "response": "x", "replicate": 0}', "answers.jsonl:2 at /replicate (question 'q')"),
    ],
)
def test_read_answers_errors_name_file_line_and_place(tmp_path: Path, line: str, message: str) -> None:
    f = tmp_path / "answers.jsonl"
    f.write_text('{"question_id": "ok", "response": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(CheckpointError) as info:
        read_answers(f)
    assert message in str(info.value)


def test_read_answers_empty(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_text("\n", encoding="utf-8")
    with pytest.raises(VerificationError, match="holds no answers"):
        read_answers(f)
