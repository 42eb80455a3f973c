"""Rules SHACL Core cannot express, as Python checks reporting into the SHACL report model.

Each check has a ``sh:sourceConstraintComponent`` of its own under ``urn:karenina-rdf:checks:``
(also used as its ``sh:sourceShape``), so a user sees one report with shapes and checks together.
The candidates are fetched with one SPARQL SELECT per check and graph. Code is never run: answer
templates are read with :func:`ast.parse` only, callable payloads are only base64-decoded (never
unpickled), regex patterns are only compiled.

:data:`CHECKS` is the registry the documentation (docs/shapes.md) is generated from.
:func:`evaluation_modes` says which of Karenina's evaluation modes (verification spec §3.3) each
question is ready for.
"""

from __future__ import annotations

import ast
import base64
import binascii
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import pyoxigraph as ox

from ._ids import md5_hex, template_id
from ._shapes import Severity, ValidationResult
from ._vocab import KARENINA, SCHEMA, sparql_prefixes

CHECKS_NS = "urn:karenina-rdf:checks:"

# Karenina's evaluation modes (verification spec §3.3, VerificationConfig.evaluation_mode §9.1).
EVALUATION_MODES = ("template_only", "template_and_rubric", "rubric_only")

# Metric names allowed per metric-trait evaluation mode (checkpoint-format spec §6.6).
METRICS_BY_MODE: dict[str, frozenset[str]] = {
    "tp_only": frozenset({"precision", "recall", "f1"}),
    "full_matrix": frozenset({"precision", "recall", "f1", "specificity", "accuracy"}),
}
MIN_CLASSES, MAX_CLASSES = 2, 20


@dataclass(frozen=True)
class Check:
    """One Python check: its IRI (component and shape), what it reads, and what it checks."""

    name: str
    severity: Severity
    target: str
    path: str
    description: str

    @property
    def iri(self) -> str:
        return CHECKS_NS + self.name


_Row = dict[str, str | None]


@dataclass(frozen=True)
class _Finding:
    focus: str
    message: str
    value: str | None
    check: Check


def _k(local: str) -> str:
    return KARENINA + local


def _s(local: str) -> str:
    return SCHEMA + local


REGEX_COMPILES = Check(
    "RegexCompiles",
    "Violation",
    "karenina:RegexRubricTrait",
    _k("pattern"),
    "The pattern compiles as a Python regular expression (`re.compile`); Karenina refuses it at load (spec §6.4).",
)
CALLABLE_DECODES = Check(
    "CallableCodeDecodes",
    "Violation",
    "karenina:CallableRubricTrait",
    _k("callableCode"),
    "A non-empty callable_code is standard base64 (decoded only: never unpickled, never executed); "
    "Karenina raises binascii.Error at load (spec §6.5).",
)
LITERAL_CLASSES = Check(
    "LiteralClasses",
    "Violation",
    'schema:Rating with karenina:traitKind "literal"',
    _k("classes"),
    f"The classes of a literal trait are a JSON object of {MIN_CLASSES} to {MAX_CLASSES} class names, each "
    "with a string description (spec §6.3).",
)
METRICS_FOR_MODE = Check(
    "MetricsAllowedForMode",
    "Violation",
    "karenina:MetricRubricTrait",
    _k("metrics"),
    "The metrics are a list of names allowed by the evaluation mode: tp_only allows precision, recall, f1; "
    "full_matrix also specificity and accuracy (spec §6.6).",
)
TEMPLATE_PARSES = Check(
    "TemplateParses",
    "Violation",
    "schema:SoftwareSourceCode",
    _s("text"),
    "A non-empty answer template is valid Python (`ast.parse`, never executed); otherwise every "
    "template-mode run fails at ValidateTemplate (verification spec §4.6).",
)
TEMPLATE_DEFINES_ANSWER = Check(
    "TemplateDefinesAnswer",
    "Violation",
    "schema:SoftwareSourceCode",
    _s("text"),
    "A parsed answer template defines a top-level `class Answer` whose bases include `BaseAnswer` "
    "(directly or through a class of the template); `BaseAnswer` and `Field` are injected by Karenina, "
    "so no import is needed (verification spec §4.5, §4.6).",
)
TEMPLATE_VERIFY = Check(
    "TemplateDefinesVerify",
    "Warning",
    "schema:SoftwareSourceCode",
    _s("text"),
    "The `Answer` class defines `verify()`. A warning only: regex-only and declarative templates are "
    "valid without it (verification spec §4.3, §4.6).",
)
TEXT_MD5 = Check(
    "TextMd5Matches",
    "Violation",
    "schema:Question",
    _k("textMd5"),
    "karenina:textMd5 equals the MD5 hex of the question's schema:text (data-model §4).",
)
TEMPLATE_ID = Check(
    "TemplateIdMatches",
    "Violation",
    "schema:SoftwareSourceCode",
    _k("templateId"),
    "karenina:templateId equals Karenina's generate_template_id of the template text (spec §7.2), "
    "which results use to refer to the template.",
)

