"""How Karenina's LangChain adapters find the JSON in a judge's reply, ported line for line
because the decisions depend on it (utils/json_extraction.py ``extract_json_from_response``,
``extract_json_from_text``, ``extract_balanced_braces``, ``is_invalid_json_error``).

It is not :func:`~karenina_rdf.runner.providers._base.json_object` (the first object that
decodes): Karenina takes the whole reply when it decodes, else the first fenced block that starts
like JSON (decoding or not), else the *last* balanced ``{...}`` that decodes. A reply with two
objects in prose, or a fence holding broken JSON, is read differently by the two.
tests/runner/providers/test_json_extraction.py compares it with Karenina's on a table of replies.
"""

from __future__ import annotations

import json
import re

__all__ = ["extract_json_from_response", "is_invalid_json_error"]

_CODE_BLOCK = re.compile(r"```(?:json)?\s*\n?([\s\S]*?)\n?```")

# utils/json_extraction.py is_invalid_json_error: these in the error's text (lower-cased), or
# the error's type name, make it a JSON-format error.
_JSON_ERROR_PATTERNS = (
    "invalid json",
    "json decode",
    "jsondecodeerror",
    "expecting value",
    "expecting property name",
    "unterminated string",
    "extra data",
    "invalid control character",
    "invalid \\escape",
    "invalid literal",
    "no json object could be decoded",
    "output_parsing_failure",
)
_JSON_ERROR_TYPES = ("JSONDecodeError", "OutputParserException")


def extract_balanced_braces(text: str, start: int) -> str | None:
    """The balanced ``{...}`` starting at ``start`` (braces inside strings not counted), or None."""
    if start >= len(text) or text[start] != "{":
        return None
    depth = 0
    in_string = False
    escape_next = False
    i = start
    while i < len(text):
        char = text[i]
        if escape_next:
            escape_next = False
        elif char == "\\":
            escape_next = True
        elif char == '"':
            in_string = not in_string
        elif not in_string:
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        i += 1
    return None


def extract_json_from_text(text: str) -> str | None:
    """The last balanced ``{...}`` of ``text`` that decodes (Karenina: a reply reasons first,
    then gives its JSON), or None."""
    candidates: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "{":
            found = extract_balanced_braces(text, i)
            if found:
                candidates.append(found)
                i += len(found)
                continue
        i += 1
    for candidate in reversed(candidates):
        try:
            json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return candidate
    return None


def extract_json_from_response(text: str) -> str:
    """The JSON text of a reply as Karenina finds it; ValueError when there is none."""
    text = text.strip()
    if text.startswith(("{", "[")):
        try:
            json.loads(text)
        except json.JSONDecodeError:
            pass
        else:
            return text
    matches: list[str] = _CODE_BLOCK.findall(text)
    for match in matches:
        extracted = match.strip()
        if extracted.startswith(("{", "[")):
            return extracted  # not decoded here: Karenina returns it as it is
    found = extract_json_from_text(text)
    if found:
        return found
    raise ValueError(f"Could not extract JSON from response: {text[:200]}...")


def is_invalid_json_error(message: str, type_name: str) -> bool:
    """Karenina's test for "the reply was not valid JSON", on an error's text and type name."""
    lowered = message.lower()
    return any(p in lowered for p in _JSON_ERROR_PATTERNS) or type_name in _JSON_ERROR_TYPES
