"""What the pages of verification runs show, read from the store (docs/data-model.md §9).

Every function blocks (the pages run them on a worker thread). A run lives in a graph of its own,
so each query reads one run graph: the union of several run graphs would repeat the model nodes
that every run graph holds, once per graph. What a page needs from all of a run's results comes
from one aggregate per run (:func:`run_groups`: one pass over the results, grouped by answering
model, judge and mode), and a page of the results table sorts the positions only (``LIMIT`` /
``OFFSET``) before it reads the 100 rows it shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from ._graph import node_index, solutions, term_value
from ._ids import unsegment
from ._results_model import EARL, PROV, RDFS
from ._store import Store
from ._vocab import CATALOG_GRAPH, KARENINA, PREFIXES, SCHEMA

RESULTS_PAGE = 100
OUTCOMES = {"passed": "passed", "failed": "failed", "cantTell": "can't tell", "inapplicable": "inapplicable"}

# One pass over a run's results. The pass rate is the mean of the non-null verify_result values
# (Karenina's rule): a verify_result null has no triple, and anything else than true or false
# (kept as rdf:JSON) counts as no verdict. Each OPTIONAL is an index lookup per result.
_GROUPS = """
SELECT ?m ?j ?mode (COUNT(?r) AS ?n) (COUNT(?p) AS ?passed) (COUNT(?x) AS ?failed) (COUNT(?f) AS ?failures) WHERE {
  ?r a karenina:VerificationResult .
  OPTIONAL { ?r earl:subject ?m }
  OPTIONAL { ?r earl:assertedBy ?j }
  OPTIONAL { ?r karenina:evaluationMode ?mode }
  OPTIONAL { ?r karenina:verifyResult true BIND(1 AS ?p) }
  OPTIONAL { ?r karenina:verifyResult false BIND(1 AS ?x) }
  OPTIONAL { ?r karenina:failure ?f }
}
GROUP BY ?m ?j ?mode"""

_FAILURES = """
SELECT ?category ?group (COUNT(?f) AS ?n) WHERE {
  ?r karenina:failure ?f .
  OPTIONAL { ?f karenina:failureCategory ?category }
  OPTIONAL { ?f karenina:failureGroup ?group }
}
GROUP BY ?category ?group"""

# A page of the results table: the selection is sorted by position alone, then the rows read.
_PAGE = """
SELECT ?r WHERE { ?r a karenina:VerificationResult ; karenina:position ?pos . %s }
ORDER BY ?pos ?r LIMIT %d OFFSET %d"""
_COUNT = "SELECT (COUNT(?r) AS ?n) WHERE { ?r a karenina:VerificationResult . %s }"
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


def _local(iri: str | None, prefix: str) -> str | None:
    return iri[len(prefix) :] if iri is not None and iri.startswith(prefix) else iri


@dataclass
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
    out = {}
    for iri in iris:
        found = store.oxigraph.quads_for_pattern(ox.NamedNode(iri), ox.NamedNode(RDFS + "label"), None, graph)
        label = next((term_value(q.object) for q in found), None)
        out[iri] = Model(iri, label or iri.rsplit("/", 1)[-1])
    return out


def run_groups(store: Store, graph: ox.NamedNode) -> RunGroups:
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
    groups: RunGroups


def _run_node(store: Store, run: str, graph: ox.NamedNode) -> dict[str, list[Any]]:
    return node_index(store.oxigraph, graph, [run], skip=(run + "/",)).get(run, {})


def _first(preds: dict[str, list[Any]], predicate: str) -> str | None:
    values = preds.get(predicate)
    return term_value(values[0]) if values else None


def run_row(store: Store, run: str, graph: ox.NamedNode) -> RunRow:
    preds = _run_node(store, run, graph)
    return RunRow(
        iri=run,
        run_id=_first(preds, SCHEMA + "identifier") or run.rsplit("/", 1)[-1],
        started=_first(preds, PROV + "startedAtTime"),
        ended=_first(preds, PROV + "endedAtTime"),
        source=store._catalog_value(run, KARENINA + "importedFrom"),
        imported_at=store._catalog_value(run, KARENINA + "importedAt"),
        groups=run_groups(store, graph),
    )


def run_rows(store: Store) -> list[RunRow]:
    """Every stored run, newest first: one aggregate query per run."""
    rows = [run_row(store, run, graph) for run, graph in store._runs().items()]
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
    """The triple patterns of the table's filters (values are IRIs, made terms here)."""
    parts = []
    for name, pattern in _FILTERS.items():
        value = selected.get(name)
        if value:
            term = ox.NamedNode(EARL + value if name == "outcome" else value)
            parts.append(pattern % term)
    return " ".join(parts)


