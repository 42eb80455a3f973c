"""The ``claude_tool`` path (our ``anthropic:`` provider) of ``complete_structured``, call site by
call site, decided as Karenina's claude_tool adapter decides.

Karenina cannot run this path offline: in its own environment the adapter passes
``temperature`` to ``beta.messages.parse()``, which the anthropic SDK it installs refuses, so no
call reaches a (fake) server (test_structured_karenina.py
``test_karenina_s_claude_tool_structured_calls_fail_in_its_own_environment`` pins that, and
pins the attempt counts it reports: 3 through the parser, 4 through ``with_structured_output``).
So these tests follow its code, cited per test:

- adapters/claude_tool/llm.py l.211-237 ``_ainvoke_structured``: ``max_retries + 1`` attempts;
  each retry is the first messages plus one feedback message holding the last error only
  (utils/messages.py l.12-37 ``append_error_feedback``); ``except Exception`` (l.226): a call
  that failed outright, as a reply that does not parse, costs one attempt and has its text fed
  back; after the last attempt, ``ParseError`` (l.228-231).
- l.629-649 ``with_structured_output``: ``max_retries`` None -> 3, so 4 attempts; every
  verification call site (abstention, sufficiency, presence check, rubric calls) passes none.
- adapters/claude_tool/parser.py l.65 and l.105 ``ClaudeToolParserAdapter``: ``max_retries=2``,
  so 3 attempts, for template parsing and deep judgment's parse; no plain fallback.
- l.292-298: the usable attempt's ``LLMResponse`` carries that call's usage alone.
- utils/retry_policy.py l.91-119 ``track_retries``: every transient retry of the task is
  counted, so those spent before an attempt failed are too.
"""

from __future__ import annotations

import json

import pytest

from karenina_rdf._errors import ProviderError
from karenina_rdf.runner.providers import (
    STRUCTURED_ATTEMPTS,
    ChatRequest,
    ChatResponse,
    FunctionProvider,
    Message,
    StructuredOutputError,
    Usage,
    complete_structured,
    json_object,
)
from karenina_rdf.runner.providers._structured import CLAUDE_TOOL_PARSER_ATTEMPTS, attempts_for

GOOD = json.dumps({"verdict": True})
NO = "no JSON here"
WRONG = json.dumps({"verdict": "maybe"})
DOWN = ProviderError(
    "server_error: HTTP 503 from the judge", category="server_error", retryable=True, retries={"server_error": 2},
    exhausted=True,
)  # fmt: skip
REFUSED = ProviderError("unexpected_error: HTTP 400 bad request", category="unexpected_error")


def strict(text: str) -> bool:
    value = json_object(text).get("verdict")
    if not isinstance(value, bool):
        raise ValueError("'verdict' must be true or false")
    return value


ERRORS = {NO: "the reply holds no JSON object: 'no JSON here'", WRONG: "'verdict' must be true or false"}

# (call site, stage, parser schema name or None, Karenina's attempts there)
SITES: list[tuple[str, str, str | None, int]] = [
    ("template parsing (parser)", "parsing", "Answer__Relaxed", 3),
    ("deep judgment's parse (parser)", "parsing", "Answer", 3),
    ("abstention check", "abstention_check", None, 4),
    ("sufficiency check", "sufficiency_check", None, 4),
    ("dynamic rubric presence check", "dynamic_rubric_presence_check", None, 4),
    ("rubric batch call", "rubric_evaluation", None, 4),
    ("rubric deep judgment excerpts", "rubric_deep_judgment_excerpts", None, 4),
]


def _replies(kind: str, attempts: int) -> list[str | ProviderError]:
    """One reply a call for each case (the last one repeated)."""
    return {
        "good first": [GOOD],
        "bad until the last attempt, then good": [*[NO, WRONG, NO][: attempts - 1], GOOD],
        "every reply bad": [NO, WRONG],
        "a failed call, then good": [DOWN, GOOD],
        "failed calls and a bad reply, then good": [*[DOWN, NO, REFUSED][: attempts - 1], GOOD],
        "every call failed": [DOWN],
        "bad replies, the last call failed": [*[NO, WRONG, NO][: attempts - 1], REFUSED],
        "failed calls, the last reply bad": [*[DOWN, REFUSED, DOWN][: attempts - 1], NO],
    }[kind]


KINDS = [
    "good first",
    "bad until the last attempt, then good",
    "every reply bad",
    "a failed call, then good",
    "failed calls and a bad reply, then good",
    "every call failed",
    "bad replies, the last call failed",
    "failed calls, the last reply bad",
]


def _scripted(replies: list[str | ProviderError]) -> tuple[FunctionProvider, list[ChatRequest]]:
    asked: list[ChatRequest] = []

    def fn(r: ChatRequest) -> ChatResponse:
        asked.append(r)
        reply = replies[min(len(asked), len(replies)) - 1]
        if isinstance(reply, ProviderError):
            raise reply
        # Each call's usage tells which call was counted; every call spent one timeout retry.
        return ChatResponse(
            text=reply, model="judge", usage=Usage(input_tokens=len(asked), output_tokens=1), retries={"timeout": 1}
        )

    return FunctionProvider(fn, interface="claude_tool"), asked


