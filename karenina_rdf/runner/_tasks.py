"""What a run is made of: the questions read from the store, the models, and the task list
(questions × answering models × judges × replicates, verification spec §2).

A question without a template cannot be graded by a template: in a template mode it runs
``rubric_only`` when it has rubric traits (the run's notes say so), and is left out otherwise.
Unfinished questions are left out, as Karenina runs only finished templates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from karenina_rdf._errors import VerificationError
from karenina_rdf.authoring import Question
from karenina_rdf.checkpoint import RubricTrait
from karenina_rdf.results import canonical_key
from karenina_rdf.runner.providers import Provider

if TYPE_CHECKING:
    from karenina_rdf._store import Store

Mode = Literal["template_only", "template_and_rubric", "rubric_only"]
MODES: tuple[Mode, ...] = ("template_only", "template_and_rubric", "rubric_only")


@dataclass(frozen=True)
class ModelSpec:
    """A model as a run uses it: who answers its calls, the name it is called by, and the
    identity results record (Karenina's ``ModelIdentity``)."""

    provider: Provider
    model: str
    interface: str
    temperature: float = 0.0
    max_tokens: int = 4096
    system_prompt: str | None = None
    config_id: str | None = None
    spec: str = ""  # how it was asked for (``anthropic:claude-…``): a resumed run rebuilds it from this

    @property
    def identity(self) -> dict[str, Any]:
        return {"interface": self.interface, "model_name": self.model, "tools": [], "config_id": self.config_id}


@dataclass(frozen=True)
class QuestionInput:
    """A question as the pipeline needs it, read once from the store."""

    question_id: str
    text: str
    raw_answer: str
    keywords: tuple[str, ...] | None
    template: str | None  # None: no template of its own (Karenina's default one counts as none)
    template_id: str
    traits: tuple[RubricTrait, ...]  # the question's own traits
    examples: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True)
class Task:
    question: QuestionInput
    answerer: ModelSpec | None  # None: the answer comes from recorded answers
    answerer_identity: dict[str, Any]
    judge: ModelSpec
    replicate: int | None  # None when the run has one replicate (Karenina's rule, §2.2)
    mode: Mode

    @property
    def answer_key(self) -> tuple[str, str, int | None]:
        """The answer is generated once per (question, answerer, replicate), whatever the judge."""
        return (self.question.question_id, canonical_key(self.answerer_identity), self.replicate)


@dataclass
class Plan:
    tasks: list[Task]
    notes: list[str] = field(default_factory=list)


def _examples(q: Question) -> tuple[dict[str, str], ...]:
    raw = q.few_shot_examples
    if not isinstance(raw, list):
        return ()
    return tuple(
        {"question": str(e["question"]), "answer": str(e["answer"])}
        for e in raw
        if isinstance(e, dict) and "question" in e and "answer" in e
    )


def read_questions(
    store: Store, benchmark: str, only: list[str] | None = None
) -> tuple[list[QuestionInput], list[str]]:
    """The benchmark's finished questions (all of ``only``, in that order, when given)."""
    from karenina_rdf.authoring import Benchmark

    bench = Benchmark(store, benchmark)
    notes: list[str] = []
    ids = bench.get_question_ids()
    if only:
        missing = [q for q in only if q not in set(ids)]
        if missing:
            raise VerificationError(f"benchmark {bench.id!r} has no question {missing[0]!r}")
        ids = only
    out = []
    unfinished = 0
    for qid in ids:
        q = bench.question_view(qid)
        if not q.finished:
            unfinished += 1
            continue
        out.append(
            QuestionInput(
                question_id=qid,
                text=q.question,
                raw_answer=q.raw_answer,
                keywords=tuple(q.keywords) if q.keywords is not None else None,
                template=q.answer_template if q.has_template else None,
                template_id=q.template_id,
                traits=tuple(q.question_rubric or ()),
                examples=_examples(q),
            )
        )
    if unfinished:
        notes.append(f"{unfinished} unfinished question(s) left out (Karenina runs finished ones only)")
    return out, notes


def plan(
    questions: list[QuestionInput],
    global_traits: list[RubricTrait] | None,
    answerers: list[ModelSpec] | list[dict[str, Any]],
    judges: list[ModelSpec],
    mode: Mode,
    replicates: int = 1,
) -> Plan:
    """The task list. ``answerers`` are models, or identities of recorded answers."""
    if replicates < 1:
        raise VerificationError("--replicates must be at least 1")
    if not judges:
        raise VerificationError("a run needs at least one judge (--judge)")
    if not answerers:
        raise VerificationError("a run needs an answering model (--answerer) or recorded answers (--answers)")
    notes: list[str] = []
    tasks: list[Task] = []
    traits = tuple(global_traits or ())
    no_template: list[str] = []
    skipped: list[str] = []
    reps: list[int | None] = [None] if replicates == 1 else list(range(1, replicates + 1))
    for q in questions:
        q_mode: Mode = mode
        if mode != "rubric_only" and q.template is None:
            if traits or q.traits:
                q_mode = "rubric_only"
                no_template.append(q.question_id)
            else:
                skipped.append(q.question_id)
                continue
        if q_mode == "rubric_only" and not (traits or q.traits):
            skipped.append(q.question_id)
            continue
        for a in answerers:
            spec = a if isinstance(a, ModelSpec) else None
            identity = a.identity if isinstance(a, ModelSpec) else a
            for j in judges:
                for r in reps:
                    tasks.append(Task(q, spec, identity, j, r, q_mode))
    if no_template:
        notes.append(
            f"{len(no_template)} question(s) without a template run rubric_only: "
            + ", ".join(no_template[:5])
            + (" …" if len(no_template) > 5 else "")
        )
    if skipped:
        why = "no template and no rubric traits" if mode != "rubric_only" else "no rubric traits"
        notes.append(f"{len(skipped)} question(s) left out ({why}): " + ", ".join(skipped[:5]))
    if not tasks:
        raise VerificationError("nothing to run: " + ("; ".join(notes) or "no finished questions"))
    return Plan(tasks=tasks, notes=notes)
