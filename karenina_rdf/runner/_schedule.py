"""Karenina's batch scheduling settings (``VerificationConfig``): the order tasks start in
(``task_ordering``), a cap on concurrent tasks per answering model
(``answerer_concurrency_limits``), a cap on concurrent model calls across the run
(``max_concurrent_requests``) and a wall-clock ceiling for the batch (``batch_timeout_seconds``).

Semantics are Karenina's (``batch_runner._resolve_task_ordering`` / ``_apply_task_ordering``,
``executor._resolve_endpoint_semaphore``, the global LLM limiter, the pool's timeout):

* ``auto`` is ``distribute_answerers`` with more than one answering identity, else
  ``prefix_cache``; ``prefix_cache`` sorts by (answerer id or name, question id, judge id or
  name, replicate); ``distribute_answerers`` groups by answering identity (first appearance
  first), sorts each group by (question id, judge, replicate) and deals them round robin;
  ``random`` shuffles; ``generation_order`` keeps questions × answerers × judges × replicates.
* an int cap applies to every answering model; a dict caps the ids it names (Karenina's
  ``ModelConfig.id``, the runner's ``config_id``; a model without one is named by its model
  name); a task of an uncapped answerer runs unthrottled. The cap holds a task from its start
  to its end, as Karenina's permit does.
* ``max_concurrent_requests`` bounds the calls in flight to every model of the run (answering,
  judging, embeddings) at once.
* when the batch runs past ``batch_timeout_seconds``, no further task starts, the tasks in
  flight finish and are stored, and the run ends interrupted with Karenina's message (it can be
  resumed).
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from karenina_rdf.results import canonical_key

from ._tasks import ModelSpec, Task

TaskOrdering = Literal["auto", "prefix_cache", "distribute_answerers", "random", "generation_order"]


class Scheduling(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task_ordering: TaskOrdering = "auto"
    answerer_concurrency_limits: int | dict[str, int] | None = None
    max_concurrent_requests: int | None = Field(default=None, ge=1)
    batch_timeout_seconds: float | None = Field(default=None, gt=0)


def _model_key(spec: ModelSpec | None, identity: dict[str, Any]) -> str:
    """Karenina's ``model_sort_key``: the model's id, else its name."""
    if spec is not None:
        return spec.config_id or spec.model or ""
    return str(identity.get("config_id") or identity.get("model_name") or "")


def resolve_ordering(ordering: TaskOrdering, tasks: list[Task]) -> str:
    if ordering != "auto":
        return ordering
    answerers = {canonical_key(t.answerer_identity) for t in tasks}
    return "distribute_answerers" if len(answerers) > 1 else "prefix_cache"


def order_tasks(tasks: list[Task], ordering: TaskOrdering, rng: random.Random | None = None) -> list[Task]:
    """``tasks`` (in generation order) in the order Karenina's strategy starts them."""
    strategy = resolve_ordering(ordering, tasks)
    if strategy == "prefix_cache":
        return sorted(
            tasks,
            key=lambda t: (
                _model_key(t.answerer, t.answerer_identity),
                t.question.question_id,
                _model_key(t.judge, t.judge.identity),
                t.replicate or 0,
            ),
        )
    if strategy == "distribute_answerers":
        groups: dict[str, list[Task]] = {}
        for t in tasks:
            groups.setdefault(canonical_key(t.answerer_identity), []).append(t)
        ordered = [
            sorted(g, key=lambda t: (t.question.question_id, _model_key(t.judge, t.judge.identity), t.replicate or 0))
            for g in groups.values()
        ]
        out: list[Task] = []
        for i in range(max((len(g) for g in ordered), default=0)):
            out.extend(g[i] for g in ordered if i < len(g))
        return out
    if strategy == "random":
        shuffled = list(tasks)
        (rng or random.Random()).shuffle(shuffled)
        return shuffled
    return list(tasks)


def answerer_limits(value: int | dict[str, int] | None, answerers: list[ModelSpec]) -> dict[str, int] | None:
    """Karenina's ``_normalize_answerer_limits``: an int for every answerer with an id."""
    if value is None:
        return None
    if isinstance(value, int):
        return {_answerer_id(m, {}): value for m in answerers}
    return dict(value)


def _answerer_id(spec: ModelSpec | None, identity: dict[str, Any]) -> str:
    """The name a cap is keyed by: the model's id (Karenina's ``ModelConfig.id``), else its model
    name (Karenina leaves a model without an id uncapped; the command line's models have none)."""
    if spec is not None:
        return spec.config_id or spec.model
    return str(identity.get("config_id") or identity.get("model_name") or "")


class AnswererGate:
    """Per-answerer permits, held by a task from its start to its end."""

    def __init__(self, limits: dict[str, int] | None) -> None:
        self._sems = {k: threading.Semaphore(v) for k, v in (limits or {}).items()}

    @contextlib.contextmanager
    def __call__(self, task: Task) -> Iterator[None]:
        sem = self._sems.get(_answerer_id(task.answerer, task.answerer_identity))
        if sem is None:
            yield
            return
        with sem:
            yield


class LimitedProvider:
    """A provider whose calls wait for one of the run's shared permits (max_concurrent_requests)."""

    def __init__(self, inner: Any, permits: threading.Semaphore) -> None:
        self.inner = inner
        self.permits = permits
        self.interface = inner.interface

    def __repr__(self) -> str:
        return f"LimitedProvider({self.inner!r})"

    @property
    def serves_embeddings(self) -> bool:
        return bool(getattr(self.inner, "serves_embeddings", False))

    def complete(self, request: Any) -> Any:
        with self.permits:
            return self.inner.complete(request)

    def embed(self, request: Any) -> Any:
        with self.permits:
            return self.inner.embed(request)


def limited(specs: list[ModelSpec] | None, permits: threading.Semaphore | None) -> list[ModelSpec] | None:
    """The models with their providers behind the shared permits (one wrapper per provider)."""
    if specs is None or permits is None:
        return specs
    wrapped: dict[int, LimitedProvider] = {}
    out = []
    for m in specs:
        provider = wrapped.setdefault(id(m.provider), LimitedProvider(m.provider, permits))
        out.append(replace(m, provider=provider))
    return out


def timeout_message(seconds: float, completed: int, total: int) -> str:
    """Karenina's VerificationBatchError message for a batch past its timeout."""
    return f"Parallel batch timed out after {seconds:.0f} seconds ({completed} of {total} tasks completed)"


Gate = Callable[[Task], contextlib.AbstractContextManager[None]]
