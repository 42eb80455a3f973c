"""Validation: the shapes and the Python checks over a checkpoint file or the store, as one report.

A file is mapped with the importer's own rules into an in-memory store and validated there; each
focus node maps back to the JSON pointer of the object it came from. Karenina's load rules that
the mapper enforces (spec §11) come back in the same report, under their own component.

A stored verification run is validated with the shapes of runs (:data:`RUN_SHAPE_FILES`) and the
run checks over its graph together with what it links to: the benchmark graphs it used (its
questions, templates and traits), the vocabulary graph (the failure taxonomy) and the models
graph. Its findings point into the run's results export (``/results/{index}/…``).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import CheckpointError, InvalidValueError, NotFoundError, Problem, StoreError
from karenina_rdf._progress import QUIET, Progress, counted
from karenina_rdf.checkpoint import entries, map_checkpoint, read_checkpoint, without_lone_surrogates
from karenina_rdf.rdf import (
    KAR,
    MODELS_GRAPH,
    PREFIXES,
    SCHEMA,
    VOCABULARY_GRAPH,
    owning_question,
    solutions,
    term_value,
    unsegment,
)
from karenina_rdf.results import ordered_results, resolve_run
from karenina_rdf.store import SOURCE, VALIDATED, GraphStore

from ._checks import run_checks, run_result_checks, template_cache
from ._recorded import Record, prune, validate_recorded, write_record
from ._shapes import (
    SH,
    SHAPES_DIR,
    Severity,
    ValidationResult,
    shapes_graph,
    store_graph_to_rdflib,
    validate_graph_pyshacl,
)

if TYPE_CHECKING:
    from ._shacl import Shape

Engine = Literal["auto", "fast", "pyshacl"]
LOAD_RULES = "urn:karenina-rdf:checks:KareninaLoadRules"
# The shape files of verification runs. A run is validated with these alone: its dataset also
# holds benchmark graphs, which the benchmark shapes would validate again.
RUN_SHAPE_FILES = (
    "run.ttl",
    "result.ttl",
    "failure.ttl",
    "field-outcome.ttl",
    "token-usage.ttl",
    "trait-score.ttl",
    "model.ttl",
    "run-summary.ttl",
)


class Finding(BaseModel):
    """One validation result, located for a person: benchmark, question, JSON pointer, property."""

    model_config = ConfigDict(frozen=True)

    severity: Severity
    message: str
    benchmark: str | None = None
    run: str | None = None  # the run id, for a finding in a verification run
    question_id: str | None = None
    question_text: str | None = None
    trait: str | None = None  # the name of the rubric trait the finding is about
    pointer: str | None = None
    focus_node: str | None = None
    path: str | None = None
    component: str
    source_shape: str | None = None
    value: str | None = None
    value_term: str | None = None  # N-Triples syntax: keeps the value's datatype in reports

    @classmethod
    def of(cls, r: ValidationResult, **where: str | None) -> Finding:
        """A validation result, located by ``where`` (benchmark, question, pointer)."""
        return cls(
            severity=r.severity,
            message=r.message,
            focus_node=r.focus_node,
            path=r.path,
            component=r.source_constraint_component,
            source_shape=r.source_shape,
            value=r.value,
            value_term=r.value_term,
            **where,
        )

    def line(self, source: str | None = None) -> str:
        where = [source or self.benchmark or (f"run {self.run}" if self.run is not None else "?")]
        if self.pointer is not None:
            where.append(f"at {self.pointer or '/'}")
        elif self.run is not None and self.focus_node:
            # A node of a run that no result owns (the run, an import record, a tally or
            # summary): its export has no place for it, so the line names the node itself.
            where.append(f"node <{self.focus_node}>")
        if self.question_id is not None:
            text = (self.question_text or "")[:40]
            where.append(f"(question {self.question_id!r}" + (f": {text!r}" if text else "") + ")")
        if self.trait is not None:
            where.append(f"(trait {self.trait!r})")
        prop = f" [{self.path}]" if self.path else ""
        return f"{self.severity.lower()}: {' '.join(where)}{prop}: {self.message}"


class BenchmarkReport(BaseModel):
    """Every finding for one file, one stored benchmark or one stored verification run (``run``:
    its id). ``conforms``: no Violation."""

    model_config = ConfigDict(frozen=True)

    source: str | None
    benchmark: str | None
    findings: list[Finding]
    run: str | None = None

    @property
    def conforms(self) -> bool:
        return not any(f.severity == "Violation" for f in self.findings)

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "Violation"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "Warning"]

    def to_turtle(self) -> str:
        """The standard ``sh:ValidationReport`` graph (SHACL §3.6)."""
        return reports_turtle([self])


def _sh(local: str) -> ox.NamedNode:
    return ox.NamedNode(SH + local)


def reports_turtle(reports: Sequence[BenchmarkReport]) -> str:
    """The standard ``sh:ValidationReport`` graph (SHACL §3.6) of one or more reports."""
    store = ox.Store()
    report = ox.BlankNode()
    g = ox.DefaultGraph()
    rdf_type = ox.NamedNode(RDF + "type")
    store.add(ox.Quad(report, rdf_type, _sh("ValidationReport"), g))
    # SHACL's sh:conforms is false as soon as there is any result, warnings included; our
    # BenchmarkReport.conforms (the exit code, and whether import refuses) looks at Violations only.
    conforms = not any(r.findings for r in reports)
    store.add(ox.Quad(report, _sh("conforms"), ox.Literal(conforms), g))
    paths = _ShapePaths()
    for r in reports:
        for f in r.findings:
            node = ox.BlankNode()
            facts: list[tuple[ox.NamedNode, ox.NamedNode | ox.BlankNode | ox.Literal]] = [
                (rdf_type, _sh("ValidationResult")),
                (_sh("resultSeverity"), _sh(f.severity)),
                (_sh("resultMessage"), ox.Literal(f.message)),
                (_sh("sourceConstraintComponent"), ox.NamedNode(f.component)),
            ]
            if f.focus_node:
                facts.append((_sh("focusNode"), _node(f.focus_node)))
            if f.source_shape:
                facts.append((_sh("sourceShape"), _node(f.source_shape)))
            if f.path:
                complex_path = f.path.startswith(("^", "<", "("))  # rendered by _shacl's path_text
                path = paths.copy(store, f.source_shape) if complex_path else ox.NamedNode(f.path)
                if path is not None:
                    facts.append((_sh("resultPath"), path))
            if f.value is not None:
                facts.append((_sh("value"), _value_term(f)))
            store.add(ox.Quad(report, _sh("result"), node, g))
            for pred, obj in facts:
                store.add(ox.Quad(node, pred, obj, g))
    out = store.dump(format=ox.RdfFormat.TURTLE, prefixes={"sh": SH, "schema": SCHEMA}, from_graph=g)
    return (out or b"").decode("utf-8")


RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"


def _node(text: str) -> ox.NamedNode | ox.BlankNode:
    # Engines report blank nodes as "_:label" (a blank focus node, an unnamed nested shape).
    return ox.BlankNode(text[2:]) if text.startswith("_:") else ox.NamedNode(text)


def _value_term(f: Finding) -> ox.NamedNode | ox.Literal:
    """The finding's value as the term it was (an IRI, a typed literal), or a string."""
    if f.value_term:
        parsed = ox.parse(f"<urn:s> <urn:p> {f.value_term} .".encode(), format=ox.RdfFormat.N_TRIPLES)
        obj = next(iter(parsed)).object
        if isinstance(obj, ox.NamedNode | ox.Literal):
            return obj
    return ox.Literal(f.value or "")