CHECKS: tuple[Check, ...] = (
    REGEX_COMPILES,
    CALLABLE_DECODES,
    LITERAL_CLASSES,
    METRICS_FOR_MODE,
    TEMPLATE_PARSES,
    TEMPLATE_DEFINES_ANSWER,
    TEMPLATE_VERIFY,
    TEXT_MD5,
    TEMPLATE_ID,
)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _select(store: ox.Store, graph: ox.NamedNode, query: str) -> Iterator[_Row]:
    result = store.query(sparql_prefixes() + query, default_graph=graph)
    assert isinstance(result, ox.QuerySolutions)
    names = [v.value for v in result.variables]
    for solution in result:
        row: _Row = {}
        for name in names:
            term = solution[name]
            row[name] = None if term is None else term.value
        yield row


# ---------------------------------------------------------------------------------------------
# The checks: each takes the store and a graph and yields findings.


def _regex(store: ox.Store, graph: ox.NamedNode) -> Iterator[_Finding]:
    q = "SELECT ?t ?v WHERE { ?t a karenina:RegexRubricTrait ; karenina:pattern ?v }"
    for row in _select(store, graph, q):
        t, v = row["t"] or "", row["v"] or ""
        try:
            re.compile(v)
        except re.error as exc:
            yield _Finding(
                t,
                f"The regex pattern {v!r} does not compile in Python ({exc}); Karenina refuses this trait "
                "(Rating additionalProperty pattern)",
                v,
                REGEX_COMPILES,
            )


def _callable(store: ox.Store, graph: ox.NamedNode) -> Iterator[_Finding]:
    q = "SELECT ?t ?v WHERE { ?t a karenina:CallableRubricTrait ; karenina:callableCode ?v }"
    for row in _select(store, graph, q):
        t, v = row["t"] or "", row["v"] or ""
        if not v:
            continue  # no code: the shape ks:CallableTraitShape-callableCodeMissing warns
        try:
            base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError) as exc:
            yield _Finding(
                t,
                f"callable_code is not standard base64 ({exc}); Karenina cannot load this trait "
                "(Rating additionalProperty callable_code)",
                _short(v, 80),
                CALLABLE_DECODES,
            )


def _classes_problem(raw: str) -> str | None:
    try:
        classes = json.loads(raw)
    except ValueError:
        return "is not JSON"
    if not isinstance(classes, dict):
        return f"is a JSON {type(classes).__name__}, not an object of class names to descriptions"
    if not MIN_CLASSES <= len(classes) <= MAX_CLASSES:
        return f"has {len(classes)} classes; a literal trait needs {MIN_CLASSES} to {MAX_CLASSES}"
    bad = sorted(k for k, d in classes.items() if not isinstance(d, str))
    if bad:
        return f"has descriptions that are not strings (classes {', '.join(map(repr, bad))})"
    return None


