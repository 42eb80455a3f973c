"""What the pages of verification runs show, read from the store (docs/data-model.md §9).

Every function blocks (the pages run them on a worker thread). A run lives in a graph of its own,
and each query reads one run graph (plus the models graph, for the models' labels).

pyoxigraph answers a single triple pattern from an index scan, but pays an index lookup per
solution for each join (about 10x the scan, measured on a 90,000-result run), so the queries avoid
joins over all of a run's results. The counts by model and judge come from the run's tallies (a
few nodes an import writes); a run without them is counted with single patterns (the runs list)
or with one aggregate made of a union of single patterns (:data:`_GROUPS`). A page of the heatmap
picks its questions by a sort of the distinct question ids before it reads their results. The
results table sorts the positions of its selection (``ORDER BY`` + ``LIMIT`` / ``OFFSET``).
docs/endpoint.md ("Runs at scale") has the measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import pyoxigraph as ox

from karenina_rdf._errors import InvalidValueError
from karenina_rdf._store import Store
from karenina_rdf.rdf import (
    KAR,
    MODELS_GRAPH,
    PREFIXES,
    SCHEMA,
    XSD,
    node_index,
    solutions,
    term_value,
    to_python,
    unsegment,
)
from karenina_rdf.results import EARL, PROV, RDFS
from karenina_rdf.store import IMPORTED_AT, SOURCE, TRIPLE_COUNT

T = TypeVar("T")
# memo(name, graph, job): job's value, possibly remembered for this generation of a run graph
# (the pages keep the aggregates of a run until the next write; see Pages._memo).
Memo = Callable[[str, ox.NamedNode, Callable[[], Any]], Any]
RESULTS_PAGE = 100
OUTCOMES = {"passed": "passed", "failed": "failed", "cantTell": "can't tell", "inapplicable": "inapplicable"}
_SEP = "\u001f"  # GROUP_CONCAT separator no model IRI or mode contains

# The runs list: counts from single patterns, no join. The pass rate is the mean of the non-null
# verify_result values (Karenina's rule): a null has no triple, and a value that is neither true
# nor false (stored as rdf:JSON) is no verdict either.
_RUN_COUNTS = f"""
SELECT * WHERE {{
  {{ SELECT (COUNT(*) AS ?n) WHERE {{ ?r a karenina:VerificationResult }} }}
  {{ SELECT (COUNT(*) AS ?passed) WHERE {{ ?r karenina:verifyResult true }} }}
  {{ SELECT (COUNT(*) AS ?failed) WHERE {{ ?r karenina:verifyResult false }} }}
  {{ SELECT (COUNT(*) AS ?failures) WHERE {{ ?r karenina:failure ?f }} }}
  {{ SELECT (GROUP_CONCAT(DISTINCT STR(?m); separator="{_SEP}") AS ?answering) WHERE {{ ?r earl:subject ?m }} }}
  {{ SELECT (GROUP_CONCAT(DISTINCT STR(?j); separator="{_SEP}") AS ?judges) WHERE {{ ?r earl:assertedBy ?j }} }}
  {{ SELECT (GROUP_CONCAT(DISTINCT ?mode; separator="{_SEP}") AS ?modes) WHERE {{ ?r karenina:evaluationMode ?mode }} }}
}}"""

# The tallies an import writes (a few nodes per run: one per answering model, judge and benchmark).
_TALLIES = """
SELECT ?m ?j (SUM(?n0) AS ?n) (SUM(?v0) AS ?verified) (SUM(?p0) AS ?passed) (SUM(?f0) AS ?failures) WHERE {
  ?t a karenina:Tally ; karenina:results ?n0 ; karenina:verified ?v0 ; karenina:passed ?p0 ; karenina:failures ?f0 .
  OPTIONAL { ?t karenina:answeringModel ?m } OPTIONAL { ?t karenina:parsingModel ?j }
}
GROUP BY ?m ?j"""
_MODES = "SELECT DISTINCT ?mode WHERE { ?r karenina:evaluationMode ?mode }"

# Without tallies, one aggregate over a run's results by answering model, judge and mode: each
# branch of the union is one index scan; grouping by result puts a result's parts together (in a
# hash table: about half the time of the same counts made with OPTIONAL joins).
_BY_RESULT = """
SELECT ?r (SAMPLE(?m0) AS ?m) (SAMPLE(?j0) AS ?j) (SAMPLE(?mode0) AS ?mode)
  (COUNT(?p0) AS ?p) (COUNT(?x0) AS ?x) (COUNT(?f0) AS ?f) WHERE {
  { ?r a karenina:VerificationResult BIND(1 AS ?t0) }
  UNION { ?r earl:subject ?m0 } UNION { ?r earl:assertedBy ?j0 } UNION { ?r karenina:evaluationMode ?mode0 }
  UNION { ?r karenina:verifyResult true BIND(1 AS ?p0) } UNION { ?r karenina:verifyResult false BIND(1 AS ?x0) }
  UNION { ?r karenina:failure ?f0 }
} GROUP BY ?r HAVING(COUNT(?t0) > 0)"""
_GROUPS = f"""
SELECT ?m ?j ?mode (COUNT(?r) AS ?n) (SUM(?p) AS ?passed) (SUM(?x) AS ?failed) (SUM(?f) AS ?failures) WHERE {{
  {{ {_BY_RESULT} }}
}}
GROUP BY ?m ?j ?mode"""

# Failures by category and by group (two single-pattern counts; the group is as the file says).
_FAILURES = """
SELECT ?category ?group (COUNT(*) AS ?n) WHERE {
  { ?f karenina:failureCategory ?category } UNION { ?f karenina:failureGroup ?group }
}
GROUP BY ?category ?group"""

# A page of the results table: the selection sorted by position, then its rows read.
_PAGE = """
SELECT ?r WHERE { ?r a karenina:VerificationResult ; karenina:position ?pos . %s }
ORDER BY ?pos ?r LIMIT %d OFFSET %d"""
_COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?r a karenina:VerificationResult . %s }"
_LAST = "SELECT (MAX(?pos) AS ?top) WHERE { ?r a karenina:VerificationResult ; karenina:position ?pos }"
_AT = "SELECT ?r ?pos WHERE { VALUES ?pos { %s } ?r karenina:position ?pos ; a karenina:VerificationResult }"
_ROWS = """
SELECT ?r ?pos ?qid ?q ?text ?m ?ml ?j ?jl ?rep ?outcome ?v ?category ?run WHERE {
  VALUES ?r { %s }
  OPTIONAL { ?r karenina:position ?pos }
  OPTIONAL { ?r karenina:questionId ?qid }
  OPTIONAL { ?r earl:test ?q }
  OPTIONAL { ?r karenina:questionText ?text }
  OPTIONAL { ?r earl:subject ?m OPTIONAL { ?m rdfs:label ?ml } }
  OPTIONAL { ?r earl:assertedBy ?j OPTIONAL { ?j rdfs:label ?jl } }
  OPTIONAL { ?r karenina:replicate ?rep }
  OPTIONAL { ?r earl:result/earl:outcome ?outcome }
  OPTIONAL { ?r karenina:verifyResult ?v }
  OPTIONAL { ?r karenina:failure/karenina:failureCategory ?category }
  OPTIONAL { ?r prov:wasGeneratedBy ?run }
}"""
# Filters of the results table: a model, a judge, an outcome.
_FILTERS = {
    "model": "?r earl:subject %s .",
    "judge": "?r earl:assertedBy %s .",
    "outcome": "?r earl:result/earl:outcome %s .",
}


def query(store: Store, sparql: str, graph: ox.NamedNode | list[ox.NamedNode]) -> ox.QuerySolutions:
    graphs: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph] = list(graph) if isinstance(graph, list) else [graph]
    return solutions(store.oxigraph.query(sparql, prefixes=dict(PREFIXES), default_graph=graphs))


def _v(solution: ox.QuerySolution, name: str) -> str | None:
    term = solution[name]
    return None if term is None else term_value(term)


def _n(solution: ox.QuerySolution, name: str) -> int:
    value = _v(solution, name)
    return int(value) if value is not None else 0


def _plain(found: ox.QuerySolutions) -> dict[str, str | None]:
    """The first solution as plain strings: what the pages remember must not hold pyoxigraph
    objects, which belong to the worker thread that made them."""
    first = next(iter(found), None)
    return {} if first is None else {v.value: _v(first, v.value) for v in found.variables}


def _verdict(term: Any) -> str | None:
    """A verify_result as text: ``true``/``false`` for a boolean in any lexical form (Virtuoso
    writes ``1``/``0``), else the stored value as it is."""
    if isinstance(term, ox.Literal) and term.datatype.value == XSD + "boolean":
        return "true" if to_python(term) else "false"
    return None if term is None else term_value(term)


def _local(iri: str | None, prefix: str) -> str | None:
    return iri[len(prefix) :] if iri is not None and iri.startswith(prefix) else iri


@dataclass(slots=True)
class Tally:
    """Results, verdicts and failures of a set of results; pass rate = passed / (passed + failed)."""

    results: int = 0
    passed: int = 0
    failed: int = 0
    failures: int = 0

    @property
    def verified(self) -> int:
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.verified if self.verified else None

    def add(self, other: Tally) -> None:
        self.results += other.results
        self.passed += other.passed
        self.failed += other.failed
        self.failures += other.failures


@dataclass(frozen=True)
class Model:
    iri: str
    label: str


@dataclass
class RunGroups:
    """One run's results counted by answering model, judge and evaluation mode."""

    total: Tally = field(default_factory=Tally)
    by_model: dict[str, Tally] = field(default_factory=dict)
    by_judge: dict[str, Tally] = field(default_factory=dict)
    modes: list[str] = field(default_factory=list)
    models: dict[str, Model] = field(default_factory=dict)  # answering models and judges by IRI

    def answering(self) -> list[Model]:
        return sorted((self.models[m] for m in self.by_model if m in self.models), key=lambda m: m.label.lower())

    def judges(self) -> list[Model]:
        return sorted((self.models[m] for m in self.by_judge if m in self.models), key=lambda m: m.label.lower())