class _ShapePaths:
    """The ``sh:path`` of a shape of ``shapes/`` copied into a report: a complex path (inverse,
    sequence, …) is a small structure of blank nodes, and sh:resultPath holds that structure."""

    def __init__(self) -> None:
        self._shapes: ox.Store | None = None

    def copy(self, into: ox.Store, shape: str | None) -> ox.BlankNode | ox.NamedNode | None:
        if shape is None:
            return None
        if self._shapes is None:
            from ._shacl import default_shapes_store

            self._shapes = default_shapes_store()  # cached: shared with the validator
        for q in self._shapes.quads_for_pattern(ox.NamedNode(shape), _sh("path"), None, ox.DefaultGraph()):
            return self._copy(into, q.object)
        return None

    def _copy(self, into: ox.Store, term: object) -> ox.BlankNode | ox.NamedNode | None:
        if isinstance(term, ox.NamedNode):
            return term
        if not isinstance(term, ox.BlankNode):
            return None
        assert self._shapes is not None
        fresh = ox.BlankNode()
        for q in self._shapes.quads_for_pattern(term, None, None, ox.DefaultGraph()):
            obj = self._copy(into, q.object) if not isinstance(q.object, ox.Literal) else q.object
            if obj is not None:
                into.add(ox.Quad(fresh, q.predicate, obj, ox.DefaultGraph()))
        return fresh


