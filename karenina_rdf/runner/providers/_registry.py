"""Model providers behind one interface (:class:`~karenina_rdf.runner.providers._base.Provider`).

Every provider takes a :class:`ChatRequest` and returns a :class:`ChatResponse` or raises a
:class:`ProviderError` carrying Karenina's failure category. Real models:

* :class:`AnthropicProvider` (``claude_tool``): the official SDK, its retries off.
* :class:`OpenAICompatibleProvider` (``openai_endpoint``): plain HTTP to any server speaking
  OpenAI chat completions.

Fakes with the same interface: :class:`FunctionProvider` (a Python function is the model)
and :class:`ReplayProvider` (answers recorded earlier). Wrappers add one concern each and
keep the inner provider's ``interface``:

* :class:`RetryingProvider`: per-category retry budgets with backoff (spec §9.1, §8);
* :class:`CachedProvider` over a :class:`ResponseCache`: persistent, keyed by request hash;
* :class:`Recorder`: appends every answer to a recordings file a ReplayProvider reads.

The usual stack is ``CachedProvider(RetryingProvider(Recorder(model)), cache)``: a cache hit
costs neither a call nor a retry, only real answers are recorded, and the retry counts on a
response describe the calls behind it. Every class here is safe to share between threads.

API keys come from arguments or the environment, stay inside the provider object, and are
never written to recordings, the cache, error messages or logs (they are not part of the
request, and server text quoted in errors is scrubbed of them).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from karenina_rdf._errors import VerificationError

from ._base import ChatRequest, ChatResponse, EmbeddingRequest, EmbeddingResponse, Provider, Usage
from ._cache import CachedProvider, ResponseCache
from ._openai import OpenAICompatibleProvider
from ._pricing import PRICES_ENV, cost_usd, prices
from ._replay import Recorder, ReplayProvider, read_recordings
from ._retry import DEFAULT_BUDGETS, RetryingProvider, RetryPolicy, parse_retry_after

if TYPE_CHECKING:
    from ._anthropic import AnthropicProvider


def __getattr__(name: str) -> Any:
    # The SDK takes about a second to import: only runs that call Claude pay for it.
    if name == "AnthropicProvider":
        from ._anthropic import AnthropicProvider

        return AnthropicProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_BUDGETS",
    "PRICES_ENV",
    "AnthropicProvider",
    "CachedProvider",
    "FunctionProvider",
    "OpenAICompatibleProvider",
    "Recorder",
    "ReplayProvider",
    "ResponseCache",
    "RetryPolicy",
    "RetryingProvider",
    "cost_usd",
    "estimate_tokens",
    "parse_retry_after",
    "prices",
    "provider_from_spec",
    "read_recordings",
]

OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
KNOWN_PREFIXES = ("anthropic", "openai")


def estimate_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


class FunctionProvider:
    """A fake model: ``fn(request)`` gives the answer. A plain string is wrapped in a response
    with ``model=request.model`` and token counts from :func:`estimate_tokens`; a
    :class:`ChatResponse` is returned as it is; a raised ProviderError is a failed call. Thread
    safety is ``fn``'s."""

    def __init__(
        self,
        fn: Callable[[ChatRequest], str | ChatResponse],
        interface: str = "fake",
        embed_fn: Callable[[EmbeddingRequest], list[list[float]] | EmbeddingResponse] | None = None,
    ) -> None:
        self.fn = fn
        self.interface = interface
        self.embed_fn = embed_fn  # a fake embeddings model: one vector per text

    def __repr__(self) -> str:
        return f"FunctionProvider({getattr(self.fn, '__name__', self.fn)!r}, interface={self.interface!r})"

    def complete(self, request: ChatRequest) -> ChatResponse:
        answer = self.fn(request)
        if isinstance(answer, ChatResponse):
            return answer
        usage = Usage(
            input_tokens=sum(estimate_tokens(m.content) for m in request.messages),
            output_tokens=estimate_tokens(answer),
        )
        return ChatResponse(text=answer, usage=usage, model=request.model)

    @property
    def serves_embeddings(self) -> bool:
        return self.embed_fn is not None

    def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        if self.embed_fn is None:
            raise VerificationError(f"{self!r} serves no embeddings (give it an embed_fn)")
        out = self.embed_fn(request)
        if isinstance(out, EmbeddingResponse):
            return out
        usage = Usage(input_tokens=sum(estimate_tokens(t) for t in request.texts))
        return EmbeddingResponse(vectors=tuple(tuple(map(float, v)) for v in out), usage=usage, model=request.model)


def provider_from_spec(spec: str, *, base_url: str | None = None, api_key: str | None = None) -> tuple[Provider, str]:
    """``"anthropic:MODEL"`` or ``"openai:MODEL"`` -> (provider, model name). OpenAI-compatible
    servers need ``base_url`` or ``$OPENAI_BASE_URL``. Everything after the first colon is the
    model name, so ``openai:llama3:8b`` names ``llama3:8b``. ``api_key`` (default: the
    provider's environment variable) is kept inside the provider."""
    prefix, colon, model = spec.partition(":")
    known = ", ".join(f"{p}:MODEL" for p in KNOWN_PREFIXES)
    if not colon or not prefix or not model:
        raise VerificationError(f"model spec {spec!r} is not PROVIDER:MODEL; known: {known}")
    if prefix == "anthropic":
        from ._anthropic import AnthropicProvider

        return AnthropicProvider(api_key=api_key, base_url=base_url), model
    if prefix == "openai":
        url = base_url or os.environ.get(OPENAI_BASE_URL_ENV)
        if not url:
            raise VerificationError(
                f"model spec {spec!r}: an OpenAI-compatible server needs a base URL "
                f"(pass base_url or set {OPENAI_BASE_URL_ENV}, e.g. http://127.0.0.1:8000/v1)"
            )
        return OpenAICompatibleProvider(url, api_key=api_key), model
    raise VerificationError(f"model spec {spec!r}: unknown provider {prefix!r}; known: {known}")
