"""Rules SHACL Core cannot express, as Python checks reporting into the SHACL report model.

Each check has a ``sh:sourceConstraintComponent`` of its own under ``urn:karenina-rdf:checks:``
(also used as its ``sh:sourceShape``), so a user sees one report with shapes and checks together.
The candidates are fetched with one SPARQL SELECT per check and graph. Code is never run: answer
templates are read with :func:`ast.parse` only, callable payloads are only base64-decoded (never
unpickled), regex patterns are only compiled.

:data:`CHECKS` (benchmarks) and :data:`RUN_CHECKS` (verification runs) are the registries the
documentation (docs/shapes.md) is generated from.
:func:`evaluation_modes` says which of Karenina's evaluation modes (verification spec §3.3) each
question is ready for.
"""

from __future__ import annotations

import ast
import base64
import binascii
import json
import re
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf.rdf import (
    KAR,
    PREFIXES,
    SCHEMA,
    md5_hex,
    owning_question,
    sparql_prefixes,
    template_id,
    unsegment,
)
from karenina_rdf.store import GraphStore

from ._shapes import Severity, ValidationResult

CHECKS_NS = "urn:karenina-rdf:checks:"

# Karenina's evaluation modes (verification spec §3.3, VerificationConfig.evaluation_mode §9.1).
EVALUATION_MODES = ("template_only", "template_and_rubric", "rubric_only")

# Metric names allowed per metric-trait evaluation mode (checkpoint-format spec §6.6).
METRICS_BY_MODE: dict[str, frozenset[str]] = {
    "tp_only": frozenset({"precision", "recall", "f1"}),
    "full_matrix": frozenset({"precision", "recall", "f1", "specificity", "accuracy"}),
}
MIN_CLASSES, MAX_CLASSES = 2, 20
# Bump when the template checks change what they report: cached outcomes are then ignored.
TEMPLATE_CHECKS_VERSION = 2  # 2: the answer class by any name, as Karenina finds it


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
    value_is_iri: bool = False  # the value is a node (a concept, a question), not a literal


def _s(local: str) -> str:
    return SCHEMA + local


def _earl(local: str) -> str:
    return PREFIXES["earl"] + local


REGEX_COMPILES = Check(
    "RegexCompiles",
    "Violation",
    "karenina:RegexRubricTrait",
    KAR.pattern,
    "The pattern compiles as a Python regular expression (`re.compile`). Karenina refuses a question's trait "
    "like this at load, and a global one when the rubric is built (spec §6.4).",
)
CALLABLE_DECODES = Check(
    "CallableCodeDecodes",
    "Violation",
    "karenina:CallableRubricTrait",
    KAR.callableCode,
    "A non-empty callable_code is standard base64 (decoded only: never unpickled, never executed); "
    "Karenina refuses a question's trait like this at load, and fails on a global one when the rubric is built "
    "(spec §6.5).",
)
LITERAL_CLASSES = Check(
    "LiteralClasses",
    "Violation",
    'schema:Rating with karenina:traitKind "literal"',
    KAR.classes,
    f"The classes of a literal trait are a JSON object of {MIN_CLASSES} to {MAX_CLASSES} class names, each "
    "with a string description. Karenina refuses a question's trait like this at load, and a global one "
    "when the rubric is built (spec §6.3).",
)
METRICS_FOR_MODE = Check(
    "MetricsAllowedForMode",
    "Violation",
    "karenina:MetricRubricTrait",
    KAR.metrics,
    "The metrics are a list of names allowed by the evaluation mode: tp_only allows precision, recall, f1; "
    "full_matrix also specificity and accuracy. Karenina refuses a question's trait like this at load, and a "
    "global one when the rubric is built (spec §6.6).",
)
TEMPLATE_PARSES = Check(
    "TemplateParses",
    "Warning",
    "schema:SoftwareSourceCode",
    _s("text"),
    "A non-empty answer template is valid Python (`ast.parse`, never executed). A warning: Karenina loads "
    "the file, and every template-mode run of the question fails at ValidateTemplate (verification spec §4.6).",
)
TEMPLATE_DEFINES_ANSWER = Check(
    "TemplateDefinesAnswer",
    "Warning",
    "schema:SoftwareSourceCode",
    _s("text"),
    "A parsed answer template defines exactly one leaf top-level class deriving from `BaseAnswer` "
    "(directly or through a class of the template), by any name, as Karenina's find_answer_class "
    "requires; `BaseAnswer` and `Field` are injected by Karenina, so no import is needed. A warning: "
    "Karenina loads the file, and template-mode runs of the question fail (verification spec §4.5, §4.6).",
)
TEMPLATE_VERIFY = Check(
    "TemplateDefinesVerify",
    "Warning",
    "schema:SoftwareSourceCode",
    _s("text"),
    "The answer class (or a class of the template it derives from) defines `verify()`. A warning only: "
    "regex-only and declarative templates are valid without it (verification spec §4.3, §4.6).",
)
TEXT_MD5 = Check(
    "TextMd5Matches",
    "Violation",
    "schema:Question",
    KAR.textMd5,
    "karenina:textMd5 equals the MD5 hex of the question's schema:text (data-model §4).",
)
TEMPLATE_ID = Check(
    "TemplateIdMatches",
    "Violation",
    "schema:SoftwareSourceCode",
    KAR.templateId,
    "karenina:templateId equals Karenina's generate_template_id of the template text (spec §7.2), "
    "which results use to refer to the template.",
)
SHADOWED_ITEM = Check(
    "NoShadowedItem",
    "Warning",
    "karenina:ShadowedItem",
    KAR.shadowedItem,
    "No two items of a benchmark share a question id. Karenina loads such a file, keeps both items in it and "
    "answers with the last; the earlier one is kept here only to be written back (data-model §4).",
)