ENGINES = ("auto", "fast", "pyshacl")


def check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise InvalidValueError(f"engine {engine!r}: auto, fast or pyshacl")


def validate(
    source: str | Path | dict[str, Any],
    *,
    engine: Engine = "auto",
    base_iri: str | None = None,
    progress: Progress | None = None,
) -> BenchmarkReport:
    """Validate a checkpoint file (or parsed document) without storing it; ``progress`` is told
    of the questions mapped, the triples loaded and the validation's steps."""
    check_engine(engine)
    p = progress or QUIET
    label = None if isinstance(source, dict) else str(source)
    pointers: dict[str, str] = {}
    try:
        doc = source if isinstance(source, dict) else read_checkpoint(source)
        doc, replaced = without_lone_surrogates(doc, label)
        store = GraphStore.memory(base_iri=base_iri)
        mapping = p.start("mapping", entries(doc), "questions")
        mapped = map_checkpoint(doc, base_iri=store.base_iri, source=label, pointers=pointers, progress=mapping)
        mapping.done()
    except CheckpointError as exc:
        return BenchmarkReport(source=label, benchmark=None, findings=[load_finding(p) for p in exc.problems])
    graph = ox.NamedNode(mapped.iri + "/graph/validation")
    text = "".join(f"{s} {p} {o} .\n" for s, p, o in mapped.triples)
    # One load: its one count is the triples, known before it starts and done when it ends.
    loading = p.start("loading", mapped.sink.count, "triples")
    store.oxigraph.load(input=text.encode("utf-8"), format=ox.RdfFormat.N_TRIPLES, to_graph=graph)
    loading.advance(mapped.sink.count)
    loading.done()
    checking = p.start("checking", 1, "graphs")
    findings = _findings(store, graph, mapped.iri, mapped.name, engine, pointers)
    checking.advance()
    checking.done()
    # What the load rules warned about and no shape or check re-found (the import's rule too).
    covered = {f.pointer for f in findings if f.pointer is not None}
    warned = replaced + [
        w
        for w in mapped.warnings
        if w.pointer is None or not any(w.pointer == c or w.pointer.startswith(c + "/") for c in covered)
    ]
    findings[:0] = [load_finding(p).model_copy(update={"severity": "Warning"}) for p in warned]
    return BenchmarkReport(source=label, benchmark=mapped.name, findings=findings)


