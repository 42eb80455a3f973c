"""Karenina's prompting settings of a run (verification spec §5.1, §9.4): ``PromptConfig`` (user
instructions appended to each kind of LLM call) and ``FewShotConfig`` (which of a question's
few-shot examples the answering model sees). Field names, defaults and resolution rules are
Karenina's, so a preset's ``prompt_config`` and ``few_shot_config`` objects load as they are.
"""

from __future__ import annotations

import hashlib
import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class PromptConfig(BaseModel):
    """Instructions appended last to the system text of the calls of one kind (Karenina's
    ``PromptConfig``). ``for_task`` resolves a task name as Karenina's ``get_for_task`` does:
    the field of that name, else its category (``rubric_*`` → ``rubric_evaluation``,
    ``agentic_parsing_*`` → ``agentic_parsing``, ``dj_*`` → ``deep_judgment``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    generation: str | None = None
    parsing: str | None = None
    abstention_detection: str | None = None
    sufficiency_detection: str | None = None
    rubric_evaluation: str | None = None
    agentic_parsing: str | None = None
    deep_judgment: str | None = None

    def for_task(self, task: str) -> str | None:
        direct: str | None = getattr(self, task) if task in type(self).model_fields else None
        if direct is not None:
            return direct
        if task.startswith("rubric_"):
            return self.rubric_evaluation
        if task.startswith("agentic_parsing_"):
            return self.agentic_parsing
        if task.startswith("dj_"):
            return self.deep_judgment
        return None


class QuestionFewShotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["all", "k-shot", "custom", "inherit"] = "inherit"
    k: int | None = None
    selected_examples: list[str | int] | None = None  # indices, or MD5 of an example's question text
    excluded_examples: list[str | int] | None = None


class FewShotConfig(BaseModel):
    """Karenina's ``FewShotConfig``: ``source`` says which examples are active (the question's
    pool, the global examples, both, or none: ``disabled``); ``pool_mode`` how the pool is
    chosen (``all``, ``k-shot``: ``pool_k`` of them drawn with a seed from the question id,
    ``custom``: chosen by index or by the MD5 of the example's question), per question
    overridable in ``question_configs``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["disabled", "question_pool", "global", "both"] = "both"
    pool_mode: Literal["all", "k-shot", "custom"] = "all"
    pool_k: int = 3
    question_configs: dict[str, QuestionFewShotConfig] = Field(default_factory=dict)
    global_examples: list[dict[str, str]] = Field(default_factory=list)

    @field_validator("pool_k")
    @classmethod
    def _k_positive(cls, k: int) -> int:
        if k < 1:  # Karenina's VerificationConfig rejects k-shot k < 1
            raise ValueError("pool_k must be at least 1")
        return k

    @staticmethod
    def generate_example_hash(question_text: str) -> str:
        """Karenina's name for an example in ``custom`` selections: the MD5 of its question."""
        return example_hash(question_text)

    @property
    def enabled(self) -> bool:
        """Karenina's ``is_few_shot_enabled``: what results record as ``few_shot_enabled``."""
        return self.source != "disabled"

    def effective(self, question_id: str) -> QuestionFewShotConfig:
        own = self.question_configs.get(question_id, QuestionFewShotConfig())
        if own.mode == "inherit":
            return QuestionFewShotConfig(
                mode=self.pool_mode,
                k=self.pool_k,
                selected_examples=own.selected_examples,
                excluded_examples=own.excluded_examples,
            )
        return own.model_copy(update={"k": own.k if own.k is not None else self.pool_k})

    def examples_for(
        self, question_id: str, pool: list[dict[str, str]], question_text: str | None
    ) -> list[dict[str, str]]:
        """The examples one question's answering prompt gets, chosen as Karenina's
        ``resolve_examples_for_question`` chooses them (its k-shot draw, seeded by the MD5 of the
        question id, gives the same sample here)."""
        if self.source == "disabled":
            return []
        chosen: list[dict[str, str]] = []
        if self.source in ("question_pool", "both"):
            cfg = self.effective(question_id)
            by_hash: dict[str, int] = {}
            if question_text is not None and pool:
                by_hash = {example_hash(e.get("question", "")): i for i, e in enumerate(pool)}
            if cfg.mode == "all":
                chosen = list(pool)
            elif cfg.mode == "k-shot":
                k = cfg.k if cfg.k is not None else self.pool_k
                if len(pool) <= k:
                    chosen = list(pool)
                else:
                    # Karenina reseeds the module-level generator; a private one gives the same draw
                    # without disturbing anyone else's random numbers.
                    rng = random.Random(int(hashlib.md5(question_id.encode()).hexdigest(), 16) & 0x7FFFFFFF)
                    chosen = rng.sample(pool, k)
            elif cfg.mode == "custom" and cfg.selected_examples:
                for sel in cfg.selected_examples:
                    if isinstance(sel, int):
                        if 0 <= sel < len(pool):
                            chosen.append(pool[sel])
                    elif sel in by_hash:
                        chosen.append(pool[by_hash[sel]])
            if cfg.excluded_examples:
                # As Karenina: exclusions are positions in the chosen list (an index means the
                # pool's position only when every example was chosen, as in mode "all").
                out = {e if isinstance(e, int) else by_hash.get(e, -1) for e in cfg.excluded_examples}
                chosen = [e for i, e in enumerate(chosen) if i not in out]
        if self.source in ("global", "both") and self.global_examples:
            chosen = chosen + list(self.global_examples)
        return chosen


def example_hash(question_text: str) -> str:
    """Karenina's ``generate_example_hash``: how ``custom`` selections name an example."""
    return hashlib.md5(question_text.encode("utf-8")).hexdigest()


class DeepJudgmentConfig(BaseModel):
    """Karenina's template deep-judgment settings (``VerificationConfig.deep_judgment_*``), without
    web search."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["disabled", "reasoning_only", "full"] = "disabled"
    max_excerpts_per_attribute: int = Field(default=3, ge=1)
    fuzzy_match_threshold: float = Field(default=0.80, ge=0.0, le=1.0)
    excerpt_retry_attempts: int = Field(default=2, ge=0)


FEW_SHOT_MODES = ("none", "all", "k-shot", "custom")


def few_shot_for_mode(mode: str, k: int = 3) -> FewShotConfig | None:
    """The command line's ``--few-shot-mode``: ``none`` is no few-shot at all (Karenina's
    ``few_shot_config=None``); the others are a FewShotConfig of that pool mode."""
    if mode == "none":
        return None
    if mode not in FEW_SHOT_MODES:
        raise ValueError(f"few-shot mode {mode!r}: one of {', '.join(FEW_SHOT_MODES)}")
    return FewShotConfig(pool_mode=mode, pool_k=k)  # type: ignore[arg-type]
