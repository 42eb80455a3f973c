"""A verification run: plan the tasks, run them on worker threads, write each result to the
store as it completes, show progress, and leave a run that ``resume`` can finish.

Threads, not processes, run the tasks: a task spends its time waiting for models (I/O) or for
the sandbox's worker processes, so the GIL is not the limit. Worker threads are daemons and the
main thread only writes: on Ctrl-C (or ``stop``) it stops handing out tasks, waits for the
tasks in flight and stores them (a second Ctrl-C stops waiting: those are dropped), marks the
run ``interrupted`` and returns; ``resume`` then skips every task whose result is stored. An
error that escapes leaves the run ``interrupted`` too, never ``completed``.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import platform
import queue
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from karenina_rdf._errors import VerificationError, validation_message
from karenina_rdf.checkpoint import RubricTrait
from karenina_rdf.results import LiveRun, RunProvenance, row_key, run_configuration, stored_header
from karenina_rdf.runner.providers import DEFAULT_BUDGETS
from karenina_rdf.runner.rubric import RubricDeepJudgmentConfig

from ._config import DeepJudgmentConfig, FewShotConfig, PromptConfig
from ._embedding import EmbeddingCheckConfig
from ._pipeline import Answers, Pipeline, SandboxLike
from ._record import RETRY_CATEGORIES
from ._schedule import AnswererGate, Gate, Scheduling, answerer_limits, limited, order_tasks, timeout_message
from ._tasks import MODES, Mode, ModelSpec, Plan, Task, plan, read_questions

if TYPE_CHECKING:
    from karenina_rdf._store import Store

# A completed result waits at most _FLUSH_SECONDS for others to share its store write, and a
# write takes at most _FLUSH_SIZE results. Waiting makes the batches of a fast run big enough for
# the bulk loader (results.BULK_LINES), which writes a triple for a quarter of a transaction's CPU
# (docs/performance.md § Every stage on); a result of a slow run still shows within a second.
_FLUSH_SECONDS = 1.0
_FLUSH_SIZE = 500


class RunOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Mode = "template_only"
    replicates: int = 1
    questions: tuple[str, ...] | None = None
    concurrency: int = 4
    trust_callables: bool = False
    # Run template and callable code unboxed where bubblewrap cannot box it (see runner.sandbox).
    unsafe_no_isolation: bool = False
    rubric_strategy: Literal["batch", "sequential"] = "batch"
    few_shot: bool = False  # True: Karenina's default FewShotConfig (all the question's examples)
    few_shot_config: FewShotConfig | None = None  # Karenina's; wins over few_shot
    prompt_config: PromptConfig | None = None  # Karenina's per-task instructions
    abstention_enabled: bool = False  # Karenina's VerificationConfig switches
    sufficiency_enabled: bool = False
    deep_judgment: DeepJudgmentConfig = DeepJudgmentConfig()  # Karenina's deep_judgment_* (templates)
    deep_judgment_rubric: RubricDeepJudgmentConfig = RubricDeepJudgmentConfig()  # deep_judgment_rubric_*
    embedding_check: EmbeddingCheckConfig = EmbeddingCheckConfig()  # Karenina's embedding_check_*
    # Karenina's task_ordering, answerer_concurrency_limits, max_concurrent_requests, batch_timeout_seconds
    scheduling: Scheduling = Scheduling()
    run_id: str | None = None
    run_name: str | None = None

    def few_shot_effective(self) -> FewShotConfig | None:
        return self.few_shot_config if self.few_shot_config is not None else FewShotConfig() if self.few_shot else None


class RunReport(BaseModel):
    """What a run did. ``skipped``: tasks whose results were stored before (a resumed run)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    iri: str
    benchmark: str
    status: Literal["completed", "interrupted"]
    tasks: int
    skipped: int
    completed: int
    passed: int
    failed: int
    failures: dict[str, int]
    abstained: int | None = None  # results whose abstention check found an abstention (None: check off)
    insufficient: int | None = None  # results found insufficient by the sufficiency check (None: check off)
    cost_usd: float | None
    seconds: float
    notes: tuple[str, ...] = ()
    timings: dict[str, float] = {}  # seconds per stage summed over tasks (threads overlap), and store writes


