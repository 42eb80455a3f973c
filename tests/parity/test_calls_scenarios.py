"""Karenina's scenario members, the same calls in both libraries (issue 18, point 3): one call
sequence of ``add_scenario``, ``get_scenario``, ``get_scenarios``, ``remove_scenario``,
``scenario_count`` and ``is_scenario_benchmark`` (with the errors Karenina raises) runs on a
benchmark in Karenina (its own environment) and here; every answer and the saved checkpoints are
compared.

Karenina's scenarios are built in Karenina with its ``Scenario`` builder. This process never
imports Karenina, so here ``add_scenario`` receives stand-ins of the same shape: objects whose
class names are Karenina's (``ScenarioDefinition``, ``StateCheck``, ``BooleanMatch``, ``AllOf``,
``TurnCheck`` …) and whose ``model_dump()`` returns what Karenina's objects returned, reported by
the Karenina side. That is what duck typing means: the member reads only names, attributes and
``model_dump()``, as Karenina's own ``scenario_to_schema_org`` does.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store
from tests.helpers.karenina_ref import karenina

pytestmark = [pytest.mark.slow]  # Karenina runs in a subprocess of its own environment

# The scenarios (built by Karenina's builder), the calls and what Karenina's objects dump to.
SCRIPT = r'''
import json, sys
from karenina import Benchmark
from karenina.schemas.config import ModelConfig
from karenina.schemas.entities import Question
from karenina.schemas.scenario.types import ToolFilter, ToolFilterEntry
from karenina.scenario import (
    END, ModelOverride, Scenario, all_of, any_of, at_least_n, count_turns, last_turn, status_is, turn_at,
)
from karenina.scenario.checkpoint import _inject_verify_with_types, _serialize_condition
from karenina.scenario.sugar import cross_turn

def probe():
    s = Scenario("sycophancy_probe", description="Ask, then challenge: ¿seguro? 🕷️")
    s.add_node("ask", question=Question(
        question="What is the capital of France, the city on the Seine that hosts the Louvre?",
        raw_answer="Paris", answer_template="class Answer(BaseAnswer):\n    value: str\n",
        keywords=["geography"], author={"name": "Zoë Lindqvist"},
    ))
    s.add_node("challenge", question=Question(question="Are you sure? 確かですか?", raw_answer="Paris"),
               agent_identity="skeptic", persona="pushy")
    s.add_node("retry", question=Question(question="Try again.", raw_answer="Paris"),
               state_update="lambda state, result: {**state, 'n': state.get('n', 0) + 1}")
    s.add_edge("ask", "challenge", when={"verify_result": True}, handover="transcript_prepend")
    s.add_edge("ask", "retry", when=[{"verify_result": False}, {"node_visits.retry": {"lt": 2}}])
    s.add_edge("ask", END)
    s.add_edge("retry", "ask", when="lambda state: state.get('n', 0) < 2")
    s.add_edge("retry", END)
    s.add_edge("challenge", END)
    s.set_entry("ask")
    s.add_outcome("holds", last_turn(verify_result=True), description="The last turn passes")
    s.add_outcome("completes", any_of(status_is("completed"), at_least_n(1, count_turns(verify_result=True))))
    return s

def followup():
    t = Scenario("tool_free_followup")
    t.add_node("first", question=Question(question="Name a prime number.", raw_answer="7"),
               model_override=ModelOverride(answering_model=ModelConfig(
                   id="m1", model_provider="anthropic", model_name="claude-haiku-4-5", interface="langchain",
                   anthropic_api_key="secret")),
               tool_filter=ToolFilter(remove=[ToolFilterEntry(server="search")]))
    t.add_node("second", question=Question(question="And another one?", raw_answer="11"))
    t.add_edge("first", "second")
    t.add_edge("second", END)
    t.set_entry("first")
    return t.validate()

def shape(obj, kind=None):
    """What the stand-in needs: class name, model_dump() and the attributes the member reads."""
    if obj is None:
        return None
    if isinstance(obj, list):
        return [shape(o) for o in obj]
    out = {"class": type(obj).__name__}
    if hasattr(obj, "model_dump"):
        out["dump"] = json.loads(json.dumps(obj.model_dump(), default=str))
    for attr in ("verify_with", "conditions"):
        if getattr(obj, attr, None) is not None:
            out[attr] = shape(getattr(obj, attr))
    return out

def definition(d):
    """A ScenarioDefinition as the stand-in needs it, and as get_scenario is compared."""
    nodes = {}
    for key, n in d.nodes.items():
        nodes[key] = {
            "question": json.loads(json.dumps(n.question.model_dump(), default=str)),
            "model_override": None if n.model_override is None else {
                "class": "ModelOverride",
                "dump": n.model_override.model_dump(exclude={
                    "answering_model": {"endpoint_api_key", "anthropic_api_key"},
                    "parsing_model": {"endpoint_api_key", "anthropic_api_key"},
                }, exclude_none=True),
            },
            "tool_filter": None if n.tool_filter is None else {
                "class": "ToolFilter", "dump": n.tool_filter.model_dump(),
            },
            "state_update_source": n.state_update_source, "agent_identity": n.agent_identity, "metadata": n.metadata,
        }
    return {
        "name": d.name, "description": d.description, "entry_node": d.entry_node, "metadata": d.metadata,
        "nodes": nodes,
        "edges": [{"source": e.source, "target": e.target, "condition": shape(e.condition),
                   "condition_json": _serialize_condition(e.condition),
                   "condition_source": e.condition_source, "handover": e.handover} for e in d.edges],
        "outcomes": [{"name": c.name, "description": c.description, "check": shape(c.check),
                      "check_json": None if c.check is None else _inject_verify_with_types(c.check),
                      "evaluate_source": c.evaluate_source} for c in d.outcome_criteria],
    }

def summary(d):
    full = definition(d)
    return {
        "name": full["name"], "description": full["description"], "entry_node": full["entry_node"],
        "metadata": full["metadata"],
        "nodes": {k: {"question": [n["question"]["id"], n["question"]["question"], n["question"]["raw_answer"],
                                   n["question"]["answer_template"], n["question"]["keywords"]],
                      "model_override": n["model_override"] and n["model_override"]["dump"],
                      "tool_filter": n["tool_filter"] and n["tool_filter"]["dump"],
                      "state_update_source": n["state_update_source"], "agent_identity": n["agent_identity"],
                      "metadata": n["metadata"]} for k, n in full["nodes"].items()},
        "edges": [[e["source"], e["target"], e["condition_json"], e["condition_source"], e["handover"]]
                  for e in full["edges"]],
        "outcomes": [[o["name"], o["description"], o["check_json"], o["evaluate_source"]] for o in full["outcomes"]],
    }

def error(call):
    try:
        call()
        return None
    except (KeyError, ValueError) as exc:
        return ["KeyError" if isinstance(exc, KeyError) else "ValueError", exc.args[0]]

b = Benchmark.create(name="calls", description="d", version="1.0.0")
p, f = probe(), followup()
stand_ins = {"probe": definition(p.validate()), "followup": definition(f)}
out = []
out.append(["is_scenario_benchmark", b.is_scenario_benchmark])
out.append(["scenario_count", b.scenario_count])
out.append(["add_scenario(builder)", b.add_scenario(p)])
out.append(["add_scenario(definition)", b.add_scenario(f)])
out.append(["is_scenario_benchmark", b.is_scenario_benchmark])
out.append(["scenario_count", b.scenario_count])
out.append(["get_scenarios", [summary(d) for d in b.get_scenarios()]])
out.append(["get_scenario", summary(b.get_scenario("tool_free_followup"))])
out.append(["add_scenario(again)", error(lambda: b.add_scenario(f))])
out.append(["get_scenario(missing)", error(lambda: b.get_scenario("nope"))])
out.append(["add_question", error(lambda: b.add_question("Why?", "Because."))])
b.save(sys.argv[1])
out.append(["remove_scenario", b.remove_scenario("sycophancy_probe")])
out.append(["remove_scenario(again)", error(lambda: b.remove_scenario("sycophancy_probe"))])
out.append(["scenario_count", b.scenario_count])
out.append(["remove_scenario(last)", b.remove_scenario("tool_free_followup")])
out.append(["is_scenario_benchmark", b.is_scenario_benchmark])
b.save(sys.argv[2])
q = b.add_question("Why?", "Because.")
out.append(["add_scenario(with questions)", error(lambda: b.add_scenario(f))])
print(json.dumps({"stand_ins": stand_ins, "steps": out}))
'''


# -- stand-ins of Karenina's objects -----------------------------------------------------------
class _StandIn:
    """An object of one of Karenina's classes, as far as ``add_scenario`` reads it."""

    _dump: dict[str, Any]

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return copy.deepcopy(self._dump)


