"""Structured replies asked for again, as Karenina's model adapters do, and the template
parser's fallback after them.

**Attempts.** Karenina's ``with_structured_output`` adapters make up to ``max_retries + 1``
attempts (3 + 1 by default) while a reply does not parse or fit. Every retry sends the original
messages plus one user message that reports the last attempt's error (only the last one:
feedback does not pile up) and asks for a fixed reply. Usage is only counted for the call that
succeeds: a failed attempt raises before its ``LLMResponse`` gets to the stage.

**Two calls per attempt** on Karenina's LangChain path (``openai_endpoint``, and every interface
here but ``claude_tool``; adapters/langchain/llm.py ``_try_structured_invocation``):

1. the *structured* call: the request with its ``json_schema`` (an OpenAI-compatible server gets
   ``response_format``). Karenina's native structured output reads the whole reply as the JSON
   object (``model_validate_json``): prose or a fence around it makes the call fail.
2. if that reply is unusable, the *instructions* call: no ``json_schema`` (no ``response_format``),
   the schema instructions appended to the last user message (the feedback message on a retry),
   the reply read with Karenina's ``extract_json_from_response`` (fences, prose, the last object).

The error fed back to the next attempt is the instructions call's. So 4 attempts are up to 8
calls.

**``claude_tool``** (Karenina's Anthropic SDK adapter, adapters/claude_tool/llm.py
``_ainvoke_structured`` l.211-237) makes one call per attempt, read here as the reply's first
JSON object; 4 attempts through its ``with_structured_output`` (the checks, the presence check,
the rubric calls) but 3 through its template parser (``ClaudeToolParserAdapter``,
``max_retries=2``), which has no plain fallback. Its loop catches any exception: a call that
failed outright (after its transient retries) is a failed attempt like an unusable reply, its
error text fed back the same way; only the usable call's usage counts.

**The template parser's fallback** (``parser=``: template parsing and template deep judgment's
final parse, the calls Karenina makes through ``LangChainParserAdapter.aparse_to_pydantic``,
adapters/langchain/parser.py l.172–280). When every attempt failed:

3. one *plain* call: the original messages, no schema, no feedback. Its reply is read with
   ``extract_json_from_response``, else repaired with ``json_repair`` (``_parse_response_content``).
   If it is usable, its usage is the only usage counted.
4. Karenina's null-feedback retry (``_retry_with_null_feedback``) and format-feedback retry
   (``_retry_with_format_feedback``), with Karenina's exact triggers. Both test the text of the
   plain call's error, ``Could not parse response into <Schema>: <the reply's first 200
   characters>``: the null retry runs when that text names null fields (it holds
   ``from completion`` and an object that decodes with null values, or an ``input_value=None``
   line); the format retry when it holds a phrase of ``is_invalid_json_error``. Only a reply's
   own wording can do that. A usable retry counts the plain call's usage plus its own.

Nothing else gets the fallback: abstention, sufficiency, the presence check and the rubric calls
use ``with_structured_output`` directly in Karenina.

**Keys.** A retry's calls carry their attempt number: two retries can send the same messages (the
same error fed back), so without it a cache or a replay would answer the later one with the
earlier bad reply. The instructions call differs from the structured one (no schema, the
instructions in its text), the plain call from both (no schema, the first messages). So a
recording holds every call under its own key, and a replay asks for the same keys in the same
order. A good first reply costs nothing more than the single call it always was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from json_repair import repair_json

from karenina_rdf._errors import ProviderError

from ._base import ChatRequest, ChatResponse, Message, Provider
from ._json_extraction import extract_json_from_response, is_invalid_json_error

__all__ = [
    "CLAUDE_TOOL_PARSER_ATTEMPTS",
    "STRUCTURED_ATTEMPTS",
    "StructuredOutputError",
    "attempts_for",
    "complete_structured",
    "feedback",
    "format_instructions",
    "null_fields_of",
]

T = TypeVar("T")

# Karenina's with_structured_output(max_retries=None) -> 3 retries, so 4 attempts in all
# (adapters/langchain/llm.py and claude_tool/llm.py ``with_structured_output``).
STRUCTURED_ATTEMPTS = 4
# Karenina's ClaudeToolParserAdapter(max_retries=2) -> 3 attempts (claude_tool/parser.py l.65, 105):
# template parsing and deep judgment's parse on claude_tool.
CLAUDE_TOOL_PARSER_ATTEMPTS = 3
# The interface whose Karenina adapter makes one call per attempt (its native structured output).
ONE_CALL_INTERFACES = frozenset({"claude_tool"})


class StructuredOutputError(ValueError):
    """No attempt gave a usable reply (Karenina's ParseError from its adapters' loop). It never
    leaves the runner: every stage catches it as it catches an unusable reply (a ValueError),
    and records it as data (a failure, a warning, a check not performed), so it is not part of
    the public error tree of ``karenina_rdf._errors``. ``retries``: on ``claude_tool``, the
    transient retries its failed attempts spent (Karenina counts every retry of a task)."""

    def __init__(self, message: str, retries: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.retries = retries or {}


def feedback(error: str) -> Message:
    """The retry's extra user message: the last attempt's error, and a request to fix it."""
    return Message(
        role="user",
        content=f"Your previous reply could not be used: {error}\nFix this and reply again with the requested JSON.",
    )


def format_instructions(schema: dict[str, Any] | None) -> str:
    """What the instructions call adds to the last user message (Karenina's FORMAT_INSTRUCTIONS:
    valid JSON of this schema, the JSON object only)."""
    return (
        "\n\nReply with valid JSON that matches this schema:\n```json\n"
        f"{json.dumps(schema or {}, indent=2)}\n```\nReply with the JSON object only, nothing else."
    )


def _instructed(messages: tuple[Message, ...], schema: dict[str, Any] | None) -> tuple[Message, ...]:
    """``messages`` with the schema instructions appended to the last user message."""
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i].role == "user":
            out[i] = Message(role="user", content=out[i].content + format_instructions(schema))
            break
    return tuple(out)


def _object_text(text: str) -> str:
    """``text`` when it decodes to a JSON object, else ValueError. Readers then take it with
    ``json_object``, which returns exactly that object for such a text."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"the reply is a JSON {type(value).__name__}, not an object")
    return text


