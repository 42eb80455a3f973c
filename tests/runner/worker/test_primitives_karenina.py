"""The date primitives, SemanticMatch, quadratic decay and ConditionalGroundTruth decide as
Karenina's own: the same inputs go to Karenina's classes (its environment,
tests/helpers/karenina_ref.py) and to ours, and the answers are compared.

Two tables: primitives alone (``check`` and ``score``, or the type and message of what they
raise), and whole declarative templates verified with the same extracted values (``verify()``,
``verify_granular()``, per-field results and scores, the ground truth a result records). The
expected outcome of each row is also written down, so a row that both libraries got wrong the
same way would still fail.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from karenina_rdf.runner.sandbox import Limits, Sandbox
from karenina_rdf.runner.worker import _primitives as prim
from karenina_rdf.runner.worker._template import TemplateInvalid, load_template, verify
from tests.helpers.karenina_ref import karenina

# (primitive as Karenina serialises it, extracted, expected, our check, our score or None)
# An outcome "raises" means check() raises; its type and message are compared with Karenina's.
PRIMITIVE_CASES: list[tuple[dict[str, Any], Any, Any, Any, float | None]] = [
    ({"type": "DateMatch"}, "2024-03-05", "March 5, 2024", True, 1.0),
    ({"type": "DateMatch"}, "2024-03-05 23:59", "2024-03-05T00:01", True, 1.0),
    ({"type": "DateMatch"}, "2024-03-06", "2024-03-05", False, 0.0),
    ({"type": "DateMatch"}, "not a date", "2024-03-05", False, 0.0),
    ({"type": "DateMatch"}, "05/03/2024", "2024-05-03", True, 1.0),  # dateutil reads month first
    ({"type": "DateMatch", "format": "%d/%m/%Y"}, "05/03/2024", "05/03/2024", True, 1.0),
    ({"type": "DateMatch", "format": "%d/%m/%Y"}, "2024-03-05", "05/03/2024", False, 0.0),
    ({"type": "DateMatch"}, 20240305, "2024-03-05", True, 1.0),
    ({"type": "DateTolerance", "tolerance": 2}, "2024-03-07", "2024-03-05", True, 1.0),
    ({"type": "DateTolerance", "tolerance": 2}, "2024-03-08", "2024-03-05", False, 0.0),
    ({"type": "DateTolerance", "tolerance": 3, "unit": "hours"}, "2024-03-05 03:00", "2024-03-05", True, 1.0),
    ({"type": "DateTolerance", "tolerance": 3, "unit": "hours"}, "2024-03-05 03:01", "2024-03-05", False, 0.0),
    ({"type": "DateTolerance", "tolerance": 30, "unit": "minutes"}, "12:20", "12:00", True, 1.0),
    ({"type": "DateTolerance", "tolerance": 1}, "2024-03-05T00:00Z", "2024-03-05", False, 0.0),  # zoned vs naive
    ({"type": "DateTolerance", "tolerance": 1}, "garbage", "2024-03-05", False, 0.0),
    ({"type": "DateRange", "min": "2024-01-01", "max": "2024-12-31"}, "2024-06-01", None, True, 1.0),
    ({"type": "DateRange", "min": "2024-01-01", "max": "2024-12-31"}, "2024-12-31", None, True, 1.0),
    ({"type": "DateRange", "min": "2024-01-01", "max": "2024-12-31"}, "2025-01-01", None, False, 0.0),
    ({"type": "DateRange", "min": "2024-01-01"}, "2023-12-31", None, False, 0.0),
    ({"type": "DateRange", "max": "2024-01-01"}, "1999", None, True, 1.0),
    ({"type": "DateRange", "min": "nonsense"}, "2024-01-01", None, False, 0.0),
    ({"type": "SemanticMatch"}, "aspirin", "acetylsalicylic acid", "raises", None),
    ({"type": "SemanticMatch", "threshold": 0.5}, "a", "a", "raises", None),
    ({"type": "NumericGraded", "cutoff": 0.1, "decay": "quadratic"}, 105, 100, True, 0.75),
    ({"type": "NumericGraded", "cutoff": 0.1, "decay": "quadratic"}, 111, 100, False, 0.0),
    (
        {"type": "NumericGraded", "cutoff": 10, "full_credit": 2, "mode": "absolute", "decay": "quadratic"},
        6,
        0,
        False,
        0.75,
    ),
    (
        {"type": "NumericGraded", "cutoff": 10, "full_credit": 2, "mode": "absolute", "decay": "quadratic"},
        1,
        0,
        True,
        1.0,
    ),
    ({"type": "NumericGraded", "cutoff": 0.1, "decay": "quadratic"}, 1, 0, False, 0.0),  # relative to zero
    ({"type": "NumericGraded", "cutoff": 0.1}, 105, 100, True, 0.5),
    ({"type": "NumericRangeGraded", "min": 10, "max": 20, "margin": 4, "decay": "quadratic"}, 22, None, False, 0.75),
    (
        {"type": "NumericRangeGraded", "min": 10, "max": 20, "margin": 0.5, "mode": "relative", "decay": "quadratic"},
        7.5,
        None,
        False,
        0.75,
    ),
    (
        {"type": "NumericRangeGraded", "min": 10, "max": 20, "margin": 4, "exclusive_min": True, "decay": "quadratic"},
        10,
        None,
        False,
        1.0,
    ),
    ({"type": "NumericRangeGraded", "min": 10, "max": 20, "margin": 4, "decay": "quadratic"}, 30, None, False, 0.0),
    (
        {"type": "NumericThresholdGraded", "direction": "max", "margin": 0.5, "decay": "quadratic"},
        12.5,
        10,
        False,
        0.75,
    ),
    (
        {"type": "NumericThresholdGraded", "direction": "min", "margin": 2, "mode": "absolute", "decay": "quadratic"},
        9,
        10,
        False,
        0.75,
    ),
    (
        {"type": "NumericThresholdGraded", "direction": "max", "margin": 0.5, "exclusive": True, "decay": "quadratic"},
        10,
        10,
        False,
        1.0,
    ),
    ({"type": "NumericThresholdGraded", "direction": "max", "margin": 0.5, "decay": "quadratic"}, 1, 0, False, 0.0),
]

KARENINA_PRIMITIVES = """
import json, sys
from karenina.schemas.primitives.registry import _reconstruct_primitive
out = []
for spec, extracted, expected in json.loads(sys.argv[1]):
    p = _reconstruct_primitive(spec)
    row = {}
    for name in ("check", "score"):
        try:
            row[name] = getattr(p, name)(extracted, expected)
        except Exception as exc:
            row[name] = ["raises", type(exc).__name__, str(exc)]
    out.append(row)
