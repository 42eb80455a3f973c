"""Any server speaking OpenAI's chat-completions wire format, as Karenina's ``openai_endpoint``.

A plain ``httpx`` POST to ``{base_url}/chat/completions`` rather than the ``openai`` SDK: the
format is small and stable, local servers (vLLM, llama.cpp, Ollama, LM Studio) implement it
with small differences an SDK would not tolerate, and one dependency fewer. Statuses and
transport errors map onto Karenina's failure categories (429 and 529 ``rate_limit`` with the
server's ``Retry-After``, 408 and read/connect timeouts ``timeout``, refused or dropped
connections ``connection``, other 5xx ``server_error``, other 4xx and unreadable bodies
``unexpected_error``, not retryable). Nothing is retried here: that is
:class:`RetryingProvider`'s job.

``json_schema`` requests ask for ``response_format: {"type": "json_object"}``. Some servers
refuse that field with a 400 that names it; the provider then drops it for the rest of its
life and sends the request again once (the prompt still asks for JSON).
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

from karenina_rdf._errors import ProviderError, VerificationError

from ._base import ChatRequest, ChatResponse, EmbeddingRequest, EmbeddingResponse, Usage
from ._retry import call_context, redact, status_error

API_KEY_ENV = "OPENAI_API_KEY"


class OpenAICompatibleProvider:
    """OpenAI-compatible chat completions at ``base_url`` (e.g. ``http://127.0.0.1:8000/v1``).
    The key comes from ``api_key`` or ``$OPENAI_API_KEY`` and may be absent (local servers).
    One instance is safe to share between threads (``httpx.Client`` is); :meth:`close` or a
    ``with`` block releases its connections."""

    interface = "openai_endpoint"

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 120.0) -> None:
        if not base_url:
            raise VerificationError("an OpenAI-compatible provider needs a base_url (e.g. http://127.0.0.1:8000/v1)")
        self.base_url = base_url.rstrip("/")
        self._key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        # Flipped once, without a lock: the worst a race does is one more refused request.
        self._json_mode = True

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(base_url={self.base_url!r})"

    def __enter__(self) -> OpenAICompatibleProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def complete(self, request: ChatRequest) -> ChatResponse:
        json_mode = request.json_schema is not None and self._json_mode
        response = self._post(request, json_mode)
        if json_mode and response.status_code == 400 and "response_format" in response.text:
            self._json_mode = False
            response = self._post(request, False)
        return self._parse(response, request)

    def _post(self, request: ChatRequest, json_mode: bool) -> httpx.Response:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        where = f"{self.base_url} ({call_context(request)})"
        try:
            return self._client.post(f"{self.base_url}/chat/completions", json=body)
        except httpx.TimeoutException as err:
            message = f"{where}: timed out ({type(err).__name__})"
            raise ProviderError(message, category="timeout", retryable=True) from None
        except httpx.TransportError as err:
            raise ProviderError(
                f"{where}: connection failed ({type(err).__name__}: {err})", category="connection", retryable=True
            ) from None

    serves_embeddings = True  # the server's /embeddings (a server without one answers 404 there)

    def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """``POST {base_url}/embeddings`` (OpenAI's embeddings format), one vector per text; the
        same failure categories as chat calls."""
        where = f"{self.base_url} ({call_context(request)})"
        try:
            response = self._client.post(
                f"{self.base_url}/embeddings", json={"model": request.model, "input": list(request.texts)}
            )
        except httpx.TimeoutException as err:
            raise ProviderError(
                f"{where}: timed out ({type(err).__name__})", category="timeout", retryable=True
            ) from None
        except httpx.TransportError as err:
            raise ProviderError(
                f"{where}: connection failed ({type(err).__name__}: {err})", category="connection", retryable=True
            ) from None
        if response.status_code >= 400:
            detail = redact(f"{where}: HTTP {response.status_code}: {_error_text(response)}", self._key)
            raise status_error(detail, response.status_code, response.headers)
        try:
            data = response.json()
            rows = sorted(data["data"], key=lambda row: int(row.get("index", 0)))
            vectors = tuple(tuple(float(x) for x in row["embedding"]) for row in rows)
            if len(vectors) != len(request.texts):
                raise ValueError(f"{len(vectors)} vectors for {len(request.texts)} texts")
            usage = data.get("usage") or {}
            tokens = Usage(input_tokens=int(usage.get("prompt_tokens") or 0))
            model = str(data.get("model") or request.model)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
            snippet = redact(response.text[:200], self._key)
            raise ProviderError(
                f"{where}: unreadable embeddings reply ({type(err).__name__}: {err}): {snippet!r}",
                category="unexpected_error",
            ) from None
        return EmbeddingResponse(vectors=vectors, usage=tokens, model=model)

    def _parse(self, response: httpx.Response, request: ChatRequest) -> ChatResponse:
        where = f"{self.base_url} ({call_context(request)})"
        status = response.status_code
        if status >= 400:
            detail = redact(f"{where}: HTTP {status}: {_error_text(response)}", self._key)
            raise status_error(detail, status, response.headers)
        try:
            data = response.json()
            message = data["choices"][0]["message"]
            text = message.get("content") or ""
            if not isinstance(text, str):
                raise TypeError("message content is not a string")
            usage = data.get("usage") or {}
            tokens = Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
            )
            model = str(data.get("model") or request.model)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
            snippet = redact(response.text[:200], self._key)
            raise ProviderError(
                f"{where}: unreadable chat-completions reply ({type(err).__name__}: {err}): {snippet!r}",
                category="unexpected_error",
            ) from None
        return ChatResponse(text=text, usage=tokens, model=model)


def _error_text(response: httpx.Response) -> str:
    """The server's own error message when it sent the usual ``{"error": {"message"}}``."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return response.text[:300]
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    return json.dumps(error)[:300] if error else response.text[:300]
