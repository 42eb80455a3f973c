"""Scenario benchmarks (``DataFeed.hasPart``, spec §13) ⇄ triples.

A scenario is a graph of nodes (the turns a conversation can take), each wrapping a Question,
with edges between them and outcome criteria over the whole run. The scenario, its nodes, their
questions (with answer and template, as for a question of ``dataFeedElement``), its edges and
its outcome criteria are nodes of their own, so SPARQL finds a scenario's questions like any
other. What Karenina keeps as free JSON (``dict[str, Any]`` in its models: a node's
``questionData``, ``modelOverride``, ``toolFilter`` and ``metadata``, an edge's ``condition``, an
outcome's ``check`` tree) is one ``rdf:JSON`` value each. docs/data-model.md §6 draws the model.

Export writes what Karenina's save writes for the same file: its pydantic models
(``SchemaOrgScenario`` and the rest, ``schemas/checkpoint.py``) dumped with ``by_alias`` and
``exclude_none``: keys in declaration order, unset optional keys left out, the defaulted
``description`` / ``metadata`` / ``outcomeCriteria`` always written, keys the models do not
declare dropped. A file Karenina saved therefore comes back byte for byte.
"""

from __future__ import annotations

from typing import Any, Protocol

from karenina_rdf.rdf import KAR, RDF, SCHEMA, child_iri, md5_hex
from karenina_rdf.rdf import terms as t

from ._properties import Index, first

END = "__end__"  # Karenina's END: an edge to it ends the scenario

_TYPE = t.iri(RDF + "type")
# Keys of a scenario node's Question that are kept as found (Karenina's writer never writes them
# there; its model declares them): in declaration order, after hasPart.
_QUESTION_EXTRAS = ("rating", "additionalProperty", "keywords")


def _s(local: str) -> str:
    return t.iri(SCHEMA + local)


class _Mapper(Protocol):
    """The parts of checkpoint._map's mapper a scenario uses (reporting, field readers, output)."""

    def fail(self, ptr: str, message: str, trait: str | None = None) -> None: ...
    def at(self, node: str, ptr: str) -> None: ...
    def add(self, s: str, p: str, o: str) -> None: ...
    def obj(self, node: Any, ptr: str, what: str, type_name: str | None = None) -> dict[str, Any] | None: ...
    def text(self, node: dict[str, Any], key: str, ptr: str, required: bool = False) -> str | None: ...
    def array(self, node: dict[str, Any], key: str, ptr: str, required: bool = False) -> list[Any] | None: ...
    def literal(
        self, s: str, p: str, node: dict[str, Any], key: str, ptr: str, required: bool = False
    ) -> str | None: ...
    def source_id(self, s: str, node: dict[str, Any], ptr: str) -> None: ...
    def template(self, q: str, value: Any, ptr: str, question: str) -> str | None: ...


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _json_field(
    m: _Mapper, s: str, pred: str, node: dict[str, Any], key: str, ptr: str, kinds: tuple[type, ...]
) -> None:
    """A free-JSON field of Karenina's models (an object, or for a condition a list) as rdf:JSON."""
    if node.get(key) is None:
        return  # absent or null: Karenina's exclude_none save leaves it out
    value = node[key]
    if not isinstance(value, kinds):
        what = " or ".join("an object" if k is dict else "an array" for k in kinds)
        m.fail(f"{ptr}/{_esc(key)}", f"{key!r} must be {what}")
        return
    m.add(s, pred, t.json_literal(value))