def validate_store(
    store: GraphStore, ref: str | None = None, *, engine: Engine = "auto", progress: Progress | None = None
) -> list[BenchmarkReport]:
    """Validate what is stored, one report each: every benchmark, then every verification run;
    or the one benchmark or run that ``ref`` (an id, IRI or benchmark name) names. ``progress``
    is told of the benchmarks and runs validated."""
    check_engine(engine)
    if ref is None:
        benches = _in_list_order(store)
        runs = sorted(store.catalog.runs())
    else:
        try:
            benches, runs = [store.resolve(ref)], []
        except NotFoundError as no_benchmark:
            try:
                benches, runs = [], [resolve_run(store, ref)[0]]
            except NotFoundError as no_run:
                raise NotFoundError(f"{no_benchmark}; {no_run}") from None
    reports = []
    validating = (progress or QUIET).start("validating", len(benches) + len(runs), "benchmarks and runs")
    for bench in benches:
        graph = store.graph_of(bench)[1]
        name = _benchmark_name(store, bench, graph)

        def validate_all(graph: ox.NamedNode = graph, bench: str = bench, name: str = name) -> Record:
            return [f.model_dump(mode="json") for f in _findings(store, graph, bench, name, engine, None)]

        # The last full validation's findings, unless the benchmark changed since (_recorded); the
        # reference engine is asked for to run it, not for a record.
        recorded = engine != "pyshacl"
        record = validate_recorded(store, bench, graph.value, validate_all) if recorded else validate_all()
        findings = [Finding.model_validate(f) for f in record]
        reports.append(BenchmarkReport(source=store.catalog.value(bench, SOURCE), benchmark=name, findings=findings))
        validating.advance()
    reports.extend(validate_run(store, run, engine=engine) for run in counted(runs, validating))
    if ref is None:
        prune(store)
    return reports


def _benchmark_name(store: GraphStore, bench: str, graph: ox.NamedNode, field: str = "name") -> str:
    """The benchmark's name (``store.summary`` would count its questions and traits too: seconds
    at 100k questions, most of a validation answered from its record)."""
    for q in store.oxigraph.quads_for_pattern(ox.NamedNode(bench), ox.NamedNode(SCHEMA + field), None, graph):
        return term_value(q.object)
    return ""


def _in_list_order(store: GraphStore) -> list[str]:
    """The live benchmarks in ``store.benchmarks()``'s order (name, version, id)."""

    def key(item: tuple[str, ox.NamedNode]) -> tuple[str, str, str]:
        bench, graph = item
        name, version = _benchmark_name(store, bench, graph), _benchmark_name(store, bench, graph, "version")
        return name.lower(), version, _benchmark_name(store, bench, graph, "identifier") or bench

    return [bench for bench, _ in sorted(store.catalog.benchmarks().items(), key=key)]


def record_import(store: GraphStore, graph: ox.NamedNode, findings: list[Finding]) -> list[tuple[str, str]]:
    """The catalog facts that publish, with an imported graph, the findings its validation made
    (without their JSON pointers, which only the file has): ``validate --stored`` then reads them
    instead of validating again. Sorted as :func:`validate_store` sorts them."""
    order = {"Violation": 0, "Warning": 1, "Info": 2}
    stored = [f.model_copy(update={"pointer": None}) for f in findings]
    stored.sort(key=lambda f: (order[f.severity], f.pointer or "", f.focus_node or "", f.message))
    prune(store, keep=graph.value)  # records of generations replaced or deleted since
    digest = write_record(store, graph.value, [f.model_dump(mode="json") for f in stored])
    return [] if digest is None else [(VALIDATED, json.dumps(digest))]


def validate_run(store: GraphStore, ref: str, *, engine: Engine = "auto") -> BenchmarkReport:
    """Validate one stored verification run (by id or IRI): the shapes of runs and the run checks."""
    check_engine(engine)
    run, graph = resolve_run(store, ref)
    findings = findings_in_run(store, run, graph, engine=engine)
    return BenchmarkReport(
        source=store.catalog.value(run, SOURCE),
        benchmark=None,
        run=_run_id(store, run, graph),
        findings=findings,
    )


def findings_in_run(store: GraphStore, run: str, graph: ox.NamedNode, *, engine: Engine = "auto") -> list[Finding]:
    """Every finding for one verification run graph, published or not (the importer can call it
    on the generation it has just loaded, before publishing it).

    The graph is validated together with the live graphs of the benchmarks its run node lists in
    ``prov:used``, the vocabulary graph and the models graph, so that links into them (questions,
    templates, traits, failure concepts, models) are checked; model nodes are validated there.

    The importer writes the failure taxonomy and the run's model nodes when it publishes a run.
    Validating before that needs both inserted first (idempotent inserts; the models are the
    mapper's ``model_lines``); without the taxonomy this raises :class:`StoreError` rather than
    report every failure category as unknown, without the models each result reports its models."""
    dataset = run_dataset(store, run, graph)
    results = _run_shacl_results(store, dataset, engine) + run_result_checks(store.oxigraph, dataset)
    return _locate_in_run(store, run, graph, results)


