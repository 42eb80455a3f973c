"""Model providers behind one interface (``Provider``: a ``ChatRequest`` in, a
``ChatResponse`` out): Anthropic, OpenAI-compatible, replay and recording, retries, the response
cache, prices, and reading the JSON object of a judge's reply."""

from ._base import (
    ChatRequest,
    ChatResponse,
    EmbeddingProvider,
    EmbeddingRequest,
    EmbeddingResponse,
    Message,
    Provider,
    Usage,
    json_object,
    lax_bool,
    with_instructions,
)
from ._cache import CachedProvider, ResponseCache
from ._pricing import cost_usd
from ._registry import FunctionProvider, provider_from_spec
from ._replay import Recorder, ReplayProvider
from ._retry import DEFAULT_BUDGETS, RetryingProvider
from ._structured import STRUCTURED_ATTEMPTS, StructuredOutputError, complete_structured

__all__ = [
    "CachedProvider",
    "ChatRequest",
    "ChatResponse",
    "DEFAULT_BUDGETS",
    "EmbeddingProvider",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "FunctionProvider",
    "Message",
    "Provider",
    "Recorder",
    "ReplayProvider",
    "ResponseCache",
    "RetryingProvider",
    "STRUCTURED_ATTEMPTS",
    "StructuredOutputError",
    "Usage",
    "complete_structured",
    "cost_usd",
    "json_object",
    "lax_bool",
    "provider_from_spec",
    "with_instructions",
]