print(json.dumps(out))
"""


def _ours(spec: dict[str, Any], extracted: Any, expected: Any) -> dict[str, Any]:
    params = dict(spec)
    primitive = prim.PRIMITIVES[params.pop("type")].model_validate(params)
    row: dict[str, Any] = {}
    for name in ("check", "score"):
        try:
            row[name] = getattr(primitive, name)(extracted, expected)
        except Exception as exc:
            row[name] = ["raises", type(exc).__name__, str(exc)]
    return row


def test_primitives_as_written_down() -> None:
    """The fast half: our answers against the outcomes written in the table."""
    for spec, extracted, expected, check, score in PRIMITIVE_CASES:
        row = _ours(spec, extracted, expected)
        if check == "raises":
            assert row["check"][:2] == ["raises", "NotImplementedError"], spec
            continue
        assert row["check"] is check, (spec, extracted, expected, row)
        assert row["score"] == pytest.approx(score), (spec, extracted, expected, row)


@pytest.mark.slow
def test_primitives_decide_as_karenina_s() -> None:
    cases = [[spec, extracted, expected] for spec, extracted, expected, _, _ in PRIMITIVE_CASES]
    theirs = karenina(KARENINA_PRIMITIVES, json.dumps(cases))
    ours = [_ours(spec, extracted, expected) for spec, extracted, expected in cases]
    assert len(theirs) == len(ours)
    for case, mine, kar in zip(cases, ours, theirs, strict=True):
        assert mine == kar, case


# Declarative templates with the new names, verified with the same extracted values.
_CONDITIONAL = """
class Answer(BaseAnswer):
    limit: float = VerifiedField(
        description="The dose limit in mg",
        ground_truth=ConditionalGroundTruth(
            source="node_results.probe.parsed.behavior",
            cases={"refused": GroundTruthCase(value=0, verify_with=NumericExact())},
            default=GroundTruthCase(value=100, verify_with=NumericGraded(cutoff=0.2, decay="quadratic")),
        ),
        verify_with=NumericExact(),
    )
    drug: str = VerifiedField(description="The drug", ground_truth="aspirin", verify_with=ExactMatch(), weight=2.0)