def result_table(store: Store, graph: ox.NamedNode, page: int, selected: dict[str, str]) -> ResultTable:
    where = result_filter(selected)
    total = next((_n(s, "n") for s in query(store, _COUNT % where, graph)), 0)
    pages = max(1, -(-total // RESULTS_PAGE))
    page = min(max(page, 1), pages)
    chosen = [term_value(s["r"]) for s in query(store, _PAGE % (where, RESULTS_PAGE, (page - 1) * RESULTS_PAGE), graph)]
    return ResultTable(result_rows(store, graph, chosen), total, page, pages)


def result_rows(store: Store, graph: ox.NamedNode | list[ox.NamedNode], results: list[str]) -> list[ResultRow]:
    """The table rows of these results, in the order given."""
    if not results:
        return []
    values = " ".join(str(ox.NamedNode(r)) for r in results)
    found: dict[str, ResultRow] = {}
    for s in query(store, _ROWS % values, graph):
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
            verify_result=_v(s, "v"),
            failure=_local(_v(s, "category"), KARENINA + "failure/"),
            run=_v(s, "run"),
        )
    return [found[r] for r in results if r in found]


@dataclass(frozen=True)
class FailureCount:
    category: str
    group: str | None
    count: int


def failure_counts(store: Store, graph: ox.NamedNode) -> list[FailureCount]:
    out = []
    for s in query(store, _FAILURES, graph):
        category = _local(_v(s, "category"), KARENINA + "failure/") or "(none)"
        out.append(FailureCount(category, _local(_v(s, "group"), KARENINA + "failure-group/"), _n(s, "n")))
    return sorted(out, key=lambda f: (-f.count, f.category))


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
    failures: list[FailureCount]


def run_view(store: Store, run: str, graph: ox.NamedNode) -> RunView:
    from ._terms import to_python

    ox_store = store.oxigraph
    preds = _run_node(store, run, graph)
    facts = {
        p[len(KARENINA) :]: to_python(objects[0])
        for p, objects in preds.items()
        if p.startswith(KARENINA) and isinstance(objects[0], ox.Literal)
    }
    benchmarks = []
    for b in preds.get(PROV + "used", []):
        names = store.oxigraph.quads_for_pattern(b, ox.NamedNode(SCHEMA + "name"), None, store._live().get(b.value))
        benchmarks.append((b.value, next((term_value(q.object) for q in names), b.value)))
    imports = []
    for node in preds.get(KARENINA + "import", []):
        own = {q.predicate.value: term_value(q.object) for q in ox_store.quads_for_pattern(node, None, None, graph)}
        count = own.get(KARENINA + "resultCount")
        imports.append(
            Import(
                iri=node.value,
                name=own.get(SCHEMA + "name"),
                sha256=own.get(KARENINA + "sourceSha256"),
                imported_at=own.get(KARENINA + "importedAt"),
                results=int(count) if count is not None and count.isdigit() else None,
                format_version=own.get(KARENINA + "formatVersion"),
            )
        )
    catalog = {
        q.predicate.value: term_value(q.object)
        for q in ox_store.quads_for_pattern(ox.NamedNode(run), None, None, CATALOG_GRAPH)
    }
    triples = catalog.get(KARENINA + "tripleCount")
    return RunView(
        row=run_row(store, run, graph),
        facts=facts,
        benchmarks=sorted(benchmarks, key=lambda b: b[1].lower()),
        imports=sorted(imports, key=lambda i: i.imported_at or ""),
        graph=graph.value,
        triples=int(triples) if triples is not None and triples.isdigit() else None,
        failures=failure_counts(store, graph),
    )


# -- comparison of answering models ------------------------------------------------------------
_BY_QUESTION = """
SELECT ?qid ?q ?m (COUNT(?r) AS ?n) (COUNT(?p) AS ?passed) (COUNT(?x) AS ?failed) (COUNT(?f) AS ?failures) WHERE {
  ?r a karenina:VerificationResult .
  OPTIONAL { ?r karenina:questionId ?qid }
  OPTIONAL { ?r earl:test ?q }
  OPTIONAL { ?r earl:subject ?m }
  OPTIONAL { ?r karenina:verifyResult true BIND(1 AS ?p) }
  OPTIONAL { ?r karenina:verifyResult false BIND(1 AS ?x) }
  OPTIONAL { ?r karenina:failure ?f }
}
GROUP BY ?qid ?q ?m"""
COMPARE_PAGE = 100  # questions (heatmap rows) a page


@dataclass
class CompareRow:
    key: str  # the stored question's IRI, else "id:" + its Karenina id
    question: str | None
    question_id: str
    text: str | None = None
    cells: dict[str, Tally] = field(default_factory=dict)  # by answering model IRI
    total: Tally = field(default_factory=Tally)


@dataclass(frozen=True)
class Comparison:
    runs: list[RunRow]
    models: list[Model]
    rows: list[CompareRow]  # this page's
    questions: int
    page: int
    pages: int
    sort: str


def comparison(store: Store, runs: list[tuple[str, ox.NamedNode]], page: int, sort: str) -> Comparison:
    """Questions × answering models over the given runs, pooled: a cell counts every result of
    that question and model in any of the runs (all judges and replicates)."""
    rows: dict[str, CompareRow] = {}
    models: dict[str, Model] = {}
    for _, graph in runs:
        seen = set()
        for s in query(store, _BY_QUESTION, graph):
            qid, q, m = _v(s, "qid") or "", _v(s, "q"), _v(s, "m")
            row = rows.setdefault(q or "id:" + qid, CompareRow(q or "id:" + qid, q, qid))
            tally = Tally(_n(s, "n"), _n(s, "passed"), _n(s, "failed"), _n(s, "failures"))
            row.total.add(tally)
            if m is not None:
                row.cells.setdefault(m, Tally()).add(tally)
                seen.add(m)
        models.update(model_labels(store, graph, seen - models.keys()))
    ordered = sorted(rows.values(), key=lambda r: (r.question_id, r.key))
    if sort == "pass-rate":
        ordered.sort(key=lambda r: (r.total.pass_rate is None, r.total.pass_rate or 0.0))
    pages = max(1, -(-len(ordered) // COMPARE_PAGE))
    page = min(max(page, 1), pages)
    shown = ordered[(page - 1) * COMPARE_PAGE : page * COMPARE_PAGE]
    _question_texts(store, shown, [g for _, g in runs])
    return Comparison(
        runs=[run_row(store, run, graph) for run, graph in runs],
        models=sorted(models.values(), key=lambda m: m.label.lower()),
        rows=shown,
        questions=len(ordered),
        page=page,
        pages=pages,
        sort=sort,
    )


def _question_texts(store: Store, rows: list[CompareRow], graphs: list[ox.NamedNode]) -> None:
    """The text of each row's question: the stored question's, else what a result recorded."""
    linked = [r for r in rows if r.question is not None]
    live = list(store._live().values())
    if linked and live:
        values = " ".join(str(ox.NamedNode(r.question or "")) for r in linked)
        texts = {
            term_value(s["q"]): _v(s, "t")
            for s in query(store, f"SELECT ?q ?t WHERE {{ VALUES ?q {{ {values} }} ?q schema:text ?t }}", live)
        }
        for r in linked:
            r.text = texts.get(r.question or "")
    for r in rows:
        if r.text is None:
            for graph in graphs:
                found = query(
                    store,
                    f"SELECT ?t WHERE {{ ?r karenina:questionId {ox.Literal(r.question_id)} ; "
                    "karenina:questionText ?t } LIMIT 1",
                    graph,
                )
                r.text = next((_v(s, "t") for s in found), None)
                if r.text is not None:
                    break


# -- a question's results, a model's runs ------------------------------------------------------------
QUESTION_RESULTS = 500  # a question page lists at most this many results


def question_results(store: Store, question: str) -> tuple[list[ResultRow], bool]:
    """Every stored result that tests this question (``earl:test``), in every run; and whether
    there were more than :data:`QUESTION_RESULTS`."""
    runs = store._runs()
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


def model_runs(store: Store, model: str, graphs: Iterable[ox.NamedNode]) -> list[ModelRun]:
    """Each run that holds the model, with its results as answering model and as judge."""
    owner = {g.value: run for run, g in store._runs().items()}
    out = []
    for graph in graphs:
        run = owner.get(graph.value)
        if run is None:
            continue
        tallies = []
        for predicate in ("earl:subject", "earl:assertedBy"):
            s = next(iter(query(store, _TALLY % (predicate, ox.NamedNode(model)), graph)))
            tallies.append(Tally(_n(s, "n"), _n(s, "passed"), _n(s, "failed"), _n(s, "failures")))
        row = _run_node(store, run, graph)
        out.append(ModelRun(run, _first(row, SCHEMA + "identifier") or run, tallies[0], tallies[1]))
    return sorted(out, key=lambda r: r.run_id)


# -- one result ------------------------------------------------------------------------------------
# Shown in sections of their own on a result page, not again among the other recorded fields.
_SHOWN = {"verifyResult", "rawLlmResponse", "parsedLlmResponse", "parsedGtResponse", "questionText", "position"}


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


def _values(preds: dict[str, list[Any]]) -> dict[str, Any]:
    """A node's literals by local name (karenina: terms), as the JSON values they were."""
    from ._terms import to_python

    out = {}
    for p, objects in preds.items():
        if p.startswith(KARENINA) and isinstance(objects[0], ox.Literal) and not p.endswith("KeyOrder"):
            out[p[len(KARENINA) :]] = to_python(objects[0])
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
    for f in linked(KARENINA + "failure"):
        preds = index.get(f, {})
        failure = _values(preds) | {
            "category": _local(_first(preds, KARENINA + "failureCategory"), KARENINA + "failure/"),
            "group": _local(_first(preds, KARENINA + "failureGroup"), KARENINA + "failure-group/"),
            "reason": _first(preds, SCHEMA + "description"),
        }
    usage = sorted((_values(index.get(u, {})) for u in linked(KARENINA + "tokenUsage")), key=_position)
    fields = []
    for f in linked(KARENINA + "fieldOutcome"):
        values = _values(index.get(f, {}))
        fields.append((_first(index.get(f, {}), SCHEMA + "name") or "", values.get("fieldResult"), values))
    fields.sort(key=lambda f: (_position(f[2], "resultPosition"), _position(f[2], "scorePosition"), f[0]))
    rubric: dict[str, Any] = {}
    scores = []
    for rub in linked(KARENINA + "rubric"):
        rubric = _values(index.get(rub, {}))
        for s in (o.value for o in index.get(rub, {}).get(KARENINA + "traitScore", [])):
            scores.append(_score(s, index))
    scores.sort(key=lambda s: (s.kind or "", s.name))
    parts = [
        (p, _values(index.get(p, {})))
        for predicate in ("deepJudgment", "deepJudgmentRubric")
        for p in linked(KARENINA + predicate)
    ]
    facts = _values(node)
    row = rows[0]
    return ResultView(
        row=row,
        run_id=_first(_run_node(store, run, graph), SCHEMA + "identifier") or run,
        models=model_labels(store, graph, [m for m in (row.model, row.judge) if m]),
        template=next(iter(linked(KARENINA + "template")), None),
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
        facts={k: v for k, v in sorted(facts.items()) if k not in _SHOWN},
        parts=parts,
    )


def _score(iri: str, index: dict[str, dict[str, list[Any]]]) -> Score:
    from ._terms import to_python

    preds = index.get(iri, {})
    values = _values(preds)
    value = preds.get(SCHEMA + "value")
    metrics = []
    for m in preds.get(KARENINA + "metricValue", []):
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
        trait=_first(preds, KARENINA + "scoresTrait"),
        metrics=[(name, v) for _, name, v in sorted(metrics)],
        confusion={b: values[b] for b in ("tp", "fn", "fp", "tn") if b in values},
    )
