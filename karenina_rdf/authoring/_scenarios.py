"""Karenina's scenario members of ``Benchmark``: ``add_scenario``, ``get_scenario``,
``get_scenarios``, ``remove_scenario``, ``scenario_count``, ``is_scenario_benchmark``.

A scenario is stored as triples (docs/data-model.md §4, ``checkpoint._scenarios``); these members
read it back from the graph and write a change as the checkpoint JSON Karenina would hold after
it, re-mapped and applied as a diff, like every other member. Karenina's own scenario objects
(its ``Scenario`` builder or a ``ScenarioDefinition``, with their questions, state checks,
primitives and check trees) are read by duck typing, as Karenina's ``scenario_to_schema_org``
reads them: nothing here imports Karenina.
"""

from __future__ import annotations

import json
from typing import Any

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict, Field

from karenina_rdf._errors import InvalidTypeError, InvalidValueError, ScenarioNotFoundError
from karenina_rdf.checkpoint import scenario_json
from karenina_rdf.rdf import DATA_FEED_ELEMENT, KAR, SCHEMA, child_iri, md5_hex

from ._core import BenchmarkCore
from ._question import Question

# Karenina's Question fields this package's Question view holds (its rubric dumps are left out:
# a scenario question's rubric is Karenina's Rubric object, kept whole in questionData).
_QUESTION_FIELDS = (
    "id",
    "question",
    "raw_answer",
    "answer_template",
    "date_created",
    "date_modified",
    "author",
    "sources",
    "custom_metadata",
    "keywords",
    "few_shot_examples",
    "answer_notes",
    "workspace_path",
)


