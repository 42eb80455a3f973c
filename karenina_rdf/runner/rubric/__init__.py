"""Rubric evaluation: LLM, regex, metric and callable traits, their prompts and reply schemas."""

from ._evaluate import evaluate_rubric, merge_rubrics

__all__ = ["evaluate_rubric", "merge_rubrics"]
