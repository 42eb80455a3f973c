"""Verification primitives, normalizers and composition nodes for declarative answer templates.

A ``VerifiedField`` names one primitive; the primitive decides whether the value the judge
extracted matches the field's ground truth (``check``) and, for the graded numeric ones, how
much partial credit it earns (``score``, in [0, 1]). Trace primitives look at the raw answer
instead of an extracted value. The names and parameters are Karenina's interchange vocabulary.

Supported: BooleanMatch, ExactMatch, ContainsAny, ContainsAll, RegexMatch, NumericExact,
NumericTolerance, NumericGraded, NumericRange, NumericRangeGraded, NumericMinimum,
NumericMaximum, NumericThresholdGraded, SetContainment, OrderedMatch, LiteralMatch, DateMatch,
DateTolerance, DateRange, SemanticMatch, TraceRegex, TraceContains, TraceLength; normalizers
lowercase, strip, remove_punctuation, collapse_whitespace and SynonymMap; ConditionalGroundTruth
and GroundTruthCase as ground truths. Composition nodes live in ``_composition``.

Each follows Karenina's ``schemas/primitives/comparisons.py`` to the letter (the tests compare
verdicts and scores with Karenina's own classes on the same inputs):

* the graded primitives decay ``linear`` (``1 - r``) or ``quadratic`` (``1 - r**2``), ``r`` the
  fraction of the shoulder already crossed;
* the date primitives parse with python-dateutil (or ``strptime`` when DateMatch has a
  ``format``); a value that does not parse is a mismatch, not an error;
* SemanticMatch constructs, but its check raises ``NotImplementedError`` with Karenina's
  message: Karenina does not compute it (it points to the embedding-check stage), so a field
  using it fails verification with that error there and here, rather than being judged by an
  embedding model Karenina would not use;
* ConditionalGroundTruth picks a case from scenario state; outside a scenario (every QA run)
  Karenina uses its ``default`` case: its value and, when given, its primitive.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal, TypeGuard

# Imported when the worker starts, before the sandbox closes: parsing needs nothing further.
from dateutil import parser as _dateutil_parser
from pydantic import BaseModel, ConfigDict, field_validator, model_validator


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

    def _credit(self, r: float) -> float:
        """Credit at fraction ``r`` of the shoulder (Karenina: ``1 - r**2`` or ``1 - r``)."""
        return 1.0 - r * r if self.decay == "quadratic" else 1.0 - r


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

    def _distance(self, extracted: Any, expected: Any) -> float | None:
        """None when undefined (relative to a zero reference, and not exactly it)."""
        diff = abs(float(extracted) - float(expected))
        if self.mode == "absolute":
            return diff
        if float(expected) == 0:
            return 0.0 if diff == 0 else None
        return diff / abs(float(expected))

    def check(self, extracted: Any, expected: Any) -> bool:
        gate = self.cutoff if self.full_credit is None else self.full_credit
        d = self._distance(extracted, expected)
        return d is not None and d <= gate

    def score(self, extracted: Any, expected: Any) -> float:
        d = self._distance(extracted, expected)
        if d is None:
            return 0.0
        inner = self.full_credit or 0.0
        if d <= inner:
            return 1.0
        if self.cutoff <= inner or d >= self.cutoff:
            return 0.0
        return self._credit((d - inner) / (self.cutoff - inner))


class NumericRangeGraded(_Graded):
    """Full credit inside [min, max]; partial credit out to ``margin`` beyond the band."""

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
        if self.min <= value <= self.max:  # Karenina: the band's edges score 1.0 even when exclusive
            return 1.0
        gap = (self.min - value) if value < self.min else (value - self.max)
        shoulder = self.margin if self.mode == "absolute" else self.margin * (self.max - self.min)
        if shoulder <= 0 or gap >= shoulder:
            return 0.0
        return self._credit(gap / shoulder)


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
        if (value <= bound) if self.direction == "max" else (value >= bound):
            return 1.0
        gap = value - bound if self.direction == "max" else bound - value
        if self.mode == "absolute":
            shoulder: float | None = self.margin
        else:
            shoulder = None if bound == 0 else self.margin * abs(bound)
        if shoulder is None or shoulder <= 0 or gap >= shoulder:
            return 0.0
        return self._credit(gap / shoulder)


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


def _parse_date(value: str, fmt: str | None = None) -> datetime:
    """Karenina's ``_parse_date``: ``strptime`` with a format, else dateutil's parser."""
    if fmt:
        return datetime.strptime(value, fmt)
    parsed: datetime = _dateutil_parser.parse(str(value))
    return parsed


class DateMatch(VerificationPrimitive):
    """Same calendar day (times ignored); unparseable values do not match."""

    format: str | None = None

    def check(self, extracted: Any, expected: Any) -> bool:
        try:
            return _parse_date(str(extracted), self.format).date() == _parse_date(str(expected), self.format).date()
        except (ValueError, TypeError):
            return False


class DateTolerance(VerificationPrimitive):
    """Within ``tolerance`` days, hours or minutes of the ground truth."""

    tolerance: int
    unit: Literal["days", "hours", "minutes"] = "days"

    def check(self, extracted: Any, expected: Any) -> bool:
        try:
            delta = timedelta(**{self.unit: self.tolerance})
            return abs(_parse_date(str(extracted)) - _parse_date(str(expected))) <= delta
        except (ValueError, TypeError):  # TypeError: a zoned date against a naive one, as Karenina
            return False


class DateRange(VerificationPrimitive):
    """Between ``min`` and ``max`` (inclusive; either may be absent); the ground truth is unused."""

    min: str | None = None
    max: str | None = None

    def check(self, extracted: Any, expected: Any) -> bool:
        try:
            value = _parse_date(str(extracted))
            if self.min is not None and value < _parse_date(self.min):
                return False
            return not (self.max is not None and value > _parse_date(self.max))
        except (ValueError, TypeError):
            return False


class SemanticMatch(VerificationPrimitive):
    """Karenina's SemanticMatch: constructs with a threshold, cannot check (see the module doc)."""

    threshold: float = 0.85

    def check(self, extracted: Any, expected: Any) -> bool:
        raise NotImplementedError(
            "SemanticMatch.check() requires embedding infrastructure. Use the embedding_check pipeline stage instead."
        )


