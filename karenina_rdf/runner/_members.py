"""The members of Karenina's ``Benchmark`` that call models: template generation
(``generate_template_for_question``, ``generate_templates``, ``generate_all_templates``) and
verification runs (``run_verification``, ``resume_verification``), on top of the authoring
room's handle. The public ``karenina_rdf.Benchmark`` is this class.

Generation is this room's generator: a template is stored only when it validates in the sandbox
and accepts the question's reference answer. A verification run is this room's run, its results
written to the store as they complete and returned as Karenina's ``VerificationResultSet``
holds them. Karenina's configuration objects (``VerificationConfig``, ``ModelConfig``) are read
by duck typing: karenina is never imported. A setting the runner cannot honour is refused with
an error naming it, never ignored.
"""

from __future__ import annotations

import io
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from karenina_rdf._errors import (
    InvalidTypeError,
    InvalidValueError,
    QuestionNotFoundError,
    VerificationError,
    validation_message,
)
from karenina_rdf.authoring import Benchmark as AuthoringBenchmark
from karenina_rdf.results import canonical_key, export_run, resolve_run, run_summary

from ._config import DeepJudgmentConfig, FewShotConfig, PromptConfig
from ._embedding import EmbeddingCheckConfig
from ._generate import GeneratedTemplate, generate_one
from ._models import INTERFACES, Transport
from ._pipeline import SandboxLike
from ._run import RunOptions, RunReport, embedder_of, rescore, run_verification, stored_config
from ._schedule import Scheduling
from ._tasks import ModelSpec
from .providers import CachedProvider, ResponseCache, RetryingProvider, cost_usd, provider_from_spec
from .rubric import RubricDeepJudgmentConfig

# Karenina's defaults for template generation (Benchmark.generate_template_for_question).
_GEN_MODEL = "claude-haiku-4-5"
_GEN_PROVIDER = "anthropic"


@dataclass
class TemplateProgressEvent:
    """Karenina's progress event of template generation, the same fields."""

    event: Literal["job_started", "task_started", "task_completed", "task_failed", "job_completed", "job_cancelled"]
    question_id: str | None
    processed_count: int
    total_count: int
    successful_count: int
    failed_count: int
    percentage: float
    error: str | None
    template_code: str | None
    task_duration: float | None
    in_progress_questions: list[str] = field(default_factory=list)