# Checks on a verification run (docs/data-model.md §9), run by :func:`run_result_checks` over a
# run graph together with the benchmark graphs it used and the vocabulary graph.
FAILURE_GROUP_MATCHES = Check(
    "FailureGroupMatchesCategory",
    "Warning",
    "karenina:Failure",
    KAR.failureGroup,
    "The failure group is the group of the failure's category (the category's skos:broader in the "
    "karenina:failure scheme). Karenina computes the group from the category and ignores another "
    "(verification spec §8); this compares two paths, which SHACL Core does only with sh:equals.",
)
RESULT_TEMPLATE_CURRENT = Check(
    "ResultTemplateCurrent",
    "Warning",
    "karenina:VerificationResult",
    KAR.template,
    "The stored answer template a result links to still has the result's template id: otherwise the "
    "benchmark's template changed after the run and the result was verified with another one.",
)
RESULT_BENCHMARK_USED = Check(
    "ResultBenchmarkUsed",
    "Violation",
    "karenina:VerificationResult",
    _earl("test"),
    "The benchmark of the question a result tests is one its run lists in prov:used (data-model §9), "
    "which is what says which benchmark graphs a run is read and validated with.",
)

OUTCOME_MATCHES = Check(
    "OutcomeMatchesVerdict",
    "Violation",
    "karenina:VerificationResult",
    _earl("outcome"),
    "The EARL outcome is the one the importer derives from the row: earl:passed exactly when verify_result is "
    "true, earl:failed exactly when it is false; without a verdict earl:cantTell after a failure or a template "
    "verification, else earl:inapplicable (data-model §9). The pass rate reads verify_result, so the outcome "
    "must agree with it. A Python check: SHACL Core says it with earl:result/earl:outcome inside sh:or, which "
    "the engine evaluates in time quadratic in the number of results.",
)
CONTENT_FAILURE_VERDICT = Check(
    "ContentFailureIsFalseVerdict",
    "Warning",
    "karenina:Failure",
    KAR.failureCategory,
    "A content failure (the answer was judged wrong) belongs to a result whose verify_result is false: "
    "Karenina's classifier gives that category for a false verdict only (verification spec §8, rule 2).",
)
SCORE_HOLDS_ITS_KIND = Check(
    "ScoreHoldsItsKind",
    "Violation",
    "karenina:TraitScore",
    KAR.scoreKind,
    "What a score holds follows the score dict it came from (verification spec §6.1): a regex score is true or "
    "false; a metric score keeps its numbers as metric values and has no single value; only a metric score "
    "has metric values.",
)
SCORE_FITS_TRAIT = Check(
    "ScoreFitsTrait",
    "Warning",
    "karenina:TraitScore",
    _s("value"),
    "A score fits the kind of the stored trait it scores (karenina:scoresTrait): a boolean trait scores "
    "true/false, a literal trait the index of a class (-1: none of them), a score trait a number "
    "(verification spec §6.1). Otherwise the benchmark changed since the run, or the score is not Karenina's.",
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
    SHADOWED_ITEM,
)
# The checks of runs, kept apart: :func:`run_checks` (benchmarks) never runs them.
RUN_CHECKS: tuple[Check, ...] = (
    FAILURE_GROUP_MATCHES,
    RESULT_TEMPLATE_CURRENT,
    RESULT_BENCHMARK_USED,
    OUTCOME_MATCHES,
    CONTENT_FAILURE_VERDICT,
    SCORE_HOLDS_ITS_KIND,
    SCORE_FITS_TRAIT,
)


