"""Karenina's JSON extraction, ported (``_json_extraction.py``), against Karenina's own functions
(utils/json_extraction.py) run in its environment on the same replies and error texts."""

from __future__ import annotations

import json

import pytest

from karenina_rdf.runner.providers._json_extraction import extract_json_from_response, is_invalid_json_error
from tests.helpers.karenina_ref import karenina

pytestmark = pytest.mark.slow  # Karenina in its own environment

REPLIES = [
    '{"a": 1}',
    '  {"a": 1}  \n',
    "[1, 2]",
    '```json\n{"a": 1}\n```',
    '```\n{"a": 1}\n```',
    '```json\n{"a": tru}\n```',  # a fence is taken as it is, decoding or not
    '```python\nx = 1\n```\nthen {"a": 2}',
    'First {"a": 1} then {"a": 2}.',
    'Braces in strings {"a": "}{"} and an escape {"b": "say \\"hi\\""}',
    'Broken {"a": 1 and then {"b": 2}',
    '{"a": 1',
    "Nothing here",
    "",
    '{"outer": {"inner": {"a": 1}}} trailing',
    '\\{"a": 1}',
    '{"a": 1}}}',
    '```json\n[1]\n``` and {"a": 1}',
]
ERRORS = [
    ("Could not parse response into A: Expecting value here", "ParseError"),
    ("Could not parse response into A: INVALID JSON", "ParseError"),
    ("Could not parse response into A: fine words", "ParseError"),
    ("whatever", "JSONDecodeError"),
    ("whatever", "OutputParserException"),
    ("an invalid \\escape", "ValueError"),
    ("Extra data: line 1", "ValueError"),
]

KARENINA = r"""
import json, sys
from karenina.utils.json_extraction import extract_json_from_response, is_invalid_json_error
replies, errors = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {"replies": [], "errors": []}
for r in replies:
    try:
        out["replies"].append(extract_json_from_response(r))
    except ValueError as exc:
        out["replies"].append({"error": str(exc)})
for message, name in errors:
    out["errors"].append(is_invalid_json_error(type(name, (Exception,), {})(message)))
print(json.dumps(out))
"""


def _ours(reply: str) -> str | dict[str, str]:
    try:
        return extract_json_from_response(reply)
    except ValueError as exc:
        return {"error": str(exc)}


def test_extraction_and_json_error_test_are_karenina_s() -> None:
    theirs = karenina(KARENINA, json.dumps(REPLIES), json.dumps(ERRORS))
    assert [_ours(r) for r in REPLIES] == theirs["replies"]
    assert [is_invalid_json_error(m, n) for m, n in ERRORS] == theirs["errors"]
    assert any(isinstance(x, dict) for x in theirs["replies"]) and any(theirs["errors"])  # both outcomes seen