class VerificationResultSet(BaseModel):
    """What ``run_verification`` returns, shaped as Karenina's ``VerificationResultSet``:
    ``results`` are Karenina's ``VerificationResult`` records (as the JSON Karenina's export
    writes them, read back from the graph), ``metadata`` says which stored run holds them."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    results: list[dict[str, Any]]
    scenario_results: list[Any] | None = None
    errors: list[Any] | None = None
    metadata: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        return iter(self.results)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.results[index]


class Benchmark(AuthoringBenchmark):
    """Karenina's ``Benchmark``: the authoring API (a live handle on one stored benchmark) and
    the members that call models."""

    # -- generation ----------------------------------------------------------------------
    def generate_template_for_question(
        self,
        question_id: str,
        model: str = _GEN_MODEL,
        model_provider: str = _GEN_PROVIDER,
        temperature: float = 0,
        interface: str = "langchain",
        force_regenerate: bool = False,
        endpoint_base_url: str | None = None,
        endpoint_api_key: str | None = None,
        *,
        sandbox: SandboxLike | None = None,
        model_spec: ModelSpec | None = None,
    ) -> dict[str, Any]:
        """Generate and store a template for one question (Karenina's result dict: ``success``,
        ``template_code``, ``error``, ``raw_response``, ``skipped``). ``model_spec`` (a runner
        model, e.g. a fake) and ``sandbox`` replace the model and sandbox built here."""
        if question_id not in self._template_id_set():
            raise QuestionNotFoundError(f"Question not found: {question_id}")
        if not force_regenerate and self.has_template(question_id):
            return _skipped(self.get_template(question_id))
        spec = model_spec or generation_model(
            self, model, model_provider, temperature, interface, endpoint_base_url, endpoint_api_key
        )
        with _sandbox(sandbox) as sb:
            return self._generate_one(question_id, spec, sb)

    def _generate_one(self, question_id: str, spec: ModelSpec, sandbox: SandboxLike) -> dict[str, Any]:
        try:
            q = self._question_value(question_id)
            made = generate_one(spec, sandbox, question_id, q.question, q.raw_answer, q.answer_notes)
            return self._store_generated(made)
        except Exception as exc:  # Karenina reports any failure of one question in its dict
            return _failed(str(exc))

    def _store_generated(self, made: GeneratedTemplate) -> dict[str, Any]:
        if not made.stored:
            return {
                "success": False,
                "template_code": "",
                "error": made.reason,
                "raw_response": made.code,
                "skipped": False,
            }
        code = made.code or ""
        self.add_answer_template(made.question_id, code)
        return {"success": True, "template_code": code, "error": None, "raw_response": code, "skipped": False}

    def generate_templates(
        self,
        question_ids: list[str],
        model: str = _GEN_MODEL,
        model_provider: str = _GEN_PROVIDER,
        temperature: float = 0,
        interface: str = "langchain",
        force_regenerate: bool = False,
        progress_callback: Callable[[TemplateProgressEvent], None] | None = None,
        endpoint_base_url: str | None = None,
        endpoint_api_key: str | None = None,
        max_workers: int | None = None,
        cancel_event: threading.Event | None = None,
        *,
        sandbox: SandboxLike | None = None,
        model_spec: ModelSpec | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Generate templates for ``question_ids``; a result dict per question (see
        ``generate_template_for_question``), progress events and cancellation as Karenina's."""
        self._check_ids(question_ids)  # before the model is built, as Karenina checks first
        spec = model_spec or generation_model(
            self, model, model_provider, temperature, interface, endpoint_base_url, endpoint_api_key
        )
        return self._generate_many(
            question_ids,
            spec,
            force_regenerate,
            progress_callback,
            None,
            max_workers,
            cancel_event,
            sandbox,
        )

    def generate_all_templates(
        self,
        model: str = _GEN_MODEL,
        model_provider: str = _GEN_PROVIDER,
        temperature: float = 0,
        interface: str = "langchain",
        force_regenerate: bool = False,
        progress_callback: Callable[[TemplateProgressEvent], None] | None = None,
        only_missing: bool = True,
        endpoint_base_url: str | None = None,
        endpoint_api_key: str | None = None,
        progressive_backup: bool = True,
        backup_path: Path | None = None,
        max_workers: int | None = None,
        cancel_event: threading.Event | None = None,
        *,
        sandbox: SandboxLike | None = None,
        model_spec: ModelSpec | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Generate templates for every question (those without one, with ``only_missing``).
        With ``progressive_backup`` every template is also written, after each success, to
        ``backup_path`` (default ``{name}_templates_backup.json`` in the current folder), and a
        backup found there is restored first, as Karenina does."""
        backup: Path | None = None
        if progressive_backup:
            name = self._header().get("name") or ""
            backup = Path(backup_path) if backup_path is not None else Path(_backup_name(str(name)))
            if backup.exists() and not force_regenerate:
                self._restore_backup(backup)
        if only_missing and not force_regenerate:
            ids = [qid for qid in self._template_ids() if not self.has_template(qid)]
        else:
            ids = self._template_ids()
        if not ids:
            return {}
        spec = model_spec or generation_model(
            self, model, model_provider, temperature, interface, endpoint_base_url, endpoint_api_key
        )
        return self._generate_many(
            ids, spec, force_regenerate, progress_callback, backup, max_workers, cancel_event, sandbox
        )

    def _generate_many(
        self,
        question_ids: list[str],
        spec: ModelSpec,
        force: bool,
        progress_callback: Callable[[TemplateProgressEvent], None] | None,
        backup: Path | None,
        max_workers: int | None,
        cancel_event: threading.Event | None,
        sandbox: SandboxLike | None,
    ) -> dict[str, dict[str, Any]]:
        self._check_ids(question_ids)
        workers = _max_workers(max_workers)
        progress = _GenerationProgress(len(question_ids), progress_callback)
        results: dict[str, dict[str, Any]] = {}

        def done(qid: str, result: dict[str, Any], seconds: float) -> None:
            results[qid] = result
            progress.finished(qid, result, seconds)
            if backup is not None and result["success"] and not result["skipped"]:
                self._write_backup(backup)

        progress.emit("job_started")
        cancelled = False
        with _sandbox(sandbox) as sb:
            if workers <= 1:
                for qid in question_ids:
                    if cancel_event is not None and cancel_event.is_set():
                        cancelled = True
                        break
                    progress.started(qid)
                    started = _clock()
                    done(qid, self._generate_or_skip(qid, spec, sb, force), _clock() - started)
            else:
                cancelled = self._generate_parallel(
                    question_ids, spec, sb, force, workers, cancel_event, progress, done
                )
        if cancelled:
            progress.emit("job_cancelled")
        else:
            progress.emit("job_completed")
        return results

    def _check_ids(self, question_ids: list[str]) -> None:
        known = self._template_id_set()
        invalid = [qid for qid in question_ids if qid not in known]
        if invalid:
            raise QuestionNotFoundError(f"Questions not found: {invalid}")

    def _generate_parallel(
        self,
        question_ids: list[str],
        spec: ModelSpec,
        sandbox: SandboxLike,
        force: bool,
        workers: int,
        cancel_event: threading.Event | None,
        progress: _GenerationProgress,
        done: Callable[[str, dict[str, Any], float], None],
    ) -> bool:
        """Model calls and sandbox checks on ``workers`` threads; every store write on this one."""
        from concurrent.futures import ThreadPoolExecutor, as_completed

        def make(qid: str) -> tuple[Any, float]:
            started = _clock()
            if not force and self.has_template(qid):
                return _skipped(self.get_template(qid)), _clock() - started
            q = self._question_value(qid)
            made = generate_one(spec, sandbox, qid, q.question, q.raw_answer, q.answer_notes)
            return made, _clock() - started

        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {}
            for qid in question_ids:
                progress.started(qid)
                futures[pool.submit(make, qid)] = qid
            for future in as_completed(futures):
                if cancel_event is not None and cancel_event.is_set():
                    for f in futures:
                        f.cancel()
                    return True
                qid = futures[future]
                try:
                    made, seconds = future.result()
                    result = made if isinstance(made, dict) else self._store_generated(made)
                except Exception as exc:
                    result, seconds = _failed(str(exc)), 0.0
                done(qid, result, seconds)
        return False

    def _generate_or_skip(self, qid: str, spec: ModelSpec, sandbox: SandboxLike, force: bool) -> dict[str, Any]:
        if not force and self.has_template(qid):
            return _skipped(self.get_template(qid))
        return self._generate_one(qid, spec, sandbox)

    # -- verification --------------------------------------------------------------------
    def run_verification(
        self,
        config: Any,
        question_ids: list[str] | None = None,
        run_name: str | None = None,
        async_enabled: bool | None = None,
        progress_callback: Callable[[float, str], None] | None = None,
        sink: Any = None,
        *,
        sandbox: SandboxLike | None = None,
    ) -> VerificationResultSet:
        """Verify the finished questions with the runner; the results are stored in the graph as
        they complete (a run of the store, ``metadata["run_id"]``) and returned as Karenina's
        ``VerificationResultSet`` holds them. ``config`` is Karenina's ``VerificationConfig`` (read
        by duck typing; a setting the runner cannot honour is refused, naming it) or a dict of its
        fields. ``sink`` is refused: results always go to the store, and
        ``resume_verification(run id)`` finishes an interrupted run."""
        if sink is not None:
            raise InvalidValueError(
                "sink is not supported: every result is written to the store as it completes; "
                "resume an interrupted run with resume_verification(<run id>)"
            )
        plan = verification_plan(self.store, config, async_enabled)
        return self._verify(plan, question_ids, run_name, progress_callback, sandbox, resume=None)

    def resume_verification(
        self,
        state_path: str | Path,
        *,
        config: Any = None,
        question_ids: list[str] | None = None,
        run_name: str | None = None,
        async_enabled: bool | None = None,
        progress_callback: Callable[[float, str], None] | None = None,
        sandbox: SandboxLike | None = None,
    ) -> VerificationResultSet:
        """Finish an interrupted run. ``state_path`` names the stored run (its id or IRI): the run
        in the store is the state Karenina keeps in its ``.state`` sidecar. Without ``config`` the
        run's stored configuration is used (models, mode, replicates, questions), as Karenina
        uses the config the state file holds."""

        ref = str(state_path)
        if ref.endswith(".state") or (os.sep in ref and Path(ref).exists()):
            raise InvalidValueError(
                f"state_path {ref!r}: a Karenina .state file cannot be resumed here; "
                "give the id of a run stored by run_verification"
            )
        try:
            run_id = run_summary(self.store, *resolve_run(self.store, ref)).run_id
        except LookupError as exc:
            raise VerificationError(f"state_path {ref!r}: no stored run by that id or IRI ({exc})") from None
        stored = stored_config(self.store, run_id)
        plan = self._stored_plan(run_id, stored, async_enabled) if config is None else None
        return self._verify(
            plan or verification_plan(self.store, config, async_enabled),
            # The run's own questions and label unless given, as Karenina takes the state's.
            question_ids or stored.get("questions"),
            run_name or stored.get("run_name"),
            progress_callback,
            sandbox,
            resume=run_id,
        )

    def extend_template(
        self,
        prior_results: Any,
        config: Any,
        *,
        run_name: str | None = None,
        question_ids: list[str] | None = None,
        async_enabled: bool | None = None,
        progress_callback: Callable[[float, str], None] | None = None,
        sink: Any = None,
        store: bool = True,
        sandbox: SandboxLike | None = None,
    ) -> VerificationResultSet:
        """Extend a run made by ``run_verification`` with more judges, answerers or replicates:
        ``config`` is the final state (every answerer of the prior run, every judge,
        ``replicate_count`` at least the prior one), as Karenina's. The prior answers are graded
        by the new judges (no answering model is called for them), new answerers and replicates
        answer live, results already stored are not run again. The new results go into the same
        stored run, and the set returned holds all of its results, prior ones first, as
        Karenina's merged set does."""
        if sink is not None:
            raise InvalidValueError("sink is not supported: the new results are written to the prior run's store")
        if store is not True:
            raise InvalidValueError("store=False is not supported: results are always stored, in the prior run")
        run_id, rows = _prior_rows(prior_results)
        if _get(config, "replay_store") is not None:
            raise InvalidValueError(
                "config.replay_store must be None; extend_template builds the replay store internally "
                "from prior_results"
            )
        plan = verification_plan(self.store, config, async_enabled)
        _check_extension(rows, plan, _get(config, "replicate_count", 1) or 1)
        prior_name = _run_name_of(rows, "extend_template")
        if run_name is not None and run_name != prior_name:
            # Karenina restamps the merged rows; here they are stored, and the run keeps its name.
            raise InvalidValueError(
                f"run_name={run_name!r}: the prior run is named {prior_name!r}, and its stored results keep it"
            )
        ids = list(question_ids) if question_ids is not None else sorted({r["metadata"]["question_id"] for r in rows})
        return self._verify(plan, ids, prior_name, progress_callback, sandbox, resume=run_id, extend=True)

    def extend_rubric(
        self,
        prior_results: Any,
        config: Any,
        *,
        run_name: str | None = None,
        question_ids: list[str] | None = None,
        async_enabled: bool | None = None,
        progress_callback: Callable[[float, str], None] | None = None,
        sink: Any = None,
        store: bool = True,
        sandbox: SandboxLike | None = None,
    ) -> VerificationResultSet:
        """Karenina's extend_rubric: the rubric the benchmark has now (global and per question)
        graded on the answers of a run made by ``run_verification``, no answering model called
        and no template run; every prior result comes back with the new trait scores merged into
        its ``rubric`` (the same rows, in the same order). ``config`` describes the prior run's
        shape: the same answering and parsing models and replicate count. The rubric pass is
        stored as a new run derived from the prior one (``store=False``: dropped once merged)."""
        if sink is not None:
            raise InvalidValueError("sink is not supported: the rubric pass is stored as a run in the store")
        run_id, rows = _prior_rows(prior_results)
        if not config_list(config, "a"):
            raise InvalidValueError("config.answering_models must be non-empty")
        if not config_list(config, "p"):
            raise InvalidValueError("config.parsing_models must be non-empty")
        if _get(config, "replay_store") is not None:
            raise InvalidValueError(
                "config.replay_store must be None; extend_rubric builds the replay store internally from prior_results"
            )
        mode = _get(config, "evaluation_mode", "template_only")
        if mode not in ("template_only", "rubric_only"):
            raise InvalidValueError(
                "config.evaluation_mode must be 'template_only' or 'rubric_only' for extend_rubric "
                f"(got {mode!r}); the helper rewrites it to 'rubric_only' internally"
            )
        plan = verification_plan(self.store, config, async_enabled)
        _check_same_shape(rows, plan, _get(config, "replicate_count", 1) or 1)
        self._check_rubric_for(sorted({r["metadata"]["question_id"] for r in rows}))
        effective_name = run_name or _run_name_of(rows, "extend_rubric") or "extend_rubric"
        ids = list(question_ids) if question_ids is not None else sorted({r["metadata"]["question_id"] for r in rows})
        options = RunOptions(
            mode="rubric_only",
            questions=tuple(ids),
            concurrency=plan.concurrency,
            rubric_strategy=plan.rubric_strategy,  # type: ignore[arg-type]
            run_name=effective_name,
        )
        report = rescore(self.store, run_id, judges=plan.judges, options=options, sandbox=sandbox)
        fresh = result_set(self.store, report)
        try:
            merged = _enrich_with_rubric(rows, fresh.results, effective_name)
        except InvalidValueError:
            self.store.delete_run(report.run_id)  # a refused merge leaves no run behind
            raise
        if not store:
            self.store.delete_run(report.run_id)
        metadata = dict(fresh.metadata, prior_run_id=run_id)
        if not store:
            metadata.pop("run_iri", None)
            metadata["run_id"] = None
        if progress_callback is not None:
            progress_callback(100.0, "extend_rubric: merged")
        return VerificationResultSet(results=merged, metadata=metadata)

    def _check_rubric_for(self, question_ids: list[str]) -> None:
        """Karenina's checks of the rubric an extension grades: there is one, and no metric trait."""
        bench: Any = self
        traits = list(bench.get_global_rubric().all_traits()) if bench.get_global_rubric() is not None else []
        for qid in question_ids:
            rubric = bench.get_question_rubric(qid) if qid in bench else None
            traits.extend(rubric.all_traits() if rubric is not None else [])
        if not traits:
            raise InvalidValueError(
                "benchmark has no rubric attached (global or per-question) for any question in prior_results; "
                "set a rubric before calling extend_rubric"
            )
        if any(t.trait_type == "metric" for t in traits):
            raise InvalidValueError(
                "Metric traits are not supported by extend_rubric in v1; "
                "remove them from the rubric or use template_and_rubric on a fresh run"
            )

    def _stored_plan(self, run_id: str, stored: dict[str, Any], async_enabled: bool | None) -> VerificationPlan:
        """The models and options a run recorded, rebuilt to resume it: every stage's settings
        too (abstention, sufficiency, deep judgment, embedding check, few-shot, prompt config,
        scheduling), as Karenina resumes with the config its state file holds."""
        specs = [m.get("spec") for m in [*stored["answerers"], *stored["judges"]]]
        if not all(specs):
            raise VerificationError(f"run {run_id!r} records no model specs to rebuild: pass config=")
        base_url = (stored.get("transport") or {}).get("base_url")

        def setting(model: Any, key: str) -> Any:
            try:
                return model.model_validate(stored.get(key) or {})
            except ValidationError as exc:
                raise VerificationError(f"run {run_id!r} records {key}: {validation_message(exc)}") from None

        few_shot = stored.get("few_shot_config")
        prompt = stored.get("prompt_config")
        return VerificationPlan(
            answerers=[_spec_model(self.store, m, base_url) for m in stored["answerers"]],
            judges=[_spec_model(self.store, m, base_url) for m in stored["judges"]],
            mode=stored["mode"],
            replicates=stored["replicates"],
            rubric_strategy="sequential" if stored.get("rubric_strategy") == "sequential" else "batch",
            few_shot=bool(stored.get("few_shot")),
            few_shot_config=setting(FewShotConfig, "few_shot_config") if few_shot else None,
            prompt_config=setting(PromptConfig, "prompt_config") if prompt else None,
            abstention=bool(stored.get("abstention_enabled")),
            sufficiency=bool(stored.get("sufficiency_enabled")),
            deep_judgment=setting(DeepJudgmentConfig, "deep_judgment"),
            deep_judgment_rubric=setting(RubricDeepJudgmentConfig, "deep_judgment_rubric"),
            embedding_check=setting(EmbeddingCheckConfig, "embedding_check"),
            embedding_base_url=base_url,
            rubric_trait_names=stored.get("rubric_trait_names"),
            scheduling=setting(Scheduling, "scheduling"),
            concurrency=_concurrency(async_enabled, None),
            base_url=base_url,
        )

    def _verify(
        self,
        plan: VerificationPlan,
        question_ids: list[str] | None,
        run_name: str | None,
        progress_callback: Callable[[float, str], None] | None,
        sandbox: SandboxLike | None,
        resume: str | None,
        extend: bool = False,
    ) -> VerificationResultSet:

        try:
            options = RunOptions(
                mode=plan.mode,  # type: ignore[arg-type]
                replicates=plan.replicates,
                questions=tuple(question_ids) if question_ids else None,
                concurrency=plan.concurrency,
                rubric_strategy=plan.rubric_strategy,  # type: ignore[arg-type]
                few_shot=plan.few_shot,
                few_shot_config=plan.few_shot_config,
                prompt_config=plan.prompt_config,
                abstention_enabled=plan.abstention,
                sufficiency_enabled=plan.sufficiency,
                deep_judgment=plan.deep_judgment,
                deep_judgment_rubric=plan.deep_judgment_rubric,
                embedding_check=plan.embedding_check,
                scheduling=plan.scheduling,
                run_name=run_name,
            )
        except ValidationError as exc:
            raise VerificationError(validation_message(exc)) from None
        report = run_verification(
            self.store,
            self.iri,
            judges=plan.judges,
            answerers=plan.answerers,
            options=options,
            sandbox=sandbox,
            resume=resume,
            cost=cost_usd,
            extra_config={
                "transport": {"replay": None, "record": None, "cache": None, "base_url": plan.base_url},
                **({"rubric_trait_names": plan.rubric_trait_names} if plan.rubric_trait_names is not None else {}),
            },
            progress_callback=progress_callback,
            extend=extend,
            embedder=_embedder(plan),
        )
        return result_set(self.store, report)