def _read_structured(text: str) -> str:
    # Karenina's native structured output: the whole reply is the object.
    return _object_text(text)


def _read_instructed(text: str) -> str:
    # Karenina's _parse_json_response: extract_json_from_response, then model_validate_json.
    return _object_text(extract_json_from_response(text))


def _read_plain(text: str, read: Callable[[str], T]) -> T:
    """Karenina's ``_parse_response_content``: the extracted JSON, else the repaired reply."""
    try:
        return read(_object_text(extract_json_from_response(text)))
    except ValueError:
        pass
    try:
        repaired = str(repair_json(text))
    except Exception as exc:  # Karenina catches anything the repair raises
        raise ValueError(f"json_repair failed: {type(exc).__name__}: {exc}") from None
    return read(_object_text(repaired))


def null_fields_of(error: str) -> list[str]:
    """The null fields Karenina's null-feedback retry finds in its error text
    (parser.py ``_retry_with_null_feedback`` + ``_extract_null_fields_from_error``), in the
    order found (Karenina returns them as a set)."""
    failed_json = None
    if "from completion" in error:
        try:
            start = error.index("{")
            failed_json = error[start : error.index("}.", start) + 1]
        except ValueError:
            pass
    if failed_json:
        try:
            data = json.loads(failed_json)
        except json.JSONDecodeError:
            pass
        else:
            found = [k for k, v in data.items() if v is None]
            if found:
                return found
    fields: list[str] = []
    lines = error.split("\n")
    for i, line in enumerate(lines):
        if "input_value=None" in line or "input_type=NoneType" in line:
            for j in range(i - 1, max(i - 3, -1), -1):
                candidate = lines[j].strip()
                if (
                    candidate
                    and " " not in candidate
                    and candidate not in ("Answer", "Input", "For", "Got:", "validation", "error")
                ):
                    if candidate not in fields:
                        fields.append(candidate)
                    break
    return fields