def model_labels(store: Store, graph: ox.NamedNode, iris: Iterable[str]) -> dict[str, Model]:
    """The models' labels, from the models graph (where imports write them once for every run),
    else from the run's own graph (where runs imported before that hold a copy)."""
    out = {}
    for iri in iris:
        label = None
        for where in (MODELS_GRAPH, graph):
            found = store.oxigraph.quads_for_pattern(ox.NamedNode(iri), ox.NamedNode(RDFS + "label"), None, where)
            label = label or next((term_value(q.object) for q in found), None)
        out[iri] = Model(iri, label or unsegment(iri.rsplit("/", 1)[-1]))
    return out


def _no_memo(name: str, graph: ox.NamedNode, job: Callable[[], T]) -> T:
    return job()


def run_groups(store: Store, graph: ox.NamedNode, memo: Memo = _no_memo) -> RunGroups:
    """A run's results counted by answering model, judge and mode: from its tallies, else from
    one aggregate over its results (:data:`_GROUPS`)."""
    groups: RunGroups = memo("groups", graph, lambda: tallied(store, graph) or _run_groups(store, graph))
    return groups


def tallied(store: Store, graph: ox.NamedNode) -> RunGroups | None:
    """The counts an import writes into a run's graph (``karenina:Tally`` nodes, one per answering
    model, judge and benchmark): a few nodes to read, however many results. None for a run
    without tallies (imported before they were written, or edited by an update that removed them)."""
    groups = RunGroups()
    for s in query(store, _TALLIES, graph):
        verified = _n(s, "verified")
        tally = Tally(_n(s, "n"), _n(s, "passed"), verified - _n(s, "passed"), _n(s, "failures"))
        groups.total.add(tally)
        for key, by in (("m", groups.by_model), ("j", groups.by_judge)):
            iri = _v(s, key)
            if iri is not None:
                by.setdefault(iri, Tally()).add(tally)
    if not groups.total.results:
        return None
    groups.modes = sorted(_v(s, "mode") or "" for s in query(store, _MODES, graph))
    groups.models = model_labels(store, graph, {*groups.by_model, *groups.by_judge})
    return groups