def _embedder(plan: VerificationPlan) -> Any:
    """The embedding check's embeddings endpoint: the first parsing model's server (Karenina
    loads a SentenceTransformer locally; here nothing is downloaded)."""
    if not plan.embedding_check.enabled:
        return None
    judge = plan.judges[0].provider
    if getattr(judge, "serves_embeddings", False):  # a runner ModelSpec given as it is (tests, fakes)
        return judge
    return embedder_of(Transport(base_url=plan.embedding_base_url), plan.judges, plan.embedding_check.model)


def _prior_rows(prior_results: Any) -> tuple[str, list[dict[str, Any]]]:
    """The stored run and the result rows of a set ``run_verification`` returned here."""
    run_id = (getattr(prior_results, "metadata", None) or {}).get("run_id")
    rows = list(getattr(prior_results, "results", None) or [])
    if not isinstance(run_id, str) or not all(isinstance(r, dict) for r in rows):
        raise InvalidTypeError(
            "prior_results must be a VerificationResultSet returned by run_verification here (its run is in the store)"
        )
    if not rows:
        raise InvalidValueError("prior_results must contain at least one VerificationResult")
    return run_id, rows


def _run_name_of(rows: list[dict[str, Any]], member: str) -> str | None:
    """The run name the prior rows share (Karenina's _infer_run_name); several are refused."""
    names = {r["metadata"].get("run_name") for r in rows} - {None}
    if len(names) > 1:
        raise InvalidValueError(
            f"prior_results rows carry inconsistent run_names ({sorted(names)}); pass run_name= explicitly to {member}"
        )
    return next(iter(names), None)