def map_scenario(m: _Mapper, b: str, i: int, node: Any, taken: set[str]) -> None:
    """One ``hasPart`` entry: the scenario node, its nodes, edges and outcome criteria."""
    ptr = f"/hasPart/{i}"
    s = m.obj(node, ptr, "a scenario", "karenina:Scenario")
    if s is None:
        return
    name = m.text(s, "name", ptr, required=True)
    entry = m.text(s, "entryNode", ptr, required=True)
    nodes = s.get("nodes")
    if not isinstance(nodes, dict):
        m.fail(ptr, "a scenario needs 'nodes', an object keyed by node id")
        nodes = {}
    edges = m.array(s, "edges", ptr, required=True) or []
    outcomes = m.array(s, "outcomeCriteria", ptr) or []
    scenario = child_iri(b, "scenarios", name or "", taken)
    S = t.iri(scenario)
    m.at(scenario, ptr)
    m.add(t.iri(b), _s("hasPart"), S)
    m.add(S, _TYPE, KAR.Scenario.nt)
    m.add(S, KAR.position.nt, t.integer(i))
    if name is not None:
        m.add(S, _s("name"), t.string(name))
    m.literal(S, _s("description"), s, "description", ptr)
    node_iris: dict[str, str] = {}
    taken_nodes: set[str] = set()
    for j, (key, value) in enumerate(nodes.items()):
        node_iris[key] = child_iri(scenario, "nodes", key, taken_nodes)
        _map_node(m, b, S, node_iris[key], j, key, value, f"{ptr}/nodes/{_esc(key)}")
    if entry is not None:
        m.add(S, KAR.entryNode.nt, t.string(entry))
        # Karenina's load does not check that it names a node (its builder does): shapes warn.
        if entry in node_iris:
            m.add(S, KAR.entry.nt, t.iri(node_iris[entry]))
    for j, edge in enumerate(edges):
        _map_edge(m, S, f"{scenario}/edges/{j}", j, edge, node_iris, f"{ptr}/edges/{j}")
    for j, outcome in enumerate(outcomes):
        _map_outcome(m, S, f"{scenario}/outcomes/{j}", j, outcome, f"{ptr}/outcomeCriteria/{j}")
    _json_field(m, S, KAR.scenarioMetadata.nt, s, "metadata", ptr, (dict,))


def _map_node(m: _Mapper, b: str, S: str, node: str, j: int, key: str, value: Any, ptr: str) -> None:
    n = m.obj(value, ptr, "a scenario node", "karenina:ScenarioNode")
    if n is None:
        return
    N = t.iri(node)
    m.at(node, ptr)
    m.add(S, KAR.scenarioNode.nt, N)
    m.add(N, _TYPE, KAR.ScenarioNode.nt)
    m.add(N, KAR.position.nt, t.integer(j))
    m.add(N, _s("identifier"), t.string(key))
    m.literal(N, KAR.nodeId.nt, n, "nodeId", ptr, required=True)
    if "question" not in n:
        m.fail(ptr, "missing required field 'question'")
    else:
        _map_question(m, b, N, f"{node}/question", n["question"], n.get("questionData"), f"{ptr}/question")
    _json_field(m, N, KAR.modelOverride.nt, n, "modelOverride", ptr, (dict,))
    _json_field(m, N, KAR.toolFilter.nt, n, "toolFilter", ptr, (dict,))
    m.literal(N, KAR.stateUpdateSource.nt, n, "stateUpdateSource", ptr)
    _json_field(m, N, KAR.questionData.nt, n, "questionData", ptr, (dict,))
    m.literal(N, KAR.agentIdentity.nt, n, "agentIdentity", ptr)
    _json_field(m, N, KAR.scenarioMetadata.nt, n, "metadata", ptr, (dict,))