"""
_CONDITIONAL_KEEPS_PRIMITIVE = """
class Answer(BaseAnswer):
    city: str = VerifiedField(
        description="The city",
        ground_truth=ConditionalGroundTruth(
            source="x", cases={}, default=GroundTruthCase(value="Paris")
        ),
        verify_with=ExactMatch(),
    )
"""
_DATES = """
class Answer(BaseAnswer):
    approved: str = VerifiedField(description="Approval date", ground_truth="1998-03-27", verify_with=DateMatch())
    trial_end: str = VerifiedField(
        description="End of trial", ground_truth="2020-01-10", verify_with=DateTolerance(tolerance=7)
    )
    filed: str = VerifiedField(description="Filing date", ground_truth=None,
                               verify_with=DateRange(min="2019-01-01", max="2019-12-31"))

    class VerificationStrategy:
        verify_strategy = AtLeastN(
            n=2,
            conditions=[FieldCheck(field="approved"), FieldCheck(field="trial_end"), FieldCheck(field="filed")],
        )
"""
_SEMANTIC = """
class Answer(BaseAnswer):
    mechanism: str = VerifiedField(
        description="Mechanism of action", ground_truth="inhibits COX enzymes", verify_with=SemanticMatch(threshold=0.8)
    )
    drug: str = VerifiedField(description="The drug", ground_truth="aspirin", verify_with=ExactMatch())
"""

# (template, extracted values, verify(), field results) — granular and scores compared with Karenina.
TEMPLATE_CASES: list[tuple[str, dict[str, Any], bool | None, dict[str, Any] | None]] = [
    (_CONDITIONAL, {"limit": 110, "drug": "Aspirin"}, True, {"limit": True, "drug": True}),
    (_CONDITIONAL, {"limit": 130, "drug": "aspirin"}, False, {"limit": False, "drug": True}),
    (_CONDITIONAL, {"limit": 0, "drug": "aspirin"}, False, {"limit": False, "drug": True}),  # the default case
    (_CONDITIONAL_KEEPS_PRIMITIVE, {"city": " paris"}, True, {"city": True}),
    (
        _DATES,
        {"approved": "March 27, 1998", "trial_end": "2020-01-20", "filed": "2019-06-01"},
        True,
        {"approved": True, "trial_end": False, "filed": True},
    ),
    (
        _DATES,
        {"approved": "1998-03-28", "trial_end": "2020-01-20", "filed": "2019-06-01"},
        False,
        {"approved": False, "trial_end": False, "filed": True},
    ),
    (
        _DATES,
        {"approved": "unknown", "trial_end": "2020-01-10 12:00", "filed": "2019"},
        True,
        {"approved": False, "trial_end": True, "filed": True},
    ),
    (_SEMANTIC, {"mechanism": "blocks cyclooxygenase", "drug": "aspirin"}, False, None),
]

KARENINA_TEMPLATES = """
import json, sys
from karenina.benchmark.verification.utils.template_validation import validate_answer_template
out = []
for code, parsed in json.loads(sys.argv[1]):
    ok, error, cls = validate_answer_template(code)
    assert ok, error
    answer = cls(**parsed)
    answer._raw_trace = ""
    row = {}
    try:
        row["verify"] = answer.verify()
        row["error"] = None
    except Exception as exc:
        row["verify"], row["error"] = False, str(exc)
    row["granular"] = None
    if row["error"] is None:
        row["granular"] = answer.verify_granular()
    gt = answer.model_dump().get("correct")
    try:
        row["field_results"] = answer._compute_field_results()
        row["field_scores"] = answer._compute_field_scores()
        resolved = answer._get_resolved_ground_truths()
        if resolved and gt is not None:
            gt.update(resolved)
        elif resolved:
            gt = dict(resolved)
    except Exception:
        row["field_results"] = row["field_scores"] = None
    row["parsed_gt_response"] = gt
    out.append(row)