def _classes(store: ox.Store, graph: ox.NamedNode) -> Iterator[_Finding]:
    q = 'SELECT ?t ?v WHERE { ?t karenina:traitKind "literal" ; karenina:classes ?v }'
    for row in _select(store, graph, q):
        t, v = row["t"] or "", row["v"] or ""
        problem = _classes_problem(v)
        if problem is not None:
            yield _Finding(
                t,
                f"The classes of this literal trait {problem} (Rating additionalProperty classes)",
                _short(v),
                LITERAL_CLASSES,
            )


def _metrics(store: ox.Store, graph: ox.NamedNode) -> Iterator[_Finding]:
    q = (
        "SELECT ?t ?v ?mode WHERE { ?t a karenina:MetricRubricTrait ; karenina:metrics ?v "
        "OPTIONAL { ?t karenina:evaluationMode ?mode } }"
    )
    for row in _select(store, graph, q):
        t, v, mode = row["t"] or "", row["v"] or "", row["mode"] or "tp_only"
        allowed = METRICS_BY_MODE.get(mode)
        if allowed is None:
            continue  # an unknown evaluation_mode: the shape ks:MetricTraitShape-evaluationMode reports it
        try:
            metrics = json.loads(v)
        except ValueError:
            metrics = None
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            yield _Finding(
                t,
                'metrics must be a list of metric names such as ["precision", "recall"] '
                "(Rating additionalProperty metrics)",
                _short(v),
                METRICS_FOR_MODE,
            )
            continue
        unknown = [m for m in metrics if m not in allowed]
        if unknown:
            yield _Finding(
                t,
                f"Metric(s) {', '.join(map(repr, unknown))} are not allowed with evaluation_mode {mode!r}; "
                f"allowed: {', '.join(sorted(allowed))} (Rating additionalProperty metrics)",
                _short(v),
                METRICS_FOR_MODE,
            )


def _base_names(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for base in cls.bases:
        if isinstance(base, ast.Name):
            names.add(base.id)
        elif isinstance(base, ast.Attribute):
            names.add(base.attr)
    return names


def _derives_from_base_answer(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: set[str]) -> bool:
    for base in _base_names(cls):
        if base == "BaseAnswer":
            return True
        parent = classes.get(base)
        if parent is not None and base not in seen and _derives_from_base_answer(parent, classes, seen | {base}):
            return True
    return False


def template_problems(code: str) -> list[tuple[Check, str]]:
    """What is wrong with an answer template, read with ``ast`` only (never executed)."""
    return list(_template_problems(code))


@lru_cache(maxsize=65536)
def _template_problems(code: str) -> tuple[tuple[Check, str], ...]:
    # ast.parse is most of the cost of the checks (about 0.1 ms a template): shared and
    # re-validated templates are parsed once per process.
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return (
            (
                TEMPLATE_PARSES,
                f"The answer template is not valid Python: {reason}{where} (SoftwareSourceCode.text)",
            ),
        )
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    answer = classes.get("Answer")
    if answer is None or not _derives_from_base_answer(answer, classes, {"Answer"}):
        what = "no top-level `class Answer`" if answer is None else "`class Answer` does not derive from BaseAnswer"
        return (
            (
                TEMPLATE_DEFINES_ANSWER,
                f"The answer template must define `class Answer(BaseAnswer)`, but it has {what} "
                "(SoftwareSourceCode.text)",
            ),
        )
    has_verify = any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "verify" for n in answer.body
    ) or any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "verify" for t in n.targets)
        for n in answer.body
    )
    if not has_verify:
        return (
            (
                TEMPLATE_VERIFY,
                "The Answer class defines no verify() method: only a regex-only or declarative template "
                "can be verified without it (SoftwareSourceCode.text)",
            ),
        )
    return ()


def _templates(store: ox.Store, graph: ox.NamedNode) -> Iterator[_Finding]:
    q = (
        "SELECT ?c ?text ?tid WHERE { ?c a schema:SoftwareSourceCode ; schema:text ?text "
        "OPTIONAL { ?c karenina:templateId ?tid } }"
    )
    for row in _select(store, graph, q):
        c, text, tid = row["c"] or "", row["text"] or "", row["tid"]
        if tid is not None and tid != template_id(text):
            yield _Finding(
                c,
                f"karenina:templateId {tid!r} is not the template id of this template's text "
                f"({template_id(text)!r}); results refer to templates by it (SoftwareSourceCode.text changed?)",
                tid,
                TEMPLATE_ID,
            )
        if not text.strip():
            continue  # an empty template: the shape ks:TemplateShape-textEmpty warns
        for check, message in template_problems(text):
            yield _Finding(c, message, None, check)