_BY_NAME = {c.name: c for c in CHECKS}


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _select(store: ox.Store, graph: ox.NamedNode | list[ox.NamedNode], query: str) -> Iterator[_Row]:
    # A list of graphs is their union (a run with its benchmarks and the vocabulary).
    union: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph] = [] if isinstance(graph, ox.NamedNode) else [*graph]
    result = store.query(sparql_prefixes() + query, default_graph=graph if isinstance(graph, ox.NamedNode) else union)
    assert isinstance(result, ox.QuerySolutions)
    names = [v.value for v in result.variables]
    positions = range(len(names))
    for solution in result:
        # Positional access: looking terms up by variable name costs more than reading them.
        terms = [solution[i] for i in positions]
        yield {name: None if term is None else term.value for name, term in zip(names, terms, strict=True)}


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
                f"The regex pattern {v!r} does not compile in Python ({exc}) (Rating additionalProperty pattern)",
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
                f"callable_code is not standard base64 ({exc}) (Rating additionalProperty callable_code)",
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
        return _read_template(code)
    except (RecursionError, MemoryError):
        # A hostile file's template (`x.y.y.y…` a million times, a chain of thousands of classes)
        # exhausts the parser or the class walk: a finding like any other, not a crash.
        return (
            (
                TEMPLATE_PARSES,
                "The answer template nests too deeply to be read (SoftwareSourceCode.text)",
            ),
        )


def _read_template(code: str) -> tuple[tuple[Check, str], ...]:
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
    # Karenina finds the answer class as the one leaf BaseAnswer subclass of the template, by
    # any name (find_answer_class): `class CapitalAnswer(BaseAnswer)` is as good as `Answer`.
    answers = {name: c for name, c in classes.items() if _derives_from_base_answer(c, classes, {name})}
    parents = {base for c in answers.values() for base in _base_names(c)}
    leaves = [c for name, c in answers.items() if name not in parents]
    if len(leaves) != 1:
        what = (
            "no top-level class deriving from BaseAnswer"
            if not leaves
            else f"{len(leaves)} leaf classes deriving from BaseAnswer ({', '.join(c.name for c in leaves)})"
        )
        return (
            (
                TEMPLATE_DEFINES_ANSWER,
                f"The answer template must define exactly one leaf class deriving from BaseAnswer, but it has {what} "
                "(SoftwareSourceCode.text)",
            ),
        )
    answer = leaves[0]
    # verify() may come from a class of the template the answer class derives from.
    lineage, todo = [], [answer]
    while todo:
        cls = todo.pop()
        if cls not in lineage:
            lineage.append(cls)
            todo.extend(classes[b] for b in _base_names(cls) if b in answers)
    has_verify = any(
        (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "verify")
        or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "verify" for t in n.targets))
        for cls in lineage
        for n in cls.body
    )
    if not has_verify:
        return (
            (
                TEMPLATE_VERIFY,
                f"The answer class {answer.name} defines no verify() method: only a regex-only or declarative "
                "template can be verified without it (SoftwareSourceCode.text)",
            ),
        )
    return ()


_caches: weakref.WeakKeyDictionary[object, TemplateCache] = weakref.WeakKeyDictionary()


def template_cache(store: GraphStore) -> TemplateCache:
    """The template cache of ``store``: in its folder's ``cache/`` for an on-disk store, in
    memory for the others; one per store object, for as long as it lives."""
    cache = _caches.get(store)
    if cache is None:
        cache = _caches[store] = TemplateCache(store.path / "cache" if store.path is not None else None)
    return cache


