"""Models from their specs (``anthropic:claude-…``, ``openai:gpt-4o``) with the transport a run
asks for: live (with retries, the response cache and an optional recording), or replayed from
recordings only. Replay changes who answers, not which model the results name: a replayed
``anthropic:claude-x`` is still recorded as that model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from karenina_rdf._errors import VerificationError
from karenina_rdf.runner.providers import Provider

from ._tasks import ModelSpec

# Karenina's interface names for what answers the calls (ModelIdentity.interface).
INTERFACES = {"anthropic": "claude_tool", "openai": "openai_endpoint"}


def parse_spec(spec: str) -> tuple[str, str]:
    prefix, colon, model = spec.partition(":")
    if not colon or not prefix or not model:
        known = ", ".join(f"{p}:MODEL" for p in INTERFACES)
        raise VerificationError(f"model spec {spec!r} is not PROVIDER:MODEL ({known})")
    if prefix not in INTERFACES:
        raise VerificationError(f"model spec {spec!r}: unknown provider {prefix!r}; known: {', '.join(INTERFACES)}")
    return prefix, model


class Transport:
    """How a run's model calls are answered; one per run, shared by its models (the replay
    recordings and the cache are read once)."""

    def __init__(
        self,
        *,
        replay: str | Path | None = None,
        record: str | Path | None = None,
        cache: str | Path | None = None,
        base_url: str | None = None,
    ) -> None:
        if replay is not None and record is not None:
            raise VerificationError("--replay answers from recordings; --record makes them: use one")
        self.replay, self.record, self.base_url = replay, record, base_url
        self._replay: dict[str, Provider] = {}
        self._cache = None
        if cache is not None and replay is None:
            from karenina_rdf.runner.providers import ResponseCache

            self._cache = ResponseCache(cache)

    @classmethod
    def for_store(
        cls,
        store: Any,
        *,
        replay: str | Path | None = None,
        record: str | Path | None = None,
        cache: bool = True,
        base_url: str | None = None,
    ) -> Transport:
        """The transport of a run on ``store``: its response cache lives in the store's folder
        (an on-disk store only; in memory or on a server there is none)."""
        folder = store.path / "cache" / "responses.sqlite" if cache and store.path is not None else None
        return cls(replay=replay, record=record, cache=folder, base_url=base_url)

    def describe(self) -> dict[str, str | None]:
        return {
            "replay": str(self.replay) if self.replay else None,
            "record": str(self.record) if self.record else None,
            "cache": "on" if self._cache is not None else None,
            "base_url": self.base_url,
        }

    def model(
        self, spec: str, *, temperature: float = 0.0, max_tokens: int = 4096, system_prompt: str | None = None
    ) -> ModelSpec:
        prefix, name = parse_spec(spec)
        interface = INTERFACES[prefix]
        provider: Provider
        if self.replay is not None:
            if interface not in self._replay:
                from karenina_rdf.runner.providers import ReplayProvider

                self._replay[interface] = ReplayProvider(self.replay, interface=interface)
            provider = self._replay[interface]
        else:
            from karenina_rdf.runner.providers import CachedProvider, Recorder, RetryingProvider, provider_from_spec

            provider, name = provider_from_spec(spec, base_url=self.base_url)
            provider = RetryingProvider(provider)
            if self._cache is not None:
                provider = CachedProvider(provider, self._cache)
            if self.record is not None:  # outermost: answers from the cache are recorded too
                provider = Recorder(provider, self.record)
        return ModelSpec(
            provider=provider,
            model=name,
            interface=interface,
            temperature=temperature,
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            spec=spec,
        )

    def embedder(self) -> Any:
        """The embedding check's embeddings provider: the OpenAI-compatible server of this run
        (``base_url`` or ``$OPENAI_BASE_URL``), ``/embeddings``, with retries; with ``record``
        its calls are recorded, with ``replay`` answered from the recordings (not cached)."""
        from karenina_rdf.runner.providers import Recorder, ReplayProvider, RetryingProvider, provider_from_spec

        if self.replay is not None:
            return ReplayProvider(self.replay)
        provider, _ = provider_from_spec("openai:embeddings", base_url=self.base_url)
        retrying = RetryingProvider(provider)
        return Recorder(retrying, self.record) if self.record is not None else retrying