def _run_groups(store: Store, graph: ox.NamedNode) -> RunGroups:
    groups = RunGroups()
    modes: set[str] = set()
    for s in query(store, _GROUPS, graph):
        tally = Tally(_n(s, "n"), _n(s, "passed"), _n(s, "failed"), _n(s, "failures"))
        groups.total.add(tally)
        for key, by in (("m", groups.by_model), ("j", groups.by_judge)):
            iri = _v(s, key)
            if iri is not None:
                by.setdefault(iri, Tally()).add(tally)
        mode = _v(s, "mode")
        if mode is not None:
            modes.add(mode)
    groups.modes = sorted(modes)
    groups.models = model_labels(store, graph, {*groups.by_model, *groups.by_judge})
    return groups


@dataclass(frozen=True)
class RunRow:
    """One line of the runs list."""

    iri: str
    run_id: str
    started: str | None
    ended: str | None
    source: str | None
    imported_at: str | None
    total: Tally
    answering: list[Model]
    judges: list[Model]
    modes: list[str]


def _run_node(store: Store, run: str, graph: ox.NamedNode) -> dict[str, list[Any]]:
    return node_index(store.oxigraph, graph, [run], skip=(run + "/",)).get(run, {})


def _first(preds: dict[str, list[Any]], predicate: str) -> str | None:
    values = preds.get(predicate)
    return term_value(values[0]) if values else None


def run_row(store: Store, run: str, graph: ox.NamedNode, memo: Memo = _no_memo) -> RunRow:
    preds = _run_node(store, run, graph)
    groups = memo("tallies", graph, lambda: tallied(store, graph))
    if groups is not None:
        total, answering, judges, modes = groups.total, groups.answering(), groups.judges(), groups.modes
    else:
        total, answering, judges, modes = _counted(store, graph, memo)
    return RunRow(
        iri=run,
        run_id=_first(preds, SCHEMA + "identifier") or unsegment(run.rsplit("/", 1)[-1]),
        started=_first(preds, PROV + "startedAtTime"),
        ended=_first(preds, PROV + "endedAtTime"),
        source=store.catalog.value(run, SOURCE),
        imported_at=store.catalog.value(run, IMPORTED_AT),
        total=total,
        answering=answering,
        judges=judges,
        modes=modes,
    )


def _counted(store: Store, graph: ox.NamedNode, memo: Memo) -> tuple[Tally, list[Model], list[Model], list[str]]:
    """A run without tallies: its counts from single patterns (:data:`_RUN_COUNTS`)."""
    counts: dict[str, str | None] = memo("counts", graph, lambda: _plain(query(store, _RUN_COUNTS, graph)))

    def split(name: str) -> list[str]:
        return sorted(v for v in (counts.get(name) or "").split("\x1f") if v)

    def n(name: str) -> int:
        return int(counts.get(name) or 0)

    labels = model_labels(store, graph, [*split("answering"), *split("judges")])
    return (
        Tally(n("n"), n("passed"), n("failed"), n("failures")),
        sorted((labels[m] for m in split("answering")), key=lambda m: m.label.lower()),
        sorted((labels[m] for m in split("judges")), key=lambda m: m.label.lower()),
        split("modes"),
    )


def run_rows(store: Store, memo: Memo = _no_memo) -> list[RunRow]:
    """Every stored run, newest first: its tallies, else one query of single-pattern counts."""
    rows = [run_row(store, run, graph, memo) for run, graph in store.catalog.runs().items()]
    return sorted(rows, key=lambda r: (r.started or "", r.run_id), reverse=True)


