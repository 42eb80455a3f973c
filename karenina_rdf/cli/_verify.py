"""``karenina-rdf verify``, ``rescore`` and ``templates generate``: run verification from the store.

Exit codes: 0 when the run completed (failed tasks are results, not errors); 2 for options that
do not make a run (no judge, both or neither of ``--answerer`` and ``--answers``, a model spec,
mode or question id that does not exist, an unreadable answers file); 1 for bad data (a bad line
of the answers file, an unknown benchmark or run, a store that cannot be opened); 130 when
interrupted (what completed is stored; ``--resume RUN`` finishes it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from karenina_rdf._errors import VerificationError
from karenina_rdf.runner import RunOptions, RunReport

from ._common import BaseOpt, StoreOpt, _errors, _open, err, out
from ._progress import ProgressOpt, QuietOpt, wanted

templates_app = typer.Typer(help="Answer templates: generate them with a model.", no_args_is_help=True)

AnswererOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--answerer", "-a", help="Answering model, PROVIDER:MODEL (anthropic:…, openai:…); repeat for several."
    ),
]
JudgeOpt = Annotated[
    list[str] | None,
    typer.Option("--judge", "-j", help="Judge (parsing) model, PROVIDER:MODEL; repeat for several."),
]
ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode", "-m", help="template_only, template_and_rubric or rubric_only.", show_default="template_only"
    ),
]
ReplayOpt = Annotated[
    Path | None,
    typer.Option("--replay", help="Answer every model call from this recordings file (JSONL); no model is called."),
]
RecordOpt = Annotated[
    Path | None, typer.Option("--record", help="Append every model response to this recordings file.")
]
CacheOpt = Annotated[
    bool, typer.Option("--cache/--no-cache", help="Keep model responses in the store's response cache and reuse them.")
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", envvar="OPENAI_BASE_URL", help="The OpenAI-compatible server of openai:… models."),
]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Tasks run at once.")]
TrustOpt = Annotated[
    bool, typer.Option("--trust-callables", help="Run the benchmark's callable traits (pickled code, in the sandbox).")
]
UnsafeOpt = Annotated[
    bool,
    typer.Option(
        "--unsafe-no-isolation",
        help="Run template and callable code even where bubblewrap cannot box it (UNSAFE: that code can then "
        "read and write what you can).",
    ),
]
RunIdOpt = Annotated[str | None, typer.Option("--run", help="Id of the new run (default: verify-<time>-<random>).")]


def _transport(store: Any, replay: Path | None, record: Path | None, cache: bool, base_url: str | None) -> Any:
    from karenina_rdf.runner import Transport

    return Transport.for_store(store, replay=replay, record=record, cache=cache, base_url=base_url)


def _cost() -> Any:
    from karenina_rdf.runner.providers import cost_usd

    return cost_usd


def _report(r: RunReport) -> None:
    for note in r.notes:
        err.print(f"[yellow]note:[/yellow] {escape(note)}")
    verb = "[green]completed[/green]" if r.status == "completed" else "[yellow]interrupted[/yellow]"
    out.print(
        f"{verb} run {escape(r.run_id)} on {escape(r.benchmark)}: {r.completed} of {r.tasks - r.skipped} tasks "
        f"stored ({r.skipped} stored before), {r.passed} passed, {r.failed} failed, {r.seconds:.1f} s"
    )
    if r.failures:
        out.print("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(r.failures.items())))
    checks = [
        f"{n} {what}" for n, what in ((r.abstained, "abstained"), (r.insufficient, "insufficient")) if n is not None
    ]
    if checks:
        out.print("checks: " + ", ".join(checks))
    out.print(f"cost: {'unknown (a model has no price)' if r.cost_usd is None else f'${r.cost_usd:.4f}'}")
    if r.status != "completed":
        out.print(f"continue with: karenina-rdf verify {escape(r.benchmark)} --resume {escape(r.run_id)}")


@contextmanager
def _ctrl_c() -> Iterator[None]:
    """Ctrl-C outside the run's own handler (opening the store, reading answers, starting the
    sandbox) ends the command quietly: nothing was stored yet, or the run already saved its state."""
    try:
        yield
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None


def verify(
    benchmark: Annotated[str, typer.Argument(help="The stored benchmark (id, IRI or name).")],
    answerer: AnswererOpt = None,
    judge: JudgeOpt = None,
    answers: Annotated[
        Path | None, typer.Option("--answers", help="Grade answers recorded elsewhere (JSONL: question_id, response).")
    ] = None,
    mode: ModeOpt = None,
    replicates: Annotated[int, typer.Option("--replicates", "-r", min=1, help="Answers per question and model.")] = 1,
    questions: Annotated[list[str] | None, typer.Option("--questions", "-q", help="Only these question ids.")] = None,
    concurrency: ConcurrencyOpt = 4,
    trust_callables: TrustOpt = False,
    unsafe_no_isolation: UnsafeOpt = False,
    few_shot: Annotated[
        bool, typer.Option("--few-shot", help="Give answerers the questions' few-shot examples.")
    ] = False,
    few_shot_mode: Annotated[
        str | None,
        typer.Option(
            "--few-shot-mode",
            help="Karenina's pool mode: all, k-shot (--few-shot-k of each question's examples, drawn as Karenina "
            "draws them), custom (selections from --few-shot-config) or none.",
        ),
    ] = None,
    few_shot_k: Annotated[int, typer.Option("--few-shot-k", min=1, help="Examples per question in k-shot mode.")] = 3,
    few_shot_config: Annotated[
        Path | None, typer.Option("--few-shot-config", help="A JSON file holding Karenina's FewShotConfig.")
    ] = None,
    prompt_config: Annotated[
        Path | None,
        typer.Option("--prompt-config", help="A JSON file holding Karenina's PromptConfig (per-task instructions)."),
    ] = None,
    abstention: Annotated[
        bool, typer.Option("--abstention/--no-abstention", help="Ask the judge whether each answer abstains.")
    ] = False,
    sufficiency: Annotated[
        bool,
        typer.Option("--sufficiency/--no-sufficiency", help="Ask the judge whether each answer can fill the template."),
    ] = False,
    deep_judgment: Annotated[
        str | None,
        typer.Option(
            "--deep-judgment-mode",
            help="Karenina's template deep judgment: disabled, reasoning_only or full (quotes, reasoning, "
            "then the parse; an attribute without a quote fails the verdict). No web search.",
        ),
    ] = None,
    djr_mode: Annotated[
        str | None,
        typer.Option(
            "--deep-judgment-rubric-mode",
            help="Karenina's deep judgment for LLM rubric traits: disabled (only traits whose own settings "
            "ask for it), enable_all, use_checkpoint (each trait's settings) or custom "
            "(--deep-judgment-rubric-config). No web search.",
        ),
    ] = None,
    djr_excerpts: Annotated[
        bool | None,
        typer.Option(
            "--deep-judgment-rubric-excerpts/--no-deep-judgment-rubric-excerpts",
            help="enable_all: quote evidence first (default) or reason from the whole answer.",
        ),
    ] = None,
    djr_max_excerpts: Annotated[
        int | None, typer.Option("--deep-judgment-rubric-max-excerpts", min=1, help="enable_all: quotes per trait (7).")
    ] = None,
    djr_threshold: Annotated[
        float | None,
        typer.Option(
            "--deep-judgment-rubric-fuzzy-threshold", min=0.0, max=1.0, help="enable_all: quote similarity (0.80)."
        ),
    ] = None,
    djr_retries: Annotated[
        int | None,
        typer.Option("--deep-judgment-rubric-retry-attempts", min=0, help="enable_all: excerpt retries (2)."),
    ] = None,
    djr_config: Annotated[
        Path | None,
        typer.Option(
            "--deep-judgment-rubric-config",
            help="custom: a JSON file holding Karenina's DeepJudgmentRubricCustomConfig (global, question_specific).",
        ),
    ] = None,
    embedding_check: Annotated[
        bool,
        typer.Option(
            "--embedding-check/--no-embedding-check",
            help="Karenina's embedding check: when the field verification fails, embed the parsed ground truth "
            "and answer (the server's /embeddings) and, at or above the threshold, ask the judge whether they "
            "are equivalent; a yes overrides the field verdict.",
        ),
    ] = False,
    embedding_model: Annotated[
        str | None, typer.Option("--embedding-model", help="Embeddings model name (default all-MiniLM-L6-v2).")
    ] = None,
    embedding_threshold: Annotated[
        float | None,
        typer.Option("--embedding-threshold", min=0.0, max=1.0, help="Cosine similarity to reach (default 0.85)."),
    ] = None,
    task_ordering: Annotated[
        str | None,
        typer.Option(
            "--task-ordering",
            help="Karenina's task_ordering: auto (default), prefix_cache, distribute_answerers, random, "
            "generation_order.",
        ),
    ] = None,
    answerer_limit: Annotated[
        list[str] | None,
        typer.Option(
            "--answerer-concurrency-limit",
            help="Karenina's answerer_concurrency_limits: N for every answering model with an id, or ID=N "
            "(repeatable); a capped answerer runs at most N tasks at once.",
        ),
    ] = None,
    max_concurrent_requests: Annotated[
        int | None,
        typer.Option("--max-concurrent-requests", min=1, help="At most this many model calls in flight at once."),
    ] = None,
    batch_timeout: Annotated[
        float | None,
        typer.Option(
            "--batch-timeout",
            help="Seconds after which no further task starts; the run ends interrupted (resumable).",
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help="A Karenina preset (its saved VerificationConfig): a file, or a name in $KARENINA_PRESETS_DIR "
            "(default ./presets). Models, mode, replicates and the other options given here replace its values; "
            "stage switches given turn stages on.",
        ),
    ] = None,
    run: RunIdOpt = None,
    run_name: Annotated[str | None, typer.Option("--run-name", help="Karenina's run_name of every result.")] = None,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Continue this stored run: tasks with a stored result are not rerun.")
    ] = None,
    replay: ReplayOpt = None,
    record: RecordOpt = None,
    cache: CacheOpt = True,
    base_url: BaseUrlOpt = None,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Answer, judge and grade a benchmark's finished questions; every result is stored as it completes."""
    from karenina_rdf.runner import verify as run_verify

    with _ctrl_c(), _errors(usage=(VerificationError,)):
        fs, pc = _prompting(few_shot_mode, few_shot_k, few_shot_config, prompt_config)
        if deep_judgment is not None and deep_judgment not in ("disabled", "reasoning_only", "full"):
            raise VerificationError(f"--deep-judgment-mode {deep_judgment!r}: one of disabled, reasoning_only, full")
        djr = _rubric_deep_judgment(djr_mode, djr_excerpts, djr_max_excerpts, djr_threshold, djr_retries, djr_config)
        if preset is not None and resume is not None:
            raise VerificationError("--resume reads the run's stored configuration: --preset is not needed")
        s = _open(store, base_iri)
        try:
            given: dict[str, Any] = {
                "judges": list(judge or []) or None,
                "answerers": list(answerer or []) or None,
                "answers": answers,
                "mode": _mode(mode) if mode is not None else None,
                "replicates": replicates,
                "concurrency": concurrency,
                "few_shot": few_shot,
                "few_shot_config": fs,
                "prompt_config": pc,
                "abstention": abstention,
                "sufficiency": sufficiency,
                "deep_judgment": {"mode": deep_judgment} if deep_judgment else None,
                "deep_judgment_rubric": djr,
                "embedding_check": _embedding(embedding_check, embedding_model, embedding_threshold),
                "base_url": base_url,
                "scheduling": _scheduling(task_ordering, answerer_limit, max_concurrent_requests, batch_timeout),
            }
            if preset is not None:
                from karenina_rdf.runner import with_preset

                given = with_preset(s, preset, given)
            report = run_verify(
                s,
                benchmark,
                questions=questions,
                trust_callables=trust_callables,
                unsafe_no_isolation=unsafe_no_isolation,
                run=run,
                run_name=run_name,
                resume=resume,
                replay=replay,
                record=record,
                cache=cache,
                progress=wanted(progress, quiet),
                **given,
            )
        finally:
            s.close()
    _report(report)
    if report.status != "completed":
        raise typer.Exit(130)