def _check_same_shape(rows: list[dict[str, Any]], plan: VerificationPlan, replicate_count: int) -> None:
    """Karenina's checks of a rubric extension: the configured answering and parsing models are
    those of the prior results, and the replicate count is theirs."""
    for role, configured_models in (("answering", plan.answerers), ("parsing", plan.judges)):
        prior = {canonical_key(r["metadata"].get(role)) for r in rows}
        configured = {canonical_key(m.identity) for m in configured_models}
        if prior != configured:
            raise InvalidValueError(
                f"config.{role}_models does not match the {role} identities in prior_results. "
                f"Configured: {sorted(configured)}. Observed in prior: {sorted(prior)}."
            )
    fanout: dict[tuple[Any, ...], set[Any]] = {}
    for r in rows:
        m = r["metadata"]
        fanout.setdefault(
            (m["question_id"], canonical_key(m.get("answering")), canonical_key(m.get("parsing"))), set()
        ).add(m.get("replicate"))
    observed = max((len(v) for v in fanout.values()), default=0)
    if observed and replicate_count != observed:
        raise InvalidValueError(
            f"config.replicate_count={replicate_count} does not match the replicate fan-out observed in "
            f"prior_results (={observed}). extend_rubric preserves the prior shape; pass replicate_count "
            "equal to the observed count."
        )


