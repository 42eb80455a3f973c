"""The export's JSON writer (``_export._dumps``) writes exactly what Karenina's
``json.dump(indent=2, ensure_ascii=False)`` writes, at every depth it is used."""

from __future__ import annotations

import json
from typing import Any

import pytest

from karenina_rdf.checkpoint._export import _dumps

VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -7,
    2**70,
    1.5,
    -0.0,
    1e300,
    float("nan"),
    float("inf"),
    float("-inf"),
    "",
    'quote " backslash \\ newline \n tab \t U+2028 \u2028 accents é emoji 😀 nul \x00 \x1f',
    [],
    {},
    (),
    [[], {}, [[]], {"a": {}}],
    ("a", 1, (2, 3)),
    {"@type": "Question", "text": "What?", "rating": [{"bestRating": 5.0, "x": None}], "keywords": ["a", "b"]},
    {"é": {"\n": ["x", {"": False}]}},
    {1: "int key", False: "bool key", None: "null key", 1.5: [], "s": {2: 3}},  # keys json converts
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize("indent", ["", "  ", "    "])
def test_same_bytes_as_json_dumps(value: Any, indent: str) -> None:
    expected = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)
    assert _dumps(value, indent) == expected


@pytest.mark.parametrize("value", [{1, 2}, {"a": [b"bytes"]}, {("t",): 1}])
def test_what_json_refuses_is_refused_alike(value: Any) -> None:
    with pytest.raises(TypeError) as ours:
        _dumps(value, "  ")
    with pytest.raises(TypeError) as theirs:
        json.dumps(value, indent=2, ensure_ascii=False)
    assert str(ours.value) == str(theirs.value)