def _rubric_deep_judgment(
    mode: str | None,
    excerpts: bool | None,
    max_excerpts: int | None,
    threshold: float | None,
    retries: int | None,
    config_file: Path | None,
) -> dict[str, Any] | None:
    """The ``--deep-judgment-rubric-*`` options as RubricDeepJudgmentConfig fields (None: none given)."""
    import json

    if mode is not None and mode not in ("disabled", "enable_all", "use_checkpoint", "custom"):
        raise VerificationError(
            f"--deep-judgment-rubric-mode {mode!r}: one of disabled, enable_all, use_checkpoint, custom"
        )
    given: dict[str, Any] = {
        "mode": mode,
        "global_excerpts": excerpts,
        "max_excerpts_default": max_excerpts,
        "fuzzy_match_threshold_default": threshold,
        "excerpt_retry_attempts_default": retries,
    }
    if config_file is not None:
        try:
            given["config"] = json.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise VerificationError(f"--deep-judgment-rubric-config {config_file}: {exc}") from None
    if given.get("mode") == "custom" and "config" not in given:
        raise VerificationError("--deep-judgment-rubric-mode custom needs --deep-judgment-rubric-config FILE")
    chosen = {k: v for k, v in given.items() if v is not None}
    return chosen or None


def _scheduling(
    ordering: str | None, limits: list[str] | None, max_requests: int | None, timeout: float | None
) -> dict[str, Any] | None:
    """Karenina's scheduling settings from the options (None: none given)."""
    out: dict[str, Any] = {}
    if ordering is not None:
        orderings = ("auto", "prefix_cache", "distribute_answerers", "random", "generation_order")
        if ordering not in orderings:
            raise VerificationError(f"--task-ordering {ordering!r}: one of {', '.join(orderings)}")
        out["task_ordering"] = ordering
    if limits:
        caps: dict[str, int] = {}
        for item in limits:
            key, eq, n = item.rpartition("=")
            if not n.strip().isdigit() or int(n) < 1 or (eq and not key):
                raise VerificationError(f"--answerer-concurrency-limit {item!r}: N or ID=N, N a positive integer")
            if not eq:
                if len(limits) > 1:
                    raise VerificationError("--answerer-concurrency-limit N (for every answerer) is given once")
                out["answerer_concurrency_limits"] = int(n)
            else:
                caps[key] = int(n)
        if caps:
            out["answerer_concurrency_limits"] = caps
    if max_requests is not None:
        out["max_concurrent_requests"] = max_requests
    if timeout is not None:
        if not timeout > 0:
            raise VerificationError(f"--batch-timeout {timeout}: a number of seconds above 0")
        out["batch_timeout_seconds"] = timeout
    return out or None


