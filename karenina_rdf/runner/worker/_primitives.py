"""Verification primitives, normalizers and composition nodes for declarative answer templates.

A ``VerifiedField`` names one primitive; the primitive decides whether the value the judge
extracted matches the field's ground truth (``check``) and, for the graded numeric ones, how
much partial credit it earns (``score``, in [0, 1]). Trace primitives look at the raw answer
instead of an extracted value. The names and parameters are Karenina's interchange vocabulary.

Supported: BooleanMatch, ExactMatch, ContainsAny, ContainsAll, RegexMatch, NumericExact,
NumericTolerance, NumericGraded, NumericRange, NumericRangeGraded, NumericMinimum,
NumericMaximum, NumericThresholdGraded, SetContainment, OrderedMatch, LiteralMatch,
TraceRegex, TraceContains, TraceLength; normalizers lowercase, strip, remove_punctuation,
collapse_whitespace and SynonymMap. Composition nodes live in ``_composition``.

The graded primitives support only ``decay="linear"``: Karenina's quadratic curve is not
specified precisely enough to reproduce, so asking for it is a construction error.

Not supported here (constructing one raises ``NotSupportedHere``, so the template fails
validation with a clear reason instead of producing a wrong verdict): SemanticMatch (needs an
embedding model), DateMatch, DateTolerance, DateRange (need python-dateutil, not a dependency),
ConditionalGroundTruth and GroundTruthCase (scenario context; out of scope for QA).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator


class NotSupportedHere(ValueError):
    """A Karenina feature this runtime deliberately does not implement."""


class SynonymMap(BaseModel):
    """Maps a whole (already normalized) text to its canonical form."""

    mapping: dict[str, str]


Normalizer = str | SynonymMap

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_NAMED_NORMALIZERS: dict[str, Callable[[str], str]] = {
    "lowercase": str.lower,
    "strip": str.strip,
    "remove_punctuation": lambda s: s.translate(_PUNCTUATION),
    "collapse_whitespace": lambda s: re.sub(r"\s+", " ", s).strip(),
}


def normalize(normalizers: list[Normalizer], text: str) -> str:
    for n in normalizers:
        text = n.mapping.get(text, text) if isinstance(n, SynonymMap) else _NAMED_NORMALIZERS[n](text)
    return text


class VerificationPrimitive(BaseModel):
    model_config = ConfigDict(extra="forbid")

    graded: ClassVar[bool] = False  # True when score() can return partial credit

    def check(self, extracted: Any, expected: Any) -> bool:
        raise NotImplementedError

    def score(self, extracted: Any, expected: Any) -> float:
        return 1.0 if self.check(extracted, expected) else 0.0


class TracePrimitive(VerificationPrimitive):
    """Judged on the raw answer text; its field never reaches the judge."""

    def check(self, extracted: Any, expected: Any) -> bool:
        raise TypeError(f"{type(self).__name__} checks the raw response: use check_trace()")

    def check_trace(self, raw: str) -> bool:
        raise NotImplementedError


class BooleanMatch(VerificationPrimitive):
    def check(self, extracted: Any, expected: Any) -> bool:
        if extracted is None or expected is None:
            return extracted is expected
        return bool(extracted) == bool(expected)


class _Normalizing(VerificationPrimitive):
    normalize: list[Normalizer] = []

    @field_validator("normalize")
    @classmethod
    def _known_normalizers(cls, value: list[Normalizer]) -> list[Normalizer]:
        for n in value:
            if isinstance(n, str) and n not in _NAMED_NORMALIZERS:
                raise ValueError(f"unknown normalizer {n!r}; known: {', '.join(sorted(_NAMED_NORMALIZERS))}")
        return value


class ExactMatch(_Normalizing):
    normalize: list[Normalizer] = ["lowercase", "strip"]

    def check(self, extracted: Any, expected: Any) -> bool:
        return normalize(self.normalize, str(extracted)) == normalize(self.normalize, str(expected))


class ContainsAny(_Normalizing):
    substrings: list[str]

    def check(self, extracted: Any, expected: Any) -> bool:
        text = normalize(self.normalize, str(extracted))
        return any(normalize(self.normalize, s) in text for s in self.substrings)


class ContainsAll(_Normalizing):
    substrings: list[str]

    def check(self, extracted: Any, expected: Any) -> bool:
        text = normalize(self.normalize, str(extracted))
        return all(normalize(self.normalize, s) in text for s in self.substrings)


class RegexMatch(VerificationPrimitive):
    pattern: str
    flags: list[str] = []

    @model_validator(mode="after")
    def _compiles(self) -> RegexMatch:
        for f in self.flags:
            if not isinstance(getattr(re, f, None), re.RegexFlag):
                raise ValueError(f"unknown regex flag {f!r}")
        re.compile(self.pattern, self._flag_bits())
        return self

    def _flag_bits(self) -> int:
        bits = 0
        for f in self.flags:
            bits |= int(getattr(re, f))
        return bits

    def check(self, extracted: Any, expected: Any) -> bool:
        return re.search(self.pattern, str(extracted), self._flag_bits()) is not None


class LiteralMatch(VerificationPrimitive):
    def check(self, extracted: Any, expected: Any) -> bool:
        return bool(extracted == expected)


class NumericExact(VerificationPrimitive):
    def check(self, extracted: Any, expected: Any) -> bool:
        return float(extracted) == float(expected)


class NumericTolerance(VerificationPrimitive):
    tolerance: float
    mode: Literal["relative", "absolute"] = "relative"

    def check(self, extracted: Any, expected: Any) -> bool:
        diff = abs(float(extracted) - float(expected))
        if self.mode == "absolute":
            return diff <= self.tolerance
        if float(expected) == 0:
            return diff == 0
        return diff / abs(float(expected)) <= self.tolerance


def _within(value: float, low: float | None, high: float | None, open_low: bool, open_high: bool) -> bool:
    if low is not None and (value <= low if open_low else value < low):
        return False
    return not (high is not None and (value >= high if open_high else value > high))


class NumericRange(VerificationPrimitive):
    min: float | None = None
    max: float | None = None
    exclusive_min: bool = False
    exclusive_max: bool = False

    def check(self, extracted: Any, expected: Any) -> bool:
        return _within(float(extracted), self.min, self.max, self.exclusive_min, self.exclusive_max)


class NumericMinimum(VerificationPrimitive):
    """Passes when the extracted number is at least the ground truth."""

    exclusive: bool = False

    def check(self, extracted: Any, expected: Any) -> bool:
        return _within(float(extracted), float(expected), None, self.exclusive, False)


class NumericMaximum(VerificationPrimitive):
    """Passes when the extracted number is at most the ground truth."""

    exclusive: bool = False

    def check(self, extracted: Any, expected: Any) -> bool:
        return _within(float(extracted), None, float(expected), False, self.exclusive)


class _Graded(VerificationPrimitive):
    graded: ClassVar[bool] = True
    decay: Literal["linear", "quadratic"] = "linear"

    @field_validator("decay")
    @classmethod
    def _linear_only(cls, value: str) -> str:
        if value != "linear":
            raise NotSupportedHere(f"{cls.__name__}(decay={value!r}) is not supported here; use decay='linear'")
        return value


def _decay(distance: float, width: float) -> float:
    """Linear credit: 1 at distance 0, 0 at ``width`` and beyond."""
    if distance <= 0:
        return 1.0
    if width <= 0:
        return 0.0
    return max(0.0, 1.0 - distance / width)


class NumericGraded(_Graded):
    """Partial credit by distance from the ground truth: full within ``full_credit`` (or at the
    reference), none from ``cutoff``. ``check`` passes within ``full_credit`` when set, else
    within ``cutoff``."""

    cutoff: float
    full_credit: float | None = None
    mode: Literal["relative", "absolute"] = "relative"

    @model_validator(mode="after")
    def _bands(self) -> NumericGraded:
        if self.cutoff <= 0:
            raise ValueError("cutoff must be > 0")
        if self.full_credit is not None and not 0 <= self.full_credit < self.cutoff:
            raise ValueError("full_credit must satisfy 0 <= full_credit < cutoff")
        return self

    def _distance(self, extracted: Any, expected: Any) -> float:
        diff = abs(float(extracted) - float(expected))
        if self.mode == "absolute":
            return diff
        if float(expected) == 0:
            return 0.0 if diff == 0 else float("inf")
        return diff / abs(float(expected))

    def check(self, extracted: Any, expected: Any) -> bool:
        gate = self.cutoff if self.full_credit is None else self.full_credit
        return self._distance(extracted, expected) <= gate

    def score(self, extracted: Any, expected: Any) -> float:
        inner = self.full_credit or 0.0
        return _decay(self._distance(extracted, expected) - inner, self.cutoff - inner)


class NumericRangeGraded(_Graded):
    """Full credit inside [min, max]; linear partial credit out to ``margin`` beyond the band."""

    min: float
    max: float
    margin: float
    mode: Literal["relative", "absolute"] = "absolute"
    exclusive_min: bool = False
    exclusive_max: bool = False

    @model_validator(mode="after")
    def _band(self) -> NumericRangeGraded:
        if not self.min < self.max:
            raise ValueError("min must be < max")
        if self.margin <= 0:
            raise ValueError("margin must be > 0")
        return self

    def check(self, extracted: Any, expected: Any) -> bool:
        return _within(float(extracted), self.min, self.max, self.exclusive_min, self.exclusive_max)

    def score(self, extracted: Any, expected: Any) -> float:
        value = float(extracted)
        if self.check(value, expected):
            return 1.0
        width = self.margin * (self.max - self.min) if self.mode == "relative" else self.margin
        return _decay(max(self.min - value, value - self.max, 0.0), width)


class NumericThresholdGraded(_Graded):
    """One-sided bound at the ground truth with a soft shoulder of ``margin`` past it."""

    direction: Literal["max", "min"]
    margin: float
    mode: Literal["relative", "absolute"] = "relative"
    exclusive: bool = False

    @model_validator(mode="after")
    def _positive_margin(self) -> NumericThresholdGraded:
        if self.margin <= 0:
            raise ValueError("margin must be > 0")
        return self

    def check(self, extracted: Any, expected: Any) -> bool:
        value, bound = float(extracted), float(expected)
        if self.direction == "max":
            return _within(value, None, bound, False, self.exclusive)
        return _within(value, bound, None, self.exclusive, False)

    def score(self, extracted: Any, expected: Any) -> float:
        value, bound = float(extracted), float(expected)
        if self.check(value, bound):
            return 1.0
        width = self.margin * abs(bound) if self.mode == "relative" else self.margin
        return _decay(abs(value - bound), width)


class SetContainment(VerificationPrimitive):
    mode: Literal["exact", "subset", "superset", "overlap"] = "exact"
    min_overlap: int | None = None

    def check(self, extracted: Any, expected: Any) -> bool:
        got, want = set(extracted), set(expected)
        if self.mode == "exact":
            return got == want
        if self.mode == "subset":
            return got <= want
        if self.mode == "superset":
            return got >= want
        return len(got & want) >= (self.min_overlap or 1)


class OrderedMatch(_Normalizing):
    normalize: list[Normalizer] = ["lowercase", "strip"]

    def check(self, extracted: Any, expected: Any) -> bool:
        if len(extracted) != len(expected):
            return False
        return all(
            normalize(self.normalize, str(a)) == normalize(self.normalize, str(b))
            for a, b in zip(extracted, expected, strict=True)
        )


class TraceRegex(TracePrimitive):
    pattern: str
    count_min: int | None = None

    def check_trace(self, raw: str) -> bool:
        found = len(re.findall(self.pattern, raw))
        return found >= self.count_min if self.count_min is not None else found > 0


class TraceContains(TracePrimitive):
    substring: str

    def check_trace(self, raw: str) -> bool:
        return self.substring in raw


class TraceLength(TracePrimitive):
    min: int | None = None
    max: int | None = None
    unit: Literal["chars", "words"] = "chars"

    def check_trace(self, raw: str) -> bool:
        length = len(raw.split()) if self.unit == "words" else len(raw)
        return _within(length, self.min, self.max, False, False)


class _Unsupported:
    """Stands in for a Karenina name so that templates using it fail with a reason, not a NameError."""

    reason: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotSupportedHere(f"{type(self).__name__} is not supported here: {self.reason}")


class SemanticMatch(_Unsupported):
    reason = "it needs an embedding model"


class DateMatch(_Unsupported):
    reason = "date primitives need python-dateutil, which this runtime does not ship"


class DateTolerance(DateMatch):
    pass


class DateRange(DateMatch):
    pass


class ConditionalGroundTruth(_Unsupported):
    reason = "conditional ground truth needs scenario context (out of scope for QA benchmarks)"


class GroundTruthCase(ConditionalGroundTruth):
    pass


def _concrete(base: type[Any]) -> dict[str, type[Any]]:
    found: dict[str, type[Any]] = {}
    for cls in base.__subclasses__():
        if not cls.__name__.startswith("_") and cls is not TracePrimitive:
            found[cls.__name__] = cls
        found.update(_concrete(cls))
    return found


PRIMITIVES: dict[str, type[VerificationPrimitive]] = _concrete(VerificationPrimitive)
UNSUPPORTED: dict[str, type[_Unsupported]] = _concrete(_Unsupported)