print(json.dumps(out))
"""


def _verify_ours(code: str, parsed: dict[str, Any]) -> dict[str, Any]:
    got = verify(load_template(code), parsed, "", "q1")
    error = got["field_verification_error"]
    return {
        "verify": got["verify_result"],
        # Ours records the exception's type before its message; Karenina records the message.
        "error": error.split(": ", 1)[1] if error else None,
        "granular": got["verify_granular_result"],
        "field_results": got["field_results"],
        "field_scores": got["field_scores"],
        "parsed_gt_response": got["parsed_gt_response"],
    }


def test_templates_as_written_down() -> None:
    for code, parsed, verdict, fields in TEMPLATE_CASES:
        got = _verify_ours(code, parsed)
        assert got["verify"] is verdict, (parsed, got)
        assert got["field_results"] == fields, (parsed, got)
    conditional = _verify_ours(_CONDITIONAL, {"limit": 110, "drug": "aspirin"})
    # The default case: value 100, its own graded primitive (quadratic: 1 - 0.5**2 for 10 % of 20 %).
    assert conditional["parsed_gt_response"] == {"drug": "aspirin", "limit": 100}
    assert conditional["field_scores"] == {"limit": pytest.approx(0.75), "drug": 1.0}
    assert conditional["granular"] == pytest.approx((0.75 + 2.0) / 3.0)
    semantic = _verify_ours(_SEMANTIC, {"mechanism": "x", "drug": "aspirin"})
    assert semantic["error"] and "embedding_check" in semantic["error"]
    assert semantic["granular"] is None


@pytest.mark.slow
def test_templates_verify_as_karenina_s() -> None:
    cases = [[code, parsed] for code, parsed, _, _ in TEMPLATE_CASES]
    theirs = karenina(KARENINA_TEMPLATES, json.dumps(cases))
    for (code, parsed), kar in zip(cases, theirs, strict=True):
        mine = _verify_ours(code, parsed)
        assert mine == kar, (parsed, mine, kar)
        # Same order of keys too: the recorded ground truth is shown as stored.
        assert list(mine["parsed_gt_response"] or {}) == list(kar["parsed_gt_response"] or {})


@pytest.mark.parametrize(
    ("field", "reason"),
    [
        (  # Karenina's ConditionalGroundTruth requires a default case
            "VerifiedField(description='x', ground_truth=ConditionalGroundTruth(source='a', cases={}), "
            "verify_with=ExactMatch())",
            "default",
        ),
        (
            "VerifiedField(description='x', ground_truth='2024', verify_with=DateTolerance(tolerance=1, unit='weeks'))",
            "unit",
        ),
        (
            "VerifiedField(description='x', ground_truth=ConditionalGroundTruth(source='a', cases={}, "
            "default=GroundTruthCase(value=1, verify_with='ExactMatch')), verify_with=ExactMatch())",
            "verify_with must be a VerificationPrimitive",
        ),
    ],
)
def test_malformed_new_primitives_fail_validation(field: str, reason: str) -> None:
    with pytest.raises(TemplateInvalid) as caught:
        load_template(f"class Answer(BaseAnswer):\n    value: str = {field}\n")
    assert reason in str(caught.value)


@pytest.mark.slow
def test_the_sandboxed_worker_decides_the_same() -> None:
    """dateutil is imported before the sandbox closes; parsing inside it needs no file or network."""
    with Sandbox(workers=1, limits=Limits(cpu_seconds=2, wall_seconds=6, memory_mb=256)) as sb:
        for code, parsed, _, _ in TEMPLATE_CASES:
            outcome = sb.verify_template(code, parsed, "", "q1")
            assert outcome.ok, outcome.error
            inside = {k: outcome.value[k] for k in ("verify_result", "field_results", "field_scores")}
            here = verify(load_template(code), parsed, "", "q1")
            assert inside == {k: here[k] for k in inside}, parsed
            assert outcome.value["parsed_gt_response"] == here["parsed_gt_response"]
