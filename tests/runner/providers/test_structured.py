"""The structured-output retries every stage shares (``complete_structured``): Karenina's
adapters' loop (adapters/langchain/llm.py ``_ainvoke_structured``, claude_tool/llm.py): up to
four attempts, each retry being the first messages plus one user message with the last error,
only the usable attempt returned (its usage is the one a stage records), and recordings that
replay the retries. Compared with Karenina's run stage by stage in tests/runner/test_stages_retry.py."""

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

GOOD = json.dumps({"verdict": True})
REQUEST = ChatRequest(
    model="judge",
    messages=(Message(role="system", content="Judge."), Message(role="user", content="Is it right?")),
    json_schema={"type": "object"},
    stage="abstention_check",
    label="q1",
)


def scripted(replies: list[str | Exception]) -> tuple[FunctionProvider, list[ChatRequest]]:
    asked: list[ChatRequest] = []

    def fn(r: ChatRequest) -> ChatResponse:
        asked.append(r)
        reply = replies[min(len(asked), len(replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return ChatResponse(text=reply, model="judge", usage=Usage(input_tokens=len(asked), output_tokens=1))

    return FunctionProvider(fn), asked


def strict(text: str) -> bool:
    value = json_object(text).get("verdict")
    if not isinstance(value, bool):
        raise ValueError("'verdict' must be true or false")
    return value


@pytest.mark.parametrize(
    ("replies", "calls"),
    [
        ([GOOD], 1),
        (["no JSON here", GOOD], 2),
        (["no JSON here", '{"verdict": "maybe"}', "{", GOOD], 4),
    ],
    ids=["good first", "one bad", "three bad"],
)
def test_first_usable_attempt_is_taken(replies: list[str | Exception], calls: int) -> None:
    provider, asked = scripted(replies)
    value, response = complete_structured(provider, REQUEST, strict)
    assert value is True and len(asked) == calls
    assert response.usage.input_tokens == calls  # the usable attempt's response, its usage alone
    assert asked[0] == REQUEST  # a good first reply: the one request, as before
    for i, retry in enumerate(asked[1:], start=1):
        # The first messages plus one user message with the *last* error only (no pile-up).
        assert retry.messages[:-1] == REQUEST.messages and retry.messages[-1].role == "user"
        assert sum(m.content.startswith("Your previous reply") for m in retry.messages) == 1
        error = "the reply holds no JSON object" if replies[i - 1] == "no JSON here" else ""
        assert error in retry.messages[-1].content
        # Everything but the messages and the attempt number stays: schema, stage, label,
        # temperature. The number gives every attempt its own cache and replay key, even when
        # two retries send the same error.
        assert retry.model_dump(exclude={"messages", "attempt"}) == REQUEST.model_dump(exclude={"messages", "attempt"})
        assert retry.attempt == i + 1 and REQUEST.attempt is None
    assert len({r.key() for r in asked}) == calls
    if calls == 4:
        assert "'verdict' must be true or false" in asked[2].messages[-1].content
        assert "the reply holds no JSON object" in asked[3].messages[-1].content  # "{" is no object


def test_four_unusable_replies_raise_the_last_error() -> None:
    provider, asked = scripted(["no JSON here", "no JSON here", "no JSON here", '{"verdict": 3}', GOOD])
    with pytest.raises(StructuredOutputError) as caught:
        complete_structured(provider, REQUEST, strict)
    assert len(asked) == STRUCTURED_ATTEMPTS == 4
    assert str(caught.value) == "no usable reply in 4 attempts; the last one: 'verdict' must be true or false"
    assert isinstance(caught.value, ValueError)  # stages treat it as an unusable reply


def test_provider_errors_are_not_retried_here() -> None:
    """A failed call (its transient retries spent below, in RetryingProvider) ends the loop:
    Karenina's LangChain adapter retries only ValidationError/ValueError."""
    provider, asked = scripted(["no JSON here", ProviderError("boom", category="server_error")])
    with pytest.raises(ProviderError):
        complete_structured(provider, REQUEST, strict)
    assert len(asked) == 2


def test_a_recording_replays_the_retries(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    provider, _ = scripted(["no JSON here", "no JSON here", "no JSON here", GOOD])
    with Recorder(provider, path) as recorder:
        recorded = complete_structured(recorder, REQUEST, strict)
    # Every attempt under its own key, the second and third retry's same error included.
    assert len(path.read_text().splitlines()) == 4
    replay = ReplayProvider(path)
    value, response = complete_structured(replay, REQUEST, strict)
    assert value == recorded[0] and response.text == recorded[1].text and response.cached