class GroundTruthCase(BaseModel):
    """One branch of a ConditionalGroundTruth: its value and, optionally, its own primitive."""

    model_config = ConfigDict(extra="forbid")

    value: Any
    verify_with: Any = None


class ConditionalGroundTruth(BaseModel):
    """A ground truth chosen by scenario state (``source``, a dot path into it). Stored as
    Karenina stores it (``serialize``: a ``__conditional__`` marker, primitives as dicts with
    their ``type``); resolved by :func:`resolve_conditional`."""

    model_config = ConfigDict(extra="forbid")

    source: str
    cases: dict[str, GroundTruthCase]
    default: GroundTruthCase

    def serialize(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["__conditional__"] = True
        for key, case in self.cases.items():
            data["cases"][key]["verify_with"] = _serialize_primitive(case.verify_with)
        data["default"]["verify_with"] = _serialize_primitive(self.default.verify_with)
        return data


def _serialize_primitive(prim: Any) -> dict[str, Any] | None:
    if prim is None:
        return None
    if isinstance(prim, dict):
        return prim if "type" in prim else None
    if not isinstance(prim, VerificationPrimitive):
        raise TypeError(
            f"verify_with must be a VerificationPrimitive instance, dict, or None; got {type(prim).__name__}"
        )
    data = prim.model_dump(mode="json")
    data["type"] = type(prim).__name__
    return data


def is_conditional(ground_truth: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(ground_truth, dict) and bool(ground_truth.get("__conditional__"))


def resolve_conditional(stored: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """(value, primitive dict or None) of a stored ConditionalGroundTruth outside a scenario:
    its default case, as Karenina's ``_resolve_conditional`` with no scenario context."""
    default = stored.get("default", {})
    return default.get("value"), default.get("verify_with")


def _concrete(base: type[Any]) -> dict[str, type[Any]]:
    found: dict[str, type[Any]] = {}
    for cls in base.__subclasses__():
        if not cls.__name__.startswith("_") and cls is not TracePrimitive:
            found[cls.__name__] = cls
        found.update(_concrete(cls))
    return found


PRIMITIVES: dict[str, type[VerificationPrimitive]] = _concrete(VerificationPrimitive)
