"""What the HTML pages show, read from the store.

Every function here blocks (the pages run them on a worker thread) and reads only what its page
needs: the index counts come from one SPARQL query of per-graph counts, and a page of questions is
found by position (``VALUES ?pos``), so a page of a 100,000-question benchmark costs a few index
lookups (about 0.1 s), not a walk of its items.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from karenina_rdf._errors import InvalidValueError, QuestionNotFoundError
from karenina_rdf._store import Store
from karenina_rdf.authoring import Benchmark, BenchmarkInfo, Question, benchmark_info
from karenina_rdf.checkpoint import benchmark_json
from karenina_rdf.rdf import DATA_FEED_ELEMENT, PREFIXES, SCHEMA, item_iri, node_index, solutions, term_value
from karenina_rdf.store import IMPORTED_AT, SOURCE, TRIPLE_COUNT

PAGE_SIZE = 100
_KEYWORD_SEPARATOR = "\x1f"  # GROUP_CONCAT separator no keyword contains in practice

# Counts per live graph, each from one triple pattern: pyoxigraph answers those from its indexes,
# where the joins of queries/benchmark-summary.rq take seconds at 100k questions (measured: 7 s
# against 0.12 s). "With a template" is every template id minus the empty and the default ones,
# the rule of benchmark-summary.rq (a default template is never empty, so the two never overlap).
_INDEX = """
SELECT ?b ?id ?name ?version ?imported ?questions ?finished ?templates ?empty ?defaults ?traits ?global WHERE {
  ?b karenina:graph ?g .
  OPTIONAL { ?b karenina:importedAt ?imported }
  OPTIONAL { ?b schema:identifier ?id }
  OPTIONAL { ?b schema:name ?name }
  OPTIONAL { ?b schema:version ?version }
  OPTIONAL { SELECT ?b (COUNT(?q) AS ?questions) WHERE { ?q schema:isPartOf ?b } GROUP BY ?b }
  OPTIONAL { SELECT ?g (COUNT(?q) AS ?finished) WHERE { GRAPH ?g { ?q karenina:finished true } } GROUP BY ?g }
  OPTIONAL { SELECT ?g (COUNT(?c) AS ?templates) WHERE { GRAPH ?g { ?c karenina:templateId ?t } } GROUP BY ?g }
  OPTIONAL { SELECT ?g (COUNT(?c) AS ?empty) WHERE { GRAPH ?g { ?c karenina:templateId "no_template" } } GROUP BY ?g }
  OPTIONAL { SELECT ?g (COUNT(?c) AS ?defaults) WHERE { GRAPH ?g { ?c karenina:isDefaultTemplate true } } GROUP BY ?g }
  OPTIONAL { SELECT ?g (COUNT(?r) AS ?traits) WHERE { GRAPH ?g { ?r a schema:Rating } } GROUP BY ?g }
  OPTIONAL { SELECT ?b (COUNT(?r) AS ?global) WHERE { ?b karenina:graph ?x ; schema:contentRating ?r } GROUP BY ?b }
}"""

# One row per question of the selection (which binds ?item and ?pos).
_ROWS = """
SELECT ?item ?pos ?q ?id ?text ?finished ?tid ?default ?order (COUNT(DISTINCT ?t) AS ?traits)
       (GROUP_CONCAT(DISTINCT ?kw; separator="\\u001f") AS ?keywords) WHERE {
  %s
  ?item schema:item ?q . ?q schema:text ?text .
  OPTIONAL { ?q schema:identifier ?id }
  OPTIONAL { ?q karenina:finished ?finished }
  OPTIONAL { ?q schema:hasPart ?c . ?c karenina:templateId ?tid OPTIONAL { ?c karenina:isDefaultTemplate ?default } }
  OPTIONAL { ?q karenina:keywordOrder ?order }
  OPTIONAL { ?q schema:contentRating ?t }
  OPTIONAL { ?q schema:keywords ?kw }
}
GROUP BY ?item ?pos ?q ?id ?text ?finished ?tid ?default ?order
ORDER BY ?pos ?item"""

# A filtered page reads every question text of the benchmark (about 1.4 s at 100k questions:
# pyoxigraph has no text index); the page then fetches its 100 rows as an unfiltered one does.
# The id and hash are written into the patterns as terms: bound by a VALUES block, pyoxigraph
# scans every identifier before it joins (3.6 s at 100k questions against under a millisecond),
# and each branch of the UNION carries its whole pattern for the same reason.
_ALSO_IN = """
SELECT ?other ?b ?name ?same_id ?same_text WHERE {
  { ?other schema:identifier %(id)s ; a schema:Question ; schema:isPartOf ?b
    FILTER(?other != %(self)s) BIND(true AS ?same_id) }
  UNION
  { ?other karenina:textMd5 %(md5)s ; a schema:Question ; schema:isPartOf ?b
    FILTER(?other != %(self)s) BIND(true AS ?same_text) }
  OPTIONAL { ?b schema:name ?name }
}"""


@dataclass(frozen=True)
class BenchmarkRow:
    """One line of the index."""

    iri: str
    id: str
    name: str
    version: str | None
    imported_at: str | None
    questions: int
    finished: int
    with_template: int
    traits: int
    global_traits: int


@dataclass(frozen=True)
class QuestionRow:
    position: int | None
    iri: str
    id: str
    text: str
    finished: bool
    has_template: bool
    traits: int
    keywords: list[str]


@dataclass(frozen=True)
class QuestionTable:
    rows: list[QuestionRow]
    total: int  # questions matching the filter (all of them without one)
    page: int  # 1-based, clamped to the pages there are
    pages: int
    needle: str


@dataclass(frozen=True)
class BenchmarkHeader:
    info: BenchmarkInfo
    imported_at: str | None
    source: str | None
    triples: int | None


@dataclass(frozen=True)
class AlsoIn:
    """The same question in another place: same Karenina id, same text, or both."""

    question: str
    benchmark: str
    name: str
    same_id: bool
    same_text: bool


@dataclass(frozen=True)
class QuestionView:
    question: Question
    benchmark_name: str
    item: str
    also_in: list[AlsoIn]


def _query(store: Store, sparql: str, **dataset: Any) -> ox.QuerySolutions:
    return solutions(store.oxigraph.query(sparql, prefixes=dict(PREFIXES), **dataset))


def _value(solution: ox.QuerySolution, name: str) -> str | None:
    term = solution[name]
    return None if term is None else term_value(term)


def _count(solution: ox.QuerySolution, name: str) -> int:
    value = _value(solution, name)
    return int(value) if value is not None else 0


def benchmark_rows(store: Store, dataset: Mapping[str, Any]) -> list[BenchmarkRow]:
    """Every live benchmark with its counts, in the order ``karenina-rdf list`` uses."""
    rows = []
    for s in _query(store, _INDEX, **dataset):
        templates = _count(s, "templates") - _count(s, "empty") - _count(s, "defaults")
        iri = _value(s, "b") or ""
        rows.append(
            BenchmarkRow(
                iri=iri,
                id=_value(s, "id") or iri,
                name=_value(s, "name") or "",
                version=_value(s, "version"),
                imported_at=_value(s, "imported"),
                questions=_count(s, "questions"),
                finished=_count(s, "finished"),
                with_template=max(templates, 0),
                traits=_count(s, "traits"),
                global_traits=_count(s, "global"),
            )
        )
    return sorted(rows, key=lambda r: (r.name.lower(), r.version or "", r.id))


def question_count(store: Store, bench: str, graph: ox.NamedNode) -> int:
    sparql = f"SELECT (COUNT(?i) AS ?n) WHERE {{ {ox.NamedNode(bench)} <{DATA_FEED_ELEMENT}> ?i }}"
    return next((_count(s, "n") for s in _query(store, sparql, default_graph=graph)), 0)


def benchmark_header(store: Store, bench: str, graph: ox.NamedNode, questions: int) -> BenchmarkHeader:
    """``Benchmark.info()`` without its walk over every item: the DataFeed's own triples come from
    one query that leaves out ``dataFeedElement`` (``info()`` takes 4 s at 100k questions)."""
    sparql = f"SELECT ?p ?o WHERE {{ {ox.NamedNode(bench)} ?p ?o FILTER(?p != <{DATA_FEED_ELEMENT}>) }}"
    root: dict[str, list[Any]] = {}
    for s in _query(store, sparql, default_graph=graph):
        root.setdefault(term_value(s["p"]), []).append(s["o"])
    owned = [o.value for objects in root.values() for o in objects if isinstance(o, ox.NamedNode)]
    index = node_index(store.oxigraph, graph, [o for o in owned if o.startswith(bench + "/")])
    index[bench] = root
    header = benchmark_json(index, bench, [])
    identifier = root.get(SCHEMA + "identifier")
    benchmark_id = term_value(identifier[0]) if identifier else bench
    info = benchmark_info(header, benchmark_id=benchmark_id, iri=bench, question_count=questions)
    catalog = store.catalog.facts(bench)
    triples = catalog.get(TRIPLE_COUNT)
    return BenchmarkHeader(
        info=info,
        imported_at=catalog.get(IMPORTED_AT),
        source=catalog.get(SOURCE),
        triples=int(triples) if triples is not None else None,
    )


def question_table(store: Store, bench: str, graph: ox.NamedNode, page: int, needle: str) -> QuestionTable:
    """One page of the questions table: in checkpoint order, or, with a search (``needle``), the
    questions it finds in the full-text index (text, answer, keywords, template), best first."""
    items_prefix = bench + "/items/"
    if needle:
        try:
            found = store.search_text(needle, benchmarks=[bench], limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
            pages, clamped = _pages(found.total, page)
            if clamped != page:  # past the last page: show the last one
                found = store.search_text(needle, benchmarks=[bench], limit=PAGE_SIZE, offset=(clamped - 1) * PAGE_SIZE)
        except InvalidValueError:  # nothing to search for in what was typed ("?!")
            return QuestionTable([], 0, 1, 1, needle)
        questions = bench + "/questions/"  # item and question share their id segment (rdf._ids)
        items = [items_prefix + h.iri[len(questions) :] for h in found.hits if h.iri.startswith(questions)]
        by_item = {r.iri: r for r in _rows_for_items(store, graph, items)}
        rows = [by_item[h.iri] for h in found.hits if h.iri in by_item]  # the search's order
        return QuestionTable(rows, found.total, clamped, pages, needle)
    total = question_count(store, bench, graph)
    pages, page = _pages(total, page)
    start = (page - 1) * PAGE_SIZE
    expected = list(range(start, min(start + PAGE_SIZE, total)))
    # Positions are 0..n-1 (import numbers them, removal renumbers), so a page is a VALUES list
    # answered from the position index in milliseconds; ORDER BY + OFFSET sorts every item (2 s
    # at 100k). A graph edited by hand may break the numbering: then sort after all.
    selection = (
        f"VALUES ?pos {{ {' '.join(map(str, expected))} }} ?item karenina:position ?pos "
        f"FILTER(STRSTARTS(STR(?item), {ox.Literal(items_prefix)}))"
    )
    rows = _rows(store, graph, selection) if expected else []
    if [r.position for r in rows] != expected:
        ordered = (
            f"SELECT ?item WHERE {{ {ox.NamedNode(bench)} <{DATA_FEED_ELEMENT}> ?item "
            f"OPTIONAL {{ ?item karenina:position ?pos }} }} ORDER BY ?pos ?item LIMIT {PAGE_SIZE} OFFSET {start}"
        )
        items = [term_value(s["item"]) for s in _query(store, ordered, default_graph=graph)]
        rows = _rows_for_items(store, graph, items)
    return QuestionTable(rows, total, page, pages, needle)


def _pages(total: int, page: int) -> tuple[int, int]:
    pages = max(1, -(-total // PAGE_SIZE))
    return pages, min(max(page, 1), pages)


def _rows_for_items(store: Store, graph: ox.NamedNode, items: list[str]) -> list[QuestionRow]:
    if not items:
        return []
    values = " ".join(str(ox.NamedNode(i)) for i in items)
    return _rows(store, graph, f"VALUES ?item {{ {values} }} OPTIONAL {{ ?item karenina:position ?pos }}")


def _rows(store: Store, graph: ox.NamedNode, selection: str) -> list[QuestionRow]:
    out: dict[str, QuestionRow] = {}
    for s in _query(store, _ROWS % selection, default_graph=graph):
        item = term_value(s["item"])
        if item in out:
            continue  # a property given twice by a hand edit: the first row is enough
        tid, order = _value(s, "tid"), _value(s, "order")
        keywords = [k for k in (_value(s, "keywords") or "").split(_KEYWORD_SEPARATOR) if k]
        if order is not None:
            listed = json.loads(order)
            keywords = [k for k in listed if k in keywords] if isinstance(listed, list) else keywords
        position = _value(s, "pos")
        out[item] = QuestionRow(
            position=int(position) if position is not None else None,
            iri=term_value(s["q"]),
            id=_value(s, "id") or "",
            text=_value(s, "text") or "",
            finished=_value(s, "finished") in ("true", "1"),
            has_template=tid is not None and tid != "no_template" and _value(s, "default") not in ("true", "1"),
            traits=_count(s, "traits"),
            keywords=keywords,
        )
    return list(out.values())


def question_view(
    store: Store, bench: str, graph: ox.NamedNode, iri: str, dataset: Mapping[str, Any]
) -> QuestionView | None:
    """The question at ``iri`` with its item, or None when it is not a benchmark question."""
    found = store.oxigraph.quads_for_pattern(ox.NamedNode(iri), ox.NamedNode(SCHEMA + "identifier"), None, graph)
    qid = next((term_value(q.object) for q in found), None)
    if qid is None:
        return None
    handle = Benchmark(store, bench)
    try:
        question = handle.question_view(qid)
    except QuestionNotFoundError:
        return None
    names = store.oxigraph.quads_for_pattern(ox.NamedNode(bench), ox.NamedNode(SCHEMA + "name"), None, graph)
    name = next((term_value(q.object) for q in names), bench)
    return QuestionView(question, name, item_iri(bench, qid), also_in(store, iri, question, dataset))


def also_in(store: Store, iri: str, question: Question, dataset: Mapping[str, Any]) -> list[AlsoIn]:
    """Other stored questions with the same Karenina id or the same text (queries/same-question.rq)."""
    terms = {"id": ox.Literal(question.id or ""), "md5": ox.Literal(question.md5_id), "self": ox.NamedNode(iri)}
    found: dict[str, dict[str, Any]] = {}
    for s in _query(store, _ALSO_IN % terms, **dataset):
        other = term_value(s["other"])
        entry = found.setdefault(
            other, {"benchmark": _value(s, "b") or "", "name": _value(s, "name") or "", "id": False, "text": False}
        )
        entry["id"] = entry["id"] or s["same_id"] is not None
        entry["text"] = entry["text"] or s["same_text"] is not None
    out = [AlsoIn(q, e["benchmark"], e["name"], e["id"], e["text"]) for q, e in found.items()]
    return sorted(out, key=lambda a: (a.name.lower(), a.benchmark, a.question))


def graph_sample(store: Store, graph: ox.NamedNode, limit: int) -> Iterable[ox.Triple]:
    """The first ``limit`` triples of a graph (a benchmark graph can hold millions)."""
    for n, quad in enumerate(store.oxigraph.quads_for_pattern(None, None, None, graph)):
        if n >= limit:
            return
        yield quad.triple


# A scenario benchmark's scenarios: one row per node (turn) with its question, and one per edge.
_SCENARIO_NODES = """
SELECT ?s ?spos ?name ?description ?n ?pos ?key ?entry ?q ?text ?answer ?identity WHERE {
  %(bench)s schema:hasPart ?s . ?s karenina:position ?spos ; schema:name ?name .
  OPTIONAL { ?s schema:description ?description }
  OPTIONAL { ?s karenina:scenarioNode ?n . ?n karenina:position ?pos ; schema:identifier ?key .
    BIND(EXISTS { ?s karenina:entry ?n } AS ?entry)
    OPTIONAL { ?n karenina:agentIdentity ?identity }
    OPTIONAL { ?n karenina:question ?q . ?q schema:text ?text
      OPTIONAL { ?q schema:acceptedAnswer/schema:text ?answer } } }
}
ORDER BY ?spos ?pos"""
_SCENARIO_EDGES = """
SELECT ?s ?from ?target ?to ?conditional WHERE {
  %(bench)s schema:hasPart ?s . ?s karenina:scenarioEdge ?e .
  ?e karenina:position ?pos ; karenina:edgeTarget ?target ; karenina:fromNode ?from .
  OPTIONAL { ?e karenina:toNode ?to }
  BIND(EXISTS { ?e karenina:condition|karenina:conditionSource ?c } AS ?conditional)
}
ORDER BY ?s ?pos"""
_SCENARIO_OUTCOMES = """
SELECT ?s ?name WHERE { %(bench)s schema:hasPart ?s . ?s karenina:scenarioOutcome ?o .
  ?o karenina:position ?pos ; schema:name ?name }