def _map_question(m: _Mapper, b: str, N: str, q: str, value: Any, data: Any, ptr: str) -> None:
    node = m.obj(value, ptr, "a scenario node's question (a Question)", "Question")
    if node is None:
        return
    Q = t.iri(q)
    m.at(q, ptr)
    m.add(N, KAR.question.nt, Q)
    m.add(Q, _TYPE, _s("Question"))
    m.add(Q, _s("isPartOf"), t.iri(b))
    m.source_id(Q, node, ptr)
    text = m.literal(Q, _s("text"), node, "text", ptr, required=True)
    if text is not None:
        m.add(Q, KAR.textMd5.nt, t.string(md5_hex(text)))
    # What Karenina runs is the Question entity in questionData (schema_org_to_scenario): its id
    # and keywords are written beside the schema.org view, so queries find them (export reads
    # questionData whole).
    # Without questionData (older files) Karenina builds the Question from this node, whose id
    # is the MD5 of its text.
    qid = data.get("id") if isinstance(data, dict) else None
    if not isinstance(qid, str) or not qid:
        qid = md5_hex(text) if text is not None else None
    if qid is not None:
        m.add(Q, _s("identifier"), t.string(qid))
    if isinstance(data, dict):
        words = data.get("keywords")
        if isinstance(words, list):
            for w in dict.fromkeys(w for w in words if isinstance(w, str)):
                m.add(Q, _s("keywords"), t.string(w))
    if "acceptedAnswer" not in node:
        m.fail(ptr, "missing required field 'acceptedAnswer'")
    else:
        answer = m.obj(node["acceptedAnswer"], f"{ptr}/acceptedAnswer", "acceptedAnswer (an Answer)", "Answer")
        if answer is not None:
            A = t.iri(f"{q}/answer")
            m.at(f"{q}/answer", f"{ptr}/acceptedAnswer")
            m.add(Q, _s("acceptedAnswer"), A)
            m.add(A, _TYPE, _s("Answer"))
            m.source_id(A, answer, f"{ptr}/acceptedAnswer")
            m.literal(A, _s("text"), answer, "text", f"{ptr}/acceptedAnswer", required=True)
    if "hasPart" not in node:
        m.fail(ptr, "missing required field 'hasPart' (the answer template)")
    else:
        m.template(q, node["hasPart"], f"{ptr}/hasPart", text or "")
    extras = {k: node[k] for k in _QUESTION_EXTRAS if node.get(k) is not None}
    if extras:
        m.add(Q, KAR.verbatimFields.nt, t.json_literal(extras))


def _map_edge(m: _Mapper, S: str, edge: str, j: int, value: Any, nodes: dict[str, str], ptr: str) -> None:
    e = m.obj(value, ptr, "a scenario edge")
    if e is None:
        return
    E = t.iri(edge)
    m.at(edge, ptr)
    m.add(S, KAR.scenarioEdge.nt, E)
    m.add(E, _TYPE, KAR.ScenarioEdge.nt)
    m.add(E, KAR.position.nt, t.integer(j))
    source = m.literal(E, KAR.edgeSource.nt, e, "source", ptr, required=True)
    target = m.literal(E, KAR.edgeTarget.nt, e, "target", ptr, required=True)
    # Links to the nodes named, for queries; Karenina's load does not check the names (its
    # builder does), so an edge naming no node keeps only its string.
    if source in nodes:
        m.add(E, KAR.fromNode.nt, t.iri(nodes[source]))
    if target == END:
        m.add(E, KAR.endsScenario.nt, t.boolean(True))
    elif target in nodes:
        m.add(E, KAR.toNode.nt, t.iri(nodes[target]))
    condition = e.get("condition")
    if isinstance(condition, list) and not all(isinstance(c, dict) for c in condition):
        m.fail(f"{ptr}/condition", "'condition' must be an object or an array of objects")
    else:
        _json_field(m, E, KAR.condition.nt, e, "condition", ptr, (dict, list))
    m.literal(E, KAR.conditionSource.nt, e, "conditionSource", ptr)
    m.literal(E, KAR.handover.nt, e, "handover", ptr)


def _map_outcome(m: _Mapper, S: str, outcome: str, j: int, value: Any, ptr: str) -> None:
    o = m.obj(value, ptr, "a scenario outcome criterion")
    if o is None:
        return
    O = t.iri(outcome)  # noqa: E741 (the node's N-Triples term, as S, N, E)
    m.at(outcome, ptr)
    m.add(S, KAR.scenarioOutcome.nt, O)
    m.add(O, _TYPE, KAR.ScenarioOutcome.nt)
    m.add(O, KAR.position.nt, t.integer(j))
    m.literal(O, _s("name"), o, "name", ptr, required=True)
    m.literal(O, _s("description"), o, "description", ptr)
    _json_field(m, O, KAR.check.nt, o, "check", ptr, (dict,))
    m.literal(O, KAR.evaluateSource.nt, o, "evaluateSource", ptr)