def _null_feedback(fields: list[str], reply: str) -> Message:
    """Karenina's FEEDBACK_NULL, in our words: these fields were null; give values, defaults
    (0, "", false) where the source has none."""
    return Message(
        role="user",
        content=(
            f"Your previous reply gave null for required fields: [{', '.join(fields)}].\n\n"
            "Required fields cannot be null. Give actual values: where the source does not say, a "
            'default (0.0 for numbers, "" for text, false for booleans) or a sensible placeholder '
            "for unknown or not applicable; never null.\n\n"
            f"Your previous reply:\n{reply}\n\nReply again with every required field filled in."
        ),
    )


def _format_feedback(reply: str, error: str, schema: dict[str, Any] | None) -> Message:
    """Karenina's FEEDBACK_FORMAT, in our words: only a valid JSON object; the failed reply (1000
    characters), the error (500) and the schema."""
    shown = reply[:1000] + ("..." if len(reply) > 1000 else "")
    hint = f"\n\nThe expected schema:\n{json.dumps(schema, indent=2)}" if schema is not None else ""
    return Message(
        role="user",
        content=(
            "Your previous reply could not be read as valid JSON.\n\n"
            "Reply with ONLY a valid JSON object: no reasoning or explanation, no text before or "
            "after it, no markdown fences, no comments.\n\n"
            f"Your previous reply:\n{shown}\n\nThe error:\n{error[:500]}{hint}\n\n"
            "Reply with the JSON object only."
        ),
    )


def _add_retries(total: dict[str, int], more: dict[str, int]) -> None:
    for category, n in more.items():
        total[category] = total.get(category, 0) + n


def _joined(first: ChatResponse, second: ChatResponse) -> ChatResponse:
    """One response carrying two calls' usage (Karenina sums the plain call's and a feedback
    retry's usage)."""
    retries = dict(first.retries)
    _add_retries(retries, second.retries)
    return second.model_copy(
        update={
            "usage": first.usage + second.usage,
            "cached": first.cached and second.cached,
            "attempts": first.attempts + second.attempts,
            "retries": retries,
        }
    )


def _feedback_retry(
    provider: Provider, request: ChatRequest, message: Message, read: Callable[[str], T]
) -> tuple[T, ChatResponse] | None:
    """One of the parser's feedback retries: a plain call with ``message`` after the first
    messages. None when it gives nothing usable, or fails for good; a provider error that may
    pass is raised (Karenina re-raises retryable errors there and swallows the rest)."""
    asked = request.model_copy(update={"messages": (*request.messages, message), "json_schema": None, "attempt": None})
    try:
        response = provider.complete(asked)
    except ProviderError as exc:
        if exc.retryable:
            raise
        return None
    try:
        return _read_plain(response.text, read), response
    except ValueError:
        return None


def attempts_for(interface: str, parser: str | None) -> int:
    """How many attempts Karenina's adapter for ``interface`` makes at this call site: 3 on
    ``claude_tool``'s template parser (``ClaudeToolParserAdapter(max_retries=2)``), else 4
    (``with_structured_output(max_retries=None)`` -> 3 retries, on every interface)."""
    if parser is not None and interface in ONE_CALL_INTERFACES:
        return CLAUDE_TOOL_PARSER_ATTEMPTS
    return STRUCTURED_ATTEMPTS


