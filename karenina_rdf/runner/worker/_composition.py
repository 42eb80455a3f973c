"""Composition nodes of declarative templates: how per-field results combine into ``verify()``.

A template opts in with an inner class ``VerificationStrategy`` whose ``verify_strategy`` is a
tree of ``AllOf``, ``AnyOf``, ``AtLeastN`` and ``FieldCheck`` (Karenina's names). Nodes accept
Karenina's keyword form (``AllOf(conditions=[...])``, ``AtLeastN(n=2, conditions=[...])``) and
the shorter positional one (``AllOf([...])``, ``AtLeastN(2, [...])``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel


class FieldCheck(BaseModel):
    type: Literal["field_check"] = "field_check"
    field: str

    def __init__(self, field: str | None = None, /, **data: Any) -> None:
        if field is not None:
            data["field"] = field
        super().__init__(**data)


class _Group(BaseModel):
    conditions: list[FieldCheck | AllOf | AnyOf | AtLeastN] = []

    def __init__(self, conditions: list[Any] | None = None, /, **data: Any) -> None:
        if conditions is not None:
            data["conditions"] = conditions
        super().__init__(**data)


class AllOf(_Group):
    type: Literal["all_of"] = "all_of"


class AnyOf(_Group):
    type: Literal["any_of"] = "any_of"


class AtLeastN(_Group):
    type: Literal["at_least_n"] = "at_least_n"
    n: int

    def __init__(self, n: int | None = None, conditions: list[Any] | None = None, /, **data: Any) -> None:
        if n is not None:
            data["n"] = n
        super().__init__(conditions, **data)


StrategyNode = FieldCheck | AllOf | AnyOf | AtLeastN
for _node in (AllOf, AnyOf, AtLeastN):
    _node.model_rebuild()


def strategy_fields(node: StrategyNode) -> list[str]:
    if isinstance(node, FieldCheck):
        return [node.field]
    return [name for child in node.conditions for name in strategy_fields(child)]


def evaluate_strategy(node: StrategyNode, results: dict[str, bool | None]) -> bool:
    """Only a field result of exactly True satisfies a FieldCheck: a null extraction never passes."""
    if isinstance(node, FieldCheck):
        return results[node.field] is True
    passed = [evaluate_strategy(child, results) for child in node.conditions]
    if isinstance(node, AllOf):
        return all(passed)
    if isinstance(node, AnyOf):
        return any(passed)
    return sum(passed) >= node.n


def strategy_label(node: StrategyNode) -> str:
    if isinstance(node, AtLeastN):
        return f"at_least_n({node.n})"
    return node.type
