"""What every provider speaks: a chat request, its response, token usage, and the provider protocol.

A request is hashed over its normalised form (model, messages, temperature, max tokens, schema):
that hash keys the response cache and the replay recordings, so the same question asked the
same way gets the same recorded answer whichever provider recorded it. ``stage`` and ``label``
say what the call was for (usage per stage, error messages) and are not part of the hash.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Role
    content: str


class ChatRequest(BaseModel):
    """One call to a model. ``json_schema``: the reply should be a JSON object of this schema
    (providers that support structured output pass it on; all get it in the prompt)."""

    model_config = ConfigDict(frozen=True)

    model: str
    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 4096
    json_schema: dict[str, Any] | None = None
    stage: str = ""  # Karenina's usage stage key: answer_generation, parsing, rubric_evaluation, ...
    label: str = ""  # what the call is for, for messages (question id, trait name)
    # Replicates ask the same thing on purpose: the number keeps their recorded and cached
    # answers apart. Hashed only when set, so requests without one keep their keys.
    replicate: int | None = None
    # A structured-output retry (``complete_structured``): 2, 3, 4. Two retries can send the same
    # messages (the same error fed back), and a model may still answer them differently, so the
    # number keeps their cached and recorded answers apart. Hashed only when set, like replicate.
    attempt: int | None = None

    def normalised(self) -> dict[str, Any]:
        """The parts that decide the answer, in one canonical shape: text NFC-normalised with
        line ends unified and trailing blanks removed, numbers as floats."""

        def text(s: str) -> str:
            s = unicodedata.normalize("NFC", s.replace("\r\n", "\n").replace("\r", "\n"))
            return "\n".join(line.rstrip() for line in s.split("\n")).strip()

        out: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": text(m.content)} for m in self.messages],
            "temperature": float(self.temperature),
            "max_tokens": int(self.max_tokens),
            "json_schema": self.json_schema,
        }
        if self.replicate is not None:
            out["replicate"] = self.replicate
        if self.attempt is not None:
            out["attempt"] = self.attempt
        return out

    def key(self) -> str:
        """SHA-256 (hex) of the normalised request as sorted-key ASCII JSON."""
        blob = json.dumps(self.normalised(), sort_keys=True, ensure_ascii=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ChatResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    usage: Usage = Field(default_factory=Usage)
    model: str  # the model that answered, as the provider names it
    cached: bool = False  # answered from the response cache or a recording, not by the model
    attempts: int = 1  # calls made, retries included
    retries: dict[str, int] = Field(default_factory=dict)  # retries used per failure category


@runtime_checkable
class Provider(Protocol):
    """Anything that answers chat requests. ``interface`` is the name results record in
    ``ModelIdentity.interface``."""

    interface: str

    def complete(self, request: ChatRequest) -> ChatResponse: ...


class EmbeddingRequest(BaseModel):
    """Texts to embed with one model (the embedding check). ``stage`` and ``label`` as in
    :class:`ChatRequest`: what the call is for, for messages."""

    model_config = ConfigDict(frozen=True)

    model: str
    texts: tuple[str, ...]
    stage: str = "embedding_check"
    label: str = ""


class EmbeddingResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    vectors: tuple[tuple[float, ...], ...]  # one per text, in the request's order
    usage: Usage = Field(default_factory=Usage)
    model: str


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Anything that embeds texts: the chat providers' interface for the embedding check (an
    OpenAI-compatible ``/embeddings`` endpoint, or a function in tests). A chat provider that
    can also embed says so with ``serves_embeddings``."""

    interface: str

    def embed(self, request: EmbeddingRequest) -> EmbeddingResponse: ...


def json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a reply: bare, fenced in markdown, or with prose around it.
    Raises ``ValueError`` saying what the reply held instead."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    shown = text.strip().replace("\n", " ")
    shown = shown[:120] + ("…" if len(shown) > 120 else "")
    raise ValueError(f"the reply holds no JSON object: {shown!r}" if shown else "the reply is empty")


def with_instructions(system: str, instructions: str | None) -> str:
    """A system text with a user's instructions appended last, a blank line between (Karenina's
    prompt assembler: PromptConfig's instructions go after everything else)."""
    if not instructions:
        return system
    return f"{system}\n\n{instructions}" if system else instructions


_TRUE = frozenset({"true", "yes", "on", "y", "t", "1"})
_FALSE = frozenset({"false", "no", "off", "n", "f", "0"})


def lax_bool(value: Any) -> bool | None:
    """A boolean of a judge's reply as a Pydantic model (Karenina reads replies into them)
    accepts one, else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return None
