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

The per-stage breakdown is the pipeline's own timers summed over tasks (threads overlap, so the
stage sums exceed the wall time when concurrency > 1), divided by the task count.

    python benchmarks/bench_verify.py [--questions 500] [--answerers 2] [--judges 2]
        [--replicates 5] [--concurrency 4] [--workdir DIR] [--out results.md]
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


def _finished(q: dict[str, Any]) -> bool:
    return any(p.get("name") == "finished" and p.get("value") is True for p in q.get("additionalProperty", []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=556)  # ~500 finished → 10k tasks with the defaults
    parser.add_argument("--answerers", type=int, default=2)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
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
    rec_store = Store.memory()
    bench = rec_store.import_checkpoint(path).benchmark_id
    judge = fake_judge()

    def live(kind: str, i: int) -> Any:
        return Recorder(fake_answerer(expected, i) if kind == "a" else judge, recordings)

    a, j = models(live, args.answerers, args.judges)
    opts = RunOptions(mode="template_only", replicates=args.replicates, concurrency=args.concurrency, run_id="record")
    t0 = time.perf_counter()
    recorded = run_verification(rec_store, bench, judges=j, answerers=a, options=opts)
    record_s = time.perf_counter() - t0
    rec_store.close()

    # 3. timed run, replay, on disk
    store = Store(work / "store")
    bench = store.import_checkpoint(path).benchmark_id
    replay = ReplayProvider(recordings, interface="claude_tool")
    a, j = models(lambda kind, i: replay, args.answerers, args.judges)
    opts = opts.model_copy(update={"run_id": "replay"})
    t0 = time.perf_counter()
    with Sandbox(workers=2) as sandbox:
        report = run_verification(store, bench, judges=j, answerers=a, options=opts, sandbox=sandbox)
    run_s = time.perf_counter() - t0
    stored = store.runs()
    store.close()

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
        "| stage (summed over threads) | total s | per task ms |",
        "|---|---:|---:|",
    ]
    for stage, seconds in sorted(report.timings.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {stage} | {seconds:.2f} | {seconds / tasks * 1e3:.3f} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
