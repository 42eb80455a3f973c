"""The answer-template runtime: how templates are loaded, validated and verified (spec §4).

Most tests call the engine in-process (``_template``); the sandbox runs the same code in its
workers, and ``test_runner_sandbox.py`` covers that path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf.runner.worker import _primitives as prim
from karenina_rdf.runner.worker._runtime import judge_schema
from karenina_rdf.runner.worker._template import ParseFailure, TemplateInvalid, load_template, verify
from tests.conftest import CORPUS, EXAMPLES


def _templates_in(path: Path) -> list[str]:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("@type") == "SoftwareSourceCode" and isinstance(node.get("text"), str):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(path.read_text()))
    return found


EXAMPLE_TEMPLATES = [
    pytest.param(code, id=f"{path.stem}-{i}")
    for path in sorted(EXAMPLES.glob("*.jsonld"))
    for i, code in enumerate(_templates_in(path))
]


def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    return "something unrelated"


@pytest.mark.parametrize("code", EXAMPLE_TEMPLATES)
def test_example_templates_accept_their_ground_truth_and_reject_wrong_values(code: str) -> None:
    tpl = load_template(code)
    assert not tpl.info["regex_only"] and not tpl.info["declarative"]
    truth = verify(tpl, _placeholders(tpl), "", None)
    correct = truth["parsed_gt_response"]
    assert set(correct) == set(tpl.info["fields"])

    right = verify(tpl, correct, "", "q1")
    assert right["verify_result"] is True
    assert right["parsed_llm_response"] == correct  # id, correct and regex are not extracted values
    assert right["template_verification_performed"] is True
    for name in correct:
        wrong = verify(tpl, {**correct, name: _wrong(correct[name])}, "", "q1")
        assert wrong["verify_result"] is False, name


def _placeholders(tpl: Any) -> dict[str, Any]:
    kinds = {"string": "", "integer": 0, "boolean": False, "number": 0.0}
    properties = tpl.info["json_schema"]["properties"]
    return {name: kinds[properties[name]["type"]] for name in tpl.info["fields"]}


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the Karenina corpus is absent")
def test_corpus_templates() -> None:
    capital, *defaults = _templates_in(CORPUS / "generated__all_features.jsonld")
    tpl = load_template(capital)
    assert verify(tpl, {"capital": " paris "}, "Paris.", None)["verify_result"] is True
    assert verify(tpl, {"capital": "Lyon"}, "Lyon.", None)["verify_result"] is False
    for code in defaults:  # Karenina's generated placeholder templates always fail
        assert verify(load_template(code), {"response": "Paris"}, "Paris", None)["verify_result"] is False


CLASSIC = """
class Answer(BaseAnswer):
    count: int = Field(description="How many")

    def ground_truth(self):
        self.correct = {"count": 4}

    def verify(self) -> bool:
        return self.count == self.correct["count"]
"""


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("", "template code is empty"),
        ("x = 1", "No BaseAnswer subclass found"),
        ("class Answer(BaseModel):\n    x: int = 1", "NameError"),  # pydantic's BaseModel is not pre-injected
        (
            CLASSIC + "\nclass Other(BaseAnswer):\n    y: int\n    def verify(self):\n        return True\n",
            "several BaseAnswer subclasses (Answer, Other)",
        ),
        ("class Answer(BaseAnswer):\n    x: int = Field(description='x')\n", "does not have a 'verify' method"),
        (CLASSIC.replace('{"count": 4}', "[4]"), "must assign 'self.correct' as a dictionary"),
        (CLASSIC.replace('self.correct = {"count": 4}', "1 / 0"), "Error testing model_post_init: ZeroDivisionError"),
        ("class Answer(BaseAnswer):\n    correct: int\n    def verify(self):\n        return True\n", "reserved"),
        ("class Answer(BaseAnswer)\n    pass\n", "SyntaxError"),
    ],
    ids=[
        "empty",
        "no class",
        "not BaseAnswer",
        "two leaves",
        "no verify",
        "non-dict correct",
        "gt raises",
        "reserved",
        "syntax",
    ],
)
def test_invalid_templates(code: str, reason: str) -> None:
    with pytest.raises(TemplateInvalid) as caught:
        load_template(code)
    assert reason in str(caught.value)


def test_intermediate_bases_and_model_post_init_spelling() -> None:
    code = """
