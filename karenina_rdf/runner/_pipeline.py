"""One task through Karenina's stages (verification spec §3): ValidateTemplate, GenerateAnswer,
AbstentionCheck, SufficiencyCheck, ParseTemplate, VerifyTemplate, RubricEvaluation (with the
dynamic rubric's presence check first), FinalizeResult.

Each stage runs only while no error is recorded; FinalizeResult always runs, so every task
returns exactly one result, failures included (classified by ``_record.classify``). Template
code and callable traits run in the sandbox, never here. The answer of a (question, answerer,
replicate) is generated once and shared by every judge (§2.4); a failed generation is not
shared: the next task asking for it tries again.

The two checks run only when switched on (Karenina's ``abstention_enabled``,
``sufficiency_enabled``); a positive check sets ``verify_result`` False and skips parsing and
verification, never the rubric. A check that fails (call or reply) is recorded as not performed
and does not fail the task, as in Karenina.

The embedding check (``_embedding``) runs after VerifyTemplate when switched on and the field
verification failed, before deep judgment's auto-fail, as Karenina orders them.

Not run (docs/verification.md lists them): agentic parsing
and agentic traits, MCP tools.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from karenina_rdf._errors import ProviderError
from karenina_rdf.runner.providers import (
    ChatRequest,
    ChatResponse,
    Message,
    StructuredOutputError,
    complete_structured,
    json_object,
)

from ._checks import (
    ABSTENTION_SCHEMA,
    SUFFICIENCY_SCHEMA,
    Verdict,
    abstention_messages,
    sufficiency_messages,
    verdict_of,
)
from ._config import DeepJudgmentConfig, FewShotConfig, PromptConfig
from ._deep_judgment import AUTOFAIL_STAGE, DeepJudgmentError, Outcome, reasoning_text, run_steps
from ._embedding import EmbeddingCheckConfig, embedding_check
from ._prompts import answering_messages, parsing_messages
from ._record import RETRY_CATEGORIES, StageError, TaskState, finalize, fresh_result
from ._tasks import ModelSpec, Task


class SandboxLike(Protocol):
    def validate_template(self, code: str) -> Any: ...
    def verify_template(
        self, code: str, parsed: dict[str, Any] | None, raw_response: str, question_id: str | None = None
    ) -> Any: ...
    def run_callable(self, payload_b64: str, text: str) -> Any: ...


@dataclass(frozen=True)
class Answer:
    text: str | None
    response: ChatResponse | None = None
    error: StageError | None = None
    system_prompt: str | None = None


class Answers:
    """Answers by (question, answerer, replicate): generated once and shared by the judges, or
    given up front (recorded answers, stored answers of a run being rescored)."""

    def __init__(self, given: dict[tuple[str, str, int | None], str] | None = None) -> None:
        self._lock = threading.Lock()
        self._futures: dict[tuple[str, str, int | None], Future[Answer]] = {}
        for key, text in (given or {}).items():
            done: Future[Answer] = Future()
            done.set_result(Answer(text))
            self._futures[key] = done

    def get(self, task: Task, produce: Any) -> tuple[Answer, bool]:
        """The task's answer and whether this call produced it (its usage is counted there)."""
        key = task.answer_key
        with self._lock:
            future = self._futures.get(key)
            mine = future is None
            if future is None:
                future = self._futures[key] = Future()
        if not mine:
            return future.result(), False
        try:
            answer: Answer = produce()
        except BaseException as exc:
            with self._lock:
                self._futures.pop(key, None)
            future.set_exception(exc)
            raise
        if answer.error is not None:
            with self._lock:  # not shared: the next task asking tries again
                self._futures.pop(key, None)
        future.set_result(answer)
        return answer, True


def _stage_error(stage: str, exc: ProviderError) -> StageError:
    return StageError(exc.category, stage, f"{exc}", exhausted=exc.exhausted, retries=dict(exc.retries))


