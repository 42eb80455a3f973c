"""Karenina's identifiers (spec §7), reproduced exactly, and our minted IRIs."""

from __future__ import annotations

import hashlib

import pytest

from karenina_rdf import generate_question_id, question_md5_id, template_id
from karenina_rdf._ids import benchmark_iri, segment, unsegment


@pytest.mark.parametrize(
    ("text", "existing", "expected"),
    [
        ("What is the capital of France?", (), "urn:uuid:question-what-is-the-capital-of-france-cb0b4aaf"),
        (
            "What is the capital of France?",
            ("urn:uuid:question-what-is-the-capital-of-france-cb0b4aaf",),
            "urn:uuid:question-what-is-the-capital-of-france-cb0b4aaf-1",
        ),
        (
            "What is the capital of France?",
            (
                "urn:uuid:question-what-is-the-capital-of-france-cb0b4aaf",
                "urn:uuid:question-what-is-the-capital-of-france-cb0b4aaf-1",
            ),
            "urn:uuid:question-what-is-the-capital-of-france-cb0b4aaf-2",
        ),
        # Only spaces become dashes and only ?.,  are removed; the slug is cut at 50 characters.
        (
            "Don't: Ménière's disease, is it inner-ear? Yes. And a long tail here",
            (),
            "urn:uuid:question-don't:-ménière's-disease-is-it-inner-ear-yes-and-a-"
            + hashlib.md5("Don't: Ménière's disease, is it inner-ear? Yes. And a long tail here".encode()).hexdigest()[
                :8
            ],
        ),
    ],
    ids=["plain", "first collision", "second collision", "slug rules"],
)
def test_generate_question_id(text: str, existing: tuple[str, ...], expected: str) -> None:
    assert generate_question_id(text, existing) == expected


def test_question_md5_id() -> None:
    assert question_md5_id("What is 2+2?") == hashlib.md5(b"What is 2+2?").hexdigest()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("", "no_template"),
        ("   \n", "no_template"),
        ("class Answer:\n    pass\n", hashlib.md5(b"class Answer:\n    pass").hexdigest()),
        ("\n    class Answer:\n        pass   \n", hashlib.md5(b"class Answer:\n    pass").hexdigest()),
    ],
    ids=["empty", "blank", "plain", "dedented and stripped"],
)
def test_template_id(code: str, expected: str) -> None:
    assert template_id(code) == expected


@pytest.mark.parametrize("raw", ["urn:uuid:question-a/b?c#d", "q 1", "100%", "ménière", "a~2"])
def test_segments_are_reversible_iri_safe(raw: str) -> None:
    seg = segment(raw)
    assert unsegment(seg) == raw
    assert not set(seg) & set("/?# ")
    assert all(seg[i + 1 : i + 3].isalnum() and len(seg[i + 1 : i + 3]) == 2 for i, c in enumerate(seg) if c == "%")
    assert benchmark_iri("http://x/", raw) == f"http://x/benchmarks/{seg}"