_HAS_TAXONOMY = f"ASK {{ GRAPH {VOCABULARY_GRAPH} {{ {KAR.failure.nt} a <{PREFIXES['skos']}ConceptScheme> }} }}"


def run_dataset(store: GraphStore, run: str, graph: ox.NamedNode) -> list[ox.NamedNode]:
    """The graphs a run is read with: its own graph first, the live graphs of the benchmarks it
    used (``prov:used``; a benchmark deleted since is left out, and its links then warn), the
    vocabulary graph (failure concepts) and the models graph (the models of every run)."""
    if not store.oxigraph.query(_HAS_TAXONOMY):
        raise StoreError(
            f"the failure taxonomy is not in the store (graph {VOCABULARY_GRAPH.value}): "
            "insert it before validating a run"
        )
    live = store.catalog.benchmarks()
    used = store.oxigraph.quads_for_pattern(ox.NamedNode(run), ox.NamedNode(PREFIXES["prov"] + "used"), None, graph)
    names = {term_value(q.object) for q in used}
    benches = sorted((live[b] for b in names if b in live), key=lambda g: g.value)
    return [graph, *benches, VOCABULARY_GRAPH, MODELS_GRAPH]


@functools.lru_cache(maxsize=1)
def _run_roots() -> list[Shape]:
    """The run shapes, parsed once (from pyoxigraph, as the engine reads its default shapes)."""
    from ._shacl import parse_shapes

    shapes = ox.Store()
    for name in RUN_SHAPE_FILES:
        path = SHAPES_DIR / name
        shapes.load(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=f"urn:karenina-rdf:shapes:file:{name}")
    return parse_shapes(shapes)


def _run_shacl_results(store: GraphStore, dataset: list[ox.NamedNode], engine: Engine) -> list[ValidationResult]:
    if engine != "pyshacl":
        try:
            from ._shacl import _validate
        except ImportError:
            if engine == "fast":
                raise
        else:
            # The engine queries with ``default_graph=`` whatever it is given, and pyoxigraph
            # (and RemoteStore) read a list of graphs as their union: the run and what it links
            # to are one dataset, validated once. _validate's annotation names one graph only.
            union = cast(ox.NamedNode, dataset)
            found = _validate(store.oxigraph, union, _run_roots(), os.cpu_count() or 1)
            return sorted(found, key=lambda r: (r.focus_node, r.path or "", r.message, r.value or ""))
    import rdflib

    data = rdflib.Graph()
    for g in dataset:
        data += store_graph_to_rdflib(store, g)
    return list(validate_graph_pyshacl(data, shapes_graph(RUN_SHAPE_FILES)).results)


def _run_id(store: GraphStore, run: str, graph: ox.NamedNode) -> str:
    for q in store.oxigraph.quads_for_pattern(ox.NamedNode(run), ox.NamedNode(SCHEMA + "identifier"), None, graph):
        return term_value(q.object)
    return unsegment(run.rsplit("/", 1)[-1])


# A node under a result, by the first segment after the result's IRI → where it is in the row.
_PART_POINTERS = {
    "failure": "/metadata/failure",
    "usage": "/template/usage_metadata",
    "fields": "/template/field_results",
    "rubric": "/rubric",
    "deep-judgment": "/deep_judgment",
    "deep-judgment-rubric": "/deep_judgment_rubric",
}


def _pointer_segment(text: str) -> str:
    return text.replace("~", "~0").replace("/", "~1")


