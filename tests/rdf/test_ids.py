"""Karenina's identifiers (spec §7), reproduced exactly, and our minted IRIs."""

from __future__ import annotations

import hashlib

import pytest

from karenina_rdf import generate_question_id, question_md5_id, template_id
from karenina_rdf.rdf._ids import benchmark_iri, md5_hex, segment, unsegment


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


def _template_id_by_the_rule(code: str) -> str:
    # Karenina's normalisation written out in full (spec §7.2), without the fast path.
    import textwrap

    text = textwrap.dedent(code).replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip()
    return md5_hex(text) if text else "no_template"


def test_template_id_fast_path_agrees_with_the_rule() -> None:
    import random

    rng = random.Random(0)
    alphabet = [" ", "\t", "\n", "\r", "a", "b", "\x0c", "\u00a0", "\x1c", "\u2028", "    "]
    samples = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 14))) for _ in range(30_000)]
    samples += ["class Answer(BaseAnswer):\n    x: int\n", "  x = 1\n  y = 2\n", "x\r\ny", "\n\nx\n\n"]
    for code in samples:
        assert template_id(code) == _template_id_by_the_rule(code), repr(code)