def _text_md5(store: ox.Store, graph: ox.NamedNode) -> Iterator[_Finding]:
    q = "SELECT ?q ?text ?md5 WHERE { ?q a schema:Question ; schema:text ?text ; karenina:textMd5 ?md5 }"
    for row in _select(store, graph, q):
        node, text, md5 = row["q"] or "", row["text"] or "", row["md5"] or ""
        expected = md5_hex(text)
        if md5 != expected:
            yield _Finding(
                node,
                f"karenina:textMd5 {md5!r} is not the MD5 of the question text ({expected!r}); "
                "the question text was changed without it (Question.text)",
                md5,
                TEXT_MD5,
            )


_RUNNERS: tuple[Callable[[ox.Store, ox.NamedNode], Iterator[_Finding]], ...] = (
    _regex,
    _callable,
    _classes,
    _metrics,
    _templates,
    _text_md5,
)


def run_checks(store: ox.Store, graphs: list[ox.NamedNode]) -> list[ValidationResult]:
    """Run every Python check on each named graph of ``store``; results sorted like pyshacl's."""
    out: list[ValidationResult] = []
    for graph in graphs:
        for runner in _RUNNERS:
            for f in runner(store, graph):
                out.append(
                    ValidationResult(
                        focus_node=f.focus,
                        path=f.check.path,
                        message=f.message,
                        severity=f.check.severity,
                        source_shape=f.check.iri,
                        source_constraint_component=f.check.iri,
                        value=f.value,
                    )
                )
    out.sort(key=lambda r: (r.focus_node, r.path or "", r.message, r.value or ""))
    return out


def evaluation_modes(store: ox.Store, graph: ox.NamedNode) -> dict[str, list[str]]:
    """Which of Karenina's evaluation modes each question of ``graph`` is ready for.

    Verification spec §3.3: ``template_only`` and ``template_and_rubric`` run the template stages
    (ValidateTemplate, ParseTemplate, VerifyTemplate), so they need a real template: one with
    non-empty text that is not Karenina's default placeholder (``karenina:isDefaultTemplate``).
    ``template_and_rubric`` and ``rubric_only`` add rubric stages only when a non-empty rubric is
    attached, the global traits merged with the question's (§6.3), so they need at least one trait.
    A question with neither is ready for no mode.
    """
    q = """
    SELECT ?q (MAX(?real) AS ?hasTemplate) (COUNT(DISTINCT ?t) AS ?traits) WHERE {
      ?q a schema:Question .
      OPTIONAL {
        ?q schema:hasPart ?c . ?c a schema:SoftwareSourceCode ; schema:text ?text .
        OPTIONAL { ?c karenina:isDefaultTemplate ?default }
        BIND(IF(STRLEN(REPLACE(?text, "\\\\s", "")) > 0 && !COALESCE(?default, false), 1, 0) AS ?real)
      }
      OPTIONAL { ?q schema:contentRating ?t }
    } GROUP BY ?q
    """
    global_q = "SELECT (COUNT(DISTINCT ?t) AS ?n) WHERE { ?b a schema:DataFeed ; schema:contentRating ?t }"
    global_traits = int(next(_select(store, graph, global_q))["n"] or 0)
    modes: dict[str, list[str]] = {}
    for row in _select(store, graph, q):
        has_template = (row["hasTemplate"] or "0") == "1"
        has_rubric = global_traits + int(row["traits"] or 0) > 0
        ready = {
            "template_only": has_template,
            "template_and_rubric": has_template and has_rubric,
            "rubric_only": has_rubric,
        }
        modes[row["q"] or ""] = [m for m in EVALUATION_MODES if ready[m]]
    return dict(sorted(modes.items()))