class ScenarioNode(BaseModel):
    """A node of a scenario (a turn the conversation can take): Karenina's ``ScenarioNode``, with
    its model override and tool filter as the JSON Karenina stores for them."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    question: Question
    model_override: dict[str, Any] | None = None
    tool_filter: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent_identity: str | None = None
    state_update_source: str | None = None
    question_data: dict[str, Any] | None = None  # Karenina's full Question dump, as stored
    iri: str | None = None


class ScenarioEdge(BaseModel):
    """An edge (Karenina's ``ScenarioEdge``); ``condition`` is the stored state check(s) as JSON."""

    model_config = ConfigDict(frozen=True)

    source: str
    target: str
    condition: dict[str, Any] | list[dict[str, Any]] | None = None
    condition_source: str | None = None
    handover: str | None = None


class ScenarioOutcomeCriterion(BaseModel):
    """An outcome criterion (Karenina's ``ScenarioOutcomeCriterion``); ``check`` is the stored
    check tree as JSON."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    check: dict[str, Any] | None = None
    evaluate_source: str | None = None


class ScenarioDefinition(BaseModel):
    """A stored scenario as a value, with the fields of Karenina's ``ScenarioDefinition``."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    nodes: dict[str, ScenarioNode]
    edges: list[ScenarioEdge]
    entry_node: str
    outcome_criteria: list[ScenarioOutcomeCriterion] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    iri: str | None = None

    def to_schema_org(self) -> dict[str, Any]:
        """The scenario as it is written in a checkpoint (``DataFeed.hasPart[]``)."""
        nodes = {}
        for key, node in self.nodes.items():
            q = node.question
            out: dict[str, Any] = {"@type": "karenina:ScenarioNode", "nodeId": node.node_id}
            out["question"] = _schema_org_question(q.question, q.raw_answer, q.answer_template)
            _put(out, "modelOverride", node.model_override)
            _put(out, "toolFilter", node.tool_filter)
            _put(out, "stateUpdateSource", node.state_update_source)
            _put(out, "questionData", node.question_data)
            _put(out, "agentIdentity", node.agent_identity)
            out["metadata"] = dict(node.metadata)
            nodes[key] = out
        return _scenario_doc(
            self.name,
            self.description,
            self.entry_node,
            nodes,
            [_edge_doc(e.source, e.target, e.condition, e.condition_source, e.handover) for e in self.edges],
            [_outcome_doc(o.name, o.description, o.check, o.evaluate_source) for o in self.outcome_criteria],
            dict(self.metadata),
        )


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _plain(value: Any) -> Any:
    """A model_dump as the JSON Karenina's save writes of it (tuples as lists and so on)."""
    return json.loads(json.dumps(value, default=str))


def _schema_org_question(text: str, raw_answer: str | None, template: str | None) -> dict[str, Any]:
    # Karenina's _question_to_schema_org: the template's name uses the first 40 characters.
    name = f"{text[:40]}... Answer Template" if len(text) > 40 else f"{text} Answer Template"
    return {
        "@type": "Question",
        "text": text,
        "acceptedAnswer": {"@type": "Answer", "text": raw_answer or ""},
        "hasPart": {
            "@type": "SoftwareSourceCode",
            "name": name,
            "text": template or "",
            "programmingLanguage": "Python",
        },
    }


def _scenario_doc(
    name: str,
    description: str,
    entry: str,
    nodes: dict[str, Any],
    edges: list[dict[str, Any]],
    outcomes: list[dict[str, Any]],
    metadata: dict[str, Any],
) -> dict[str, Any]:
    return {
        "@type": "karenina:Scenario",
        "name": name,
        "description": description,
        "entryNode": entry,
        "nodes": nodes,
        "edges": edges,
        "outcomeCriteria": outcomes,
        "metadata": metadata,
    }


def _edge_doc(
    source: str, target: str, condition: Any, condition_source: str | None, handover: str | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"source": source, "target": target}
    _put(out, "condition", condition)
    _put(out, "conditionSource", condition_source)
    _put(out, "handover", handover)
    return out


def _outcome_doc(name: str, description: str, check: Any, evaluate_source: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "description": description}
    _put(out, "check", check)
    _put(out, "evaluateSource", evaluate_source)
    return out


# -- Karenina's objects, read as its scenario_to_schema_org reads them ------------------------
def _dump(obj: Any, **kwargs: Any) -> dict[str, Any]:
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        if isinstance(obj, dict):
            return dict(obj)
        raise InvalidTypeError(f"expected one of Karenina's scenario objects, got {type(obj).__name__}")
    out = dump(**kwargs)
    return dict(out) if isinstance(out, dict) else {}


def _verify_with(primitive: Any) -> dict[str, Any]:
    # Karenina's verification primitives dump without their class: the class name is the type.
    data = _dump(primitive) if hasattr(primitive, "model_dump") else {}
    data["type"] = type(primitive).__name__
    return data


def _state_check(check: Any) -> dict[str, Any]:
    data = _dump(check)
    if getattr(check, "verify_with", None) is not None:
        data["verify_with"] = _verify_with(check.verify_with)
    return data


def _check_tree(obj: Any) -> dict[str, Any]:
    # Karenina's _inject_verify_with_types: class names for types, all the way down.
    data = _dump(obj)
    data["type"] = type(obj).__name__
    if getattr(obj, "verify_with", None) is not None:
        data["verify_with"] = _verify_with(obj.verify_with)
    if getattr(obj, "conditions", None):
        data["conditions"] = [_check_tree(c) for c in obj.conditions]
    return data


_API_KEYS = {
    "answering_model": {"endpoint_api_key", "anthropic_api_key"},
    "parsing_model": {"endpoint_api_key", "anthropic_api_key"},
}


def _karenina_scenario(defn: Any) -> dict[str, Any]:
    """Karenina's ``scenario_to_schema_org``, by duck typing."""
    nodes = {}
    for node_id, node in defn.nodes.items():
        q = node.question
        out: dict[str, Any] = {"@type": "karenina:ScenarioNode", "nodeId": node_id}
        out["question"] = _schema_org_question(q.question, q.raw_answer, q.answer_template)
        if getattr(node, "model_override", None):
            out["modelOverride"] = _plain(_dump(node.model_override, exclude=_API_KEYS, exclude_none=True))
        if getattr(node, "tool_filter", None):
            out["toolFilter"] = _plain(_dump(node.tool_filter))
        _put(out, "stateUpdateSource", getattr(node, "state_update_source", None))
        out["questionData"] = _plain(_dump(q))
        _put(out, "agentIdentity", getattr(node, "agent_identity", None))
        out["metadata"] = _plain(getattr(node, "metadata", None) or {})
        nodes[node_id] = out
    edges = []
    for e in defn.edges:
        condition = e.condition
        if isinstance(condition, list):
            condition = [_state_check(c) for c in condition]
        elif condition is not None:
            condition = _state_check(condition)
        edges.append(_edge_doc(e.source, e.target, _plain(condition), e.condition_source, e.handover))
    outcomes = [
        _outcome_doc(
            c.name,
            c.description,
            _plain(_check_tree(c.check)) if c.check is not None else None,
            getattr(c, "evaluate_source", None),
        )
        for c in getattr(defn, "outcome_criteria", None) or []
    ]
    return _scenario_doc(
        defn.name,
        defn.description,
        defn.entry_node,
        nodes,
        edges,
        outcomes,
        _plain(getattr(defn, "metadata", None) or {}),
    )


def _scenario_value(doc: dict[str, Any], iri: str) -> ScenarioDefinition:
    nodes = {}
    taken: set[str] = set()
    for key, n in doc["nodes"].items():
        nodes[key] = ScenarioNode(
            node_id=key,  # Karenina's loader keys nodes by the dict key, whatever nodeId says
            question=_question_value(n),
            model_override=n.get("modelOverride"),
            tool_filter=n.get("toolFilter"),
            metadata=n.get("metadata") or {},
            agent_identity=n.get("agentIdentity"),
            state_update_source=n.get("stateUpdateSource"),
            question_data=n.get("questionData"),
            iri=child_iri(iri, "nodes", key, taken),  # minted as the importer does, in the same order
        )
    return ScenarioDefinition(
        name=doc["name"],
        description=doc.get("description") or "",
        nodes=nodes,
        edges=[
            ScenarioEdge(
                source=e["source"],
                target=e["target"],
                condition=e.get("condition"),
                condition_source=e.get("conditionSource"),
                handover=e.get("handover"),
            )
            for e in doc["edges"]
        ],
        entry_node=doc["entryNode"],
        outcome_criteria=[
            ScenarioOutcomeCriterion(
                name=o["name"],
                description=o.get("description") or "",
                check=o.get("check"),
                evaluate_source=o.get("evaluateSource"),
            )
            for o in doc.get("outcomeCriteria") or []
        ],
        metadata=doc.get("metadata") or {},
        iri=iri,
    )


def _question_value(node: dict[str, Any]) -> Question:
    """The Question Karenina runs: ``questionData`` when stored, else the schema.org view (as its
    loader does for older files)."""
    q = node.get("question") or {}
    text = q.get("text") or ""
    view = {
        "id": md5_hex(text),
        "question": text,
        "raw_answer": (q.get("acceptedAnswer") or {}).get("text", ""),
        "answer_template": (q.get("hasPart") or {}).get("text"),
    }
    data = node.get("questionData")
    if isinstance(data, dict):
        view |= {k: data[k] for k in _QUESTION_FIELDS if k in data}
    try:
        return Question(**view)
    except ValueError:  # an empty text Karenina's Question would refuse too: the view as stored
        return Question.model_construct(**view)


class ScenarioMembers(BenchmarkCore):
    """Karenina's scenario members (a benchmark holds questions or scenarios, never both)."""

    def _scenario_docs(self) -> list[tuple[str, dict[str, Any]]]:
        index = self._header_index()
        parts = [o.value for o in index.get(self.iri, {}).get(SCHEMA + "hasPart", [])]
        parts.sort(key=lambda s: int(index[s][KAR.position][0].value) if index.get(s, {}).get(KAR.position) else 0)
        return [(s, scenario_json(index, s)) for s in parts]

    def _scenarios_by_name(self) -> dict[str, ScenarioDefinition]:
        # Karenina keeps the last of two scenarios with one name (a dict by name), in first place.
        out: dict[str, ScenarioDefinition] = {}
        for iri, doc in self._scenario_docs():
            out[doc["name"]] = _scenario_value(doc, iri)
        return out

    @property
    def is_scenario_benchmark(self) -> bool:
        """True if this benchmark contains scenarios instead of standalone questions."""
        return self.scenario_count > 0

    @property
    def scenario_count(self) -> int:
        """The number of scenarios in the benchmark."""
        return len(self._scenarios_by_name())

    def add_scenario(self, scenario: Any) -> None:
        """Add a scenario: Karenina's ``ScenarioDefinition`` or ``Scenario`` builder (validated
        first, as Karenina does), or a scenario read here (``get_scenario``).

        Raises ValueError (:class:`InvalidValueError`) if the benchmark holds standalone questions
        or a scenario with the same name.
        """
        if self._has_questions():
            raise InvalidValueError(
                "Cannot add scenarios to a benchmark that already contains standalone questions. "
                "Scenarios and standalone questions cannot coexist in the same benchmark."
            )
        if isinstance(scenario, ScenarioDefinition):
            doc = scenario.to_schema_org()
        else:
            if not (hasattr(scenario, "nodes") and hasattr(scenario, "entry_node")):
                validate = getattr(scenario, "validate", None)
                if not callable(validate):
                    raise InvalidTypeError(
                        f"add_scenario takes a ScenarioDefinition or a Scenario builder, got {type(scenario).__name__}"
                    )
                scenario = validate()  # Karenina's builder: its own errors (ValueError) pass through
            doc = _karenina_scenario(scenario)
        if doc["name"] in self._scenarios_by_name():
            raise InvalidValueError(f"Scenario '{doc['name']}' already exists")
        header = self._header()
        header["hasPart"] = [*(header.get("hasPart") or []), doc]
        props = header.get("additionalProperty") or []
        if not any(p.get("name") == "benchmark_type" for p in props):
            header["additionalProperty"] = [
                *props,
                {"@type": "PropertyValue", "name": "benchmark_type", "value": "scenario"},
            ]
        self._apply(self._header_update(header))

    def get_scenarios(self) -> list[ScenarioDefinition]:
        """All scenarios, as values (Karenina's ``ScenarioDefinition`` fields)."""
        return list(self._scenarios_by_name().values())

    def get_scenario(self, name: str) -> ScenarioDefinition:
        """The scenario named ``name``; KeyError (:class:`ScenarioNotFoundError`) if none."""
        found = self._scenarios_by_name().get(name)
        if found is None:
            raise ScenarioNotFoundError(f"Scenario '{name}' not found")
        return found

    def remove_scenario(self, name: str) -> None:
        """Remove the scenario(s) named ``name``; KeyError (:class:`ScenarioNotFoundError`) if none.
        With the last one gone, ``hasPart`` and the ``benchmark_type`` property go too, as in
        Karenina."""
        if name not in self._scenarios_by_name():
            raise ScenarioNotFoundError(f"Scenario '{name}' not found")
        header = self._header()
        kept = [s for s in header.get("hasPart") or [] if s.get("name") != name]
        if kept:
            header["hasPart"] = kept
        else:
            header.pop("hasPart", None)
            props = [p for p in header.get("additionalProperty") or [] if p.get("name") != "benchmark_type"]
            if props or header.get("additionalProperty") is not None:
                header["additionalProperty"] = props
        self._apply(self._header_update(header))

    def _has_questions(self) -> bool:
        return any(
            True
            for _ in self.store.oxigraph.quads_for_pattern(
                ox.NamedNode(self.iri), ox.NamedNode(DATA_FEED_ELEMENT), None, self._graph
            )
        )