class Base(BaseAnswer):
    def verify(self) -> bool:
        return self.name.lower() == self.correct["name"].lower()

class Answer(Base):
    name: str = Field(description="The name")

    def model_post_init(self, __context):
        self.correct = {"name": "TP53"}
"""
    tpl = load_template(code)
    assert tpl.info["class_name"] == "Answer"
    assert tpl.cls.get_source_code() == code
    assert verify(tpl, {"name": "tp53"}, "", None)["verify_result"] is True


def test_verify_raising_is_recorded_not_raised() -> None:
    tpl = load_template(CLASSIC.replace('return self.count == self.correct["count"]', "return 1 / 0") + GRANULAR)
    result = verify(tpl, {"count": 4}, "", None)
    assert result["verify_result"] is False
    assert result["field_verification_error"] == "ZeroDivisionError: division by zero"
    assert result["verify_granular_result"] is None  # skipped once verify() failed


GRANULAR = "\n    def verify_granular(self) -> float:\n        return 0.25\n"


def test_granular_and_non_bool_verify() -> None:
    tpl = load_template(CLASSIC.replace('return self.count == self.correct["count"]', "return 1") + GRANULAR)
    result = verify(tpl, {"count": 3}, "", None)
    assert result["verify_result"] is True  # a truthy non-bool is accepted
    assert result["verify_granular_result"] == 0.25


def test_parse_failures() -> None:
    tpl = load_template(CLASSIC)
    for parsed in ({"count": "four"}, {}, {"count": None}):
        with pytest.raises(ParseFailure) as caught:
            verify(tpl, parsed, "", None)
        assert str(caught.value).startswith("parse:")


def test_the_judge_cannot_supply_ground_truth_or_regex_checks() -> None:
    tpl = load_template(CLASSIC)
    injected = {"count": 5, "correct": {"count": 5}, "regex": {"r": {"pattern": "x", "expected": "y"}}, "id": "x"}
    result = verify(tpl, injected, "text", "q-real")
    assert result["verify_result"] is False
    assert result["parsed_gt_response"] == {"count": 4}
    assert result["regex_validations_performed"] is False
    assert result["parsed_llm_response"] == {"count": 5}


REGEX_ONLY = """
class Answer(BaseAnswer):
    def ground_truth(self):
        self.regex = {"citation": {"pattern": r"\\[(\\d+)\\]", "expected": 2, "match_type": "count"}}
"""


@pytest.mark.parametrize(
    ("extra", "raw", "verify_result", "error"),
    [
        ("", "see [1] and [2]", True, None),
        ("", "see [1]", False, None),
        ("\n    def verify(self):\n        return False\n", "see [1] and [2]", False, None),
        ("\n    def verify(self):\n        raise ValueError('x')\n", "see [1] and [2]", False, None),  # only logged
    ],
    ids=["regex passes", "regex fails", "verify false", "verify raises"],
)
def test_regex_only_templates(extra: str, raw: str, verify_result: bool, error: str | None) -> None:
    tpl = load_template(REGEX_ONLY + extra)
    assert tpl.info["regex_only"] is True and tpl.info["fields"] == []
    result = verify(tpl, None, raw, None)
    assert result["verify_result"] is verify_result
    assert result["field_verification_error"] is error
    assert result["regex_validations_performed"] is True
    assert result["regex_extraction_results"]["citation"] == ["1", "2"][: raw.count("[")]


@pytest.mark.parametrize(
    ("spec", "text", "success", "reason"),
    [
        ({"pattern": r"\d+", "expected": "42"}, "answer: 42", True, "Single exact match found"),
        ({"pattern": r"\d+", "expected": "42", "match_type": "exact"}, "42 or 43", False, "got 2 matches"),
        ({"pattern": r"\d+", "expected": "43", "match_type": "contains"}, "42 or 43", True, "found in matches"),
        ({"pattern": r"\d+", "expected": "44", "match_type": "contains"}, "42 or 43", False, "not found in matches"),
        ({"pattern": r"\d+", "expected": 2, "match_type": "count"}, "42 or 43", True, "Found exactly 2 matches"),
        ({"pattern": r"\d+", "expected": "2", "match_type": "count"}, "42 or 43", False, "Expected 2 matches, got 2"),
        ({"pattern": r"[A-Z]+", "expected": ["TP", "BRCA"], "match_type": "all"}, "TP and BRCA", True, "All expected"),
        ({"pattern": r"[A-Z]+", "expected": ["TP", "MYC"], "match_type": "all"}, "TP and BRCA", False, "['MYC']"),
        ({"pattern": r"[A-Z]+", "expected": "TP", "match_type": "all"}, "TP", False, "Expected list for 'all'"),
        ({"pattern": r"x", "expected": "x", "match_type": "fuzzy"}, "x", False, "Unknown match_type: fuzzy"),
    ],
)
def test_regex_match_types(spec: dict[str, Any], text: str, success: bool, reason: str) -> None:
    code = f"class Answer(BaseAnswer):\n    def ground_truth(self):\n        self.regex = {{'check': {spec!r}}}\n"
    result = verify(load_template(code), None, text, None)
    detail = result["regex_validation_details"]["check"]
    assert result["regex_validation_results"] == {"check": success}
    assert result["verify_result"] is success and result["regex_overall_success"] is success
    assert reason in detail["success_reason" if success else "failure_reason"]
    assert detail["match_count"] == len(detail["matches_found"])
    assert {"pattern", "expected", "match_type"} <= set(detail)


def test_regex_errors_and_capture_groups() -> None:
    code = """