# -- triples → JSON --------------------------------------------------------------------------
def _objects(index: Index, s: str, p: str) -> list[str]:
    return [o.value for o in index.get(s, {}).get(p, [])]


def _ordered(index: Index, s: str, p: str) -> list[str]:
    return sorted(_objects(index, s, p), key=lambda n: first(index, n, KAR.position) or 0)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def scenario_json(index: Index, s: str) -> dict[str, Any]:
    """A scenario as Karenina's save writes it (``SchemaOrgScenario``)."""
    out: dict[str, Any] = {"@type": "karenina:Scenario", "name": first(index, s, SCHEMA + "name")}
    out["description"] = first(index, s, SCHEMA + "description") or ""
    out["entryNode"] = first(index, s, KAR.entryNode)
    out["nodes"] = {
        first(index, n, SCHEMA + "identifier"): _node_json(index, n) for n in _ordered(index, s, KAR.scenarioNode)
    }
    out["edges"] = [_edge_json(index, e) for e in _ordered(index, s, KAR.scenarioEdge)]
    out["outcomeCriteria"] = [_outcome_json(index, o) for o in _ordered(index, s, KAR.scenarioOutcome)]
    out["metadata"] = first(index, s, KAR.scenarioMetadata) or {}
    return out


def _node_json(index: Index, n: str) -> dict[str, Any]:
    out: dict[str, Any] = {"@type": "karenina:ScenarioNode", "nodeId": first(index, n, KAR.nodeId)}
    questions = _objects(index, n, KAR.question)
    if questions:
        out["question"] = _question_json(index, questions[0])
    for key, pred in (
        ("modelOverride", KAR.modelOverride),
        ("toolFilter", KAR.toolFilter),
        ("stateUpdateSource", KAR.stateUpdateSource),
        ("questionData", KAR.questionData),
        ("agentIdentity", KAR.agentIdentity),
    ):
        _put(out, key, first(index, n, pred))
    out["metadata"] = first(index, n, KAR.scenarioMetadata) or {}
    return out


def _with_id(index: Index, s: str, type_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {"@type": type_name}
    _put(out, "@id", first(index, s, KAR.sourceId))
    return out


def _question_json(index: Index, q: str) -> dict[str, Any]:
    out = _with_id(index, q, "Question")
    out["text"] = first(index, q, SCHEMA + "text")
    for a in _objects(index, q, SCHEMA + "acceptedAnswer"):
        answer = _with_id(index, a, "Answer")
        answer["text"] = first(index, a, SCHEMA + "text")
        out["acceptedAnswer"] = answer
    for c in _objects(index, q, SCHEMA + "hasPart"):
        code = _with_id(index, c, "SoftwareSourceCode")
        for key in ("name", "text", "programmingLanguage", "codeRepository"):
            _put(code, key, first(index, c, SCHEMA + key))
        out["hasPart"] = code
    out.update(first(index, q, KAR.verbatimFields) or {})
    return out


def _edge_json(index: Index, e: str) -> dict[str, Any]:
    out: dict[str, Any] = {"source": first(index, e, KAR.edgeSource), "target": first(index, e, KAR.edgeTarget)}
    _put(out, "condition", first(index, e, KAR.condition))
    _put(out, "conditionSource", first(index, e, KAR.conditionSource))
    _put(out, "handover", first(index, e, KAR.handover))
    return out


def _outcome_json(index: Index, o: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": first(index, o, SCHEMA + "name")}
    out["description"] = first(index, o, SCHEMA + "description") or ""
    _put(out, "check", first(index, o, KAR.check))
    _put(out, "evaluateSource", first(index, o, KAR.evaluateSource))
    return out