def _locate_in_run(store: GraphStore, run: str, graph: ox.NamedNode, results: list[ValidationResult]) -> list[Finding]:
    """Findings located in the run's export: the result a focus node belongs to (its index in
    export order, its question) and the JSON pointer of the part it came from."""
    prefix = run + "/results/"
    owners = {r.focus_node: prefix + r.focus_node[len(prefix) :].split("/", 1)[0] for r in results}
    owners = {focus: owner for focus, owner in owners.items() if focus.startswith(prefix)}
    index: dict[str, int] = {}
    questions: dict[str, tuple[str | None, str | None]] = {}
    if owners:
        index = {iri: i for i, iri in enumerate(ordered_results(store.oxigraph, graph))}
        values = " ".join(f"<{r}>" for r in sorted(set(owners.values())))
        rows = store.oxigraph.query(
            f"SELECT ?r ?id ?text WHERE {{ VALUES ?r {{ {values} }} ?r {KAR.questionId.nt} ?id "
            f"OPTIONAL {{ ?r {KAR.questionText.nt} ?text }} }}",
            default_graph=graph,
        )
        for row in solutions(rows):
            text = row["text"]
            questions[term_value(row["r"])] = (term_value(row["id"]), term_value(text) if text is not None else None)
    run_id = _run_id(store, run, graph)
    located: list[tuple[int, Finding]] = []
    for r in results:
        owner = owners.get(r.focus_node)
        pointer, position = None, -1
        if owner is not None and owner in index:
            position = index[owner]
            pointer = f"/results/{position}"
            rest = r.focus_node[len(owner) + 1 :].split("/")
            if rest[0] in _PART_POINTERS:
                pointer += _PART_POINTERS[rest[0]]
                if rest[0] in ("usage", "fields") and len(rest) > 1:
                    pointer += "/" + _pointer_segment(unsegment(rest[1]))
        qid, text = questions.get(owner or "", (None, None))
        located.append((position, Finding.of(r, run=run_id, question_id=qid, question_text=text, pointer=pointer)))
    order = {"Violation": 0, "Warning": 1, "Info": 2}
    located.sort(
        key=lambda pf: (order[pf[1].severity], pf[0], pf[1].pointer or "", pf[1].focus_node or "", pf[1].message)
    )
    return [f for _, f in located]


def findings_in_graph(
    store: GraphStore,
    graph: ox.NamedNode,
    bench: str,
    name: str,
    pointers: dict[str, str] | None = None,
    template_results: list[ValidationResult] | None = None,
) -> list[Finding]:
    """Every finding for one benchmark graph (published or not) with the default engine.

    ``template_results``: the template checks already run on the code the importer collected
    (:func:`karenina_rdf.validation._checks.template_results`); then they are not run on the graph."""
    return _findings(store, graph, bench, name, "auto", pointers, template_results)


def _findings(
    store: GraphStore,
    graph: ox.NamedNode,
    bench: str,
    name: str,
    engine: Engine,
    pointers: dict[str, str] | None,
    template_results: list[ValidationResult] | None = None,
) -> list[Finding]:
    results = _shacl_results(store, graph, engine) + _check_results(store, graph, template_results)
    owners = {r.focus_node: _question_of(bench, r.focus_node) for r in results}
    texts = _question_texts(store, graph, {q for _, q in owners.values() if q})
    # A scenario node's question: its id is read from the graph (it is not in the IRI).
    scenario_ids = _scenario_question_ids(store, graph, {q for qid, q in owners.values() if q and not qid})
    traits = _trait_names(store, graph, {r.focus_node for r in results})
    out = []
    for r in results:
        qid, q_iri = owners[r.focus_node]
        if qid is None and q_iri is not None:
            qid = scenario_ids.get(q_iri)
        out.append(
            Finding.of(
                r,
                benchmark=name,
                question_id=qid,
                question_text=texts.get(q_iri) if q_iri else None,
                trait=traits.get(r.focus_node),
                pointer=pointers.get(r.focus_node) if pointers is not None else None,
            )
        )
    order = {"Violation": 0, "Warning": 1, "Info": 2}
    return sorted(out, key=lambda f: (order[f.severity], f.pointer or "", f.focus_node or "", f.message))