def complete_structured(
    provider: Provider, request: ChatRequest, read: Callable[[str], T], *, parser: str | None = None
) -> tuple[T, ChatResponse]:
    """``read(reply text)`` of the first call it accepts, and that call's response (for the
    parser's feedback retries: one response carrying the two calls' usage). ``read`` raises
    ValueError for a reply that does not parse or fit. ``parser``: the schema's name when this
    is Karenina's template parser (parsing, deep judgment's parse), which adds the fallback on
    the LangChain path and sets the attempts on ``claude_tool`` (:func:`attempts_for`).

    Provider errors (transient ones already retried below by ``RetryingProvider``) end the loop
    on the LangChain path, whose adapter retries only unusable replies. On ``claude_tool`` a
    call that failed outright is one more failed attempt, its error fed back like a bad reply's
    (Karenina's claude_tool loop catches any exception); when the last attempt failed so, the
    loop ends with a ProviderError of that error's category, so stages classify it as before.
    There every failed attempt's transient retries are counted (Karenina's ``track_retries``
    counts every retry of the task), on the response returned or the error raised; usage is
    only the usable call's."""
    two_calls = provider.interface not in ONE_CALL_INTERFACES
    attempts = attempts_for(provider.interface, parser)
    error = ""
    failed: ProviderError | None = None  # claude_tool: the last attempt's outright failure
    retries: dict[str, int] = {}  # claude_tool: the failed attempts' transient retries
    for attempt in range(attempts):
        # Karenina appends the feedback to the original messages: only the last error is sent.
        messages = request.messages if attempt == 0 else (*request.messages, feedback(error))
        number = None if attempt == 0 else attempt + 1
        asked = request if attempt == 0 else request.model_copy(update={"messages": messages, "attempt": number})
        if two_calls:
            response = provider.complete(asked)
        else:
            try:
                response = provider.complete(asked)
            except ProviderError as exc:
                # claude_tool/llm.py l.221-235: ``except Exception`` -> last_error = str(e), next attempt.
                error, failed = str(exc) or type(exc).__name__, exc
                _add_retries(retries, exc.retries)
                continue
            failed = None
        try:
            value = read(_read_structured(response.text) if two_calls else response.text)
        except ValueError as exc:
            error = str(exc) or type(exc).__name__
        else:
            if retries:  # a good first reply returns its response untouched
                _add_retries(retries, response.retries)
                response = response.model_copy(update={"retries": retries})
            return value, response
        if not two_calls:
            _add_retries(retries, response.retries)
            continue
        instructed = request.model_copy(
            update={"messages": _instructed(messages, request.json_schema), "json_schema": None, "attempt": number}
        )
        response = provider.complete(instructed)
        try:
            return read(_read_instructed(response.text)), response
        except ValueError as exc:
            error = str(exc) or type(exc).__name__
    last = f"no usable reply in {attempts} attempts; the last one: {error}"
    if failed is not None:
        raise ProviderError(
            last,
            category=failed.category,
            retryable=failed.retryable,
            retry_after=failed.retry_after,
            retries=retries,
            exhausted=failed.exhausted,
        ) from failed
    if parser is None or not two_calls:
        raise StructuredOutputError(last, retries)
    # The parser's plain call: the first messages as they were, no schema, no attempt number.
    plain = request.model_copy(update={"json_schema": None, "attempt": None})
    first = provider.complete(plain)
    try:
        return _read_plain(first.text, read), first
    except ValueError:
        pass
    parse_error = f"Could not parse response into {parser}: {first.text[:200]}"
    fields = null_fields_of(parse_error)
    if fields:
        got = _feedback_retry(provider, request, _null_feedback(fields, first.text), read)
        if got is not None:
            return got[0], _joined(first, got[1])
    if is_invalid_json_error(parse_error, "ParseError"):
        got = _feedback_retry(provider, request, _format_feedback(first.text, parse_error, request.json_schema), read)
        if got is not None:
            return got[0], _joined(first, got[1])
    raise StructuredOutputError(f"{last}; the fallback call's reply could not be read either: {first.text[:200]!r}")