def _spent(seen: list[str | ProviderError]) -> dict[str, int]:
    """The transient retries these calls spent: one timeout retry a reply, the failed calls' own."""
    out = {"timeout": sum(1 for r in seen if not isinstance(r, ProviderError))}
    for r in seen:
        if isinstance(r, ProviderError):
            for category, n in r.retries.items():
                out[category] = out.get(category, 0) + n
    return {c: n for c, n in out.items() if n}


def _error_text(reply: str | ProviderError) -> str:
    return str(reply) if isinstance(reply, ProviderError) else ERRORS[reply]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("site", "stage", "parser", "attempts"), SITES, ids=[s[0] for s in SITES])
def test_claude_tool_call_sites_decide_as_karenina(
    site: str, stage: str, parser: str | None, attempts: int, kind: str
) -> None:
    """Karenina cannot run its claude_tool adapter offline (see the module docstring); this
    follows adapters/claude_tool/llm.py l.219-237 (the loop, ``except Exception``, the last error
    fed back), utils/messages.py l.34-37 (one feedback message), llm.py l.645-649 (4 attempts) and
    parser.py l.65, 105 (3 attempts through the parser), l.292-298 (the usable call's usage)."""
    assert attempts_for("claude_tool", parser) == attempts
    replies = _replies(kind, attempts)
    request = ChatRequest(
        model="judge",
        messages=(Message(role="system", content="Judge."), Message(role="user", content="Is it right?")),
        json_schema={"type": "object"},
        stage=stage,
        label="q1",
    )
    provider, asked = _scripted(replies)
    good_at = next((i for i, r in enumerate(replies) if r == GOOD), None)
    if good_at is not None and good_at < attempts:
        value, response = complete_structured(provider, request, strict, parser=parser)
        assert value is True and len(asked) == good_at + 1
        assert response.usage == Usage(input_tokens=good_at + 1, output_tokens=1)  # the usable call's alone
        assert response.retries == _spent(replies[: good_at + 1])  # the failed attempts' too
        if good_at == 0:
            assert asked == [request]  # a good first reply: the one call, untouched (benchmarks rely on it)
    else:
        last = replies[min(attempts, len(replies)) - 1]
        if isinstance(last, ProviderError):
            # The last attempt failed outright: a ProviderError of its category, so every stage
            # classifies it as before (Karenina's ParseError carries it as context, l.226-231).
            with pytest.raises(ProviderError) as caught:
                complete_structured(provider, request, strict, parser=parser)
            assert caught.value.category == last.category and caught.value.exhausted == last.exhausted
            assert caught.value.__cause__ is last
        else:
            with pytest.raises(StructuredOutputError) as caught:
                complete_structured(provider, request, strict, parser=parser)
        assert str(caught.value) == f"no usable reply in {attempts} attempts; the last one: {_error_text(last)}"
        assert len(asked) == attempts  # one call an attempt, no plain fallback on claude_tool
        assert caught.value.retries == _spent(replies[:attempts] + [last] * (attempts - len(replies)))
    for i, r in enumerate(asked):
        assert r.json_schema == request.json_schema and r.stage == stage  # every attempt: the structured call
        assert r.attempt == (None if i == 0 else i + 1)
        if i == 0:
            assert r.messages == request.messages
            continue
        # The first messages plus one user message: the previous attempt's error only (its
        # reply's error, or the failed call's text), as Karenina's append_error_feedback.
        assert r.messages[:-1] == request.messages and r.messages[-1].role == "user"
        previous = replies[min(i, len(replies)) - 1]
        assert r.messages[-1].content.startswith(f"Your previous reply could not be used: {_error_text(previous)}\n")
    assert len({r.key() for r in asked}) == len(asked)


def test_attempts_per_interface_and_call_site() -> None:
    """llm.py l.645-649 (``with_structured_output``: 3 retries by default, on both adapters) and
    claude_tool/parser.py l.65 (``max_retries=2``); the LangChain parser keeps 4 attempts
    (adapters/langchain/parser.py), then its fallback. Karenina cannot run claude_tool offline."""
    assert CLAUDE_TOOL_PARSER_ATTEMPTS == 3 and STRUCTURED_ATTEMPTS == 4
    assert attempts_for("claude_tool", "Answer") == 3
    assert attempts_for("claude_tool", None) == 4
    assert attempts_for("openai_endpoint", "Answer") == 4
    assert attempts_for("langchain", None) == 4


def test_failed_calls_still_end_the_langchain_loop() -> None:
    """Only claude_tool feeds a failed call back: Karenina's LangChain adapter re-raises provider
    errors (adapters/langchain/llm.py ``_ainvoke_structured`` retries ValidationError/ValueError)."""
    asked: list[ChatRequest] = []

    def fn(r: ChatRequest) -> ChatResponse:
        asked.append(r)
        raise DOWN

    request = ChatRequest(model="judge", messages=(Message(role="user", content="?"),), json_schema={"type": "object"})
    with pytest.raises(ProviderError) as caught:
        complete_structured(FunctionProvider(fn, interface="openai_endpoint"), request, strict)
    assert caught.value is DOWN and len(asked) == 1