def _embedding(enabled: bool, model: str | None, threshold: float | None) -> dict[str, Any] | None:
    """Karenina's embedding_check_* settings from the options; a model or threshold alone is refused."""
    if not enabled:
        if model is not None or threshold is not None:
            raise VerificationError("--embedding-model and --embedding-threshold need --embedding-check")
        return None
    out: dict[str, Any] = {"enabled": True}
    if model is not None:
        out["model"] = model
    if threshold is not None:
        out["threshold"] = threshold
    return out


def _prompting(mode: str | None, k: int, fs_file: Path | None, pc_file: Path | None) -> tuple[Any, Any]:
    """Karenina's FewShotConfig and PromptConfig from the options (a file's config, or the mode)."""
    import json

    from pydantic import ValidationError

    from karenina_rdf._errors import validation_message
    from karenina_rdf.runner import FewShotConfig, PromptConfig, few_shot_for_mode

    def load(path: Path, cls: Any, option: str) -> Any:
        try:
            return cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            if isinstance(exc, ValidationError):
                raise VerificationError(f"{option} {path}: {validation_message(exc)}") from None
            raise VerificationError(f"{option} {path}: {exc}") from None

    fs = None
    if fs_file is not None:
        fs = load(fs_file, FewShotConfig, "--few-shot-config")
        if mode is not None:
            fs = fs.model_copy(update={"pool_mode": mode, "pool_k": k}) if mode != "none" else None
    elif mode is not None:
        try:
            fs = few_shot_for_mode(mode, k) if mode != "none" else FewShotConfig(source="disabled")
        except ValueError as exc:
            raise VerificationError(f"--few-shot-mode: {exc}") from None
    pc = load(pc_file, PromptConfig, "--prompt-config") if pc_file is not None else None
    return fs, pc