class Pipeline:
    """Runs tasks; thread-safe (one instance serves every worker thread of a run)."""

    def __init__(
        self,
        *,
        sandbox: SandboxLike,
        global_traits: tuple[Any, ...] = (),
        trust_callables: bool = False,
        rubric_strategy: Literal["batch", "sequential"] = "batch",
        budgets: dict[str, int] | None = None,
        run_name: str | None = None,
        few_shot: bool | FewShotConfig | None = False,
        answers: Answers | None = None,
        cost: Any = None,
        abstention: bool = False,
        sufficiency: bool = False,
        prompt_config: PromptConfig | None = None,
        global_dynamic: tuple[Any, ...] = (),
        deep_judgment: DeepJudgmentConfig | None = None,
        deep_judgment_rubric: Any = None,  # rubric.RubricDeepJudgmentConfig; None: its defaults
        embedding_check: EmbeddingCheckConfig | None = None,
        embedder: Any = None,
    ) -> None:
        self.sandbox = sandbox
        self.global_traits = list(global_traits)
        self.trust_callables = trust_callables
        self.rubric_strategy = rubric_strategy
        self.budgets = budgets or {}
        self.run_name = run_name
        # few_shot=True is Karenina's default FewShotConfig (every example of the question).
        self.few_shot: FewShotConfig | None = (
            FewShotConfig() if few_shot is True else few_shot if isinstance(few_shot, FewShotConfig) else None
        )
        self.abstention = abstention
        self.sufficiency = sufficiency
        self.prompts = prompt_config or PromptConfig()
        self.global_dynamic = list(global_dynamic)
        self.deep_judgment = deep_judgment or DeepJudgmentConfig()
        from karenina_rdf.runner.rubric import RubricDeepJudgmentConfig

        # Always set: in Karenina's default mode ("disabled") traits that switch deep judgment on
        # in their own settings still get it.
        self.deep_judgment_rubric = deep_judgment_rubric or RubricDeepJudgmentConfig()

        self.embedding = embedding_check or EmbeddingCheckConfig()
        self.embedder = embedder  # an EmbeddingProvider; required when the embedding check is on
        self.answers = answers or Answers()
        self.cost = cost or (lambda model, usage: None)
        self._templates: dict[str, Any] = {}
        self._templates_lock = threading.Lock()
        # Seconds spent per stage, summed over tasks and threads (the speed benchmark's breakdown).
        self.timings: dict[str, float] = {}
        self._timings_lock = threading.Lock()

    def _took(self, stage: str, since: float) -> None:
        elapsed = time.perf_counter() - since
        with self._timings_lock:
            self.timings[stage] = self.timings.get(stage, 0.0) + elapsed

    # -- stages --------------------------------------------------------------------------
    def _validate(self, code: str) -> Any:
        with self._templates_lock:
            hit = self._templates.get(code)
        if hit is None:
            hit = self.sandbox.validate_template(code)
            with self._templates_lock:
                self._templates[code] = hit
        return hit

    def _call(
        self,
        state: TaskState,
        spec: ModelSpec,
        stage: str,
        messages: tuple[Message, ...],
        temperature: float | None = None,
        **kw: Any,
    ) -> ChatResponse:
        response = spec.provider.complete(_request(spec, stage, messages, temperature, kw))
        state.add_call(stage, response, self._price(spec.model, response))
        return response

    def _structured_call(
        self,
        state: TaskState,
        spec: ModelSpec,
        stage: str,
        messages: tuple[Message, ...],
        read: Any,
        temperature: float | None = None,
        parser: str | None = None,
        **kw: Any,
    ) -> Any:
        """``_call`` through Karenina's structured-output retries (``complete_structured``):
        ``read(reply)`` of the first usable reply. Only that call's usage is recorded, as in
        Karenina; raises StructuredOutputError (a ValueError) when every attempt was unusable.
        ``parser``: the schema name when Karenina makes this call through its template parser
        (its plain fallback call after the attempts)."""
        request = _request(spec, stage, messages, temperature, kw)
        try:
            value, response = complete_structured(spec.provider, request, read, parser=parser)
        except StructuredOutputError as exc:
            # The retries its failed attempts spent still count (claude_tool; stages catch the
            # error as an unusable reply and record nothing else of it).
            state.add_retries(exc.retries)
            raise
        state.add_call(stage, response, self._price(spec.model, response))
        return value

    def _price(self, model: str, response: ChatResponse) -> float | None:
        # A cached or replayed answer cost nothing this time.
        return 0.0 if response.cached else self.cost(model, response.usage)

    def _generate(self, task: Task) -> Answer:
        spec = task.answerer
        if spec is None:
            return Answer(
                None, error=StageError("unexpected_error", "generate_answer", "no recorded answer for this task")
            )
        messages = answering_messages(
            task.question.text, spec.system_prompt, self._examples(task), self.prompts.for_task("generation")
        )
        try:
            request = ChatRequest(
                model=spec.model,
                messages=messages,
                temperature=spec.temperature,
                max_tokens=spec.max_tokens,
                stage="answer_generation",
                label=task.question.question_id,
                replicate=task.replicate,
            )
            response = spec.provider.complete(request)
        except ProviderError as exc:
            return Answer(None, error=_stage_error("generate_answer", exc), system_prompt=messages[0].content)
        return Answer(response.text, response=response, system_prompt=messages[0].content)

    def _examples(self, task: Task) -> list[dict[str, str]] | None:
        if self.few_shot is None or not self.few_shot.enabled:
            return None
        q = task.question
        return self.few_shot.examples_for(q.question_id, list(q.examples), q.text)

    def run(self, task: Task) -> tuple[dict[str, Any], dict[str, float | None]]:
        """The task's result record (Karenina's VerificationResult as JSON) and its cost in USD
        per usage stage (None where a model's price is unknown)."""
        try:
            return self._run(task)
        except Exception as exc:  # a bug of ours must still give the task its result
            result = self._skeleton(task)
            state = TaskState(error=StageError("unexpected_error", "finalize_result", f"{type(exc).__name__}: {exc}"))
            finalize(result, state, time.time(), time.time(), self.budgets)
            return result, {}

    def _skeleton(self, task: Task) -> dict[str, Any]:
        q = task.question
        result = fresh_result()
        result["metadata"].update(
            question_id=q.question_id,
            template_id=q.template_id,
            question_text=q.text,
            raw_answer=q.raw_answer,
            keywords=list(q.keywords) if q.keywords is not None else None,
            answering=dict(task.answerer_identity),
            parsing=task.judge.identity,
            run_name=self.run_name,
            replicate=task.replicate,
            evaluation_mode=task.mode,
        )
        return result

    def _run(self, task: Task) -> tuple[dict[str, Any], dict[str, float | None]]:
        started = time.time()
        q = task.question
        result = self._skeleton(task)
        meta, tpl = result["metadata"], result["template"]
        state = TaskState()
        if self.few_shot is not None and self.few_shot.enabled and task.answerer is not None:
            meta["few_shot_enabled"] = True
            meta["few_shot_example_count"] = len(self._examples(task) or ())
        templated = task.mode != "rubric_only"
        schema: dict[str, Any] | None = None
        regex_only = False
        # ValidateTemplate
        if templated:
            state.last_stage = "validate_template"
            t0 = time.perf_counter()
            outcome = self._validate(q.template or "")
            self._took("validate_template", t0)
            if not outcome.ok:
                state.template_error = f"template validation failed: {outcome.error}"
                state.error = StageError("template_validation", "validate_template", state.template_error)
            else:
                schema = outcome.value["json_schema"]
                regex_only = bool(outcome.value.get("regex_only"))
        # GenerateAnswer
        response_text: str | None = None
        if state.error is None:
            state.last_stage = "generate_answer"
            t0 = time.perf_counter()
            answer, mine = self.answers.get(task, lambda: self._generate(task))
            self._took("generate_answer", t0)
            if answer.response is not None:
                model = task.answerer.model if task.answerer is not None else answer.response.model
                cost = self._price(model, answer.response) if mine else 0.0  # shared: paid by the first task
                state.add_call("answer_generation", answer.response, cost, retries=mine)
            meta["answering_system_prompt"] = answer.system_prompt
            if answer.error is not None:
                state.error = answer.error
                if mine:  # a shared answer's retries are counted once, by the task that made the calls
                    state.add_retries(answer.error.retries)
            else:
                response_text = answer.text or ""
                tpl["raw_llm_response"] = response_text
        # AbstentionCheck (every mode), then SufficiencyCheck (template modes, no abstention)
        if self.abstention and state.error is None and response_text is not None:
            t0 = time.perf_counter()
            self._check(
                task,
                state,
                tpl,
                "abstention",
                abstention_messages(q.text, response_text, self.prompts.for_task("abstention_detection")),
            )
            self._took("abstention_check", t0)
        if (
            self.sufficiency
            and templated
            and state.error is None
            and response_text is not None
            and not tpl["abstention_detected"]
        ):
            t0 = time.perf_counter()
            self._check(
                task,
                state,
                tpl,
                "sufficiency",
                sufficiency_messages(
                    q.text, response_text, schema or {}, self.prompts.for_task("sufficiency_detection")
                ),
            )
            self._took("sufficiency_check", t0)
        # ParseTemplate + VerifyTemplate: not after an abstention or an insufficient response
        if (
            templated
            and state.error is None
            and response_text is not None
            and not tpl["abstention_detected"]
            and tpl["sufficiency_detected"] is not False
        ):
            self._parse_and_verify(task, state, result, response_text, schema or {}, regex_only)
        # RubricEvaluation (independent of the template's verdict, §3.3)
        if task.mode != "template_only" and state.error is None and response_text is not None:
            t0 = time.perf_counter()
            self._rubric(task, state, result, response_text)
            self._took("rubric_evaluation", t0)
        t0 = time.perf_counter()
        finalize(result, state, started, time.time(), self.budgets)
        self._took("finalize_result", t0)
        return result, state.costs

    def _check(
        self, task: Task, state: TaskState, tpl: dict[str, Any], check: str, messages: tuple[Message, ...]
    ) -> None:
        """AbstentionCheck or SufficiencyCheck: ask the judge (at temperature 0, as Karenina), record
        the four ``<check>_*`` fields, and on a positive check set ``verify_result`` False."""
        field, default, schema = (
            ("abstention_detected", False, ABSTENTION_SCHEMA)
            if check == "abstention"
            else ("sufficient", True, SUFFICIENCY_SCHEMA)
        )
        state.last_stage = f"{check}_check"
        # Karenina's check goes through structured output with its retries; a call that fails
        # or no usable reply in any attempt: logged there, the check not performed.
        verdict = Verdict(default, False, None)
        try:
            verdict = self._structured_call(
                state,
                task.judge,
                f"{check}_check",
                messages,
                verdict_of(field),
                temperature=0.0,
                json_schema=schema,
                label=task.question.question_id,
            )
        except ProviderError as exc:
            state.add_retries(exc.retries)
        except ValueError:
            pass
        override = verdict.performed and (verdict.detected if check == "abstention" else not verdict.detected)
        if override:
            tpl["verify_result"] = False
        tpl[f"{check}_check_performed"] = verdict.performed
        tpl[f"{check}_detected"] = verdict.detected
        tpl[f"{check}_override_applied"] = override
        tpl[f"{check}_reasoning"] = verdict.reasoning

    def _parse_and_verify(
        self,
        task: Task,
        state: TaskState,
        result: dict[str, Any],
        response: str,
        schema: dict[str, Any],
        regex_only: bool,
    ) -> None:
        q = task.question
        tpl = result["template"]
        parsed: dict[str, Any] | None = None
        steps: Outcome | None = None
        dj = self.deep_judgment
        outcome: Any = None
        if not regex_only:
            state.last_stage = "parse_template"
            t0 = time.perf_counter()
            verifying = 0.0

            def fits(text: str) -> tuple[dict[str, Any], Any]:
                """The reply's object and its verification. A reply that does not fit the
                template is unusable (ValueError), as Karenina's parser validates each reply
                against the answer class before taking it; its verification is then the one
                VerifyTemplate records, so a good first reply costs one sandbox call, as before."""
                nonlocal verifying
                candidate = json_object(text)
                t1 = time.perf_counter()
                checked = self.sandbox.verify_template(q.template or "", candidate, response, q.question_id)
                verifying += time.perf_counter() - t1
                if not checked.ok and (checked.error or "").startswith(UNFIT):
                    raise ValueError((checked.error or "")[len("parse:") :].strip())
                return candidate, checked

            # The schema's name in Karenina's parser error text (its fallback's triggers read it):
            # the relaxed extraction class for parsing, the raw answer class for deep judgment.
            name = str(schema.get("title") or "Answer")
            try:
                text_to_parse = response
                if dj.mode != "disabled":
                    steps = run_steps(
                        lambda stage, messages: self._call(state, task.judge, stage, messages, label=q.question_id),
                        mode=dj.mode,
                        question=q.text,
                        response=response,
                        schema=schema,
                        max_excerpts=dj.max_excerpts_per_attribute,
                        threshold=dj.fuzzy_match_threshold,
                        retry_attempts=dj.excerpt_retry_attempts,
                        instructions=self.prompts.for_task("deep_judgment"),
                    )
                    text_to_parse = reasoning_text(q.text, steps.reasoning)
                parsed, outcome = self._structured_call(
                    state,
                    task.judge,
                    "parsing",
                    parsing_messages(q.text, text_to_parse, schema, self.prompts.for_task("parsing")),
                    fits,
                    json_schema=schema,
                    label=q.question_id,
                    parser=name if steps is not None else f"{name}__Relaxed",
                )
            except DeepJudgmentError as exc:
                state.error = StageError("parsing", "parse_template", f"Deep judgment parsing failed: {exc}")
                return
            except ProviderError as exc:
                state.error = _stage_error("parse_template", exc)
                state.add_retries(exc.retries)
                if state.error.category not in RETRY_CATEGORIES:
                    state.error.category = "parsing"
                return
            except ValueError as exc:
                state.error = StageError("parsing", "parse_template", str(exc))
                return
            finally:
                self._took("parse_template", t0 + verifying)
                self._took("verify_template", time.perf_counter() - verifying)
        state.last_stage = "verify_template"
        if outcome is None:  # a regex-only template: nothing parsed
            t0 = time.perf_counter()
            outcome = self.sandbox.verify_template(q.template or "", parsed, response, q.question_id)
            self._took("verify_template", t0)
        if not outcome.ok:
            error = outcome.error or "the template failed"
            if error.startswith("parse:"):
                state.error = StageError("parsing", "parse_template", error[len("parse:") :].strip())
            else:
                state.error = StageError("unexpected_error", "verify_template", f"sandbox ({outcome.kind}): {error}")
            return
        value = dict(outcome.value)
        field_ok = value.pop("field_verification_result", None)
        tpl.update(value)
        # EmbeddingCheck: after VerifyTemplate, only when the field verification failed.
        if self.embedding.enabled and field_ok is False:
            t0 = time.perf_counter()
            self._embedding_check(task, state, tpl)
            self._took("embedding_check", t0)
        if steps is not None:
            steps.calls += 1  # the parse call
            steps.stages.append("parameters")
            result["deep_judgment"] = {
                "deep_judgment_mode": dj.mode,
                "deep_judgment_performed": True,
                "extracted_excerpts": steps.excerpts,
                "attribute_reasoning": steps.reasoning,
                "deep_judgment_stages_completed": steps.stages,
                "deep_judgment_model_calls": steps.calls,
                "deep_judgment_excerpt_retry_count": steps.retries,
                "attributes_without_excerpts": steps.without,
                "deep_judgment_search_enabled": False,
                "hallucination_risk_assessment": None,
            }
            # DeepJudgmentAutoFail (full mode): a verdict resting on an attribute without evidence fails.
            if dj.mode == "full" and steps.without and not tpl["abstention_detected"]:
                tpl["verify_result"] = False
                state.autofail = state.autofail or AUTOFAIL_STAGE

    def _embedding_check(self, task: Task, state: TaskState, tpl: dict[str, Any]) -> None:
        """Karenina's EmbeddingCheck: the four ``embedding_*`` fields, and on an override the field
        verdict true and ``verify_result`` the regex checks' verdict."""
        state.last_stage = "embedding_check"
        judge, q = task.judge, task.question

        def ask(messages: tuple[Message, ...]) -> ChatResponse:
            try:
                return self._call(state, judge, "embedding_check", messages, label=q.question_id)
            except ProviderError as exc:
                state.add_retries(exc.retries)
                raise

        outcome = embedding_check(
            self.embedding,
            tpl.get("parsed_gt_response"),
            tpl.get("parsed_llm_response"),
            q.text,
            embed=self.embedder.embed,
            ask=ask,
            label=q.question_id,
        )
        tpl["embedding_check_performed"] = outcome.performed
        tpl["embedding_similarity_score"] = outcome.score
        tpl["embedding_model_used"] = outcome.model
        tpl["embedding_override_applied"] = outcome.override
        if outcome.override:
            tpl["verify_result"] = bool(tpl.get("regex_overall_success", True))

    def _rubric(self, task: Task, state: TaskState, result: dict[str, Any], response: str) -> None:
        from karenina_rdf.runner.rubric import (
            ABSENT,
            AGENTIC_SKIPPED,
            PRESENCE_SCHEMA,
            RUBRIC_AUTOFAIL_STAGE,
            check_conflicts,
            evaluate_rubric,
            merge_dynamic,
            merge_rubrics,
            presence_messages,
            read_presence,
        )

        state.last_stage = "rubric_evaluation"
        own = list(task.question.traits)
        try:
            traits, provenance = merge_rubrics(self.global_traits or None, [t for t in own if not t.dynamic] or None)
        except ValueError as exc:
            state.warn(f"Rubric evaluation failed: {exc}")
            return
        instructions = self.prompts.for_task("rubric_evaluation")
        promoted: list[str] = []
        skipped: dict[str, str] = {}
        dynamic_all = self.global_dynamic + [t for t in own if t.dynamic]
        dynamic = [t for t in dynamic_all if t.trait_type != "agentic"]
        for t in dynamic_all:
            if t.trait_type == "agentic":
                state.warn(f"not evaluated: {t.name}: {AGENTIC_SKIPPED}")
        if dynamic:
            # Karenina raises these in the stage, outside its rubric try: the task's error.
            try:
                merge_dynamic(self.global_dynamic, [t for t in own if t.dynamic])
                check_conflicts(traits, dynamic)
            except ValueError as exc:
                state.error = StageError("unexpected_error", "rubric_evaluation", str(exc))
                return
            try:
                present = self._structured_call(
                    state,
                    task.judge,
                    "dynamic_rubric_presence_check",
                    presence_messages(dynamic, response, self.prompts.for_task("rubric_dynamic_presence_check")),
                    read_presence,
                    json_schema=PRESENCE_SCHEMA,
                    label=task.question.question_id,
                    temperature=0.0,  # Karenina's presence check runs at temperature 0
                )
            except ProviderError as exc:
                state.error = _stage_error("rubric_evaluation", exc)
                state.add_retries(exc.retries)
                return
            except ValueError as exc:
                state.error = StageError(
                    "unexpected_error", "rubric_evaluation", f"dynamic rubric presence check: {exc}"
                )
                return
            for t in dynamic:
                if present.get(t.name, False):
                    promoted.append(t.name)
                else:
                    skipped[t.name] = ABSENT
            kinds = ("llm", "regex", "callable", "metric", "agentic")
            chosen = [t for t in dynamic if t.name in promoted]
            traits = [t for k in kinds for part in (traits, chosen) for t in part if t.trait_type == k]
            provenance = {**provenance, **{n: "dynamic" for n in promoted}}
        if not traits or all(t.trait_type == "agentic" for t in traits):
            # Karenina: nothing evaluable after the presence check, no rubric part; agentic traits
            # alone do not run its rubric stage either (its should_run).
            for t in traits:
                state.warn(f"not evaluated: {t.name}: {AGENTIC_SKIPPED}")
            return
        outcome = evaluate_rubric(
            traits,
            provenance,
            question_text=task.question.text,
            response=response,
            raw_answer=task.question.raw_answer,
            judge=task.judge.provider,
            judge_model=task.judge.model,
            sandbox=self.sandbox,
            trust_callables=self.trust_callables,
            strategy=self.rubric_strategy,
            temperature=task.judge.temperature,
            instructions=instructions,
            deep_judgment=self.deep_judgment_rubric,
            question_id=task.question.question_id,
            deep_judgment_fallback=(
                self.deep_judgment.max_excerpts_per_attribute,
                self.deep_judgment.fuzzy_match_threshold,
                self.deep_judgment.excerpt_retry_attempts,
            ),
            deep_judgment_instructions=self.prompts.for_task("dj_rubric"),
        )
        for call in outcome.calls:
            state.add_call("rubric_evaluation", call, self._price(task.judge.model, call))
        for warning in outcome.warnings:
            state.warn(warning)
        for note in outcome.skipped:
            state.warn(f"not evaluated: {note}")
        part = outcome.part
        if part is None:
            return  # a batch call failed: Karenina's stage stores no rubric result (warned above)
        if dynamic:
            part["dynamic_rubric_skipped_traits"] = skipped or None
            part["dynamic_rubric_promoted_traits"] = promoted or None
        result["rubric"] = part
        if outcome.deep_judgment is not None:
            result["deep_judgment_rubric"] = outcome.deep_judgment
            # DeepJudgmentRubricAutoFail: a trait left without valid excerpts fails the verdict,
            # unless the answer abstained (abstention takes priority). As in Karenina, whose stage
            # list holds this guard only when *template* deep judgment is on.
            if (
                outcome.traits_without_excerpts
                and self.deep_judgment.mode != "disabled"
                and not result["template"]["abstention_detected"]
            ):
                result["template"]["verify_result"] = False
                state.autofail = state.autofail or RUBRIC_AUTOFAIL_STAGE


# The sandbox's errors for a judge's object that does not fit the answer class (a validation
# error, or no object): Karenina's parser rejects such a reply and asks again. Other "parse:"
# errors (the template's own code raising while the answer is built) are not the reply's fault.
UNFIT = ("parse: the judge's answer does not fit", "parse: the judge's answer is a")


def _request(
    spec: ModelSpec, stage: str, messages: tuple[Message, ...], temperature: float | None, kw: dict[str, Any]
) -> ChatRequest:
    """The request of one judge or answerer call: the model's settings, a stage's own temperature."""
    return ChatRequest(
        model=spec.model,
        messages=messages,
        temperature=spec.temperature if temperature is None else temperature,
        max_tokens=spec.max_tokens,
        stage=stage,
        **kw,
    )