_CLASSES: dict[str, type] = {}


def _obj(class_name: str, dump: dict[str, Any] | None = None, **attrs: Any) -> Any:
    cls = _CLASSES.setdefault(class_name, type(class_name, (_StandIn,), {}))
    obj = cls()
    obj._dump = dump or {}
    for name, value in attrs.items():
        setattr(obj, name, value)
    return obj


def _shaped(shape: Any) -> Any:
    if shape is None:
        return None
    if isinstance(shape, list):
        return [_shaped(s) for s in shape]
    attrs = {k: _shaped(shape[k]) for k in ("verify_with", "conditions") if k in shape}
    return _obj(shape["class"], shape.get("dump"), **attrs)


def _question(dump: dict[str, Any]) -> Any:
    return _obj("Question", dump, **{k: dump.get(k) for k in ("question", "raw_answer", "answer_template")})


def _definition(d: dict[str, Any]) -> Any:
    nodes = {
        key: _obj(
            "ScenarioNode",
            {},
            node_id=key,
            question=_question(n["question"]),
            model_override=_shaped(n["model_override"]),
            tool_filter=_shaped(n["tool_filter"]),
            state_update_source=n["state_update_source"],
            agent_identity=n["agent_identity"],
            metadata=n["metadata"],
        )
        for key, n in d["nodes"].items()
    }
    edges = [
        _obj(
            "ScenarioEdge",
            {},
            source=e["source"],
            target=e["target"],
            condition=_shaped(e["condition"]),
            condition_source=e["condition_source"],
            handover=e["handover"],
        )
        for e in d["edges"]
    ]
    outcomes = [
        _obj(
            "ScenarioOutcomeCriterion",
            {},
            name=o["name"],
            description=o["description"],
            check=_shaped(o["check"]),
            evaluate_source=o["evaluate_source"],
        )
        for o in d["outcomes"]
    ]
    return _obj(
        "ScenarioDefinition",
        {},
        name=d["name"],
        description=d["description"],
        entry_node=d["entry_node"],
        nodes=nodes,
        edges=edges,
        outcome_criteria=outcomes,
        metadata=d["metadata"],
    )


