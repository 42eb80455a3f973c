"""Rubric evaluation: LLM, regex, metric and callable traits, their prompts and reply schemas;
dynamic traits' presence check."""

from ._deep_judgment import (
    AUTOFAIL_STAGE as RUBRIC_AUTOFAIL_STAGE,
)
from ._deep_judgment import (
    RUBRIC_DJ_MODES,
    DeepJudgmentRubricCustomConfig,
    DeepJudgmentTraitConfig,
    RubricDeepJudgmentConfig,
    fuzzy_match,
)
from ._dynamic import ABSENT, PRESENCE_SCHEMA, check_conflicts, merge_dynamic, presence_messages, read_presence
from ._evaluate import AGENTIC_SKIPPED, evaluate_rubric, merge_rubrics

__all__ = [
    "ABSENT",
    "AGENTIC_SKIPPED",
    "PRESENCE_SCHEMA",
    "RUBRIC_AUTOFAIL_STAGE",
    "RUBRIC_DJ_MODES",
    "DeepJudgmentRubricCustomConfig",
    "DeepJudgmentTraitConfig",
    "RubricDeepJudgmentConfig",
    "check_conflicts",
    "evaluate_rubric",
    "fuzzy_match",
    "merge_dynamic",
    "merge_rubrics",
    "presence_messages",
    "read_presence",
]