class Answer(BaseAnswer):
    def ground_truth(self):
        self.regex = {
            "broken": {"pattern": "(", "expected": "x"},
            "pairs": {"pattern": r"(\\w)=(\\d)", "expected": 2, "match_type": "count"},
        }
"""
    result = verify(load_template(code), None, "a=1 b=2", None)
    assert result["regex_validation_results"] == {"broken": False, "pairs": True}
    assert "error" in result["regex_validation_details"]["broken"]
    assert result["regex_extraction_results"] == {"broken": [], "pairs": [("a", "1"), ("b", "2")]}


DECLARATIVE = """
class Answer(BaseAnswer):
    drug: Optional[str] = VerifiedField(
        description="Drug named", ground_truth="aspirin", verify_with=ExactMatch(), weight={w_drug},
        extraction_hint="generic name",
    )
    dose: Optional[float] = VerifiedField(
        description="Dose in mg", ground_truth=100, verify_with=NumericTolerance(tolerance=0.1), weight={w_dose}
    )
    targets: Optional[List[str]] = VerifiedField(
        description="Targets", ground_truth=["COX1", "COX2"], verify_with=SetContainment(mode="superset")
    )
    cited: bool = VerifiedField(
        description="Cites a source", ground_truth=True, verify_with=TraceRegex(pattern=r"\\[\\d+\\]")
    )
{strategy}
"""


def _declarative(strategy: str = "", w_drug: float = 2.0, w_dose: float = 1.0) -> str:
    return DECLARATIVE.format(strategy=strategy, w_drug=w_drug, w_dose=w_dose)


STRATEGY = "    class VerificationStrategy:\n        verify_strategy = {}\n"
GOOD = {"drug": " Aspirin", "dose": 105.0, "targets": ["COX1", "COX2", "NFKB"]}


@pytest.mark.parametrize(
    ("strategy", "parsed", "raw", "verify_result", "granular", "label"),
    [
        ("", GOOD, "per [1]", True, 1.0, None),
        ("", {**GOOD, "dose": 150.0}, "per [1]", False, 4 / 5, None),
        ("", {**GOOD, "drug": None}, "per [1]", False, 3 / 5, None),  # null: its weight stays in the denominator
        ("", GOOD, "no citation", False, 4 / 5, None),
        ("AllOf([FieldCheck('drug'), FieldCheck('dose')])", {**GOOD, "dose": 1.0}, "", False, 3 / 5, "all_of"),
        ("AnyOf([FieldCheck('drug'), FieldCheck('dose')])", {**GOOD, "drug": "x"}, "", True, 1 / 5, "any_of"),
        ("AnyOf(conditions=[FieldCheck(field='drug')])", {**GOOD, "drug": None}, "", False, 1 / 5, "any_of"),
        (
            "AtLeastN(2, [FieldCheck('drug'), FieldCheck('dose'), FieldCheck('targets')])",
            GOOD,
            "",
            True,
            3 / 5,
            "at_least_n(2)",
        ),
        (
            "AtLeastN(n=2, conditions=[FieldCheck('drug'), AllOf([FieldCheck('dose'), FieldCheck('targets')])])",
            {**GOOD, "drug": "ibuprofen"},
            "",
            False,
            2 / 5,
            "at_least_n(2)",
        ),
    ],
    ids=["all pass", "dose off", "drug null", "trace fails", "all_of", "any_of", "any_of null", "at_least_n", "nested"],
)
def test_declarative_templates(
    strategy: str, parsed: dict[str, Any], raw: str, verify_result: bool, granular: float, label: str | None
) -> None:
    code = _declarative(STRATEGY.format(strategy) if strategy else "")
    tpl = load_template(code)
    assert tpl.info["declarative"] is True and tpl.info["fields"] == ["drug", "dose", "targets"]
    result = verify(tpl, parsed, raw, None)
    assert result["verify_result"] is verify_result
    assert result["verify_granular_result"] == pytest.approx(granular)
    assert result["composition_strategy"] == label
    assert result["parsed_gt_response"] == {"drug": "aspirin", "dose": 100, "targets": ["COX1", "COX2"], "cited": True}
    for name, value in parsed.items():  # tri-valued: None exactly when the judge returned null
        assert (result["field_results"][name] is None) is (value is None)
        assert (result["field_scores"][name] is None) is (value is None)
    assert result["field_results"]["cited"] is ("[" in raw)


def test_trace_checks_run_once_per_verification(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[str] = []
    check_trace = prim.TraceRegex.check_trace

    def counting(self: prim.TraceRegex, raw: str) -> bool:
        checked.append(raw)
        return check_trace(self, raw)

    monkeypatch.setattr(prim.TraceRegex, "check_trace", counting)
    tpl = load_template(_declarative())
    checked.clear()  # loading may check a placeholder
    result = verify(tpl, GOOD, "per [1]", None)
    assert result["field_results"]["cited"] is True and result["parsed_llm_response"]["cited"] is True
    assert checked == ["per [1]"]


def test_declarative_all_fields_null_and_zero_weights() -> None:
    tpl = load_template(_declarative(w_drug=0.0, w_dose=0.0))
    result = verify(tpl, {"drug": None, "dose": None, "targets": None}, "[1]", None)
    assert result["field_results"] == {"drug": None, "dose": None, "targets": None, "cited": True}
    assert result["field_scores"] == {"drug": None, "dose": None, "targets": None, "cited": 1.0}
    assert result["verify_result"] is False  # a null never counts as a pass, even against a False truth
    assert result["verify_granular_result"] == pytest.approx(1 / 2)


def test_graded_primitive_scores() -> None:
    code = """