def _mode(mode: str | None) -> Any:
    from karenina_rdf.runner import MODES

    value = mode or "template_only"
    if value not in MODES:
        raise VerificationError(f"--mode {value!r}: one of {', '.join(MODES)}")
    return value


def rescore(
    run: Annotated[str, typer.Argument(help="The stored run whose answers are graded again.")],
    judge: JudgeOpt = None,
    rubric_only: Annotated[
        bool, typer.Option("--rubric-only", help="Evaluate the rubric only (mode rubric_only).")
    ] = False,
    mode: ModeOpt = None,
    concurrency: ConcurrencyOpt = 4,
    trust_callables: TrustOpt = False,
    unsafe_no_isolation: UnsafeOpt = False,
    new_run: RunIdOpt = None,
    replay: ReplayOpt = None,
    record: RecordOpt = None,
    cache: CacheOpt = True,
    base_url: BaseUrlOpt = None,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Grade a stored run's answers again with a new judge or the current rubric: a new run, no answering calls."""
    from karenina_rdf.runner import rescore as do_rescore

    with _ctrl_c(), _errors(usage=(VerificationError,)):
        s = _open(store, base_iri)
        try:
            if not judge:
                raise VerificationError("rescoring needs a judge: --judge PROVIDER:MODEL")
            if rubric_only and mode not in (None, "rubric_only"):
                raise VerificationError("--rubric-only and --mode say different things: use one")
            transport = _transport(s, replay, record, cache, base_url)
            judges = [transport.model(j) for j in judge]
            options = RunOptions(
                mode=_mode("rubric_only" if rubric_only else mode),
                concurrency=concurrency,
                trust_callables=trust_callables,
                unsafe_no_isolation=unsafe_no_isolation,
                run_id=new_run,
            )
            report = do_rescore(s, run, judges=judges, options=options, progress=wanted(progress, quiet), cost=_cost())
        finally:
            s.close()
    _report(report)
    if report.status != "completed":
        raise typer.Exit(130)


@templates_app.command("generate")
def templates_generate(
    benchmark: Annotated[str, typer.Argument(help="The stored benchmark.")],
    model: Annotated[str, typer.Option("--model", help="The model writing the templates, PROVIDER:MODEL.")],
    questions: Annotated[list[str] | None, typer.Option("--questions", "-q", help="Only these question ids.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace templates questions already have.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Generate and check, store nothing; print the code.")
    ] = False,
    unsafe_no_isolation: UnsafeOpt = False,
    replay: ReplayOpt = None,
    record: RecordOpt = None,
    cache: CacheOpt = True,
    base_url: BaseUrlOpt = None,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Write answer templates from questions' reference answers and notes; only templates that validate and accept
    their own reference answer are stored."""
    from karenina_rdf.runner import generate_templates
    from karenina_rdf.runner.sandbox import Sandbox

    with _ctrl_c(), _errors(usage=(VerificationError,)):
        s = _open(store, base_iri)
        try:
            spec = _transport(s, replay, record, cache, base_url).model(model)
            with Sandbox(workers=1, isolation="unsafe-none" if unsafe_no_isolation else "kernel") as sandbox:
                made = generate_templates(
                    s, benchmark, spec, sandbox, questions=questions, overwrite=overwrite, dry_run=dry_run
                )
        finally:
            s.close()
    stored = sum(m.stored for m in made)
    for m in made:
        if m.stored:
            out.print(f"[green]stored[/green] {escape(m.question_id)}")
        elif m.reason is None:
            out.print(f"[cyan]checked[/cyan] {escape(m.question_id)} (dry run)")
        else:
            err.print(f"[yellow]not stored[/yellow] {escape(m.question_id)}: {escape(m.reason)}")
        if dry_run and m.code:
            out.print(m.code, markup=False, highlight=False)
    out.print(f"{stored} of {len(made)} templates stored")
    if made and not dry_run and stored < len(made):
        raise typer.Exit(1)