# The rubric's per-trait buckets Karenina's extend_rubric unions, refusing a name in both.
_RUBRIC_BUCKETS = (
    "llm_trait_scores",
    "llm_trait_labels",
    "regex_trait_scores",
    "callable_trait_scores",
    "agentic_trait_scores",
    "agentic_trait_investigation_traces",
)


def _row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    m = row["metadata"]
    return (m["question_id"], canonical_key(m.get("answering")), canonical_key(m.get("parsing")), m.get("replicate"))


def _enrich_with_rubric(
    prior: list[dict[str, Any]], fresh: list[dict[str, Any]], run_name: str
) -> list[dict[str, Any]]:
    """Karenina's merge: each prior row, copied, with the rubric pass's trait scores of the same
    (question, answerer, judge, replicate) added to its ``rubric``."""
    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in fresh:
        key = _row_key(row)
        if key in by_key:
            raise InvalidValueError(f"extend_rubric: rubric-only run produced duplicate rows for triple {key}")
        by_key[key] = row
    out = []
    for row in prior:
        key = _row_key(row)
        if key not in by_key:
            raise InvalidValueError(f"extend_rubric: no rubric-only row produced for prior triple {key}")
        merged = json.loads(json.dumps(row))
        target = merged.get("rubric") or {}
        source = by_key[key].get("rubric") or {}
        if source.get("rubric_evaluation_performed"):
            target["rubric_evaluation_performed"] = True
        if source.get("rubric_evaluation_strategy") is not None:
            target["rubric_evaluation_strategy"] = source["rubric_evaluation_strategy"]
        for bucket in _RUBRIC_BUCKETS:
            new = source.get(bucket)
            if not new:
                continue
            old = target.get(bucket) or {}
            clash = set(old) & set(new)
            if clash:
                raise InvalidValueError(
                    f"extend_rubric: trait name collision in {bucket} for traits {sorted(clash)}; "
                    "rename or remove the colliding trait"
                )
            target[bucket] = {**old, **new}
        merged["rubric"] = target
        merged["metadata"]["run_name"] = run_name
        out.append(merged)
    return out


def _skipped(code: str) -> dict[str, Any]:
    return {
        "success": True,
        "template_code": code,
        "error": "Template already exists (use force_regenerate=True to override)",
        "raw_response": None,
        "skipped": True,
    }


def _failed(error: str) -> dict[str, Any]:
    return {"success": False, "template_code": "", "error": error, "raw_response": None, "skipped": False}


def _backup_name(name: str) -> str:
    return f"{name.replace(' ', '_').replace('/', '_')}_templates_backup.json"


def _clock() -> float:
    return time.monotonic()


def _max_workers(max_workers: int | None) -> int:
    """Karenina's rule: the argument, else $KARENINA_ASYNC_MAX_WORKERS, else 1 (sequential)."""
    if max_workers is not None:
        return max_workers
    try:
        return int(os.environ.get("KARENINA_ASYNC_MAX_WORKERS") or 1)
    except ValueError:
        return 1