class Answer(BaseAnswer):
    mean: float = VerifiedField(description="Mean", ground_truth=2.0, verify_with=NumericGraded(cutoff=0.5))
    rho: float = VerifiedField(
        description="Correlation", ground_truth=0, verify_with=NumericRangeGraded(min=0.0, max=0.1, margin=0.1)
    )
"""
    result = verify(load_template(code), {"mean": 2.5, "rho": 0.15}, "", None)
    assert result["field_results"] == {"mean": True, "rho": False}
    assert result["field_scores"] == pytest.approx({"mean": 0.5, "rho": 0.5})
    assert result["verify_granular_result"] == pytest.approx(0.5)


def test_own_verify_wins_over_generated_one() -> None:
    code = _declarative() + "\n    def verify(self) -> bool:\n        return True\n"
    result = verify(load_template(code), {"drug": "x", "dose": 1, "targets": []}, "", None)
    assert result["verify_result"] is True
    assert result["field_results"]["drug"] is False  # per-field results are still reported


def test_judge_schema_hides_verification_details() -> None:
    code = _declarative(STRATEGY.format("AnyOf([FieldCheck('drug'), FieldCheck('dose')])")) + (
        "\n    def model_post_init(self, __context):\n        self.correct = {'drug': 'aspirin'}\n"
        "        self.regex = {'r': {'pattern': 'x', 'expected': 'x'}}\n"
    )
    tpl = load_template(code)
    schema = judge_schema(tpl.cls)
    assert schema == tpl.info["json_schema"]
    assert list(schema["properties"]) == ["drug", "dose", "targets"]
    text = json.dumps(schema)
    for hidden in ("__verification__", "aspirin", "ground_truth", "cited", "correct", "regex", '"id"', "COX1"):
        assert hidden not in text, hidden
    assert schema["properties"]["drug"]["description"] == "Drug named (Extraction hint: generic name)"
    assert "__verification__" not in json.dumps(tpl.cls.model_json_schema())


@pytest.mark.parametrize(
    ("field", "reason"),
    [
        (
            "VerifiedField(description='x', ground_truth=1, verify_with=NumericGraded(cutoff=1, decay='cubic'))",
            "decay",
        ),
        (
            "VerifiedField(description='x', ground_truth='a', verify_with=ExactMatch(normalize=['shout']))",
            "unknown normalizer",
        ),
        ("VerifiedField(description=' ', ground_truth='a', verify_with=ExactMatch())", "non-blank description"),
        ("VerifiedField(description='x', ground_truth='a', verify_with=None)", "verification primitive"),
    ],
)
def test_unsupported_or_malformed_verified_fields(field: str, reason: str) -> None:
    with pytest.raises(TemplateInvalid) as caught:
        load_template(f"class Answer(BaseAnswer):\n    value: str = {field}\n")
    assert reason in str(caught.value)


def test_strategy_must_name_verified_fields() -> None:
    code = _declarative(STRATEGY.format("AnyOf([FieldCheck('nope')])"))
    with pytest.raises(TemplateInvalid, match="nope"):
        load_template(code)


@pytest.mark.parametrize(
    ("primitive", "extracted", "expected", "passes"),
    [
        (prim.BooleanMatch(), True, True, True),
        (prim.BooleanMatch(), False, None, False),
        (prim.ExactMatch(), " Paris ", "paris", True),
        (prim.ExactMatch(normalize=["remove_punctuation"]), "B.R.C.A", "BRCA", True),
        (prim.ExactMatch(normalize=["lowercase", prim.SynonymMap(mapping={"asa": "aspirin"})]), "ASA", "aspirin", True),
        (prim.ExactMatch(normalize=["collapse_whitespace"]), "a   b", "a b", True),
        (prim.ContainsAny(substrings=["MAPK", "ERK"]), "the ERK pathway", None, True),
        (prim.ContainsAll(substrings=["cox", "inhibit"], normalize=["lowercase"]), "Inhibits COX-2", None, True),
        (prim.ContainsAll(substrings=["cox", "inhibit"]), "Inhibits COX-2", None, False),
        (prim.RegexMatch(pattern=r"^brca[12]$", flags=["IGNORECASE"]), "BRCA1", None, True),
        (prim.NumericExact(), "4", 4, True),
        (prim.NumericTolerance(tolerance=0.05), 104, 100, True),
        (prim.NumericTolerance(tolerance=0.05), 106, 100, False),
        (prim.NumericTolerance(tolerance=2, mode="absolute"), 102, 100, True),
        (prim.NumericTolerance(tolerance=0.1), 0.0, 0, True),
        (prim.NumericRange(min=1, max=5), 5, None, True),
        (prim.NumericRange(min=1, max=5, exclusive_max=True), 5, None, False),
        (prim.NumericMinimum(), 5, 5, True),
        (prim.NumericMinimum(exclusive=True), 5, 5, False),
        (prim.NumericMaximum(), 6, 5, False),
        (prim.NumericThresholdGraded(direction="max", margin=1.0), 1e-31, 1e-30, True),
        (prim.SetContainment(), ["a", "b"], ["b", "a"], True),
        (prim.SetContainment(mode="subset"), ["a"], ["a", "b"], True),
        (prim.SetContainment(mode="overlap", min_overlap=2), ["a", "c"], ["a", "b"], False),
        (prim.OrderedMatch(), ["A ", "b"], ["a", "B"], True),
        (prim.OrderedMatch(), ["b", "a"], ["a", "b"], False),
        (prim.LiteralMatch(), "high", "high", True),
    ],
)
def test_primitives(primitive: prim.VerificationPrimitive, extracted: Any, expected: Any, passes: bool) -> None:
    assert primitive.check(extracted, expected) is passes


@pytest.mark.parametrize(
    ("primitive", "raw", "passes"),
    [
        (prim.TraceRegex(pattern=r"\[\d+\]"), "see [3]", True),
        (prim.TraceRegex(pattern=r"\[\d+\]", count_min=2), "see [3]", False),
        (prim.TraceContains(substring="consult your doctor"), "Please consult your doctor.", True),
        (prim.TraceLength(min=3, unit="words"), "two words", False),
        (prim.TraceLength(max=5), "12345", True),
    ],
)
def test_trace_primitives(primitive: prim.TracePrimitive, raw: str, passes: bool) -> None:
    assert primitive.check_trace(raw) is passes
