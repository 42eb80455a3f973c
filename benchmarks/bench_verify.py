"""Verification-runner benchmark, one run: ``--tasks`` template_only tasks answered and judged by
the replay provider, against a plain in-process loop doing the same grading in the same run.

1. A synthetic benchmark (benchmarks/generate.py) is imported into an embedded on-disk store.
2. Recording pass (not timed): fake answerers and a fake judge (``FunctionProvider``) behind a
   ``Recorder`` write every response to a recordings file; half the answers are right.
3. Timed run: ``run_verification`` with every model call answered by ``ReplayProvider`` from
   those recordings: templates validated and verified in the sandbox's worker processes, each
   result mapped and written to the store as it completes. Target: 10k tasks ≤ 60 s on 2 cores.
4. Baseline: the same tasks in a plain loop in one process: the same recorded replies looked
   up, the same JSON parsed, each template exec'd once and its ``verify()`` called directly;
   no sandbox, no threads, no store.

With ``--all-stages`` one invocation also measures, right after the template_only replay run and
on the same tasks, a replay run with every non-agentic stage on: mode template_and_rubric (the
generated global rubric plus two dynamic rubric traits, one LLM and one regex, as Karenina
writes them), abstention and sufficiency checks, template deep judgment (mode full), rubric deep
judgment (enable_all) and the embedding check (a fake embedder, recorded and replayed like the
chat calls). Its judge answers each stage's request as tests/helpers/fake_llm_server.py does.

The per-stage breakdown is the pipeline's own timers summed over tasks (threads overlap, so the
stage sums exceed the wall time when concurrency > 1), divided by the task count.

    python benchmarks/bench_verify.py [--questions 500] [--answerers 2] [--judges 2]
        [--replicates 5] [--concurrency 4] [--all-stages] [--workdir DIR] [--out results.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from karenina_rdf import Store
from karenina_rdf.runner._prompts import answering_messages, parsing_messages
from karenina_rdf.runner._run import RunOptions, run_verification
from karenina_rdf.runner._tasks import ModelSpec
from karenina_rdf.runner.providers._base import ChatRequest, json_object
from karenina_rdf.runner.providers._registry import FunctionProvider
from karenina_rdf.runner.providers._replay import Recorder, ReplayProvider
from karenina_rdf.runner.sandbox._pool import Sandbox

HERE = Path(__file__).parent


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_CORRECT = re.compile(r'self\.correct = \{"(\w+)": "([^"]*)"')


def expected_answers(checkpoint: dict[str, Any]) -> dict[str, str]:
    """Question text → the value its template expects (the fake answerer knows it)."""
    out = {}
    for item in checkpoint["dataFeedElement"]:
        q = item["item"]
        m = _CORRECT.search(q["hasPart"]["text"])
        if m:
            out[q["text"]] = m.group(2)
    return out


def fake_answerer(expected: dict[str, str], salt: int) -> FunctionProvider:
    def answer(request: ChatRequest) -> str:
        question = request.messages[-1].content
        right = (hash(question) + salt) % 2 == 0
        value = expected.get(question, "unknown") if right else "something else"
        return f"ANSWER: {value}\nMENTIONS: yes\nBecause of the mechanism described in the literature."

    return FunctionProvider(answer, interface="claude_tool")


def fake_judge() -> FunctionProvider:
    def parse(request: ChatRequest) -> str:
        response = request.messages[-1].content.split("## Response to parse\n", 1)[1]
        value = re.search(r"ANSWER: (.*)", response)
        out: dict[str, Any] = {}
        for name, prop in (request.json_schema or {}).get("properties", {}).items():
            if prop.get("type") == "boolean":
                out[name] = "MENTIONS: yes" in response
            elif name == "rationale":
                out[name] = "mechanism"
            else:
                out[name] = value.group(1) if value else ""
        return "```json\n" + json.dumps(out) + "\n```"

    return FunctionProvider(parse, interface="claude_tool")


# Two dynamic rubric traits as Karenina writes them (GlobalDynamicRubricTrait ratings, copied from
# a checkpoint Karenina saved): the presence check runs for both, then the present ones are scored.
DYNAMIC_RATINGS: list[dict[str, Any]] = [
    {
        "@type": "Rating",
        "name": "explains_mechanism",
        "description": "Explains the mechanism",
        "bestRating": 5.0,
        "worstRating": 1.0,
        "additionalType": "karenina:GlobalDynamicRubricTrait",
        "additionalProperty": [
            {"@type": "PropertyValue", "name": "deep_judgment_enabled", "value": False},
            {"@type": "PropertyValue", "name": "deep_judgment_excerpt_enabled", "value": True},
            {"@type": "PropertyValue", "name": "deep_judgment_search_enabled", "value": False},
            {"@type": "PropertyValue", "name": "higher_is_better", "value": True},
            {"@type": "PropertyValue", "name": "summary", "value": "Mechanism"},
            {"@type": "PropertyValue", "name": "min_score", "value": 1},
            {"@type": "PropertyValue", "name": "max_score", "value": 5},
            {"@type": "PropertyValue", "name": "dynamic_trait_type", "value": "llm"},
        ],
    },
    {
        "@type": "Rating",
        "name": "mentions_literature",
        "description": "Mentions the literature",
        "bestRating": 1.0,
        "worstRating": 0.0,
        "additionalType": "karenina:GlobalDynamicRubricTrait",
        "additionalProperty": [
            {"@type": "PropertyValue", "name": "pattern", "value": "literature"},
            {"@type": "PropertyValue", "name": "case_sensitive", "value": True},
            {"@type": "PropertyValue", "name": "invert_result", "value": False},
            {"@type": "PropertyValue", "name": "higher_is_better", "value": True},
            {"@type": "PropertyValue", "name": "summary", "value": "Literature"},
            {"@type": "PropertyValue", "name": "dynamic_trait_type", "value": "regex"},
        ],
    },
]


def _fake_server() -> Any:
    """tests/helpers/fake_llm_server.FakeLLM (its replies only, no server): it recognises every
    stage's request by its system prompt."""
    root = str(HERE.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.helpers.fake_llm_server import FakeLLM, char_vector

    return FakeLLM(), char_vector


def all_stages_judge() -> FunctionProvider:
    """Parsing as :func:`fake_judge` (half the answers wrong); every other stage as the fake
    server answers it; embeddings are letter-and-digit counts."""
    from karenina_rdf.runner.providers._base import EmbeddingResponse

    server, char_vector = _fake_server()

    def reply(request: ChatRequest) -> str:
        user = request.messages[-1].content
        # With deep judgment the judge parses its own reasoning, so the reasoning repeats the
        # response's answer and parsing reads it from wherever it is in the prompt.
        value = re.search(r'ANSWER: ([^"\n\\]*)', user)
        mentions = "MENTIONS: yes" in user
        if request.stage == "deep_judgment_reasoning":
            attrs = re.findall(r"^- (\w+): ", request.messages[0].content, re.M)
            answer = value.group(1) if value else ""
            said = f"the response says ANSWER: {answer}\nMENTIONS: {'yes' if mentions else 'no'}"
            return json.dumps({a: said for a in attrs})
        if request.stage == "parsing":
            out: dict[str, Any] = {}
            for name, prop in (request.json_schema or {}).get("properties", {}).items():
                if prop.get("type") == "boolean":
                    out[name] = mentions
                elif name == "rationale":
                    out[name] = "mechanism"
                else:
                    out[name] = value.group(1) if value else ""
            return "```json\n" + json.dumps(out) + "\n```"
        body = {"messages": [{"role": m.role, "content": m.content} for m in request.messages]}
        return server.reply(body)

    def embed(request: Any) -> EmbeddingResponse:
        return EmbeddingResponse(vectors=tuple(tuple(char_vector(t)) for t in request.texts), model=request.model)

    return FunctionProvider(reply, interface="claude_tool", embed_fn=embed)


def all_stages_options(opts: RunOptions) -> RunOptions:
    from karenina_rdf.runner._config import DeepJudgmentConfig
    from karenina_rdf.runner._embedding import EmbeddingCheckConfig
    from karenina_rdf.runner.rubric._deep_judgment import RubricDeepJudgmentConfig

    return opts.model_copy(
        update={
            "mode": "template_and_rubric",
            "abstention_enabled": True,
            "sufficiency_enabled": True,
            "deep_judgment": DeepJudgmentConfig(mode="full"),
            "deep_judgment_rubric": RubricDeepJudgmentConfig(mode="enable_all"),
            "embedding_check": EmbeddingCheckConfig(enabled=True),
        }
    )


def models(provider_for: Any, answerers: int, judges: int) -> tuple[list[ModelSpec], list[ModelSpec]]:
    a = [
        ModelSpec(provider_for("a", i), f"fake-answerer-{i}", "claude_tool", spec=f"anthropic:fake-answerer-{i}")
        for i in range(answerers)
    ]
    j = [
        ModelSpec(provider_for("j", i), f"fake-judge-{i}", "claude_tool", spec=f"anthropic:fake-judge-{i}")
        for i in range(judges)
    ]
    return a, j


def baseline(
    checkpoint: dict[str, Any], recordings: Path, answerers: int, judges: int, replicates: int
) -> tuple[float, int]:
    """The same grading in a plain loop: recorded replies by request hash, JSON parsed, each
    template exec'd once in this process and its verify() called."""
    from karenina_rdf.runner.worker._runtime import judge_schema
    from karenina_rdf.runner.worker._template import load_template, verify

    replay = ReplayProvider(recordings)
    classes: dict[str, Any] = {}
    passed = n = 0
    t0 = time.perf_counter()
    items = [it["item"] for it in checkpoint["dataFeedElement"] if _finished(it["item"])]
    for q in items:
        code = q["hasPart"]["text"]
        tpl = classes.get(code)
        if tpl is None:
            tpl = classes[code] = load_template(code)
        schema = judge_schema(tpl.cls)
        for a in range(answerers):
            messages = answering_messages(q["text"], None, None)
            for r in range(1, replicates + 1):
                rep = r if replicates > 1 else None
                answer = replay.complete(
                    ChatRequest(model=f"fake-answerer-{a}", messages=messages, stage="answer_generation", replicate=rep)
                ).text
                for j in range(judges):
                    req = ChatRequest(
                        model=f"fake-judge-{j}",
                        messages=parsing_messages(q["text"], answer, schema),
                        json_schema=schema,
                        stage="parsing",
                    )
                    parsed = json_object(replay.complete(req).text)
                    passed += verify(tpl, parsed, answer, None)["verify_result"] is True
                    n += 1
    return time.perf_counter() - t0, n


def record(
    path: Path, recordings: Path, expected: dict[str, str], judge: FunctionProvider, args: Any, opts: RunOptions
) -> tuple[float, Any]:
    """The untimed recording pass: fake models behind Recorders, an in-memory store."""
    rec_store = Store.memory()
    bench = rec_store.import_checkpoint(path).benchmark_id

    def live(kind: str, i: int) -> Any:
        return Recorder(fake_answerer(expected, i) if kind == "a" else judge, recordings)

    a, j = models(live, args.answerers, args.judges)
    embedder = Recorder(judge, recordings) if opts.embedding_check.enabled else None
    t0 = time.perf_counter()
    recorded = run_verification(rec_store, bench, judges=j, answerers=a, options=opts, embedder=embedder)
    record_s = time.perf_counter() - t0
    rec_store.close()
    return record_s, recorded


def replay_run(where: Path, path: Path, recordings: Path, args: Any, opts: RunOptions) -> tuple[float, Any, Any]:
    """The timed run: every call replayed, templates in the sandbox, results to an on-disk store."""
    store = Store(where)
    bench = store.import_checkpoint(path).benchmark_id
    replay = ReplayProvider(recordings, interface="claude_tool")
    a, j = models(lambda kind, i: replay, args.answerers, args.judges)
    opts = opts.model_copy(update={"run_id": "replay"})
    embedder = replay if opts.embedding_check.enabled else None
    t0 = time.perf_counter()
    with Sandbox(workers=2) as sandbox:
        report = run_verification(store, bench, judges=j, answerers=a, options=opts, sandbox=sandbox, embedder=embedder)
    run_s = time.perf_counter() - t0
    stored = store.runs()
    store.close()
    return run_s, report, stored


def stage_table(report: Any) -> list[str]:
    lines = ["| stage (summed over threads) | total s | per task ms |", "|---|---:|---:|"]
    for stage, seconds in sorted(report.timings.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {stage} | {seconds:.2f} | {seconds / report.tasks * 1e3:.3f} |")
    return lines


def _finished(q: dict[str, Any]) -> bool:
    return any(p.get("name") == "finished" and p.get("value") is True for p in q.get("additionalProperty", []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=556)  # ~500 finished → 10k tasks with the defaults
    parser.add_argument("--answerers", type=int, default=2)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--all-stages", action="store_true", help="also time a run with every stage on")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    generate = _load("generate")
    # A folder of its own, even inside --workdir: the benchmark never empties a folder it was given.
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-verify-", dir=args.workdir))
    checkpoint = generate.generate_checkpoint(args.questions, seed=1)
    path = work / "bench.jsonld"
    path.write_text(json.dumps(checkpoint, ensure_ascii=False), encoding="utf-8")
    expected = expected_answers(checkpoint)
    recordings = work / "recordings.jsonl"

    # 2. recording pass, in memory
    opts = RunOptions(mode="template_only", replicates=args.replicates, concurrency=args.concurrency, run_id="record")
    record_s, recorded = record(path, recordings, expected, fake_judge(), args, opts)
    if args.all_stages:
        all_path = work / "bench-all.jsonld"
        with_dynamic = dict(checkpoint, rating=[*checkpoint.get("rating", []), *DYNAMIC_RATINGS])
        all_path.write_text(json.dumps(with_dynamic, ensure_ascii=False), encoding="utf-8")
        all_recordings = work / "recordings-all.jsonl"
        all_opts = all_stages_options(opts)
        all_record_s, all_recorded = record(all_path, all_recordings, expected, all_stages_judge(), args, all_opts)

    # 3. timed run(s), replay, on disk; with --all-stages the second right after the first
    run_s, report, stored = replay_run(work / "store", path, recordings, args, opts)
    if args.all_stages:
        all_s, all_report, all_stored = replay_run(work / "store-all", all_path, all_recordings, args, all_opts)

    # 4. baseline
    base_s, base_n = baseline(checkpoint, recordings, args.answerers, args.judges, args.replicates)

    tasks = report.tasks
    lines = [
        f"machine: {platform.machine()}, {platform.python_version()}, cores: {__import__('os').cpu_count()}",
        f"tasks: {tasks} (template_only; {args.questions} questions generated, {args.answerers} answerers × "
        f"{args.judges} judges × {args.replicates} replicates; concurrency {args.concurrency}, 2 sandbox workers)",
        f"recording pass (fake models behind Recorder, in memory): {record_s:.1f} s, {recorded.passed} passed",
        f"**replay run (sandbox + store on disk): {run_s:.2f} s** = {run_s / tasks * 1e3:.2f} ms per task;"
        f" {report.passed} passed, {report.failed} failed; stored results: {sum(r.results for r in stored)}",
        f"baseline (plain loop, same grading, no sandbox, no store): {base_s:.2f} s for {base_n} gradings"
        f" = {base_s / max(base_n, 1) * 1e3:.3f} ms per task",
        f"ratio replay run / baseline: {run_s / base_s:.1f}×",
        "",
        *stage_table(report),
    ]
    if args.all_stages:
        lines += [
            "",
            f"every stage on: {all_report.tasks} tasks (template_and_rubric; abstention, sufficiency, deep judgment"
            " full, rubric deep judgment enable_all, embedding check, global rubric + 2 dynamic traits)",
            f"recording pass (every stage): {all_record_s:.1f} s, {all_recorded.passed} passed",
            f"**every-stage replay run: {all_s:.2f} s** = {all_s / all_report.tasks * 1e3:.2f} ms per task;"
            f" {all_report.passed} passed, {all_report.failed} failed, abstained {all_report.abstained},"
            f" insufficient {all_report.insufficient}; stored results: {sum(r.results for r in all_stored)}",
            f"ratio every-stage / template_only replay run: {all_s / run_s:.2f}× (target ≤ 60 s)",
            "",
            *stage_table(all_report),
        ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