@functools.cache
def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("karenina-rdf", "pyoxigraph", "pydantic", "httpx", "anthropic", "cloudpickle"):
        try:
            out[dist] = importlib_metadata.version(dist)
        except importlib_metadata.PackageNotFoundError:
            continue
    return out


def _model_config(m: ModelSpec | dict[str, Any]) -> dict[str, Any]:
    if isinstance(m, dict):
        return {"provider": "manual", "name": m.get("model_name"), "temperature": None, "interface": m.get("interface")}
    return {
        "provider": m.spec.split(":", 1)[0] or m.interface,
        "name": m.model,
        "temperature": m.temperature,
        "interface": m.interface,
    }


def _model_record(m: ModelSpec | dict[str, Any]) -> dict[str, Any]:
    if isinstance(m, dict):
        return {"identity": m}
    return {
        "spec": m.spec,
        "interface": m.interface,
        "model": m.model,
        "temperature": m.temperature,
        "max_tokens": m.max_tokens,
        "system_prompt": m.system_prompt,
        # Part of the results' model identity: a resumed run must rebuild it to find its results.
        **({"config_id": m.config_id} if m.config_id else {}),
    }


def rubric_definition(traits: Iterable[RubricTrait]) -> dict[str, Any] | None:
    """The global rubric as Karenina's results export carries it (``shared_data``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for tr in traits:
        entry: dict[str, Any] = {"name": tr.name, "description": tr.description or ""}
        if tr.trait_type == "llm":
            entry["kind"] = tr.kind
            if tr.kind == "score":
                entry["min_score"], entry["max_score"] = tr.min_score, tr.max_score
            if tr.classes:
                entry["classes"] = tr.classes
        else:
            entry.update({k: v for k, v in tr.settings.items() if k not in ("callable_code", "higher_is_better")})
        entry["higher_is_better"] = tr.higher_is_better
        out.setdefault(f"{tr.trait_type}_traits", []).append(entry)
    return out or None


class _Progress:
    """A rich progress bar (counts, pass/fail, ETA) on stderr, or nothing."""

    def __init__(self, total: int, done: int, enabled: bool, callback: Any = None) -> None:
        self.bar: Any = None
        # Karenina's progress_callback(percentage, message), called as results are stored.
        self.callback, self.total, self.done = callback, total, done
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("[bold]verify[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.task = self.bar.add_task("verify", total=total, completed=done, status="")
        self.bar.start()

    def update(self, advance: int, passed: int, failed: int) -> None:
        self.done += advance
        if self.callback is not None:
            pct = self.done / self.total * 100 if self.total else 100.0
            self.callback(pct, f"{self.done}/{self.total} verified: {passed} passed, {failed} failed")
        if self.bar is not None:
            self.bar.update(self.task, advance=advance, status=f"[green]{passed} passed[/] [red]{failed} failed[/]")

    def note(self, text: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, status=f"[yellow]{text}[/]")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def run_verification(
    store: Store,
    benchmark: str,
    *,
    judges: list[ModelSpec],
    answerers: list[ModelSpec] | None = None,
    answers: dict[tuple[str, str, int | None], str] | None = None,
    answer_identities: list[dict[str, Any]] | None = None,
    options: RunOptions | None = None,
    sandbox: SandboxLike | None = None,
    resume: str | None = None,
    progress: bool = False,
    cost: Any = None,
    extra_config: dict[str, Any] | None = None,
    stop: threading.Event | None = None,
    informed_by: str | None = None,
    progress_callback: Any = None,
    extend: bool = False,
    embedder: Any = None,
) -> RunReport:
    """Run ``benchmark``'s finished questions past the answering models (or the recorded
    ``answers``, keyed by (question id, answerer key, replicate), of ``answer_identities``) and
    the judges; every result is stored as it completes, in run ``options.run_id`` (new) or in
    run ``resume`` (continued: its stored results are not run again). With ``extend`` the run
    ``resume`` may be continued with more answerers, judges, replicates or questions (Karenina's
    extend_template): its stored answers are graded by the new judges, and the configuration
    given becomes the run's. ``embedder``: the embeddings provider of the embedding check (an
    ``EmbeddingProvider``); when the check is on and none is given, the first judge's provider
    serves it if it can (an OpenAI-compatible server's ``/embeddings``)."""
    opts = options or RunOptions()
    if opts.embedding_check.enabled:  # refused here, before anything is written, not per task
        # Not ``embedder or``: a replay file without recordings is falsy (it has a length).
        given = embedder if embedder is not None else _embedder_of(judges)
        embedder = _check_embedder(given, opts.embedding_check.model)
    sched = opts.scheduling
    if sched.max_concurrent_requests is not None:  # every model call of the run shares the permits
        permits = threading.Semaphore(sched.max_concurrent_requests)
        judges = limited(judges, permits) or []
        answerers = limited(answerers, permits)
        if embedder is not None:
            (embedder,) = [m.provider for m in limited([ModelSpec(embedder, "", "")], permits) or []]
    started = time.time()
    bench_iri, bench_graph = store.graph_of(benchmark)
    from karenina_rdf.authoring import Benchmark

    bench = Benchmark(store, bench_iri)
    questions, notes = read_questions(store, bench_iri, list(opts.questions) if opts.questions else None)
    if not questions:
        raise VerificationError(f"benchmark {bench.id!r} has no finished question to verify")
    # The global rubric as stored (Karenina's checkpoint ``rating``), dynamic traits included:
    # read from the graph here, not through the authoring API, which leaves dynamic traits out.
    stored = [RubricTrait.from_rating(r) for r in bench._header().get("rating") or []]
    global_traits = [tr for tr in stored if not tr.dynamic]
    global_dynamic = [tr for tr in stored if tr.dynamic]
    rubric_modes = opts.mode != "template_only"
    if global_dynamic and not rubric_modes:
        notes.append(
            f"{len(global_dynamic)} dynamic rubric trait(s) not evaluated: mode template_only evaluates no rubric"
        )
    the_plan: Plan = plan(
        questions,
        global_traits + global_dynamic if rubric_modes else None,
        answerers if answerers else (answer_identities or []),
        judges,
        opts.mode,
        opts.replicates,
    )
    notes.extend(the_plan.notes)
    if answers is not None:
        planned = len(the_plan.tasks)
        the_plan.tasks = [tk for tk in the_plan.tasks if tk.answer_key in answers]
        if not the_plan.tasks:
            raise VerificationError(f"no recorded answer is for a finished question of benchmark {bench.id!r}")
        if len(the_plan.tasks) < planned:
            notes.append(f"{planned - len(the_plan.tasks)} task(s) have no recorded answer: left out")
    if resume is not None:  # by id or IRI
        from karenina_rdf.results import resolve_run, run_summary

        resume = run_summary(store, *resolve_run(store, resume)).run_id
    run_id = resume or opts.run_id or f"verify-{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    config = {
        "benchmark": bench.id,
        "benchmark_iri": bench_iri,
        "benchmark_graph": bench_graph.value,
        "mode": opts.mode,
        "replicates": opts.replicates,
        "questions": list(opts.questions) if opts.questions else None,
        "answerers": [_model_record(m) for m in (answerers or answer_identities or [])],
        "judges": [_model_record(m) for m in judges],
        "trust_callables": opts.trust_callables,
        "rubric_strategy": opts.rubric_strategy,
        "few_shot": opts.few_shot,
        "few_shot_config": fs.model_dump() if (fs := opts.few_shot_effective()) is not None else None,
        "prompt_config": opts.prompt_config.model_dump(exclude_none=True) if opts.prompt_config else None,
        "abstention_enabled": opts.abstention_enabled,
        "sufficiency_enabled": opts.sufficiency_enabled,
        "deep_judgment": opts.deep_judgment.model_dump(),
        "deep_judgment_rubric": opts.deep_judgment_rubric.model_dump(by_alias=True),
        "embedding_check": opts.embedding_check.model_dump(),
        "scheduling": sched.model_dump(),
        "run_name": opts.run_name,
        "retry_budgets": DEFAULT_BUDGETS,
        **(extra_config or {}),
    }
    if sandbox is None:  # refuse before anything is written when the host cannot box the code
        from karenina_rdf.runner.sandbox import check_isolation

        check_isolation("unsafe-none" if opts.unsafe_no_isolation else "kernel")
    live = _open_run(
        len({tk.question.question_id for tk in the_plan.tasks}),
        informed_by,
        store,
        run_id,
        bench_iri,
        bench_graph.value,
        bench,
        config,
        opts,
        judges,
        answerers,
        answer_identities,
        global_traits,
        resume,
        extend,
    )
    done_keys = live.stored_keys()
    todo = order_tasks([tk for tk in the_plan.tasks if _key(tk, opts.run_name) not in done_keys], sched.task_ordering)
    skipped = len(the_plan.tasks) - len(todo)
    owned = None
    if sandbox is None:
        from karenina_rdf.runner.sandbox import Sandbox

        owned = sandbox = Sandbox(
            workers=max(1, min(opts.concurrency, os.cpu_count() or 2)),
            isolation="unsafe-none" if opts.unsafe_no_isolation else "kernel",
        )
    pipeline = Pipeline(
        sandbox=sandbox,
        global_traits=tuple(global_traits) if rubric_modes else (),
        trust_callables=opts.trust_callables,
        rubric_strategy=opts.rubric_strategy,
        budgets=DEFAULT_BUDGETS,
        run_name=opts.run_name,
        few_shot=opts.few_shot_effective(),
        answers=Answers(answers if answers is not None else _answers_of(store, resume, done_keys)),
        cost=cost,
        abstention=opts.abstention_enabled,
        sufficiency=opts.sufficiency_enabled,
        prompt_config=opts.prompt_config,
        global_dynamic=tuple(global_dynamic) if rubric_modes else (),
        deep_judgment=opts.deep_judgment,
        deep_judgment_rubric=opts.deep_judgment_rubric,
        embedding_check=opts.embedding_check,
        embedder=embedder,
    )
    counts: Counter[str] = Counter()
    total_cost: list[float | None] = [0.0]
    timed_out = threading.Event()
    # Until _execute says otherwise: an error escaping it leaves a run --resume can finish.
    status: Literal["completed", "interrupted"] = "interrupted"
    bar = _Progress(len(the_plan.tasks), skipped, progress, progress_callback)
    try:
        status = _execute(
            todo,
            pipeline,
            live,
            opts.concurrency,
            counts,
            total_cost,
            bar,
            stop or threading.Event(),
            gate=AnswererGate(answerer_limits(sched.answerer_concurrency_limits, answerers or [])),
            timeout=sched.batch_timeout_seconds,
            timed_out=timed_out,
        )
    finally:
        bar.close()
        if owned is not None:
            owned.close()
        ended = time.time()
        live.header["metadata"]["export_timestamp"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        summary = live.header["metadata"]["job_summary"]
        summary.update(
            successful_count=summary["successful_count"] + counts["passed_ok"],
            failed_count=summary["failed_count"] + counts["failure"],
            end_time=ended,
            total_duration=round(ended - summary["start_time"], 3),
            is_complete=status == "completed",
        )
        live.finish(summary, status)
    if timed_out.is_set():  # Karenina raises here; the completed results are stored, the run resumable
        raise VerificationError(
            timeout_message(sched.batch_timeout_seconds or 0.0, counts["done"], len(todo))
            + f"; continue with --resume {run_id}"
        )
    failures = {k[len("cat:") :]: v for k, v in counts.items() if k.startswith("cat:")}
    return RunReport(
        run_id=run_id,
        iri=live.iri,
        benchmark=bench.id,
        status=status,
        tasks=len(the_plan.tasks),
        skipped=skipped,
        completed=counts["done"],
        passed=counts["passed"],
        failed=counts["failed"],
        failures=failures,
        abstained=counts["abstained"] if opts.abstention_enabled else None,
        insufficient=counts["insufficient"] if opts.sufficiency_enabled else None,
        cost_usd=total_cost[0],
        seconds=round(time.time() - started, 3),
        notes=tuple(notes),
        timings={**pipeline.timings, "store_write": live.write_seconds},
    )


def _embedder_of(judges: list[ModelSpec]) -> Any:
    """The first judge's provider when it serves embeddings, else a clear refusal (before
    anything is written): Karenina's check would load a local model; here it is an endpoint."""
    provider = judges[0].provider if judges else None
    if provider is None or not getattr(provider, "serves_embeddings", False):
        model = judges[0].model if judges else None
        raise VerificationError(
            f"embedding_check is on, but the judge {model!r} serves no embeddings: the check needs an embeddings "
            "endpoint (an OpenAI-compatible server's /embeddings); give an embedder, or switch embedding_check off"
        )
    return provider


def embedder_of(transport: Any, judges: list[ModelSpec], model: str) -> Any:
    """The embedding check's endpoint from ``transport`` (a ``_models.Transport``), or a refusal
    naming the judge and the switch when it has no OpenAI-compatible server to ask."""
    try:
        return transport.embedder()
    except VerificationError:
        judge = judges[0].model if judges else None
        raise VerificationError(
            f"embedding_check is on, but the judge {judge!r} serves no embeddings and no OpenAI-compatible "
            f"server is given to embed with model {model!r} (its base URL or $OPENAI_BASE_URL): give one, "
            "or switch embedding_check off"
        ) from None


def _check_embedder(embedder: Any, model: str) -> Any:
    """An embeddings provider that cannot embed (a replay file without recorded embeddings, a
    provider without that capability) would fail the check of every task, each recorded as an
    attempt without a score: refused once, up front, naming the model and the switch."""
    if not getattr(embedder, "serves_embeddings", False):
        raise VerificationError(
            f"embedding_check is on, but {_describe(embedder)} serves no embeddings for model {model!r}: "
            "give an embeddings endpoint, or switch embedding_check off"
        )
    return embedder


def _describe(provider: Any) -> str:
    from karenina_rdf.runner.providers import ReplayProvider

    while not isinstance(provider, ReplayProvider) and getattr(provider, "inner", None) is not None:
        provider = provider.inner  # retries, permits, recording: the provider they wrap
    if isinstance(provider, ReplayProvider):
        return f"the replay file {str(provider.path)!r}"
    return f"the embeddings provider {provider!r}"


def _key(task: Task, run_name: str | None) -> str:
    """The row key the task's result will have, known before it runs: resuming skips tasks
    whose result is stored."""
    q = task.question
    return row_key(
        {
            "question_id": q.question_id,
            "template_id": q.template_id,
            "answering": task.answerer_identity,
            "parsing": task.judge.identity,
            "replicate": task.replicate,
            "run_name": run_name,
        }
    )


def _open_run(
    total_questions: int,
    informed_by: str | None,
    store: Store,
    run_id: str,
    bench_iri: str,
    bench_graph: str,
    bench: Any,
    config: dict[str, Any],
    opts: RunOptions,
    judges: list[ModelSpec],
    answerers: list[ModelSpec] | None,
    identities: list[dict[str, Any]] | None,
    global_traits: list[RubricTrait],
    resume: str | None,
    extend: bool = False,
) -> LiveRun:
    if resume is not None:
        stored = stored_config(store, resume)
        keys: tuple[str, ...] = ("benchmark_iri", "mode", "replicates", "questions", "answerers", "judges", "run_name")
        if extend:  # more models, replicates or questions: what the results are must not change
            keys = ("benchmark_iri", "mode", "run_name")
        diff = [k for k in keys if stored.get(k) != config.get(k)]
        if diff:
            raise VerificationError(
                f"run {resume!r} was started with other settings ({', '.join(diff)}): "
                "resume it with the settings it was started with"
            )
        if not extend:
            config = stored
    now = time.time()
    header: dict[str, Any] = {
        "format_version": "2.2",
        "metadata": {
            "export_timestamp": None,
            "karenina_version": f"karenina-rdf {_versions().get('karenina-rdf', '')}".strip(),
            "job_id": run_id,
            "verification_config": {
                "answering_models": [_model_config(m) for m in (answerers or identities or [])],
                "parsing_models": [_model_config(m) for m in judges],
            },
            "job_summary": {
                "total_questions": total_questions,
                "successful_count": 0,
                "failed_count": 0,
                "start_time": now,
                "end_time": None,
                "total_duration": None,
                "is_complete": False,
            },
        },
        "shared_data": {
            "rubric_definition": rubric_definition(global_traits) if opts.mode != "template_only" else None
        },
    }
    provenance = RunProvenance(
        configuration=config,
        versions=_versions(),
        benchmark=bench_iri,
        benchmark_graph=bench_graph,
        benchmark_version=bench.version or None,
        benchmark_modified=bench.modified_at or None,
        run_name=opts.run_name or None,
        informed_by=informed_by or None,
    )
    live = LiveRun(store, run_id, benchmark=bench_iri, header=header, provenance=provenance, resume=resume is not None)
    if resume is not None:
        _carry_summary(store, live)
    return live


def _carry_summary(store: Store, live: LiveRun) -> None:
    """A resumed run keeps its start time and counts so far."""
    old = stored_header(store, live.iri, live.graph)
    summary = (old.get("metadata") or {}).get("job_summary")
    if isinstance(summary, dict):
        mine = live.header["metadata"]["job_summary"]
        for k in ("start_time", "successful_count", "failed_count"):
            if summary.get(k) is not None:
                mine[k] = summary[k]


def stored_config(store: Store, run: str) -> dict[str, Any]:
    """The configuration a run made by ``verify`` recorded (``karenina:configuration``)."""
    config = run_configuration(store, run)
    if config is None:
        raise VerificationError(f"run {run!r} was not made by karenina-rdf verify: it records no configuration")
    return config


def _answers_of(store: Store, run: str | None, done_keys: set[str]) -> dict[tuple[str, str, int | None], str] | None:
    """The answers a resumed run already graded: judges still to come grade the same answer,
    not a new one (Karenina shares one answer between the judges of a task)."""
    if run is None or not done_keys:
        return None
    from ._recorded import stored_answers

    try:
        return stored_answers(store, run)[0]
    except VerificationError:  # no result of the run holds an answer
        return None


def _execute(
    todo: list[Task],
    pipeline: Pipeline,
    live: LiveRun,
    concurrency: int,
    counts: Counter[str],
    total_cost: list[float | None],
    bar: _Progress,
    stop: threading.Event,
    *,
    gate: Gate | None = None,
    timeout: float | None = None,
    timed_out: threading.Event | None = None,
) -> Literal["completed", "interrupted"]:
    tasks: queue.Queue[Task] = queue.Queue()
    done: queue.Queue[tuple[dict[str, Any], dict[str, float | None]]] = queue.Queue()
    for tk in todo:
        tasks.put(tk)

    def worker() -> None:
        while not stop.is_set():
            try:
                tk = tasks.get_nowait()
            except queue.Empty:
                return
            if gate is None:
                done.put(pipeline.run(tk))
                continue
            with gate(tk):  # Karenina's per-answerer permit, held for the whole task
                done.put(pipeline.run(tk))

    threads = [threading.Thread(target=worker, daemon=True, name=f"verify-{i}") for i in range(max(1, concurrency))]
    for th in threads:
        th.start()

    def drain(into: list[Any], limit: int | None = None) -> list[Any]:
        while limit is None or len(into) < limit:
            try:
                into.append(done.get_nowait())
            except queue.Empty:
                break
        return into

    remaining = len(todo)
    batch: list[Any] = []  # completed, not yet stored
    first_at = 0.0  # when the oldest of them completed
    deadline = time.monotonic() + timeout if timeout is not None else None
    try:
        while remaining and not stop.is_set():
            if deadline is not None and time.monotonic() >= deadline and timed_out is not None:
                # Karenina's batch timeout: no further task starts; those in flight finish and are stored.
                timed_out.set()
                deadline = None
                while True:
                    try:
                        tasks.get_nowait()
                    except queue.Empty:
                        break
                    remaining -= 1
                if not remaining:
                    break
            wait = _FLUSH_SECONDS if not batch else max(0.0, first_at + _FLUSH_SECONDS - time.monotonic())
            try:
                got = done.get(timeout=wait)
            except queue.Empty:
                got = None
                if not batch and not any(th.is_alive() for th in threads) and done.empty():
                    break
            if got is not None:
                if not batch:
                    first_at = time.monotonic()
                batch = drain([*batch, got], _FLUSH_SIZE)
            # One store write for the batch: when it is full, has waited long enough, or holds
            # every task left (the run's last results are not kept waiting).
            if batch and (
                len(batch) >= _FLUSH_SIZE
                or time.monotonic() - first_at >= _FLUSH_SECONDS
                or len(batch) >= remaining
                or not any(th.is_alive() for th in threads)
            ):
                _store(batch, live, counts, total_cost, bar)
                remaining -= len(batch)
                batch = []
    except KeyboardInterrupt:
        stop.set()
    if not stop.is_set():
        return "completed" if remaining == 0 and not (timed_out and timed_out.is_set()) else "interrupted"
    # Stopped: no task starts; the tasks in flight finish and are stored, unless a second
    # Ctrl-C says not to wait. What is complete is stored either way (a batch cut short, once).
    bar.note("stopping: finishing the tasks in flight (Ctrl-C again to stop now)")
    try:
        while any(th.is_alive() for th in threads):
            for th in threads:
                th.join(timeout=0.1)
            batch = drain(batch)
    except KeyboardInterrupt:
        pass
    _store(drain(batch), live, counts, total_cost, bar)
    return "interrupted"


def _store(
    batch: list[tuple[dict[str, Any], dict[str, float | None]]],
    live: LiveRun,
    counts: Counter[str],
    total_cost: list[float | None],
    bar: _Progress,
) -> None:
    if not batch:
        return
    stored = live.add([r for r, _ in batch], [c for _, c in batch])
    passed = failed = 0
    for result, costs in (batch[i] for i in stored):
        counts["done"] += 1
        tpl = result["template"]
        counts["abstained"] += tpl.get("abstention_detected") is True
        counts["insufficient"] += tpl.get("sufficiency_detected") is False
        failure = result["metadata"]["failure"]
        verdict = result["template"]["verify_result"]
        if failure is None:
            counts["passed_ok"] += 1
        else:
            counts["failure"] += 1
            counts["cat:" + failure["category"]] += 1
        if verdict is True:
            counts["passed"] += 1
            passed += 1
        elif failure is not None:
            counts["failed"] += 1
            failed += 1
        for value in costs.values():
            if value is None:
                total_cost[0] = None
            elif total_cost[0] is not None:
                total_cost[0] += value
    bar.update(len(batch), counts["passed"], counts["failed"])


def verify(
    store: Store,
    benchmark: str,
    *,
    judges: list[str | ModelSpec] | None = None,
    answerers: list[str | ModelSpec] | None = None,
    answers: str | Path | None = None,
    mode: Mode | None = None,
    replicates: int = 1,
    questions: list[str] | None = None,
    concurrency: int = 4,
    trust_callables: bool = False,
    unsafe_no_isolation: bool = False,
    few_shot: bool = False,
    few_shot_config: FewShotConfig | dict[str, Any] | None = None,
    prompt_config: PromptConfig | dict[str, Any] | None = None,
    abstention: bool = False,
    sufficiency: bool = False,
    deep_judgment: DeepJudgmentConfig | dict[str, Any] | None = None,
    deep_judgment_rubric: RubricDeepJudgmentConfig | dict[str, Any] | None = None,
    embedding_check: EmbeddingCheckConfig | dict[str, Any] | None = None,
    rubric_strategy: Literal["batch", "sequential"] | None = None,
    scheduling: Scheduling | dict[str, Any] | None = None,
    run: str | None = None,
    run_name: str | None = None,
    resume: str | None = None,
    replay: str | Path | None = None,
    record: str | Path | None = None,
    cache: bool = True,
    base_url: str | None = None,
    progress: bool = False,
    stop: threading.Event | None = None,
) -> RunReport:
    """``karenina-rdf verify`` from Python (the command calls this). Models are ``PROVIDER:MODEL``
    specs (or ModelSpec objects, e.g. a fake model for tests); ``answers`` is an answers JSONL
    file. With ``resume``, what is not given is read from the run's stored configuration:
    models, mode, replicates, questions, options, the answers file, the server and a replay file.
    ``cache`` keeps model responses in the store's folder (an on-disk store only)."""
    from karenina_rdf.runner.providers import cost_usd

    from ._models import Transport
    from ._recorded import read_answers

    strategy: Literal["batch", "sequential"] = rubric_strategy or "batch"
    if resume is not None:
        stored = stored_config(store, resume)
        answerers = answerers or [m["spec"] for m in stored["answerers"] if "spec" in m] or None
        judges = judges or [m["spec"] for m in stored["judges"]]
        mode = mode or stored["mode"]
        replicates = stored["replicates"] if replicates == 1 else replicates
        questions = questions or stored["questions"]
        trust_callables = trust_callables or stored["trust_callables"]
        run_name = run_name or stored["run_name"]
        few_shot = few_shot or bool(stored.get("few_shot"))
        few_shot_config = few_shot_config or stored.get("few_shot_config")
        prompt_config = prompt_config or stored.get("prompt_config")
        abstention = abstention or bool(stored.get("abstention_enabled"))
        sufficiency = sufficiency or bool(stored.get("sufficiency_enabled"))
        deep_judgment = deep_judgment or stored.get("deep_judgment")
        deep_judgment_rubric = deep_judgment_rubric or stored.get("deep_judgment_rubric")
        embedding_check = embedding_check or stored.get("embedding_check")
        scheduling = scheduling or stored.get("scheduling")
        strategy = "sequential" if stored.get("rubric_strategy") == "sequential" else strategy
        answers = answers or stored.get("answers_file")
        # The same server answers the rest of the run, and a replayed run stays replayed.
        was = stored.get("transport") or {}
        base_url = base_url or was.get("base_url")
        if replay is None and record is None and was.get("replay"):
            replay = was["replay"]
    if not judges:
        raise VerificationError("a run needs a judge: --judge PROVIDER:MODEL")
    if bool(answerers) == bool(answers):
        raise VerificationError("give the answering model (--answerer) or recorded answers (--answers), one of them")
    if mode is not None and mode not in MODES:
        raise VerificationError(f"--mode {mode!r}: one of {', '.join(MODES)}")
    transport = Transport.for_store(store, replay=replay, record=record, cache=cache, base_url=base_url)

    def model(m: str | ModelSpec) -> ModelSpec:
        return transport.model(m) if isinstance(m, str) else m

    judge_specs = [model(j) for j in judges]
    answerer_specs = [model(a) for a in answerers or []]
    recorded = identities = None
    extra: dict[str, Any] = {"transport": transport.describe()}
    if answers is not None:
        recorded, identities, n = read_answers(answers)
        replicates = max(replicates, n)
        extra["answers_file"] = str(Path(answers).resolve())
    try:
        options = RunOptions(
            mode=mode or "template_only",
            replicates=replicates,
            questions=tuple(questions) if questions else None,
            concurrency=concurrency,
            trust_callables=trust_callables,
            unsafe_no_isolation=unsafe_no_isolation,
            few_shot=few_shot,
            few_shot_config=FewShotConfig.model_validate(few_shot_config) if few_shot_config else None,
            prompt_config=PromptConfig.model_validate(prompt_config) if prompt_config else None,
            abstention_enabled=abstention,
            sufficiency_enabled=sufficiency,
            deep_judgment=DeepJudgmentConfig.model_validate(deep_judgment or {}),
            deep_judgment_rubric=RubricDeepJudgmentConfig.model_validate(deep_judgment_rubric or {}),
            embedding_check=EmbeddingCheckConfig.model_validate(embedding_check or {}),
            scheduling=Scheduling.model_validate(scheduling or {}),
            rubric_strategy=strategy,
            run_id=run,
            run_name=run_name,
        )
    except ValidationError as exc:  # options from a Python caller, said as one line of ours
        raise VerificationError(validation_message(exc)) from None
    return run_verification(
        store,
        benchmark,
        judges=judge_specs,
        answerers=answerer_specs or None,
        answers=recorded,
        answer_identities=identities,
        options=options,
        resume=resume,
        progress=progress,
        cost=cost_usd,
        extra_config=extra,
        stop=stop,
        embedder=embedder_of(transport, judge_specs, options.embedding_check.model)
        if options.embedding_check.enabled
        else None,
    )


def rescore(
    store: Store,
    run: str,
    *,
    judges: list[ModelSpec],
    options: RunOptions | None = None,
    sandbox: SandboxLike | None = None,
    progress: bool = False,
    cost: Any = None,
    stop: threading.Event | None = None,
) -> RunReport:
    """Grade the answers stored in ``run`` again, with ``judges`` (and the benchmark's current
    templates and rubric): a new run, no answering model called."""
    from karenina_rdf.results import resolve_run

    from ._recorded import stored_answers

    old_iri, _ = resolve_run(store, run)
    answers, identities, replicates, benches = stored_answers(store, run)
    if len(benches) != 1:
        found = ", ".join(sorted(benches)) or "none"
        raise VerificationError(f"run {run!r} must name exactly one stored benchmark to rescore (it names: {found})")
    opts = (options or RunOptions()).model_copy(update={"replicates": replicates})
    return run_verification(
        store,
        next(iter(benches)),
        judges=judges,
        answers=answers,
        answer_identities=identities,
        options=opts,
        sandbox=sandbox,
        progress=progress,
        cost=cost,
        extra_config={"rescored_from": old_iri},
        stop=stop,
        informed_by=old_iri,
    )


__all__ = ["rescore", "RETRY_CATEGORIES", "RunOptions", "RunReport", "run_verification", "stored_config"]
