"""Claude through the official ``anthropic`` SDK (Messages API), as Karenina's ``claude_tool``.

The SDK does the wire format and authentication; this class maps the shared request onto
``messages.create`` and every SDK exception onto a :class:`ProviderError` with Karenina's
failure category. The SDK's own retries are off (``max_retries=0``): retrying is
:class:`RetryingProvider`'s job, with Karenina's per-category budgets.

Classification follows Karenina's ``ErrorRegistry``: timeouts before connection errors (the
SDK's timeout error is a connection error), and ``OverloadedError`` (529) as ``rate_limit``,
not ``server_error``, because Karenina matches that class name first.

Temperature: the SDK no longer has the parameter and Claude models from Opus 4.7 on refuse it
with a 400, while older ones take it (and a judge wants it low). It is sent in the body; a
model that refuses it is remembered and the call is sent again once without it, so no list
of models has to be kept up to date.

Requests with a ``json_schema`` are sent as plain calls: the caller's prompt already asks for
the JSON (the judge prompt carries the schema), and structured-output modes are not available
on every Claude model. SDK exceptions are not chained onto ours (``from None``): they hold the
HTTP request, headers and API key included, and our errors travel into logs and results.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import anthropic

from karenina_rdf._errors import ProviderError, VerificationError

from ._base import ChatRequest, ChatResponse, Usage
from ._retry import call_context, redact, status_error

if TYPE_CHECKING:
    from anthropic.types import MessageParam

logger = logging.getLogger(__name__)

API_KEY_ENV = "ANTHROPIC_API_KEY"


class AnthropicProvider:
    """Anthropic Messages API. The key comes from ``api_key`` or ``$ANTHROPIC_API_KEY``;
    ``base_url`` (else the SDK's ``$ANTHROPIC_BASE_URL`` or its default) points it elsewhere.
    One instance is safe to share between threads (the SDK client is)."""

    interface = "claude_tool"

    def __init__(self, api_key: str | None = None, base_url: str | None = None, timeout: float = 120.0) -> None:
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:
            raise VerificationError(f"no Anthropic API key: pass api_key or set the environment variable {API_KEY_ENV}")
        self._key = key  # kept only to scrub it from error messages
        self._client = anthropic.Anthropic(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)
        self._no_temperature: set[str] = set()  # models that answered 400 to a temperature

    def __repr__(self) -> str:
        return f"AnthropicProvider(base_url={str(self._client.base_url)!r})"

    def complete(self, request: ChatRequest) -> ChatResponse:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        messages: list[MessageParam] = [
            {"role": "user", "content": m.content} if m.role == "user" else {"role": "assistant", "content": m.content}
            for m in request.messages
            if m.role != "system"
        ]
        with_temperature = request.model not in self._no_temperature
        try:
            try:
                message = self._create(request, system, messages, with_temperature)
            except anthropic.BadRequestError as err:
                if not (with_temperature and _refuses_temperature(str(err.api_message or err.message))):
                    raise
                logger.info("%s refuses temperature; sending without it from now on", request.model)
                self._no_temperature.add(request.model)
                message = self._create(request, system, messages, False)
        except anthropic.AnthropicError as err:
            raise self._error(err, request) from None
        text = "".join(block.text for block in message.content if block.type == "text")
        usage = Usage(input_tokens=message.usage.input_tokens or 0, output_tokens=message.usage.output_tokens or 0)
        return ChatResponse(text=text, usage=usage, model=message.model or request.model)

    def _create(
        self, request: ChatRequest, system: str, messages: list[MessageParam], with_temperature: bool
    ) -> anthropic.types.Message:
        return self._client.messages.create(
            model=request.model,
            max_tokens=request.max_tokens,
            messages=messages,
            system=system if system else anthropic.omit,
            # The SDK dropped the parameter; older models still take it and judges want it low.
            extra_body={"temperature": request.temperature} if with_temperature else None,
        )

    def _error(self, err: anthropic.AnthropicError, request: ChatRequest) -> ProviderError:
        where = f"Anthropic ({call_context(request)})"
        if isinstance(err, anthropic.APITimeoutError):
            return ProviderError(f"{where}: request timed out", category="timeout", retryable=True)
        if isinstance(err, anthropic.APIConnectionError):
            return ProviderError(f"{where}: connection failed: {err.message}", category="connection", retryable=True)
        if isinstance(err, anthropic.APIStatusError):
            status = err.status_code
            detail = redact(f"{where}: HTTP {status} {err.type or ''}: {err.api_message or err.message}", self._key)
            return status_error(detail, status, err.response.headers)
        return ProviderError(redact(f"{where}: {type(err).__name__}: {err}", self._key), category="unexpected_error")


def _refuses_temperature(message: str) -> bool:
    """A 400 saying the model takes no temperature at all (not that the value is out of range)."""
    text = message.lower()
    return "temperature" in text and any(w in text for w in ("deprecated", "not supported", "unsupported"))
