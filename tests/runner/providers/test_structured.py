"""The structured-output retries every stage shares (``complete_structured``): Karenina's
adapters' loop (adapters/langchain/llm.py ``_ainvoke_structured``, claude_tool/llm.py): up to
four attempts, each retry being the first messages plus one user message with the last error;
on the LangChain path two calls an attempt (structured, then schema instructions without the
schema); for the template parser a plain fallback call and its feedback retries; only the usable
call returned (its usage is the one a stage records), and recordings that replay every call.
Compared with Karenina's adapters in test_structured_karenina.py, and with Karenina's run stage by
stage in tests/runner/test_stages_retry.py and test_stages_parser_fallback.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from karenina_rdf._errors import ProviderError
from karenina_rdf.runner.providers import (
    STRUCTURED_ATTEMPTS,
    ChatRequest,
    ChatResponse,
    FunctionProvider,
    Message,
    Recorder,
    ReplayProvider,
    StructuredOutputError,
    Usage,
    complete_structured,
    json_object,
)
from karenina_rdf.runner.providers._openai import OpenAICompatibleProvider
from karenina_rdf.runner.providers._structured import format_instructions, null_fields_of
from tests.runner.providers.test_providers import FakeServer, chat_ok, fake_server

__all__ = ["fake_server"]  # the fixture, shared with test_providers.py

GOOD = json.dumps({"verdict": True})
REQUEST = ChatRequest(
    model="judge",
    messages=(Message(role="system", content="Judge."), Message(role="user", content="Is it right?")),
    json_schema={"type": "object"},
    stage="abstention_check",
    label="q1",
)


def scripted(
    replies: list[str | Exception], interface: str = "openai_endpoint"
) -> tuple[FunctionProvider, list[ChatRequest]]:
    asked: list[ChatRequest] = []

    def fn(r: ChatRequest) -> ChatResponse:
        asked.append(r)
        reply = replies[min(len(asked), len(replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return ChatResponse(text=reply, model="judge", usage=Usage(input_tokens=len(asked), output_tokens=1))

    return FunctionProvider(fn, interface=interface), asked


def strict(text: str) -> bool:
    value = json_object(text).get("verdict")
    if not isinstance(value, bool):
        raise ValueError("'verdict' must be true or false")
    return value


def kind(r: ChatRequest) -> str:
    """What a call is, by its shape: S the structured call (the schema sent), I the instructions
    call (no schema, the schema instructions in its last user message), P a plain call."""
    if r.json_schema is not None:
        return "S"
    return "I" if r.messages[-1].content.endswith(format_instructions(REQUEST.json_schema)) else "P"


NO = "no JSON here"
FENCED = f"```json\n{GOOD}\n```"

# (id, replies (the last one repeated), calls made by kind, the index of the accepted call)
CASES: list[tuple[str, list[str], str, int]] = [
    ("good first", [GOOD], "S", 0),
    ("bad, then good", [NO, GOOD], "SI", 1),
    ("fenced: the structured call refuses it, the instructions call takes it", [FENCED], "SI", 1),
    ("in prose: likewise", [f"Sure. {GOOD} Done."], "SI", 1),
    ("three bad", [NO, '{"verdict": "maybe"}', "{", GOOD], "SISI", 3),
    ("seven bad, then good", [NO] * 7 + [GOOD], "SISISISI", 7),
]  # fmt: skip


@pytest.mark.parametrize(("case", "replies", "kinds", "taken"), CASES, ids=[c[0] for c in CASES])
def test_first_usable_call_is_taken(case: str, replies: list[str | Exception], kinds: str, taken: int) -> None:
    provider, asked = scripted(replies)
    value, response = complete_structured(provider, REQUEST, strict)
    assert value is True and "".join(kind(r) for r in asked) == kinds
    assert response.usage.input_tokens == taken + 1  # the usable call's response, its usage alone
    assert asked[0] == REQUEST  # a good first reply: the one request, as before
    for i, r in enumerate(asked):
        attempt = i // 2  # two calls an attempt
        # Everything but the messages, the schema and the attempt number stays: stage, label,
        # temperature. The number gives every attempt its own cache and replay key, even when
        # two retries send the same error.
        same = {"messages", "attempt", "json_schema"}
        assert r.model_dump(exclude=same) == REQUEST.model_dump(exclude=same)
        assert r.attempt == (None if attempt == 0 else attempt + 1)
        sent = r.messages
        if kind(r) == "I":  # the instructions go at the end of the last user message
            instructions = format_instructions(REQUEST.json_schema)
            assert sent[-1].content.endswith(instructions) and r.json_schema is None
            sent = (*sent[:-1], Message(role="user", content=sent[-1].content[: -len(instructions)]))
        else:
            assert r.json_schema == REQUEST.json_schema
        if attempt == 0:
            assert sent == REQUEST.messages
        else:
            # The first messages plus one user message with the *last* error only (no pile-up):
            # the error of the previous attempt's instructions call.
            assert sent[:-1] == REQUEST.messages and sent[-1].role == "user"
            assert sum(m.content.startswith("Your previous reply") for m in sent) == 1
            previous = replies[min(2 * attempt - 1, len(replies) - 1)]
            error = {NO: "Could not extract JSON", '{"verdict": "maybe"}': "'verdict' must be true or false"}
            assert error.get(str(previous), "") in sent[-1].content
    assert len({r.key() for r in asked}) == len(asked)


def test_eight_unusable_replies_raise_the_last_error() -> None:
    provider, asked = scripted([NO] * 7 + ['{"verdict": 3}', GOOD])
    with pytest.raises(StructuredOutputError) as caught:
        complete_structured(provider, REQUEST, strict)
    assert len(asked) == 2 * STRUCTURED_ATTEMPTS == 8
    assert str(caught.value) == "no usable reply in 4 attempts; the last one: 'verdict' must be true or false"
    assert isinstance(caught.value, ValueError)  # stages treat it as an unusable reply


def test_claude_tool_makes_one_call_an_attempt() -> None:
    """Karenina's claude_tool adapter: one (native structured) call an attempt, no parser
    fallback; the reply's first JSON object is read, as before. Its parser makes 3 attempts
    (``ClaudeToolParserAdapter(max_retries=2)``), its ``with_structured_output`` 4; every case
    per call site is in test_structured_claude_tool.py."""
    provider, asked = scripted([NO, NO, FENCED], interface="claude_tool")
    value, _ = complete_structured(provider, REQUEST, strict, parser="Answer__Relaxed")
    assert value is True and "".join(kind(r) for r in asked) == "SSS"
    provider, asked = scripted([NO], interface="claude_tool")
    with pytest.raises(StructuredOutputError):
        complete_structured(provider, REQUEST, strict, parser="Answer__Relaxed")
    assert len(asked) == 3
    provider, asked = scripted([NO], interface="claude_tool")
    with pytest.raises(StructuredOutputError):
        complete_structured(provider, REQUEST, strict)
    assert len(asked) == STRUCTURED_ATTEMPTS


def test_provider_errors_are_not_retried_here() -> None:
    """A failed call (its transient retries spent below, in RetryingProvider) ends the loop:
    Karenina's LangChain adapter retries only ValidationError/ValueError. (Its claude_tool
    adapter retries it: test_structured_claude_tool.py.)"""
    provider, asked = scripted([NO, ProviderError("boom", category="server_error")])
    with pytest.raises(ProviderError):
        complete_structured(provider, REQUEST, strict)
    assert len(asked) == 2


# The parser's fallback after eight unusable replies: (id, the ninth reply on, calls after the
# eight, the value or None, the calls whose usage is counted)
TRUNCATED = '{"verdict": true'
FROM_COMPLETION = 'Failed to parse from completion {"verdict": null}. Got: nothing'
FORMAT = "Expecting value: I cannot give JSON."
FALLBACK: list[tuple[str, list[str], str, bool | None, list[int]]] = [
    ("truncated JSON, repaired", [TRUNCATED], "P", True, [9]),
    ("good", [GOOD], "P", True, [9]),
    ("unusable: no retry is triggered", [NO], "P", None, []),
    ("null fields named the way Karenina looks for them", [FROM_COMPLETION, GOOD], "PP", True, [9, 10]),
    ("null retry unusable, then the format retry", [f"{FORMAT} from completion {{\"verdict\": null}}.", NO, GOOD],
     "PPP", True, [9, 11]),
    ("JSON-error wording: the format retry", [FORMAT, GOOD], "PP", True, [9, 10]),
    ("both retries unusable", [FORMAT + ' from completion {"verdict": null}.', NO], "PPP", None, []),
]  # fmt: skip


@pytest.mark.parametrize(("case", "after", "kinds", "value", "counted"), FALLBACK, ids=[c[0] for c in FALLBACK])
def test_the_template_parser_falls_back_as_karenina(
    case: str, after: list[str], kinds: str, value: bool | None, counted: list[int]
) -> None:
    provider, asked = scripted([NO] * 8 + after)
    if value is None:
        with pytest.raises(StructuredOutputError):
            complete_structured(provider, REQUEST, strict, parser="Answer__Relaxed")
    else:
        got, response = complete_structured(provider, REQUEST, strict, parser="Answer__Relaxed")
        assert got is value
        assert response.usage.input_tokens == sum(counted) and response.usage.output_tokens == len(counted)
    assert "".join(kind(r) for r in asked[8:]) == kinds
    plain, *retries = asked[8:]
    assert plain.messages == REQUEST.messages and plain.json_schema is None and plain.attempt is None
    for r in retries:  # the first messages and one feedback message, no schema
        assert r.messages[:-1] == REQUEST.messages and r.json_schema is None
    assert len({r.key() for r in asked}) == len(asked)
    # Without ``parser`` (every other stage) there is no fallback.
    provider, asked = scripted([NO] * 8 + after)
    with pytest.raises(StructuredOutputError):
        complete_structured(provider, REQUEST, strict)
    assert len(asked) == 8


@pytest.mark.parametrize("retryable", [True, False])
def test_a_provider_error_in_a_feedback_retry(retryable: bool) -> None:
    """Karenina's feedback retries re-raise an error that may pass (after its transient retries)
    and take any other failure as an unusable retry."""
    error = ProviderError("refused", category="rate_limit" if retryable else "unexpected_error", retryable=retryable)
    provider, asked = scripted([NO] * 8 + [FORMAT, error])
    with pytest.raises(ProviderError if retryable else StructuredOutputError):
        complete_structured(provider, REQUEST, strict, parser="Answer__Relaxed")
    assert len(asked) == 10


@pytest.mark.parametrize(
    ("error", "fields"),
    [
        ('Could not parse response into A: from completion {"a": null, "b": 1, "c": null}. x', ["a", "c"]),
        ('Could not parse response into A: {"a": null}', []),  # no "from completion": not looked at
        ("Could not parse response into A: x\nanswer\n  Input should be a valid string [input_value=None]", ["answer"]),
        ("Could not parse response into A: x\nvalidation\n  [input_type=NoneType]", []),  # a word it skips
    ],
)
def test_null_fields_as_karenina_finds_them(error: str, fields: list[str]) -> None:
    assert null_fields_of(error) == fields


def test_a_recording_replays_the_retries_and_the_fallback(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    replies: list[str | Exception] = [NO] * 8 + [FORMAT, GOOD]
    provider, asked = scripted(replies)
    with Recorder(provider, path) as recorder:
        recorded = complete_structured(recorder, REQUEST, strict, parser="Answer__Relaxed")
    # Every call under its own key: the attempts with the same error, the plain call, the retry.
    assert len(path.read_text().splitlines()) == len(asked) == 10
    replay = ReplayProvider(path, interface="openai_endpoint")
    value, response = complete_structured(replay, REQUEST, strict, parser="Answer__Relaxed")
    assert value == recorded[0] and response.text == recorded[1].text and response.cached
    assert response.usage == recorded[1].usage


@pytest.mark.slow
def test_the_openai_compatible_server_sees_which_call_is_which(fake_server: FakeServer) -> None:
    """Over HTTP, as Karenina's openai_endpoint path sends them: the structured call carries
    ``response_format``, the instructions call and the parser's plain call do not; the plain
    call sends the first messages as they were."""
    fenced = chat_ok(FENCED)
    fake_server.script(fenced)
    provider = OpenAICompatibleProvider(fake_server.url + "/v1")
    value, _ = complete_structured(provider, REQUEST, strict)
    assert value is True
    assert ["response_format" in s.body for s in fake_server.seen] == [True, False]
    assert fake_server.seen[1].body["messages"][-1]["content"].endswith(format_instructions(REQUEST.json_schema))
    fake_server.script(*[chat_ok(NO)] * 8, chat_ok(TRUNCATED))
    value, response = complete_structured(provider, REQUEST, strict, parser="Answer__Relaxed")
    assert value is True and response.text == TRUNCATED  # repaired
    assert ["response_format" in s.body for s in fake_server.seen] == [True, False] * 4 + [False]
    plain = fake_server.seen[-1].body["messages"]
    assert plain == [{"role": m.role, "content": m.content} for m in REQUEST.messages]