@dataclass(frozen=True)
class ResultRow:
    iri: str
    position: int | None
    question_id: str
    question: str | None  # the stored question it tests, if any
    text: str | None
    model: str | None
    model_label: str | None
    judge: str | None
    judge_label: str | None
    replicate: int | None
    outcome: str | None  # passed, failed, cantTell, inapplicable
    verify_result: str | None  # "true", "false", or another stored value
    failure: str | None  # the failure category
    run: str | None

    @property
    def run_id(self) -> str:
        """The run's id, read from its IRI (``{base}runs/{seg(id)}``)."""
        return unsegment((self.run or "").rsplit("/", 1)[-1])


@dataclass(frozen=True)
class ResultTable:
    rows: list[ResultRow]
    total: int
    page: int
    pages: int


def result_filter(selected: dict[str, str]) -> str:
    """The triple patterns of the table's filters (values are IRIs, made terms here); a value
    that is no IRI is refused (``InvalidValueError``: a 400), never sent to the store."""
    parts = []
    for name, pattern in _FILTERS.items():
        value = selected.get(name)
        if value:
            try:
                term = ox.NamedNode(EARL + value if name == "outcome" else value)
            except ValueError:
                raise InvalidValueError(f"{name}: {value[:200]!r} is not an IRI") from None
            parts.append(pattern % term)
    return " ".join(parts)


def result_table(
    store: Store, graph: ox.NamedNode, page: int, selected: dict[str, str], memo: Memo = _no_memo
) -> ResultTable:
    """One page of a run's results in file order (``karenina:position``), optionally filtered."""
    where = result_filter(selected)
    total = next((_n(s, "n") for s in query(store, _COUNT % where, graph)), 0)
    pages, page = _pages(total, page, RESULTS_PAGE)
    start = (page - 1) * RESULTS_PAGE
    if not where and page > 1:
        # A run imported in one go numbers its results 0..n-1 (an upsert leaves gaps): then a page
        # is a list of positions, found from the index. Page 1 is not, as the parts of a result
        # (usage, fields, scores) also have small positions, so many that the sort is cheaper.
        top = memo("last position", graph, lambda: _plain(query(store, _LAST, graph)).get("top"))
        if top == str(total - 1):
            positions = " ".join(str(i) for i in range(start, min(start + RESULTS_PAGE, total)))
            found = query(store, _AT % positions, graph)
            chosen = [term_value(s["r"]) for s in sorted(found, key=lambda s: int(_v(s, "pos") or 0))]
            if len(chosen) == min(RESULTS_PAGE, total - start):
                return ResultTable(result_rows(store, graph, chosen), total, page, pages)

    def sorted_page() -> list[str]:
        return [term_value(s["r"]) for s in query(store, _PAGE % (where, RESULTS_PAGE, start), graph)]

    # The first page of a run is what everyone opens: its sort is remembered.
    chosen = memo("first page", graph, sorted_page) if not where and page == 1 else sorted_page()
    return ResultTable(result_rows(store, graph, chosen), total, page, pages)


def result_rows(store: Store, graph: ox.NamedNode, results: list[str]) -> list[ResultRow]:
    """The table rows of these results of one run, in the order given."""
    if not results:
        return []
    values = " ".join(str(ox.NamedNode(r)) for r in results)
    found: dict[str, ResultRow] = {}
    # The models' labels are in the models graph (or, for older runs, in the run's graph).
    for s in query(store, _ROWS % values, [graph, MODELS_GRAPH]):
        iri = term_value(s["r"])
        if iri in found:
            continue  # a value given twice by a hand edit: the first row is enough
        pos, rep = _v(s, "pos"), _v(s, "rep")
        found[iri] = ResultRow(
            iri=iri,
            position=int(pos) if pos is not None and pos.lstrip("-").isdigit() else None,
            question_id=_v(s, "qid") or "",
            question=_v(s, "q"),
            text=_v(s, "text"),
            model=_v(s, "m"),
            model_label=_v(s, "ml"),
            judge=_v(s, "j"),
            judge_label=_v(s, "jl"),
            replicate=int(rep) if rep is not None and rep.lstrip("-").isdigit() else None,
            outcome=_local(_v(s, "outcome"), EARL),
            verify_result=_verdict(s["v"]),
            failure=_local(_v(s, "category"), KAR.failure_category),
            run=_v(s, "run"),
        )
    return [found[r] for r in results if r in found]


@dataclass(frozen=True)
class FailureCounts:
    by_category: list[tuple[str, int]]  # most frequent first
    by_group: list[tuple[str, int]]


def failure_counts(store: Store, graph: ox.NamedNode) -> FailureCounts:
    categories, groups = [], []
    for s in query(store, _FAILURES, graph):
        category, group = _v(s, "category"), _v(s, "group")
        if category is not None:
            categories.append((_local(category, KAR.failure_category) or category, _n(s, "n")))
        if group is not None:
            groups.append((_local(group, KAR.failure_group) or group, _n(s, "n")))
    return FailureCounts(sorted(categories, key=lambda c: (-c[1], c[0])), sorted(groups, key=lambda g: (-g[1], g[0])))


