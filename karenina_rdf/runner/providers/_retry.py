"""Retrying model calls: Karenina's per-category retry budgets, exponential backoff with jitter.

Providers never retry themselves (the Anthropic SDK's own retries are switched off): they turn
every failure into a :class:`ProviderError` with Karenina's failure ``category`` and say
whether trying again may help. :class:`RetryingProvider` is the one place that decides.

Budgets follow Karenina's ``RetryPolicy`` (``utils/retry_policy.py``): the number for a
category counts *retries*, not calls, and each category has its own budget, so a call that
meets two 429s and then a 500 has used 2 of rate_limit's 5 and 1 of server_error's 2. When a
category's budget is used up the error is raised with ``exhausted=True`` and ``retries``
filled, which is what the failure classifier (spec §8 rule 3) needs to call it a ``retry``
failure; ``RetryPolicy.retry_counts`` gives the ``metadata.retry_counts`` snapshot.

Delays grow per category: ``base_delay * multiplier**n`` (n = retries of that category so far),
capped at ``max_delay``, then shortened by a random fraction of at most ``jitter`` so that
parallel workers hit by the same 429 do not come back in lockstep. With ``jitter < 0.5`` and
``multiplier >= 2`` successive delays still grow. A server's ``Retry-After`` is a floor (never
above ``max_delay``: one hint of an hour must not stall a run; the retry costs budget instead).
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from karenina_rdf._errors import ProviderError, VerificationError

from ._base import ChatRequest, ChatResponse, EmbeddingRequest, EmbeddingResponse, Provider

_R = TypeVar("_R")

logger = logging.getLogger(__name__)

#: Karenina's retry categories (spec §8, group ``retry``) and their default budgets (§9.1).
DEFAULT_BUDGETS: dict[str, int] = {"connection": 3, "timeout": 3, "rate_limit": 5, "server_error": 2}


class RetryPolicy(BaseModel):
    """How often and how patiently to retry each failure category.

    ``attempts`` maps a retry category to its budget of retries (calls beyond the first);
    categories left out keep their default, so ``RetryPolicy(attempts={"server_error": 0})``
    only stops retrying 5xx. ``jitter`` is the largest fraction a delay is shortened by."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempts: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_BUDGETS))
    base_delay: float = Field(default=1.0, ge=0)
    max_delay: float = Field(default=60.0, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    jitter: float = Field(default=0.25, ge=0, le=1)

    @field_validator("attempts")
    @classmethod
    def _known_categories(cls, value: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(value) - set(DEFAULT_BUDGETS))
        if unknown:
            raise ValueError(f"unknown retry categories {unknown}; known: {sorted(DEFAULT_BUDGETS)}")
        negative = sorted(k for k, v in value.items() if v < 0)
        if negative:
            raise ValueError(f"retry budgets must be >= 0: {negative}")
        return {**DEFAULT_BUDGETS, **value}

    def budget(self, category: str) -> int:
        """Retries allowed for ``category`` (0 for categories that are not retried)."""
        return self.attempts.get(category, 0)

    def delay(self, retry: int, retry_after: float | None = None, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``retry`` (0-based, counted in its category)."""
        backoff = min(self.max_delay, self.base_delay * self.multiplier**retry)
        backoff *= 1.0 - self.jitter * rand()
        if retry_after is not None and retry_after > 0:
            backoff = max(backoff, min(retry_after, self.max_delay))
        return backoff

    def retry_counts(self, used: Mapping[str, int]) -> dict[str, dict[str, int]]:
        """``metadata.retry_counts``: ``{category: {"used": n, "budget": m}}`` for every category."""
        return {cat: {"used": int(used.get(cat, 0)), "budget": budget} for cat, budget in self.attempts.items()}


class RetryingProvider:
    """Retries retryable :class:`ProviderError` of ``inner`` within ``policy``'s budgets.

    Budgets are per call of :meth:`complete` and the wrapper holds no state between calls, so
    one instance serves any number of threads. ``sleep`` and ``rand`` are injectable so tests
    run without waiting and with known jitter."""

    def __init__(
        self,
        inner: Provider,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.policy = policy or RetryPolicy()
        self.interface = inner.interface
        self._sleep = sleep
        self._rand = rand

    def complete(self, request: ChatRequest) -> ChatResponse:
        response, calls, used = self._retrying(self.inner.complete, request)
        # A cached inner answer made no call on its last try: keep its own count (0).
        return response.model_copy(update={"attempts": calls - 1 + response.attempts, "retries": used})

    @property
    def serves_embeddings(self) -> bool:
        return bool(getattr(self.inner, "serves_embeddings", False))

    def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """The inner provider's embeddings, with the same budgets (the embedding check's calls)."""
        embed: Callable[[EmbeddingRequest], EmbeddingResponse] | None = getattr(self.inner, "embed", None)
        if embed is None:
            raise VerificationError(f"{self.inner!r} serves no embeddings")
        response, _, _ = self._retrying(embed, request)
        return response

    def _retrying(self, call: Callable[[Any], _R], request: Any) -> tuple[_R, int, dict[str, int]]:
        used: dict[str, int] = {}
        calls = 0
        while True:
            calls += 1
            try:
                response = call(request)
            except ProviderError as err:
                err.retries = dict(used)
                if not err.retryable or err.category not in self.policy.attempts:
                    raise
                n = used.get(err.category, 0)
                if n >= self.policy.budget(err.category):
                    err.exhausted = True
                    raise
                used[err.category] = n + 1
                wait = self.policy.delay(n, err.retry_after, self._rand)
                logger.warning(
                    "%s on %s; retry %d of %d in %.1f s",
                    err.category,
                    call_context(request),
                    n + 1,
                    self.policy.budget(err.category),
                    wait,
                )
                self._sleep(wait)
                continue
            return response, calls, used


def status_error(detail: str, status: int, headers: Mapping[str, str]) -> ProviderError:
    """An HTTP error status as Karenina classifies it: 429 and 529 (overloaded) are rate limits,
    408 a timeout, 5xx server errors (all retried, honouring Retry-After); the rest are not retried."""
    retry_after = parse_retry_after(headers)
    if status in (429, 529):
        return ProviderError(detail, category="rate_limit", retryable=True, retry_after=retry_after)
    if status == 408:
        return ProviderError(detail, category="timeout", retryable=True, retry_after=retry_after)
    if status >= 500:
        return ProviderError(detail, category="server_error", retryable=True, retry_after=retry_after)
    return ProviderError(detail, category="unexpected_error")


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """The server's wait hint in seconds: ``retry-after-ms``, or ``Retry-After`` as seconds or
    an HTTP date. None when absent or unreadable; never negative."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def call_context(request: ChatRequest | EmbeddingRequest) -> str:
    """What a failed call was for, for error messages: model, stage and label when set."""
    parts = [f"model {request.model!r}"]
    if request.stage:
        parts.append(f"stage {request.stage!r}")
    if request.label:
        parts.append(f"label {request.label!r}")
    return ", ".join(parts)


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every secret replaced, for error messages built from server replies."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text