class TemplateCache:
    """Outcomes of the template checks keyed by the MD5 of the template text (content-addressed,
    so never stale), in memory and, for an on-disk store, in a file beside it.

    Parsing every template is most of the checks' cost (about 0.1 ms each); a template already
    checked (at import, or by an earlier validation) is not parsed again. The key includes the
    Python version, whose grammar decides what parses, and :data:`TEMPLATE_CHECKS_VERSION`.
    """

    def __init__(self, folder: Path | None = None) -> None:
        name = f"template-checks-v{TEMPLATE_CHECKS_VERSION}-py{sys.version_info[0]}.{sys.version_info[1]}.jsonl"
        self.file = folder / name if folder is not None else None
        self._entries: dict[str, tuple[tuple[str, str], ...]] | None = None
        self._new: dict[str, tuple[tuple[str, str], ...]] = {}

    def _load(self) -> dict[str, tuple[tuple[str, str], ...]]:
        if self._entries is None:
            self._entries = {}
            if self.file is not None and self.file.exists():
                for line in self.file.read_text(encoding="utf-8").splitlines():
                    try:
                        key, problems = json.loads(line)
                    except ValueError:
                        continue  # a line cut short by a crash: that template is checked again
                    self._entries[key] = tuple((str(c), str(m)) for c, m in problems)
        return self._entries

    def get(self, key: str) -> tuple[tuple[str, str], ...] | None:
        return self._load().get(key)

    def findings(self, node: str, text: str, key: str | None = None) -> Iterator[_Finding]:
        """The template findings for ``text`` (checked now, or read from the cache)."""
        key = key or md5_hex(text)
        problems = self.get(key)
        if problems is None:
            problems = tuple((f.check.name, f.message) for f in _code_findings(node, text))
            self._load()[key] = self._new[key] = problems
        for name, message in problems:
            yield _Finding(node, message, None, _BY_NAME[name])

    def save(self) -> None:
        if self.file is None or not self._new:
            return
        self.file.parent.mkdir(parents=True, exist_ok=True)
        with self.file.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps([k, v], ensure_ascii=False) + "\n" for k, v in self._new.items())
        self._new.clear()


def _templates(store: ox.Store, graph: ox.NamedNode, cache: TemplateCache) -> Iterator[_Finding]:
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
        yield from cache.findings(c, text)
    cache.save()


def _code_findings(node: str, text: str) -> Iterator[_Finding]:
    if not text.strip():
        return  # an empty template: the shape ks:TemplateShape-textEmpty warns
    for check, message in template_problems(text):
        yield _Finding(node, message, None, check)


def template_results(templates: list[tuple[str, str]], cache: TemplateCache | None = None) -> list[ValidationResult]:
    """The template checks on (template IRI, code) pairs the importer collected while mapping.

    A validating import runs these on the code it already holds, while the last chunks are
    still being loaded, instead of reading every template back from the store; the id checks
    (templateId, textMd5) are left out there because the importer computes both from that text.
    """
    cache = cache or TemplateCache()
    results = _results(f for node, text in templates for f in cache.findings(node, text))
    cache.save()
    return results


def _text_md5(store: ox.Store, graph: ox.NamedNode) -> Iterator[_Finding]:
    # Hashed in Python: pyoxigraph's MD5() is slower than reading the texts out (measured).
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


def _shadowed(store: ox.Store, graph: ox.NamedNode) -> Iterator[_Finding]:
    q = (
        "SELECT ?s ?id ?pos WHERE { ?b karenina:shadowedItem ?s . ?s schema:identifier ?id . "
        "OPTIONAL { ?b schema:dataFeedElement ?i . ?i schema:item/schema:identifier ?id ; karenina:position ?pos } }"
    )
    for row in _select(store, graph, q):
        kept = f"/dataFeedElement/{row['pos']}" if row["pos"] is not None else "no item (a dangling copy)"
        yield _Finding(
            row["s"] or "",
            f"question id {row['id']!r} is also used at {kept}, the item Karenina answers with; this one is kept "
            "only to be written back",
            row["id"],
            SHADOWED_ITEM,
        )


_TRAIT_RUNNERS: tuple[Callable[[ox.Store, ox.NamedNode], Iterator[_Finding]], ...] = (
    _regex,
    _callable,
    _classes,
    _metrics,
)


def run_checks(
    store: ox.Store,
    graphs: list[ox.NamedNode],
    *,
    traits_only: bool = False,
    cache: TemplateCache | None = None,
) -> list[ValidationResult]:
    """Run every Python check (``traits_only``: only those on rubric traits) on each named graph
    of ``store``; results sorted like pyshacl's. ``cache``: template check outcomes to reuse."""
    cache = cache or TemplateCache()

    def findings(graph: ox.NamedNode) -> Iterator[_Finding]:
        for runner in _TRAIT_RUNNERS:
            yield from runner(store, graph)
        if not traits_only:
            yield from _templates(store, graph, cache)
            yield from _text_md5(store, graph)
            yield from _shadowed(store, graph)

    return _results(f for graph in graphs for f in findings(graph))