@dataclass(frozen=True)
class CheckCounts:
    """Results whose abstention check found an abstention, and whose sufficiency check found the
    response insufficient (Karenina's ``abstention_detected`` true, ``sufficiency_detected`` false)."""

    abstained: int
    insufficient: int
    checked: int  # results on which either check was performed


_CHECKS = """SELECT (COUNT(?a) AS ?abstained) (COUNT(?i) AS ?insufficient) (COUNT(DISTINCT ?c) AS ?checked) WHERE {
  { ?a karenina:abstentionDetected true } UNION { ?i karenina:sufficiencyDetected false }
  UNION { ?c karenina:abstentionCheckPerformed true } UNION { ?c karenina:sufficiencyCheckPerformed true }
}"""


def check_counts(store: Store, graph: ox.NamedNode) -> CheckCounts:
    s = next(iter(query(store, _CHECKS, graph)))
    return CheckCounts(_n(s, "abstained"), _n(s, "insufficient"), _n(s, "checked"))


@dataclass(frozen=True)
class Import:
    iri: str
    name: str | None
    sha256: str | None
    imported_at: str | None
    results: int | None
    format_version: str | None


@dataclass(frozen=True)
class RunView:
    row: RunRow
    facts: dict[str, Any]  # the run node's literals by predicate (local name), as Python values
    benchmarks: list[tuple[str, str]]  # (IRI, name) of the benchmarks its rows link to
    imports: list[Import]
    graph: str
    triples: int | None
    groups: RunGroups
    failures: FailureCounts
    checks: CheckCounts


def run_view(store: Store, run: str, graph: ox.NamedNode, memo: Memo = _no_memo) -> RunView:
    ox_store = store.oxigraph
    preds = _run_node(store, run, graph)
    facts = {
        local: to_python(objects[0])
        for p, objects in preds.items()
        if (local := KAR.local_name(p)) is not None and isinstance(objects[0], ox.Literal)
    }
    benchmarks = []
    for b in preds.get(PROV + "used", []):
        names = store.oxigraph.quads_for_pattern(
            b, ox.NamedNode(SCHEMA + "name"), None, store.catalog.benchmarks().get(b.value)
        )
        benchmarks.append((b.value, next((term_value(q.object) for q in names), b.value)))
    imports = []
    for node in preds.get(KAR.term("import"), []):
        own = {q.predicate.value: term_value(q.object) for q in ox_store.quads_for_pattern(node, None, None, graph)}
        count = own.get(KAR.resultCount)
        imports.append(
            Import(
                iri=node.value,
                name=own.get(SCHEMA + "name"),
                sha256=own.get(KAR.sourceSha256),
                imported_at=own.get(KAR.importedAt),
                results=int(count) if count is not None and count.isdigit() else None,
                format_version=own.get(KAR.formatVersion),
            )
        )
    catalog = store.catalog.facts(run)
    triples = catalog.get(TRIPLE_COUNT)
    return RunView(
        row=run_row(store, run, graph, memo),
        facts=facts,
        benchmarks=sorted(benchmarks, key=lambda b: b[1].lower()),
        imports=sorted(imports, key=lambda i: i.imported_at or ""),
        graph=graph.value,
        triples=int(triples) if triples is not None and triples.isdigit() else None,
        groups=run_groups(store, graph, memo),
        failures=memo("failures", graph, lambda: failure_counts(store, graph)),
        checks=memo("checks", graph, lambda: check_counts(store, graph)),
    )


# -- comparison of answering models ------------------------------------------------------------
COMPARE_PAGE = 100  # questions (heatmap rows) a page
# The results of a page's questions, one row per result, counted in Python (a few thousand rows;
# Virtuoso miscounts an OPTIONAL under a UNION once grouped). Each question id is written into a
# branch of its own, so that the lookup starts from the index: bound by VALUES, pyoxigraph would
# scan every id first.
_PAGE_RESULTS = """
SELECT ?qid ?r ?m ?q ?text ?p ?x ?f WHERE {
  %s
  OPTIONAL { ?r earl:subject ?m } OPTIONAL { ?r earl:test ?q } OPTIONAL { ?r karenina:questionText ?text }
  OPTIONAL { ?r karenina:verifyResult true BIND(1 AS ?p) } OPTIONAL { ?r karenina:verifyResult false BIND(1 AS ?x) }
  OPTIONAL { ?r karenina:failure ?f }
}"""
# Every cell at once (for the hardest-first order): union branches grouped by result, as _GROUPS.
_ALL_CELLS = """
SELECT ?qid ?m (SAMPLE(?q1) AS ?q) (COUNT(?r) AS ?n) (SUM(?p) AS ?passed) (SUM(?x) AS ?failed) (SUM(?f) AS ?failures)
WHERE {
  { SELECT ?r (SAMPLE(?qid0) AS ?qid) (SAMPLE(?m0) AS ?m) (SAMPLE(?q0) AS ?q1)
      (COUNT(?p0) AS ?p) (COUNT(?x0) AS ?x) (COUNT(?f0) AS ?f) WHERE {
      { ?r karenina:questionId ?qid0 } UNION { ?r earl:subject ?m0 } UNION { ?r earl:test ?q0 }
      UNION { ?r karenina:verifyResult true BIND(1 AS ?p0) } UNION { ?r karenina:verifyResult false BIND(1 AS ?x0) }
      UNION { ?r karenina:failure ?f0 }
    } GROUP BY ?r HAVING(COUNT(?qid0) > 0) }
} GROUP BY ?qid ?m"""