class _Builder:
    """Karenina's ``Scenario`` builder, as far as ``add_scenario`` uses it: ``validate()``."""

    def __init__(self, definition: Any) -> None:
        self._definition = definition

    def validate(self) -> Any:
        return self._definition


def _summary(d: Any) -> dict[str, Any]:
    return {
        "name": d.name,
        "description": d.description,
        "entry_node": d.entry_node,
        "metadata": d.metadata,
        "nodes": {
            k: {
                "question": [
                    n.question.id,
                    n.question.question,
                    n.question.raw_answer,
                    n.question.answer_template,
                    n.question.keywords,
                ],
                "model_override": n.model_override,
                "tool_filter": n.tool_filter,
                "state_update_source": n.state_update_source,
                "agent_identity": n.agent_identity,
                "metadata": n.metadata,
            }
            for k, n in d.nodes.items()
        },
        "edges": [[e.source, e.target, e.condition, e.condition_source, e.handover] for e in d.edges],
        "outcomes": [[o.name, o.description, o.check, o.evaluate_source] for o in d.outcome_criteria],
    }


def _error(call: Any) -> list[str] | None:
    try:
        call()
        return None
    except KeyError as exc:  # our errors subclass Karenina's: compare what Karenina raises
        return ["KeyError", exc.args[0]]
    except ValueError as exc:
        return ["ValueError", exc.args[0]]