def _concept(iri: str) -> str:
    """The name of a failure category or group from its concept IRI (``…/failure/content``)."""
    return unsegment(iri.rsplit("/", 1)[-1])


def _values(variables: str, rows: Iterable[tuple[ox.NamedNode | ox.Literal, ...]]) -> str:
    """A VALUES block of the rows a check read from the graphs a run links to: the main query then
    runs on the run graph alone, with index lookups, rather than over the union of graphs."""
    return f"VALUES ({variables}) {{ " + " ".join("(" + " ".join(map(str, row)) + ")" for row in rows) + " }"


def _failure_groups(store: ox.Store, graphs: list[ox.NamedNode]) -> Iterator[_Finding]:
    # Only failures whose category is a concept with a group: an unknown category or group is
    # reported by the shapes (ks:FailureShape-category, -group), not twice here.
    taxonomy = [
        (ox.NamedNode(row["c"] or ""), ox.NamedNode(row["expected"] or ""))
        for row in _select(store, graphs[1:], "SELECT ?c ?expected WHERE { ?c skos:broader ?expected }")
    ]
    if not taxonomy:
        return
    q = (
        "SELECT ?f ?c ?g ?expected WHERE { " + _values("?c ?expected", taxonomy) + " ?f karenina:failureCategory ?c ; "
        "karenina:failureGroup ?g FILTER(STR(?g) != STR(?expected)) }"
    )
    for row in _select(store, graphs[:1], q):
        f, c, g, expected = (row[k] or "" for k in ("f", "c", "g", "expected"))
        yield _Finding(
            f,
            f"The failure group {_concept(g)!r} is not the group of its category {_concept(c)!r} "
            f"({_concept(expected)!r}); Karenina computes the group from the category and ignores this one "
            "(metadata.failure.group)",
            g,
            FAILURE_GROUP_MATCHES,
            True,
        )


def _result_templates(store: ox.Store, graphs: list[ox.NamedNode]) -> Iterator[_Finding]:
    templates = [
        (ox.NamedNode(row["c"] or ""), ox.Literal(row["now"] or ""))
        for row in _select(
            store, graphs[1:], "SELECT ?c ?now WHERE { ?c a schema:SoftwareSourceCode ; karenina:templateId ?now }"
        )
    ]
    if not templates:
        return
    q = (
        "SELECT ?r ?tid ?now WHERE { " + _values("?c ?now", templates) + " ?r karenina:template ?c ; "
        "karenina:templateId ?tid FILTER(STR(?tid) != STR(?now)) }"
    )
    for row in _select(store, graphs[:1], q):
        r, tid, now = row["r"] or "", row["tid"] or "", row["now"] or ""
        yield _Finding(
            r,
            f"This result was verified with template {tid!r}, but the stored template of its question is now "
            f"{now!r}: the benchmark changed after the run (metadata.template_id)",
            now,
            RESULT_TEMPLATE_CURRENT,
        )


def _result_benchmarks(store: ox.Store, graphs: list[ox.NamedNode]) -> Iterator[_Finding]:
    # A question's IRI is its benchmark's IRI + "/questions/" + id (docs/data-model.md §3), so the
    # benchmark is known even when its graph is not among ``graphs``. One scan of earl:test.
    used = "SELECT ?b WHERE { ?run a karenina:VerificationRun ; prov:used ?b }"
    prefixes = tuple((row["b"] or "") + "/questions/" for row in _select(store, graphs[:1], used))
    for row in _select(store, graphs[:1], "SELECT ?r ?q WHERE { ?r earl:test ?q }"):
        r, question = row["r"] or "", row["q"] or ""
        if not question.startswith(prefixes):
            yield _Finding(
                r,
                "This result tests a question of a benchmark its run does not list as used (prov:used): "
                "the run is read and validated without that benchmark (metadata.question_id)",
                question,
                RESULT_BENCHMARK_USED,
                True,
            )