class _GenerationProgress:
    """Karenina's template-generation events and counts (a skipped question counts as a success)."""

    def __init__(self, total: int, callback: Callable[[TemplateProgressEvent], None] | None) -> None:
        self.total, self.callback = total, callback
        self.processed = self.successful = self.failed = 0
        self.in_progress: list[str] = []

    def emit(self, event: str, question_id: str | None = None, **kw: Any) -> None:
        if self.callback is None:
            return
        self.callback(
            TemplateProgressEvent(
                event=event,  # type: ignore[arg-type]
                question_id=question_id,
                processed_count=self.processed,
                total_count=self.total,
                successful_count=self.successful,
                failed_count=self.failed,
                percentage=self.processed / self.total * 100 if self.total else 0.0,
                error=kw.get("error"),
                template_code=kw.get("template_code"),
                task_duration=kw.get("task_duration"),
                in_progress_questions=list(self.in_progress),
            )
        )

    def started(self, qid: str) -> None:
        self.in_progress.append(qid)
        self.emit("task_started", qid)

    def finished(self, qid: str, result: dict[str, Any], seconds: float) -> None:
        ok = bool(result.get("success")) or bool(result.get("skipped"))
        self.processed += 1
        if ok:
            self.successful += 1
        else:
            self.failed += 1
        if qid in self.in_progress:
            self.in_progress.remove(qid)
        self.emit(
            "task_completed" if ok else "task_failed",
            qid,
            template_code=result.get("template_code") if result.get("success") else None,
            error=result.get("error") if not result.get("success") else None,
            task_duration=seconds,
        )


class _sandbox:
    """The caller's sandbox, or one made (and closed) here for the call."""

    def __init__(self, given: SandboxLike | None) -> None:
        self.given = given
        self.owned: Any = None

    def __enter__(self) -> SandboxLike:
        if self.given is not None:
            return self.given
        from karenina_rdf.runner.sandbox import Sandbox

        self.owned = Sandbox(workers=max(1, min(2, os.cpu_count() or 1)))
        return self.owned  # type: ignore[no-any-return]

    def __exit__(self, *exc: object) -> None:
        if self.owned is not None:
            self.owned.close()


# -- Karenina's configuration, read by duck typing ---------------------------------------------
def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


# Settings of Karenina's VerificationConfig the runner has no counterpart for, with Karenina's
# default: a config that leaves them at it runs here; one that sets any is refused, naming it.
_UNSUPPORTED_DEFAULTS: dict[str, Any] = {
    "parsing_only": False,
    "deep_judgment_search_enabled": False,
    "agentic_parsing": False,
    "db_config": None,
    "replay_store": None,
    "skip_triples": None,
}
# ModelConfig fields the runner has no counterpart for (None in Karenina's default).
_MODEL_UNSUPPORTED = (
    "mcp_urls_dict",
    "mcp_tool_filter",
    "mcp_tool_description_overrides",
    "agent_runtime",
    "extra_kwargs",
    "manual_traces",
    "agent_middleware",
)


@dataclass
class VerificationPlan:
    answerers: list[ModelSpec]
    judges: list[ModelSpec]
    mode: str = "template_only"
    replicates: int = 1
    rubric_strategy: str = "batch"
    few_shot: bool = False
    few_shot_config: FewShotConfig | None = None  # Karenina's, when it asks more than "all"
    prompt_config: PromptConfig | None = None
    abstention: bool = False
    sufficiency: bool = False
    deep_judgment: DeepJudgmentConfig = field(default_factory=DeepJudgmentConfig)
    deep_judgment_rubric: RubricDeepJudgmentConfig = field(default_factory=RubricDeepJudgmentConfig)
    embedding_check: EmbeddingCheckConfig = field(default_factory=EmbeddingCheckConfig)
    embedding_base_url: str | None = None  # the first parsing model's server: its /embeddings
    # Karenina's rubric_trait_names: accepted and recorded, and (as in Karenina, whose runner never
    # hands it to the rubric stage) it filters no trait: every trait is evaluated.
    rubric_trait_names: list[str] | None = None
    scheduling: Scheduling = field(default_factory=Scheduling)
    concurrency: int = 2
    base_url: str | None = None


def verification_plan(store: Any, config: Any, async_enabled: bool | None) -> VerificationPlan:
    """Karenina's ``VerificationConfig`` (or a dict of its fields) as the runner's models and
    options; a setting the runner cannot honour raises InvalidValueError naming it."""
    if config is None or _get(config, "answering_models") is None or _get(config, "parsing_models") is None:
        raise InvalidTypeError(
            "config must be a VerificationConfig (or a dict of its fields) with answering_models and parsing_models"
        )
    for name, default in _UNSUPPORTED_DEFAULTS.items():
        value = _get(config, name, default)
        if value != default:
            raise InvalidValueError(f"VerificationConfig.{name}={value!r} is not supported by karenina-rdf's runner")
    mode = _get(config, "evaluation_mode", "template_only")
    strategy = _get(config, "rubric_evaluation_strategy", "batch")
    answerers = [_config_model(store, m, f"answering_models[{i}]") for i, m in enumerate(config_list(config, "a"))]
    judges = [_config_model(store, m, f"parsing_models[{i}]") for i, m in enumerate(config_list(config, "p"))]
    if not answerers or not judges:
        raise InvalidValueError("VerificationConfig needs at least one answering and one parsing model")
    models = [*config_list(config, "a"), *config_list(config, "p")]
    bases = {_model_base_url(m) for m in models}
    workers = _get(config, "async_max_workers", 2)
    enabled = async_enabled if async_enabled is not None else bool(_get(config, "async_enabled", True))
    return VerificationPlan(
        answerers=answerers,
        judges=judges,
        mode=mode,
        replicates=int(_get(config, "replicate_count", 1) or 1),
        rubric_strategy=strategy,
        few_shot=_few_shot(_get(config, "few_shot_config")),
        few_shot_config=_few_shot_config(_get(config, "few_shot_config")),
        prompt_config=_as_model(PromptConfig, _get(config, "prompt_config"), "prompt_config"),
        abstention=bool(_get(config, "abstention_enabled", False)),
        sufficiency=bool(_get(config, "sufficiency_enabled", False)),
        deep_judgment=_deep_judgment(config),
        deep_judgment_rubric=_deep_judgment_rubric(config),
        embedding_check=_embedding_check(config),
        embedding_base_url=_model_base_url(config_list(config, "p")[0]),
        rubric_trait_names=_trait_names(_get(config, "rubric_trait_names")),
        scheduling=_scheduling(config),
        concurrency=_concurrency(enabled, workers),
        # The run's stored configuration has one server for all its models (resume rebuilds
        # them from it): kept when the models share one.
        base_url=next(iter(bases)) if len(bases) == 1 else None,
    )