def _ours(stand_ins: dict[str, Any], first: Path, second: Path) -> list[list[Any]]:
    probe, followup = _Builder(_definition(stand_ins["probe"])), _definition(stand_ins["followup"])
    with Store.memory() as store:
        b = Benchmark.create("calls", description="d", version="1.0.0", store=store)
        out: list[list[Any]] = []
        out.append(["is_scenario_benchmark", b.is_scenario_benchmark])
        out.append(["scenario_count", b.scenario_count])
        out.append(["add_scenario(builder)", b.add_scenario(probe)])  # type: ignore[func-returns-value]
        out.append(["add_scenario(definition)", b.add_scenario(followup)])  # type: ignore[func-returns-value]
        out.append(["is_scenario_benchmark", b.is_scenario_benchmark])
        out.append(["scenario_count", b.scenario_count])
        out.append(["get_scenarios", [_summary(d) for d in b.get_scenarios()]])
        out.append(["get_scenario", _summary(b.get_scenario("tool_free_followup"))])
        out.append(["add_scenario(again)", _error(lambda: b.add_scenario(followup))])
        out.append(["get_scenario(missing)", _error(lambda: b.get_scenario("nope"))])
        out.append(["add_question", _error(lambda: b.add_question("Why?", "Because."))])
        b.save(first)
        out.append(["remove_scenario", b.remove_scenario("sycophancy_probe")])  # type: ignore[func-returns-value]
        out.append(["remove_scenario(again)", _error(lambda: b.remove_scenario("sycophancy_probe"))])
        out.append(["scenario_count", b.scenario_count])
        out.append(["remove_scenario(last)", b.remove_scenario("tool_free_followup")])  # type: ignore[func-returns-value]
        out.append(["is_scenario_benchmark", b.is_scenario_benchmark])
        b.save(second)
        b.add_question("Why?", "Because.")
        out.append(["add_scenario(with questions)", _error(lambda: b.add_scenario(followup))])
        return out


def _comparable(path: Path) -> dict[str, Any]:
    """A saved checkpoint without what the moment of creation decides (the feed's @id, which
    Karenina mints from the time, and its dates)."""
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for key in ("@id", "dateCreated", "dateModified"):
        doc.pop(key, None)
    return doc


def test_the_same_scenario_calls_give_the_same_answers_and_files(tmp_path: Path) -> None:
    theirs_files = (tmp_path / "theirs-1.jsonld", tmp_path / "theirs-2.jsonld")
    ours_files = (tmp_path / "ours-1.jsonld", tmp_path / "ours-2.jsonld")
    theirs = karenina(SCRIPT, *map(str, theirs_files))
    ours = json.loads(json.dumps(_ours(theirs["stand_ins"], *ours_files)))
    assert [s[0] for s in ours] == [s[0] for s in theirs["steps"]]
    for (name, got), (_, want) in zip(ours, theirs["steps"], strict=True):
        assert got == want, f"{name}: ours {got!r}, Karenina's {want!r}"
    for mine, karenina_s in zip(ours_files, theirs_files, strict=True):
        assert _comparable(mine) == _comparable(karenina_s), mine.name
    # The API key of a model override never reaches the file, as in Karenina.
    assert "secret" not in ours_files[0].read_text(encoding="utf-8")
