"""``templates generate``: answer templates written by a model from a question, its reference
answer and its answer notes, checked before they are stored.

A generated template is stored only when (1) it validates in the sandbox (one leaf
``BaseAnswer`` class, a ``verify``, a dict ground truth) and (2) it accepts the question's own
reference answer: the same model parses the reference answer into the template's schema and
``verify()`` must say True. A template that fails either is reported with the reason and not
stored; nothing else of the question changes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import ProviderError
from karenina_rdf.runner.providers import ChatRequest, Message, json_object

from ._pipeline import SandboxLike
from ._prompts import parsing_messages
from ._tasks import ModelSpec

if TYPE_CHECKING:
    from karenina_rdf._store import Store

GENERATION_PROMPT = """You write answer templates for an LLM benchmark.

An answer template is Python source defining one class `Answer(BaseAnswer)` (BaseAnswer, Field,
List, Dict, Optional and Literal are already defined; do not import them):
- one pydantic field per fact a correct answer must state, each `Field(description=...)` saying
  exactly what to extract from a response (a judge fills the fields from the response);
  never a field named `id`, `correct` or `regex`;
- `def ground_truth(self):` setting `self.correct = {field: expected value}` from the reference answer;
- `def verify(self) -> bool:` comparing the extracted fields with `self.correct`, tolerant of
  case, spacing and equivalent spellings, strict on the facts.

Reply with the Python source only, in one ```python block."""


class GeneratedTemplate(BaseModel):
    model_config = ConfigDict(frozen=True)

    question_id: str
    stored: bool
    code: str | None = None
    reason: str | None = None  # why it was not stored


def _code(text: str) -> str:
    fenced = re.findall(r"```(?:python|py)?\s*\n(.*?)```", text, flags=re.DOTALL)
    return (max(fenced, key=len) if fenced else text).strip() + "\n"


def generate_templates(
    store: Store,
    benchmark: str,
    model: ModelSpec,
    sandbox: SandboxLike,
    *,
    questions: list[str] | None = None,
    overwrite: bool = False,
    dry_run: bool = False,
) -> list[GeneratedTemplate]:
    """Templates for the questions without one (every question in ``questions`` with
    ``overwrite``); stored unless ``dry_run``."""
    from karenina_rdf.authoring import Benchmark

    bench = Benchmark(store, benchmark)
    ids = questions or bench.get_question_ids()
    out = []
    for qid in ids:
        q = bench.question_view(qid)
        if q.has_template and not overwrite:
            continue
        made = _one(model, sandbox, qid, q.question, q.raw_answer, q.answer_notes)
        if made.stored and not dry_run:
            bench.add_answer_template(qid, made.code or "")
        out.append(made if not dry_run else made.model_copy(update={"stored": False}))
    return out


def _one(
    model: ModelSpec, sandbox: SandboxLike, qid: str, question: str, raw_answer: str, notes: str | None
) -> GeneratedTemplate:
    user = f"## Question\n{question}\n\n## Reference answer\n{raw_answer}"
    if notes:
        user += f"\n\n## Answer notes\n{notes}"
    request = ChatRequest(
        model=model.model,
        messages=(Message(role="system", content=GENERATION_PROMPT), Message(role="user", content=user)),
        temperature=model.temperature,
        max_tokens=model.max_tokens,
        stage="template_generation",
        label=qid,
    )
    try:
        code = _code(model.provider.complete(request).text)
    except ProviderError as exc:
        return GeneratedTemplate(question_id=qid, stored=False, reason=f"the model call failed: {exc}")
    checked = sandbox.validate_template(code)
    if not checked.ok:
        return GeneratedTemplate(question_id=qid, stored=False, code=code, reason=f"invalid template: {checked.error}")
    value: dict[str, Any] = checked.value
    parsed: dict[str, Any] | None = None
    if not value.get("regex_only"):
        parse = ChatRequest(
            model=model.model,
            messages=parsing_messages(question, raw_answer, value["json_schema"]),
            temperature=0.0,
            max_tokens=model.max_tokens,
            json_schema=value["json_schema"],
            stage="template_generation",
            label=qid,
        )
        try:
            parsed = json_object(model.provider.complete(parse).text)
        except (ProviderError, ValueError) as exc:
            return GeneratedTemplate(
                question_id=qid, stored=False, code=code, reason=f"parsing the reference answer failed: {exc}"
            )
    verdict = sandbox.verify_template(code, parsed, raw_answer, qid)
    if not verdict.ok:
        return GeneratedTemplate(question_id=qid, stored=False, code=code, reason=f"verify() failed: {verdict.error}")
    if verdict.value.get("verify_result") is not True:
        why = verdict.value.get("field_verification_error") or "verify() returned False"
        return GeneratedTemplate(
            question_id=qid, stored=False, code=code, reason=f"the template rejects the reference answer ({why})"
        )
    return GeneratedTemplate(question_id=qid, stored=True, code=code)


def generate_one(
    model: ModelSpec, sandbox: SandboxLike, qid: str, question: str, raw_answer: str, notes: str | None
) -> GeneratedTemplate:
    """One question's template, checked as ``generate_templates`` checks it and not stored
    (``Benchmark.generate_template_for_question`` stores it)."""
    return _one(model, sandbox, qid, question, raw_answer, notes)