ORDER BY ?s ?pos"""


@dataclass(frozen=True)
class NextStep:
    """Where a turn can go: another node (``iri``) or the end; ``conditional`` when an edge has a
    condition (the unconditional one is the fallback)."""

    target: str
    iri: str | None
    conditional: bool


@dataclass(frozen=True)
class TurnRow:
    """A node of a scenario (a turn the conversation can take) and its question."""

    node_id: str
    iri: str
    entry: bool
    question_iri: str | None
    text: str | None
    answer: str | None
    agent_identity: str | None
    next: list[NextStep]


@dataclass(frozen=True)
class ScenarioView:
    iri: str
    name: str
    description: str
    turns: list[TurnRow]
    outcomes: list[str]


def scenario_views(store: Store, bench: str, graph: ox.NamedNode) -> list[ScenarioView]:
    """The scenarios of a scenario benchmark (none for a benchmark of questions), in file order."""
    terms = {"bench": str(ox.NamedNode(bench))}
    steps: dict[str, list[NextStep]] = {}
    for s in _query(store, _SCENARIO_EDGES % terms, default_graph=graph):
        steps.setdefault(_value(s, "from") or "", []).append(
            NextStep(_value(s, "target") or "", _value(s, "to"), _value(s, "conditional") == "true")
        )
    outcomes: dict[str, list[str]] = {}
    for s in _query(store, _SCENARIO_OUTCOMES % terms, default_graph=graph):
        outcomes.setdefault(_value(s, "s") or "", []).append(_value(s, "name") or "")
    views: dict[str, ScenarioView] = {}
    for s in _query(store, _SCENARIO_NODES % terms, default_graph=graph):
        iri = _value(s, "s") or ""
        view = views.get(iri)
        if view is None:
            view = views[iri] = ScenarioView(
                iri, _value(s, "name") or "", _value(s, "description") or "", [], outcomes.get(iri, [])
            )
        node = _value(s, "n")
        if node is None:
            continue
        view.turns.append(
            TurnRow(
                node_id=_value(s, "key") or "",
                iri=node,
                entry=_value(s, "entry") == "true",
                question_iri=_value(s, "q"),
                text=_value(s, "text"),
                answer=_value(s, "answer"),
                agent_identity=_value(s, "identity"),
                next=steps.get(node, []),
            )
        )
    return list(views.values())