def _shacl_results(store: GraphStore, graph: ox.NamedNode, engine: Engine) -> list[ValidationResult]:
    if engine != "pyshacl":
        try:
            from ._shacl import validate_store_graph
        except ImportError:
            if engine == "fast":
                raise
        else:
            return list(validate_store_graph(store.oxigraph, [graph]).results)
    return list(validate_graph_pyshacl(store_graph_to_rdflib(store, graph)).results)


def _check_results(
    store: GraphStore, graph: ox.NamedNode, template_results: list[ValidationResult] | None
) -> list[ValidationResult]:
    if template_results is None:
        return list(run_checks(store.oxigraph, [graph], cache=template_cache(store)))
    return list(run_checks(store.oxigraph, [graph], traits_only=True)) + template_results


def _question_texts(store: GraphStore, graph: ox.NamedNode, questions: set[str]) -> dict[str, str]:
    """The text of the questions that have findings (only those: texts are long to read back),
    in one query (on a server, one request)."""
    if not questions:
        return {}
    values = " ".join(f"<{q}>" for q in sorted(questions))
    rows = store.oxigraph.query(
        f"SELECT ?q ?t WHERE {{ VALUES ?q {{ {values} }} ?q <{SCHEMA}text> ?t }}", default_graph=graph
    )
    return {term_value(r["q"]): term_value(r["t"]) for r in solutions(rows)}


def _trait_names(store: GraphStore, graph: ox.NamedNode, nodes: set[str]) -> dict[str, str]:
    """The names of the rubric traits among ``nodes`` (a finding names the trait it is about)."""
    iris = sorted(n for n in nodes if n.startswith(("http://", "https://", "urn:")))
    if not iris:
        return {}
    values = " ".join(f"<{n}>" for n in iris)
    rows = store.oxigraph.query(
        f"SELECT ?t ?n WHERE {{ VALUES ?t {{ {values} }} ?t a <{SCHEMA}Rating> ; <{SCHEMA}name> ?n }}",
        default_graph=graph,
    )
    return {term_value(r["t"]): term_value(r["n"]) for r in solutions(rows)}


def _question_of(bench: str, focus: str) -> tuple[str | None, str | None]:
    """The question a focus node belongs to, from the minted IRI (docs/data-model.md): (its id,
    its IRI); a scenario node's question has no id in its IRI, (None, its IRI)."""
    found = owning_question(bench, focus)
    if found is not None:
        return found
    prefix = bench + "/scenarios/"
    if focus.startswith(prefix):
        # {scenario}/nodes/{node}/question[/…]: segments hold no "/" (rdf._ids.segment escapes it).
        parts = focus[len(prefix) :].split("/")
        if len(parts) >= 4 and parts[1] == "nodes" and parts[3] == "question":
            return None, prefix + "/".join(parts[:4])
    return None, None


def _scenario_question_ids(store: GraphStore, graph: ox.NamedNode, questions: set[str]) -> dict[str, str]:
    """The ids (Karenina's Question ids) of the scenario questions that have findings."""
    if not questions:
        return {}
    values = " ".join(f"<{q}>" for q in sorted(questions))
    rows = store.oxigraph.query(
        f"SELECT ?q ?id WHERE {{ VALUES ?q {{ {values} }} ?q <{SCHEMA}identifier> ?id }}", default_graph=graph
    )
    return {term_value(r["q"]): term_value(r["id"]) for r in solutions(rows)}


def load_finding(p: Problem) -> Finding:
    return Finding(
        severity="Violation",
        message=p.message + (f" (line {p.line})" if p.line is not None else ""),
        question_id=p.question_id,
        pointer=p.pointer,
        component=LOAD_RULES,
        trait=p.trait,
    )


def report_json(reports: Sequence[BenchmarkReport]) -> str:
    return json.dumps(
        {
            "conforms": all(r.conforms for r in reports),
            "reports": [
                {
                    "source": r.source,
                    "benchmark": r.benchmark,
                    "run": r.run,
                    "conforms": r.conforms,
                    "findings": [f.model_dump() for f in r.findings],
                }
                for r in reports
            ],
        },
        indent=2,
        ensure_ascii=False,
    )
