"""Karenina's EmbeddingCheck stage (verification spec §3.2): a semantic fallback for a template
whose field verification failed.

What it compares is what Karenina compares: the template's parsed ground truth (its
``correct`` dict) and the judge's parsed fields (``id``, ``correct`` and ``regex`` left out),
each as sorted-key JSON. Never the question's reference answer. The two texts are embedded by
an embeddings model (an OpenAI-compatible ``/embeddings`` endpoint behind the provider
interface, where Karenina loads a SentenceTransformer locally), their cosine similarity is
clamped to [0, 1], and when it reaches the threshold (``>=``) the judge is asked whether the
two are semantically equivalent; a reply starting "YES" overrides the field verdict. Karenina's
outcomes, kept here:

* check switched off: nothing recorded (the result's defaults: False, None, False, None);
* ground truth or parsed fields empty: performed, similarity 0.0, no call to either model
  (with threshold 0.0 the equivalence check still says no without a call);
* the embeddings call fails: performed, no similarity, no model name, no override;
* below the threshold: performed, similarity and model recorded, no judge call;
* the judge's call fails: performed, similarity recorded, no override.

The override sets the field verdict to true and ``verify_result`` to the regex checks' verdict
(an embedding never overrides a failed regex check).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from karenina_rdf.runner.providers import EmbeddingRequest, EmbeddingResponse, Message

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # Karenina's defaults (schemas/verification/config.py)
DEFAULT_EMBEDDING_THRESHOLD = 0.85


class EmbeddingCheckConfig(BaseModel):
    """Karenina's ``embedding_check_enabled`` / ``_model`` / ``_threshold``. ``model`` names the
    embeddings model the endpoint is asked for and the one results record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    model: str = DEFAULT_EMBEDDING_MODEL
    threshold: float = Field(default=DEFAULT_EMBEDDING_THRESHOLD, ge=0.0, le=1.0)


SEMANTIC_SYSTEM = (
    "You judge whether two structured answers to the same question mean the same thing. They may "
    "differ in wording, formatting or structure; call them equivalent when they give the question "
    "the same core answer, would lead to the same conclusion, and are equally correct. Reply with "
    "the single word YES if they are equivalent, NO if they are not."
)


def comparable(data: dict[str, Any] | None) -> str:
    """Karenina's comparable string: sorted-key JSON (``str`` for what JSON cannot hold)."""
    if data is None:
        return ""
    try:
        return json.dumps(data, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(data)


def semantic_messages(question: str | None, truth: str, response: str) -> tuple[Message, ...]:
    context = f"Question:\n{question}\n\n" if question else ""
    user = (
        f"{context}Expected answer (parsed):\n{truth}\n\nModel's answer (parsed):\n{response}\n\n"
        "Are the two answers semantically equivalent? YES or NO."
    )
    return (Message(role="system", content=SEMANTIC_SYSTEM), Message(role="user", content=user))


def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Cosine similarity clamped to [0, 1], as Karenina clamps it; a zero vector gives 0."""
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    if na == 0.0 or nb == 0.0 or len(a) != len(b):
        return 0.0
    return max(0.0, min(1.0, sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)))


@dataclass
class EmbeddingOutcome:
    performed: bool
    score: float | None
    model: str | None
    override: bool
    embedding: EmbeddingResponse | None = None
    judged: Any = None  # the judge's ChatResponse, when asked


def embedding_check(
    config: EmbeddingCheckConfig,
    truth: dict[str, Any] | None,
    parsed: dict[str, Any] | None,
    question: str | None,
    *,
    embed: Callable[[EmbeddingRequest], EmbeddingResponse],
    ask: Callable[[tuple[Message, ...]], Any],
    label: str = "",
) -> EmbeddingOutcome:
    """Karenina's ``perform_embedding_check``; ``embed`` and ``ask`` raise on a failed call."""
    if not truth or not parsed:
        # Karenina: similarity 0.0 without loading the model; the equivalence check refuses empty data.
        return EmbeddingOutcome(True, 0.0, config.model, False)
    texts = (comparable(truth), comparable(parsed))
    try:
        embedded = embed(EmbeddingRequest(model=config.model, texts=texts, label=label))
        score = cosine(embedded.vectors[0], embedded.vectors[1])
    except Exception:  # Karenina: a failed embedding records the attempt and nothing else
        return EmbeddingOutcome(True, None, None, False)
    outcome = EmbeddingOutcome(True, score, config.model, False, embedded)
    if score < config.threshold:
        return outcome
    try:
        outcome.judged = ask(semantic_messages(question, *texts))
    except Exception:  # Karenina: a failed equivalence check does not override
        return outcome
    outcome.override = outcome.judged.text.strip().upper().startswith("YES")
    return outcome