def _check_extension(rows: list[dict[str, Any]], plan: VerificationPlan, replicate_count: int) -> None:
    """Karenina's checks of an extension: every prior answerer is configured, and the replicate
    count does not shrink."""
    prior = {canonical_key(r["metadata"].get("answering")) for r in rows}
    configured = {canonical_key(m.identity) for m in plan.answerers}
    missing = prior - configured
    if missing:
        raise InvalidValueError(
            "config.answering_models does not cover the answering identities in "
            f"prior_results. Missing keys: {sorted(missing)}. Configured keys: {sorted(configured)}."
        )
    fanout: dict[tuple[Any, ...], set[Any]] = {}
    for r in rows:
        m = r["metadata"]
        key = (m["question_id"], canonical_key(m.get("answering")), canonical_key(m.get("parsing")))
        fanout.setdefault(key, set()).add(m.get("replicate"))
    observed = max((len(v) for v in fanout.values()), default=0)
    if replicate_count < observed:
        raise InvalidValueError(
            f"config.replicate_count={replicate_count} is lower than the replicate fan-out observed in "
            f"prior_results (={observed}). Replicate reduction is not supported by extend_template; "
            f"pass replicate_count>={observed}."
        )


def config_list(config: Any, which: str) -> list[Any]:
    """The answering (``a``) or parsing (``p``) models of a config, as a list."""
    return list(_get(config, "answering_models" if which == "a" else "parsing_models") or [])


def _concurrency(enabled: bool | None, workers: Any) -> int:
    if enabled is False:
        return 1
    return max(1, int(workers or 2))


def _few_shot(cfg: Any) -> bool:
    """Whether Karenina's FewShotConfig asks for examples at all."""
    return not (cfg is None or _get(cfg, "source", "both") == "disabled" or not _get(cfg, "enabled", True))


def _few_shot_config(cfg: Any) -> FewShotConfig | None:
    """Karenina's FewShotConfig (any source, pool mode and per-question config) as the runner's."""
    if not _few_shot(cfg):
        return None
    config: FewShotConfig = _as_model(FewShotConfig, cfg, "few_shot_config")
    return config


def _as_model(model: Any, value: Any, name: str) -> Any:
    """A Karenina config object (duck-typed: its ``model_dump()``, or a dict) as ours; a field we
    do not have is refused, naming it, never dropped."""
    if value is None:
        return None
    data = value.model_dump() if hasattr(value, "model_dump") else value
    if not isinstance(data, dict):
        raise InvalidTypeError(f"VerificationConfig.{name} must be a {model.__name__} or a dict of its fields")
    data = {k: v for k, v in data.items() if not (k == "enabled" and v is True)}  # an old switch, on
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidValueError(f"VerificationConfig.{name}: {validation_message(exc)}") from None


def _deep_judgment(config: Any) -> DeepJudgmentConfig:
    """Karenina's template deep-judgment settings (deep_judgment_*) as the runner's."""
    fields = {
        "mode": ("deep_judgment_mode", "disabled"),
        "max_excerpts_per_attribute": ("deep_judgment_max_excerpts_per_attribute", None),
        "fuzzy_match_threshold": ("deep_judgment_fuzzy_match_threshold", None),
        "excerpt_retry_attempts": ("deep_judgment_excerpt_retry_attempts", None),
    }
    given = {ours: _get(config, theirs, default) for ours, (theirs, default) in fields.items()}
    try:
        return DeepJudgmentConfig.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise InvalidValueError(f"VerificationConfig.deep_judgment_*: {validation_message(exc)}") from None


def _deep_judgment_rubric(config: Any) -> RubricDeepJudgmentConfig:
    """Karenina's rubric deep-judgment settings (deep_judgment_rubric_*) as the runner's; its
    ``deep_judgment_rubric_config`` (a DeepJudgmentRubricCustomConfig or its dict) as ours."""
    fields = {
        "mode": "deep_judgment_rubric_mode",
        "global_excerpts": "deep_judgment_rubric_global_excerpts",
        "config": "deep_judgment_rubric_config",
        "max_excerpts_default": "deep_judgment_rubric_max_excerpts_default",
        "fuzzy_match_threshold_default": "deep_judgment_rubric_fuzzy_match_threshold_default",
        "excerpt_retry_attempts_default": "deep_judgment_rubric_excerpt_retry_attempts_default",
    }
    given = {ours: _get(config, theirs) for ours, theirs in fields.items()}
    custom = given.get("config")
    if custom is not None and hasattr(custom, "model_dump"):
        given["config"] = custom.model_dump(by_alias=True)
    try:
        return RubricDeepJudgmentConfig.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise InvalidValueError(f"VerificationConfig.deep_judgment_rubric_*: {validation_message(exc)}") from None


def _scheduling(config: Any) -> Scheduling:
    """Karenina's task_ordering, answerer_concurrency_limits, max_concurrent_requests and
    batch_timeout_seconds as the runner's."""
    names = ("task_ordering", "answerer_concurrency_limits", "max_concurrent_requests", "batch_timeout_seconds")
    given = {n: _get(config, n) for n in names}
    try:
        return Scheduling.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise InvalidValueError(f"VerificationConfig: {validation_message(exc)}") from None


def _trait_names(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(n, str) for n in value):
        raise InvalidTypeError("VerificationConfig.rubric_trait_names must be a list of trait names or None")
    return list(value)