_EARL = PREFIXES["earl"]
# What each outcome means, as the message when a stored outcome disagrees with the row.
_OUTCOME_MESSAGES = {
    "passed": "The outcome is earl:passed exactly when verify_result is true (template.verify_result)",
    "failed": "The outcome is earl:failed exactly when verify_result is false (template.verify_result)",
    "inapplicable": "earl:inapplicable means no template was verified and nothing failed (rubric only), but this "
    "result has a failure or a template verification (metadata.failure, template.template_verification_performed)",
    "cantTell": "earl:cantTell means there is no verdict after a failure or a template verification, but this "
    "result has neither (metadata.failure, template.template_verification_performed)",
}


def _derived_outcome(verdict: str | None, failure: bool, performed: bool) -> str:
    """The outcome the importer derives (_results_map.outcome) from verify_result (its lexical
    form, or None), whether there is a failure and whether template verification was performed."""
    if verdict in ("true", "1"):
        return "passed"
    if verdict in ("false", "0"):
        return "failed"
    return "cantTell" if failure or performed else "inapplicable"


def _outcomes(store: ox.Store, graphs: list[ox.NamedNode]) -> Iterator[_Finding]:
    # One row per result (joins, not EXISTS: linear in the run). A missing outcome, a literal
    # one or several are reported by the shapes; here each (result, outcome IRI) pair is judged.
    q = (
        "SELECT ?r ?o ?v ?perf ?f ?cat WHERE { ?r a karenina:VerificationResult . "
        "OPTIONAL { ?r earl:result ?out . ?out earl:outcome ?o FILTER(isIRI(?o)) } "
        "OPTIONAL { ?r karenina:verifyResult ?v FILTER(DATATYPE(?v) = xsd:boolean) } "
        "OPTIONAL { ?r karenina:templateVerificationPerformed ?perf } "
        "OPTIONAL { ?r karenina:failure ?f OPTIONAL { ?f karenina:failureCategory ?cat } } }"
    )
    content = KAR.failure_category("content")
    for row in _select(store, graphs[:1], q):
        r, outcome = row["r"] or "", (row["o"] or "").removeprefix(_EARL)  # "" without an outcome
        verdict, failure = row["v"], row["f"]
        performed = row["perf"] in ("true", "1")
        if outcome in _OUTCOME_MESSAGES:
            derived = _derived_outcome(verdict, failure is not None, performed)
            if derived != outcome:
                # The rule broken: the stored outcome's own, unless there is a verdict and the
                # outcome is not passed/failed; then the rule of the outcome the verdict calls for.
                rule = outcome if outcome in ("passed", "failed") or derived not in ("passed", "failed") else derived
                yield _Finding(r, _OUTCOME_MESSAGES[rule], _EARL + outcome, OUTCOME_MATCHES, True)
        if failure is not None and row["cat"] == content and verdict not in ("false", "0"):
            yield _Finding(
                failure,
                "A content failure means the answer was judged wrong, but this result's verify_result is "
                f"{'null' if verdict is None else verdict} (metadata.failure.category, template.verify_result)",
                content,
                CONTENT_FAILURE_VERDICT,
                True,
            )


_SCORE_DICT = {"llm": "llm_trait_scores", "regex": "regex_trait_scores", "callable": "callable_trait_scores"}
_SCORE_DICT |= {"metric": "metric_trait_scores", "agentic": "agentic_trait_scores"}


_EXPECTED_SCORE = {
    "boolean": "true or false",
    "literal": "the index of one of its classes (-1 or more)",
    "score": "a number",
}


def _score_fits(store: ox.Store, graphs: list[ox.NamedNode]) -> Iterator[_Finding]:
    # The traits are in benchmark graphs (read once, as VALUES); only the misfits come back.
    traits = (
        "SELECT ?t ?kind WHERE { ?t a schema:Rating ; karenina:traitKind ?kind "
        'FILTER(?kind IN ("boolean", "literal", "score")) }'
    )
    kinds = [
        (ox.NamedNode(row["t"] or ""), ox.Literal(row["kind"] or "")) for row in _select(store, graphs[1:], traits)
    ]
    if not kinds:
        return
    q = (
        "SELECT ?s ?name ?kind ?scoreKind ?v WHERE { " + _values("?t ?kind", kinds) + " "
        "?s karenina:scoresTrait ?t ; schema:value ?v ; karenina:traitName ?name . "
        "OPTIONAL { ?s karenina:scoreKind ?scoreKind } "
        'FILTER((?kind = "boolean" && DATATYPE(?v) != xsd:boolean) '
        '|| (?kind = "literal" && !COALESCE(DATATYPE(?v) = xsd:integer && ?v >= -1, false)) '
        '|| (?kind = "score" && !(DATATYPE(?v) IN (xsd:integer, xsd:double)))) }'
    )
    for row in _select(store, graphs[:1], q):
        s, name, kind, v = row["s"] or "", row["name"] or "", row["kind"] or "", row["v"] or ""
        where = _SCORE_DICT.get(row["scoreKind"] or "", "*_trait_scores")
        yield _Finding(
            s,
            f"Trait {name!r} is a {kind} trait, so its score is {_EXPECTED_SCORE[kind]}, not {v!r}: the benchmark "
            f"changed since the run, or the score is not Karenina's (rubric.{where}[{name!r}])",
            v,
            SCORE_FITS_TRAIT,
        )