@dataclass
class CompareRow:
    question_id: str
    question: str | None = None  # the stored question its results test, if any
    text: str | None = None
    cells: dict[str, Tally] = field(default_factory=dict)  # by answering model IRI
    total: Tally = field(default_factory=Tally)

    def add(self, solution: ox.QuerySolution) -> None:
        """Count one aggregate row (this question, a model) in."""
        self.question = self.question or _v(solution, "q")
        tally = Tally(_n(solution, "n"), _n(solution, "passed"), _n(solution, "failed"), _n(solution, "failures"))
        self.count(_v(solution, "m"), tally)

    def count(self, model: str | None, tally: Tally) -> None:
        self.total.add(tally)
        if model is not None:
            self.cells.setdefault(model, Tally()).add(tally)


@dataclass(frozen=True)
class Comparison:
    runs: list[RunRow]
    groups: dict[str, RunGroups]  # by run IRI
    models: list[Model]
    rows: list[CompareRow]  # this page's
    questions: int
    page: int
    pages: int
    sort: str


def comparison(
    store: Store, runs: list[tuple[str, ox.NamedNode]], page: int, sort: str, memo: Memo = _no_memo
) -> Comparison:
    """Questions × answering models over the given runs, pooled: a cell counts every result of
    that question and model in any of the runs (all judges and replicates). Ordered by question id,
    a page reads the distinct question ids and then only its own questions' results; ordered by
    pass rate (hardest first), it aggregates every result of the runs."""
    graphs = [g for _, g in runs]
    models: dict[str, Model] = {}
    for graph in graphs:
        found = query(store, "SELECT DISTINCT ?m WHERE { ?r earl:subject ?m }", graph)
        models.update(model_labels(store, graph, {term_value(s["m"]) for s in found} - models.keys()))
    rows: dict[str, CompareRow] = {}
    if sort == "pass-rate":
        for graph in graphs:
            for s in query(store, _ALL_CELLS, graph):
                qid = _v(s, "qid") or ""
                rows.setdefault(qid, CompareRow(qid)).add(s)
        ordered = sorted(rows.values(), key=lambda r: r.question_id)
        ordered.sort(key=lambda r: (r.total.pass_rate is None, r.total.pass_rate or 0.0))
        count = len(ordered)
        pages, page = _pages(count, page, COMPARE_PAGE)
        shown = ordered[(page - 1) * COMPARE_PAGE : page * COMPARE_PAGE]
    else:
        ids: set[str] = set()
        for graph in graphs:
            ids.update(
                _v(s, "qid") or ""
                for s in query(store, "SELECT DISTINCT ?qid WHERE { ?r karenina:questionId ?qid }", graph)
            )
        count = len(ids)
        pages, page = _pages(count, page, COMPARE_PAGE)
        chosen = sorted(ids)[(page - 1) * COMPARE_PAGE : page * COMPARE_PAGE]
        shown = [CompareRow(qid) for qid in chosen]
        by_id = {r.question_id: r for r in shown}
        branches = " UNION ".join(
            f"{{ ?r karenina:questionId {ox.Literal(q)} BIND({ox.Literal(q)} AS ?qid) }}" for q in chosen
        )
        for graph in graphs if chosen else []:
            seen: dict[str, tuple[str, str | None, Tally]] = {}  # result → (question id, model, its counts)
            for s in query(store, _PAGE_RESULTS % branches, graph):
                r, qid, row = term_value(s["r"]), _v(s, "qid") or "", by_id.get(_v(s, "qid") or "")
                if row is None:
                    continue
                row.question = row.question or _v(s, "q")
                row.text = row.text or _v(s, "text")
                # A result counts once, whatever a repeated value multiplies its rows to.
                _, m, tally = seen.setdefault(r, (qid, _v(s, "m"), Tally(1)))
                tally.passed, tally.failed = max(tally.passed, _n(s, "p")), max(tally.failed, _n(s, "x"))
                tally.failures = max(tally.failures, 1 if s["f"] is not None else 0)
            for qid, m, tally in seen.values():
                by_id[qid].count(m, tally)
    _question_texts(store, shown)
    return Comparison(
        runs=[run_row(store, run, graph, memo) for run, graph in runs],
        groups={run: run_groups(store, graph, memo) for run, graph in runs},
        models=sorted(models.values(), key=lambda m: m.label.lower()),
        rows=shown,
        questions=count,
        page=page,
        pages=pages,
        sort=sort,
    )