def _embedding_check(config: Any) -> EmbeddingCheckConfig:
    """Karenina's embedding_check_enabled / _model / _threshold as the runner's."""
    given = {
        "enabled": bool(_get(config, "embedding_check_enabled", False)),
        "model": _get(config, "embedding_check_model"),
        "threshold": _get(config, "embedding_check_threshold"),
    }
    try:
        return EmbeddingCheckConfig.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise InvalidValueError(f"VerificationConfig.embedding_check_*: {validation_message(exc)}") from None


def _model_base_url(m: Any) -> str | None:
    """The server a configured model is called at (None: its provider's default)."""
    if isinstance(m, str) or hasattr(m, "provider"):  # a spec string or a runner ModelSpec
        return None
    url = _get(m, "endpoint_base_url") or _get(m, "anthropic_base_url")
    return str(url) if url else None


def _config_model(store: Any, m: Any, where: str) -> ModelSpec:
    """One of Karenina's ``ModelConfig`` (or a dict of its fields, a runner ``ModelSpec``, or a
    ``PROVIDER:MODEL`` spec) as a runner model."""

    if isinstance(m, ModelSpec):
        return m
    if isinstance(m, str):
        return _spec_model(store, {"spec": m}, None)
    for name in _MODEL_UNSUPPORTED:
        if _get(m, name) not in (None, {}, []):
            raise InvalidValueError(f"VerificationConfig.{where}.{name} is not supported by karenina-rdf's runner")
    interface = _get(m, "interface", "langchain")
    if interface == "manual":
        raise InvalidValueError(
            f"VerificationConfig.{where}: interface 'manual' is not supported here; "
            "import recorded answers with `karenina-rdf verify --answers`"
        )
    name = _get(m, "model_name")
    if not name:
        raise InvalidValueError(f"VerificationConfig.{where}.model_name is required")
    spec = _model_spec(
        store,
        str(name),
        _get(m, "model_provider") or "",
        interface,
        _get(m, "endpoint_base_url"),
        _get(m, "endpoint_api_key"),
        _get(m, "anthropic_base_url"),
        _get(m, "anthropic_api_key"),
        where=where,
    )

    temperature = _get(m, "temperature", 0.1)
    return replace(
        spec,
        temperature=float(temperature if temperature is not None else 0.1),
        max_tokens=int(_get(m, "max_tokens", 16384) or 16384),
        system_prompt=_get(m, "system_prompt"),
        config_id=_get(m, "id"),
    )


def _spec_model(store: Any, record: dict[str, Any], base_url: str | None) -> ModelSpec:
    """A model from the record a run stores (``spec`` and settings), for resuming it."""

    spec = Transport.for_store(store, base_url=base_url).model(
        str(record["spec"]),
        temperature=float(record.get("temperature") or 0.0),
        max_tokens=int(record.get("max_tokens") or 4096),
        system_prompt=record.get("system_prompt"),
    )
    return replace(spec, config_id=record.get("config_id"))


def _model_spec(
    store: Any,
    name: str,
    provider: str,
    interface: str,
    endpoint_base_url: str | None,
    endpoint_api_key: str | None,
    anthropic_base_url: str | None,
    anthropic_api_key: Any,
    *,
    where: str,
) -> ModelSpec:
    """Karenina's (model, provider, interface, endpoint) as one of the runner's providers: an
    OpenAI-compatible server when an endpoint is given (or interface ``openai_endpoint``),
    Anthropic's API for provider ``anthropic``; anything else is refused, naming the setting."""
    base: str | None
    if endpoint_base_url or interface == "openai_endpoint":
        url = endpoint_base_url or os.environ.get("OPENAI_BASE_URL")
        if not url:
            raise InvalidValueError(f"{where}: interface 'openai_endpoint' needs endpoint_base_url")
        prefix, base, key = "openai", str(url), _secret(endpoint_api_key)
    elif provider == "anthropic" and interface in ("langchain", "claude_tool", "claude_agent_sdk"):
        prefix, base, key = "anthropic", anthropic_base_url, _secret(anthropic_api_key)
    else:
        raise InvalidValueError(
            f"{where}: model_provider={provider!r} with interface={interface!r} is not supported here: "
            "use model_provider='anthropic', or an OpenAI-compatible server (endpoint_base_url)"
        )
    inner, _ = provider_from_spec(f"{prefix}:{name}", base_url=base, api_key=key)
    # As a run's transport stacks them (runner._models): retries, then the store's response cache.
    wrapped: Any = RetryingProvider(inner)
    if getattr(store, "path", None) is not None:
        wrapped = CachedProvider(wrapped, ResponseCache(store.path / "cache" / "responses.sqlite"))
    return ModelSpec(provider=wrapped, model=name, interface=INTERFACES[prefix], spec=f"{prefix}:{name}")


def _secret(value: Any) -> str | None:
    """An API key given as a string or as pydantic's SecretStr (Karenina's ModelConfig)."""
    getter = getattr(value, "get_secret_value", None)
    secret = getter() if callable(getter) else value
    return str(secret) if secret is not None else None


def generation_model(
    bench: AuthoringBenchmark,
    model: str,
    model_provider: str,
    temperature: float,
    interface: str,
    endpoint_base_url: str | None,
    endpoint_api_key: str | None,
) -> ModelSpec:

    spec = _model_spec(
        bench.store,
        model,
        model_provider,
        interface,
        endpoint_base_url,
        endpoint_api_key,
        None,
        None,
        where="template generation",
    )
    return replace(spec, temperature=float(temperature))


def result_set(store: Any, report: RunReport) -> VerificationResultSet:
    """A stored run's results as Karenina's VerificationResultSet holds them."""

    buf = io.StringIO()
    export_run(store, report.run_id, buf)
    rows = json.loads(buf.getvalue()).get("results") or []
    return VerificationResultSet(
        results=rows,
        metadata={
            "run_id": report.run_id,
            "run_iri": report.iri,
            "status": report.status,
            "report": report.model_dump(mode="json"),
        },
    )
