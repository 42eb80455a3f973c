"""Structured replies asked for again, as Karenina's model adapters do.

Karenina's ``with_structured_output`` adapters (adapters/langchain/llm.py ``_ainvoke_structured``,
adapters/claude_tool/llm.py) make up to ``max_retries + 1`` attempts (3 + 1 by default) when
a reply does not parse or validate. Every retry sends the original messages plus one user
message that reports the last attempt's error (only the last one: feedback does not pile up)
and asks for a fixed reply. After the last attempt it raises ``ParseError("Structured output
failed after 4 attempts. Last error: ...")``, and each stage handles that as it handles any
failure of its call. Usage is only counted for the attempt that succeeds, because a failed attempt
raises before its ``LLMResponse`` gets to the stage, so callers here record only the returned
response.

Which calls take this path is Karenina's choice, made per stage: abstention and sufficiency
checks, template parsing, the dynamic rubric's presence check, the rubric's batch and
sequential judge calls (LLM, literal, template and metric traits), and rubric deep judgment's
excerpt, hallucination and score calls. Free-text calls do not: answers, template deep
judgment's excerpts and reasoning, rubric deep judgment's reasoning and its text score
fallback, and the embedding check's semantic call.

A retry is a different request: it has one more message and its attempt number. The number
matters because two retries can send the same messages (the same error fed back), so without it
a cache or a replay would answer the later one with the earlier bad reply. A recording therefore
holds every attempt under its own key, and a replay asks for the same keys in the same order.
A good first reply costs nothing more than the single call it always was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ._base import ChatRequest, ChatResponse, Message, Provider

__all__ = ["STRUCTURED_ATTEMPTS", "StructuredOutputError", "complete_structured", "feedback"]

T = TypeVar("T")

# Karenina's with_structured_output(max_retries=None) -> 3 retries, so 4 attempts in all.
STRUCTURED_ATTEMPTS = 4


class StructuredOutputError(ValueError):
    """No attempt gave a usable reply (Karenina's ParseError from its adapters' loop). It never
    leaves the runner: every stage catches it as it catches an unusable reply (a ValueError),
    and records it as data (a failure, a warning, a check not performed), so it is not part of
    the public error tree of ``karenina_rdf._errors``."""


def feedback(error: str) -> Message:
    """The retry's extra user message: the last attempt's error, and a request to fix it."""
    return Message(
        role="user",
        content=f"Your previous reply could not be used: {error}\nFix this and reply again with the requested JSON.",
    )


def complete_structured(provider: Provider, request: ChatRequest, read: Callable[[str], T]) -> tuple[T, ChatResponse]:
    """``read(reply text)`` of the first attempt it accepts, and that attempt's response. ``read``
    raises ValueError for a reply that does not parse or validate. Provider errors are not
    caught here: transient ones were already retried below by ``RetryingProvider``."""
    error = ""
    for attempt in range(STRUCTURED_ATTEMPTS):
        # Karenina appends the feedback to the original messages: only the last error is sent.
        retry = {"messages": (*request.messages, feedback(error)), "attempt": attempt + 1}
        asked = request if attempt == 0 else request.model_copy(update=retry)
        response = provider.complete(asked)
        try:
            return read(response.text), response
        except ValueError as exc:
            error = str(exc) or type(exc).__name__
    raise StructuredOutputError(f"no usable reply in {STRUCTURED_ATTEMPTS} attempts; the last one: {error}")