def _score_kinds(store: ox.Store, graphs: list[ox.NamedNode]) -> Iterator[_Finding]:
    regex = (
        'SELECT ?s ?name ?v WHERE { ?s karenina:scoreKind "regex" ; schema:value ?v ; karenina:traitName ?name '
        "FILTER(DATATYPE(?v) != xsd:boolean) }"
    )
    for row in _select(store, graphs[:1], regex):
        name, v = row["name"] or "", row["v"] or ""
        yield _Finding(
            row["s"] or "",
            f"A regex trait score is true or false, not {v!r} (rubric.regex_trait_scores[{name!r}])",
            v,
            SCORE_HOLDS_ITS_KIND,
        )
    metric = 'SELECT ?s ?name ?v WHERE { ?s karenina:scoreKind "metric" ; schema:value ?v ; karenina:traitName ?name }'
    for row in _select(store, graphs[:1], metric):
        name, v = row["name"] or "", row["v"] or ""
        yield _Finding(
            row["s"] or "",
            f"A metric trait score keeps its numbers as metric values, not one value {v!r} "
            f"(rubric.metric_trait_scores[{name!r}])",
            v,
            SCORE_HOLDS_ITS_KIND,
        )
    foreign = (
        "SELECT DISTINCT ?s ?name WHERE { ?s karenina:metricValue ?m ; karenina:traitName ?name "
        'MINUS { ?s karenina:scoreKind "metric" } }'
    )
    for row in _select(store, graphs[:1], foreign):
        name = row["name"] or ""
        yield _Finding(
            row["s"] or "",
            f"Only a metric trait score has metric values, and the score of {name!r} is not one "
            "(rubric.metric_trait_scores)",
            None,
            SCORE_HOLDS_ITS_KIND,
        )


def run_result_checks(store: ox.Store, graphs: list[ox.NamedNode]) -> list[ValidationResult]:
    """The Python checks on one verification run: ``graphs`` is the run graph first, then the
    graphs it needs to be read with (the benchmarks it used, the vocabulary); results sorted like
    pyshacl's."""
    if not graphs:
        return []
    runners = (_failure_groups, _result_templates, _result_benchmarks, _outcomes, _score_kinds, _score_fits)
    return _results(f for runner in runners for f in runner(store, graphs))


def _results(findings: Iterable[_Finding]) -> list[ValidationResult]:
    out = [
        ValidationResult(
            focus_node=f.focus,
            path=f.check.path,
            message=f.message,
            severity=f.check.severity,
            source_shape=f.check.iri,
            source_constraint_component=f.check.iri,
            value=f.value,
            value_term=None
            if f.value is None
            else str(ox.NamedNode(f.value) if f.value_is_iri else ox.Literal(f.value)),
        )
        for f in findings
    ]
    out.sort(key=lambda r: (r.focus_node, r.path or "", r.message, r.value or ""))
    return out


# Questions without a real template: none attached, a blank one (its templateId is Karenina's
# "no_template", which the TemplateIdMatches check keeps true to the text) or Karenina's default
# placeholder. Identity tests only (sameTerm, MINUS): no template text is read.
_NO_REAL_TEMPLATE = """
SELECT ?q WHERE {
  ?q a schema:Question .
  MINUS {
    ?q schema:hasPart ?c . ?c a schema:SoftwareSourceCode ; karenina:templateId ?tid .
    FILTER(NO_TEMPLATE_TEST)
    MINUS { ?c karenina:isDefaultTemplate true }
  }
}"""
_NO_OWN_TRAIT = "SELECT ?q WHERE { ?q a schema:Question MINUS { ?q schema:contentRating ?t } }"
_GLOBAL_TRAITS = "ASK { ?b a schema:DataFeed ; schema:contentRating ?t }"
_QUESTIONS = "SELECT (COUNT(?q) AS ?n) WHERE { ?q a schema:Question }"


