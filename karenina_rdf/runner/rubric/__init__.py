"""Rubric evaluation: LLM, regex, metric and callable traits, their prompts and reply schemas;
dynamic traits' presence check."""

from ._dynamic import ABSENT, PRESENCE_SCHEMA, check_conflicts, merge_dynamic, presence_messages, read_presence
from ._evaluate import AGENTIC_SKIPPED, evaluate_rubric, merge_rubrics

__all__ = [
    "ABSENT",
    "AGENTIC_SKIPPED",
    "PRESENCE_SCHEMA",
    "check_conflicts",
    "evaluate_rubric",
    "merge_dynamic",
    "merge_rubrics",
    "presence_messages",
    "read_presence",
]
