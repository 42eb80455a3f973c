"""The prompts of the answering and parsing stages (verification spec §5), in our own words (the
judge's reply is read by ``providers.json_object``).

What the judge is never given (§5.3, tested): the question's reference answer, the template's
ground truth (``self.correct``, VerifiedField ground truths), ``verify()`` and regex checks, the
few-shot examples and the answering system prompt. The parsing prompt is built from the question
text, the response and the judge schema only; the schema comes from the sandbox, which strips
the verification metadata from it.
"""

from __future__ import annotations

import json
from typing import Any

from karenina_rdf.runner.providers import Message, with_instructions

DEFAULT_ANSWERING_SYSTEM_PROMPT = "You are an expert assistant. Answer the question accurately and concisely."

PARSING_SYSTEM_PROMPT = """You extract structured data from a response written by another assistant.

Fill in the JSON schema below from the response:
- take every value from the response's final answer, exactly as its field description asks;
- do not infer, correct or complete anything the response does not state;
- when a field is nullable and the response does not give it, use null;
- reply with one JSON object of the schema's types and nothing else: no prose, no code fences.

JSON schema:
{schema}
"""

PARSING_HINTS = "\nField extraction guidance:\n{hints}\n"


def answering_messages(
    question: str,
    system_prompt: str | None,
    examples: list[dict[str, str]] | None,
    instructions: str | None = None,
) -> tuple[Message, ...]:
    """System prompt (then PromptConfig's ``generation`` instructions), then the question,
    preceded by few-shot examples as alternating ``Question:``/``Answer:`` blocks ending in the
    question and a bare ``Answer:`` (§5.4)."""
    system = system_prompt if system_prompt is not None else DEFAULT_ANSWERING_SYSTEM_PROMPT
    system = with_instructions(system, instructions)
    if examples:
        blocks = [f"Question: {e['question']}\nAnswer: {e['answer']}" for e in examples]
        blocks.append(f"Question: {question}\nAnswer:")
        user = "\n\n".join(blocks)
    else:
        user = question
    return (Message(role="system", content=system), Message(role="user", content=user))


def parsing_messages(
    question: str, response: str, schema: dict[str, Any], instructions: str | None = None
) -> tuple[Message, ...]:
    """The judge's parsing prompt: the question and the response under two headings, the schema
    in the system text, the schema's extraction hints when it has any, and PromptConfig's
    ``parsing`` instructions last (Karenina's assembler appends them after everything else)."""
    system = PARSING_SYSTEM_PROMPT.format(schema=json.dumps(schema, indent=2, ensure_ascii=False))
    hints = _hints(schema)
    if hints:
        system += PARSING_HINTS.format(hints="\n".join(f"- {name}: {hint}" for name, hint in hints))
    system = with_instructions(system, instructions)
    user = f"## Original question\n{question}\n\n## Response to parse\n{response}"
    return (Message(role="system", content=system), Message(role="user", content=user))


def _hints(schema: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for name, prop in (schema.get("properties") or {}).items():
        hint = prop.get("extraction_hint") if isinstance(prop, dict) else None
        if isinstance(hint, str) and hint.strip():
            out.append((name, hint.strip()))
    return out