def _question_sets(store: ox.Store, graph: ox.NamedNode) -> tuple[int, set[str], set[str]]:
    """(number of questions, those without a real template, those without any rubric trait)."""
    n = int(next(_select(store, graph, _QUESTIONS))["n"] or 0)
    # sameTerm avoids decoding on pyoxigraph; a server (Virtuoso) may answer it false for equal
    # strings, so there the lexical form is compared.
    test = '!sameTerm(?tid, "no_template")' if isinstance(store, ox.Store) else 'STR(?tid) != "no_template"'
    no_template = {row["q"] or "" for row in _select(store, graph, _NO_REAL_TEMPLATE.replace("NO_TEMPLATE_TEST", test))}
    has_global = store.query(sparql_prefixes() + _GLOBAL_TRAITS, default_graph=graph)
    no_rubric = set() if has_global else {row["q"] or "" for row in _select(store, graph, _NO_OWN_TRAIT)}
    return n, no_template, no_rubric


def _modes(has_template: bool, has_rubric: bool) -> list[str]:
    ready = {
        "template_only": has_template,
        "template_and_rubric": has_template and has_rubric,
        "rubric_only": has_rubric,
    }
    return [m for m in EVALUATION_MODES if ready[m]]


def evaluation_modes(store: ox.Store, graph: ox.NamedNode) -> dict[str, list[str]]:
    """Which of Karenina's evaluation modes each question of ``graph`` is ready for.

    Verification spec §3.3: ``template_only`` and ``template_and_rubric`` run the template stages
    (ValidateTemplate, ParseTemplate, VerifyTemplate), so they need a real template: one whose
    text is not blank (its ``karenina:templateId`` is not Karenina's ``no_template``) and is not
    Karenina's default placeholder (``karenina:isDefaultTemplate``). ``template_and_rubric`` and
    ``rubric_only`` add rubric stages only when a non-empty rubric is attached, the global traits
    merged with the question's (§6.3), so they need at least one trait. A question with neither
    is ready for no mode.
    """
    _, no_template, no_rubric = _question_sets(store, graph)
    questions = [row["q"] or "" for row in _select(store, graph, "SELECT ?q WHERE { ?q a schema:Question }")]
    return {q: _modes(q not in no_template, q not in no_rubric) for q in sorted(questions)}


class Readiness(BaseModel):
    """Which evaluation modes a benchmark's questions are ready for (see :func:`evaluation_modes`)."""

    model_config = ConfigDict(frozen=True)

    questions: int
    ready: dict[str, int]  # mode -> how many questions can run it
    without_template: tuple[str, ...]  # ids of questions with no real template (rubric_only at most)
    not_ready: tuple[str, ...]  # ids of questions ready for no mode (no template, no rubric)

    def line(self) -> str:
        counts = ", ".join(f"{m} {self.ready.get(m, 0):,}" for m in EVALUATION_MODES)
        out = f"ready for: {counts} (of {self.questions:,} questions)"
        if self.without_template:
            out += f"; {len(self.without_template):,} without a template ({_ids(self.without_template)})"
        if self.not_ready:
            out += f"; {len(self.not_ready):,} ready for no mode ({_ids(self.not_ready)})"
        return out


def _ids(ids: tuple[str, ...], shown: int = 3) -> str:
    more = f", … {len(ids) - shown:,} more" if len(ids) > shown else ""
    return ", ".join(repr(i) for i in ids[:shown]) + more


def readiness(store: ox.Store, graph: ox.NamedNode, bench: str) -> Readiness:
    """:func:`evaluation_modes` of one benchmark graph, counted, with the ids of the questions
    that are not ready for every mode (only those are read: this runs on every import)."""
    n, no_template, no_rubric = _question_sets(store, graph)

    def ids(iris: set[str]) -> tuple[str, ...]:
        # A scenario node's question has no question id of the benchmark: named by its path there.
        return tuple(
            sorted((owner[0] if (owner := owning_question(bench, q)) else q.removeprefix(bench + "/")) for q in iris)
        )

    return Readiness(
        questions=n,
        ready={
            "template_only": n - len(no_template),
            "template_and_rubric": n - len(no_template | no_rubric),
            "rubric_only": n - len(no_rubric),
        },
        without_template=ids(no_template),
        not_ready=ids(no_template & no_rubric),
    )