def _pages(total: int, page: int, size: int) -> tuple[int, int]:
    pages = max(1, -(-total // size))
    return pages, min(max(page, 1), pages)


def _question_texts(store: Store, rows: list[CompareRow]) -> None:
    """The stored question's text where there is one (else what a result recorded stays)."""
    linked = [r for r in rows if r.question is not None]
    live = list(store.catalog.benchmarks().values())
    if not (linked and live):
        return
    values = " ".join(str(ox.NamedNode(r.question or "")) for r in linked)
    found = query(store, f"SELECT ?q ?t WHERE {{ VALUES ?q {{ {values} }} ?q schema:text ?t }}", live)
    texts = {term_value(s["q"]): _v(s, "t") for s in found}
    for r in linked:
        r.text = texts.get(r.question or "") or r.text


# -- a question's results, a model's runs ------------------------------------------------------------
QUESTION_RESULTS = 500  # a question page lists at most this many results


def question_results(store: Store, question: str) -> tuple[list[ResultRow], bool]:
    """Every stored result that tests this question (``earl:test``), in every run; and whether
    there were more than :data:`QUESTION_RESULTS`."""
    runs = store.catalog.runs()
    if not runs:
        return [], False
    graphs: list[ox.NamedNode | ox.BlankNode] = list(runs.values())
    found = solutions(
        store.oxigraph.query(
            f"SELECT ?g ?r WHERE {{ GRAPH ?g {{ ?r <{EARL}test> {ox.NamedNode(question)} }} }} "
            f"LIMIT {QUESTION_RESULTS + 1}",
            named_graphs=graphs,
        )
    )
    by_graph: dict[str, list[str]] = {}
    for s in found:
        by_graph.setdefault(term_value(s["g"]), []).append(term_value(s["r"]))
    more = sum(len(v) for v in by_graph.values()) > QUESTION_RESULTS
    rows = []
    for graph, results in by_graph.items():
        rows.extend(result_rows(store, ox.NamedNode(graph), results))
    rows.sort(key=lambda r: (r.run or "", r.model or "", r.judge or "", r.replicate or 0, r.position or 0))
    return rows[:QUESTION_RESULTS], more


_TALLY = """
SELECT (COUNT(?r) AS ?n) (COUNT(?p) AS ?passed) (COUNT(?x) AS ?failed) (COUNT(?f) AS ?failures) WHERE {
  ?r %s %s .
  OPTIONAL { ?r karenina:verifyResult true BIND(1 AS ?p) }
  OPTIONAL { ?r karenina:verifyResult false BIND(1 AS ?x) }
  OPTIONAL { ?r karenina:failure ?f }
}"""


@dataclass(frozen=True)
class ModelRun:
    run: str
    run_id: str
    answering: Tally
    judging: Tally


def model_runs(store: Store, model: str, memo: Memo = _no_memo) -> list[ModelRun]:
    """Each run in which the model answered or judged, with those results' counts: from the
    run's tallies, else counted from the results that name it."""
    out = []
    for run, graph in store.catalog.runs().items():
        groups = memo("tallies", graph, partial(tallied, store, graph))
        if groups is not None:
            answering, judging = groups.by_model.get(model, Tally()), groups.by_judge.get(model, Tally())
        else:
            counted = []
            for predicate in ("earl:subject", "earl:assertedBy"):
                s = next(iter(query(store, _TALLY % (predicate, ox.NamedNode(model)), graph)))
                counted.append(Tally(_n(s, "n"), _n(s, "passed"), _n(s, "failed"), _n(s, "failures")))
            answering, judging = counted
        if answering.results or judging.results:
            row = _run_node(store, run, graph)
            out.append(ModelRun(run, _first(row, SCHEMA + "identifier") or run, answering, judging))
    return sorted(out, key=lambda r: r.run_id)


# -- one result ------------------------------------------------------------------------------------
# Shown in sections of their own on a result page, not again among the other recorded fields.
_SHOWN = {"verifyResult", "rawLlmResponse", "parsedLlmResponse", "parsedGtResponse", "questionText", "position"}
# The abstention and sufficiency checks: Karenina's four fields each, shown in their own section.
CHECKS = (("abstention", "Abstention"), ("sufficiency", "Sufficiency"))
_CHECK_FIELDS = {f"{c}{f}" for c, _ in CHECKS for f in ("CheckPerformed", "Detected", "OverrideApplied", "Reasoning")}
# The embedding check's four fields, shown in the same section.
_EMBEDDING_FIELDS = {
    "embeddingCheckPerformed",
    "embeddingSimilarityScore",
    "embeddingOverrideApplied",
    "embeddingModelUsed",
}


@dataclass(frozen=True)
class Score:
    iri: str
    name: str
    kind: str | None
    value: Any
    label: Any
    provenance: str | None
    trait: str | None  # the stored trait (schema:Rating) it scores
    metrics: list[tuple[str, Any]]
    confusion: dict[str, Any]


@dataclass(frozen=True)
class ResultView:
    row: ResultRow
    run_id: str
    models: dict[str, Model]
    template: str | None
    failure: dict[str, Any] | None
    usage: list[dict[str, Any]]
    fields: list[tuple[str, Any, Any]]  # (field, result, score)
    scores: list[Score]
    rubric: dict[str, Any]  # the rubric evaluation's other values
    raw_response: str | None
    parsed: dict[str, Any]  # "llm" / "ground truth" → the parsed response
    facts: dict[str, Any]  # every other value recorded on the result
    parts: list[tuple[str, dict[str, Any]]]  # (IRI, values) of its other parts (deep judgment)
    checks: list[dict[str, Any]]  # the checks performed: name, performed, detected, override, reasoning
    deep_judgment: dict[str, Any] | None  # the template deep judgment's values (excerpts, reasoning, ...)
    deep_judgment_rubric: dict[str, Any] | None = None  # the rubric traits' deep judgment's values


def _values(preds: dict[str, list[Any]]) -> dict[str, Any]:
    """A node's literals by local name (karenina: terms), as the JSON values they were."""
    out = {}
    for p, objects in preds.items():
        local = KAR.local_name(p)
        if local is not None and isinstance(objects[0], ox.Literal) and not p.endswith("KeyOrder"):
            out[local] = to_python(objects[0])
    return out


def _position(values: dict[str, Any], key: str = "position") -> int:
    pos = values.get(key)
    return pos if isinstance(pos, int) else 0


def result_view(store: Store, run: str, graph: ox.NamedNode, result: str) -> ResultView | None:
    """A result's whole record, read by walking the nodes under its IRI."""
    rows = result_rows(store, graph, [result])
    if not rows:
        return None
    index = node_index(store.oxigraph, graph, [result])
    node = index.get(result, {})

    def linked(predicate: str) -> list[str]:
        return [o.value for o in node.get(predicate, []) if isinstance(o, ox.NamedNode)]

    failure = None
    for f in linked(KAR.failure):
        preds = index.get(f, {})
        failure = _values(preds) | {
            "category": _local(_first(preds, KAR.failureCategory), KAR.failure_category),
            "group": _local(_first(preds, KAR.failureGroup), KAR.failure_group),
            "reason": _first(preds, SCHEMA + "description"),
        }
    usage = sorted((_values(index.get(u, {})) for u in linked(KAR.tokenUsage)), key=_position)
    fields = []
    for f in linked(KAR.fieldOutcome):
        values = _values(index.get(f, {}))
        fields.append((_first(index.get(f, {}), SCHEMA + "name") or "", values.get("fieldResult"), values))
    fields.sort(key=lambda f: (_position(f[2], "resultPosition"), _position(f[2], "scorePosition"), f[0]))
    rubric: dict[str, Any] = {}
    scores = []
    for rub in linked(KAR.rubric):
        rubric = _values(index.get(rub, {}))
        for s in (o.value for o in index.get(rub, {}).get(KAR.traitScore, [])):
            scores.append(_score(s, index))
    scores.sort(key=lambda s: (s.kind or "", s.name))
    parts = [
        (p, _values(index.get(p, {})))
        for predicate in (KAR.deepJudgment, KAR.deepJudgmentRubric)
        for p in linked(predicate)
    ]
    judged = [_values(index.get(p, {})) for p in linked(KAR.deepJudgment)]
    judged_traits = [_values(index.get(p, {})) for p in linked(KAR.deepJudgmentRubric)]
    facts = _values(node)
    row = rows[0]
    return ResultView(
        row=row,
        run_id=_first(_run_node(store, run, graph), SCHEMA + "identifier") or run,
        models=model_labels(store, graph, [m for m in (row.model, row.judge) if m]),
        template=next(iter(linked(KAR.template)), None),
        failure=failure,
        usage=usage,
        fields=[(name, result, values.get("fieldScore")) for name, result, values in fields],
        scores=scores,
        rubric=rubric,
        raw_response=facts.get("rawLlmResponse"),
        parsed={
            k: facts[p]
            for k, p in (("answering model", "parsedLlmResponse"), ("ground truth", "parsedGtResponse"))
            if p in facts
        },
        facts={k: v for k, v in sorted(facts.items()) if k not in _SHOWN | _CHECK_FIELDS | _EMBEDDING_FIELDS},
        parts=parts,
        deep_judgment=judged[0] if judged else None,
        deep_judgment_rubric=judged_traits[0] if judged_traits else None,
        checks=[
            {
                "check": check,
                "title": title,
                "performed": facts.get(f"{check}CheckPerformed"),
                "detected": facts.get(f"{check}Detected"),
                "override": facts.get(f"{check}OverrideApplied"),
                "reasoning": facts.get(f"{check}Reasoning"),
            }
            for check, title in CHECKS
            if facts.get(f"{check}CheckPerformed") or facts.get(f"{check}Detected") is not None
        ]
        + (
            [
                {
                    "check": "embedding",
                    "title": "Embedding",
                    "performed": True,
                    "detected": None,
                    "reasoning": None,
                    "score": facts.get("embeddingSimilarityScore"),
                    "model": facts.get("embeddingModelUsed"),
                    "override": facts.get("embeddingOverrideApplied"),
                }
            ]
            if facts.get("embeddingCheckPerformed")
            else []
        ),
    )


def _score(iri: str, index: dict[str, dict[str, list[Any]]]) -> Score:
    preds = index.get(iri, {})
    values = _values(preds)
    value = preds.get(SCHEMA + "value")
    metrics = []
    for m in preds.get(KAR.metricValue, []):
        mp = index.get(m.value, {})
        mv = mp.get(SCHEMA + "value")
        metrics.append((_position(_values(mp)), _first(mp, SCHEMA + "name") or "", to_python(mv[0]) if mv else None))
    return Score(
        iri=iri,
        name=values.get("traitName") or iri.rsplit("/", 1)[-1],
        kind=values.get("scoreKind"),
        value=to_python(value[0]) if value else None,
        label=values.get("label"),
        provenance=values.get("provenance"),
        trait=_first(preds, KAR.scoresTrait),
        metrics=[(name, v) for _, name, v in sorted(metrics)],
        confusion={b: values[b] for b in ("tp", "fn", "fp", "tn") if b in values},
    )
