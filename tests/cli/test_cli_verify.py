"""``karenina-rdf verify``, ``rescore`` and ``templates generate`` end to end, offline: the real
command line, a real store folder, the real sandbox, and a real HTTP server speaking OpenAI's
chat completions on 127.0.0.1 (``fake_llm_server``). Most commands run in this process through
typer's CliRunner (the ``anthropic`` SDK the runner imports costs seconds per process); Ctrl-C
runs the installed console script in its own process and interrupts it with a real SIGINT.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from karenina_rdf import Benchmark, RubricTrait, Store
from karenina_rdf.cli import app
from tests.conftest import EXAMPLES
from tests.helpers.fake_llm_server import COMPLETION_TOKENS, PROMPT_TOKENS, FakeLLM, kind, user_text
from tests.helpers.servers import free_port, start_endpoint

# slow: the CLI against a fake LLM server over HTTP, with sandbox workers and CLI subprocesses
pytestmark = pytest.mark.slow

runner = CliRunner()

TINY_TEMPLATES = {
    "What is the capital of France?": (
        "Paris is the capital of France.",
        "class Answer(BaseAnswer):\n"
        '    city: str = Field(description="The city named as the capital")\n'
        "\n"
        "    def ground_truth(self):\n"
        '        self.correct = {"city": "Paris"}\n'
        "\n"
        "    def verify(self) -> bool:\n"
        '        return self.correct["city"].lower() in self.city.lower()\n',
    ),
    "How many legs does a spider have?": (
        "Eight legs.",
        "class Answer(BaseAnswer):\n"
        '    legs: str = Field(description="The number of legs stated")\n'
        '    arachnid: bool = Field(description="Whether the response says spiders are arachnids")\n'
        "\n"
        "    def ground_truth(self):\n"
        '        self.correct = {"legs": "eight", "arachnid": True}\n'
        "\n"
        "    def verify(self) -> bool:\n"
        '        return self.correct["legs"] in self.legs.lower() or "8" in self.legs\n',
    ),
}
GEN_QUESTIONS = {"Which planet is the largest in the solar system?": "Jupiter", "What is 2 + 2?": "4"}
GOOD_TEMPLATE = """```python
class Answer(BaseAnswer):
    planet: str = Field(description="The planet named as the largest")

    def ground_truth(self):
        self.correct = {"planet": "Jupiter"}

    def verify(self) -> bool:
        return self.correct["planet"].lower() in self.planet.lower()
```"""
# The pharmacology answers the fake answerer gives: two pass their templates without quoting
# any ground truth (so a ground truth in a judge's prompt can only have leaked); losartan is
# answered "I do not know".
PHARMA_ANSWERS = {
    "What is the primary molecular target of imatinib?": "It inhibits the BCR ABL kinase.",
    "Which enzyme does aspirin irreversibly inhibit?": "It blocks the COX enzymes for good.",
}


@dataclass(frozen=True)
class Seed:
    path: Path  # a closed store folder: copy it, never use it
    pharma: str
    pharma_questions: dict[str, dict[str, Any]]  # finished ones: id -> text, raw_answer, template
    tiny: str
    tiny_questions: dict[str, str]  # id -> text
    gen: str
    gen_questions: dict[str, str]


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "KARENINA_RDF_STORE",
        "KARENINA_RDF_STORE_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    """Pharmacology imported by ``karenina-rdf import``, and two small benchmarks made with the
    Python API: "Tiny" (two templated questions, a global regex trait) and "Gen" (no templates)."""
    path = tmp_path_factory.mktemp("seed") / "store"
    r = cli("import", str(EXAMPLES / "pharmacology.jsonld"), "--store", str(path))
    assert r.exit_code == 0, r.output
    s = Store(path)
    try:
        pharma = Benchmark(s, "Pharmacology examples")
        pharma_questions = {
            str(q.id): {"text": q.question, "raw_answer": q.raw_answer, "template": q.answer_template}
            for q in pharma.question_views()
            if q.finished
        }
        tiny = Benchmark.create("Tiny", store=s)
        tiny_questions = {}
        for text, (answer, template) in TINY_TEMPLATES.items():
            qid = tiny.add_question(text, answer, finished=True)
            tiny.add_answer_template(qid, template)
            tiny_questions[qid] = text
        tiny.add_global_rubric_trait(RubricTrait.regex("states_a_number", r"\d|eight", "Gives a number."))
        gen = Benchmark.create("Gen", store=s)
        gen_questions = {gen.add_question(text, answer, finished=True): text for text, answer in GEN_QUESTIONS.items()}
        return Seed(path, pharma.id, pharma_questions, tiny.id, tiny_questions, gen.id, gen_questions)
    finally:
        s.close()


@pytest.fixture
def store(seed: Seed, tmp_path: Path) -> str:
    """A fresh copy of the seed store (a store folder is held by one process at a time)."""
    target = tmp_path / "store"
    shutil.copytree(seed.path, target)
    return str(target)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def llm(server: FakeLLM) -> Iterator[FakeLLM]:
    """The module's fake server, its knobs and log reset for this test."""
    with server.lock:
        server.answers, server.templates, server.log = {}, {}, []
        server.delay, server.rate_limited = 0.0, 0
    yield server


def cli(*args: str) -> Result:
    return runner.invoke(app, list(args))


def verify(store: str, bench: str, base_url: str, *extra: str) -> Result:
    return cli(
        "verify",
        bench,
        "--answerer",
        "openai:fake-answerer",
        "--judge",
        "openai:fake-judge",
        "--base-url",
        base_url,
        "--no-progress",
        "--store",
        store,
        *extra,
    )


def export(store: str, run: str) -> dict[str, Any]:
    r = cli("results", "export", run, "--store", store)
    assert r.exit_code == 0, r.output
    data: dict[str, Any] = json.loads(r.stdout)
    assert data["format_version"] == "2.2"
    return data


def by_question(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rows = {row["metadata"]["question_id"]: row for row in data["results"]}
    assert len(rows) == len(data["results"]), "one result per question expected"
    return rows


def identity(row: dict[str, Any]) -> tuple[Any, ...]:
    m = row["metadata"]
    return (m["question_id"], m["answering"]["model_name"], m["parsing"]["model_name"], m["replicate"])


def ground_truths(template: str) -> list[str]:
    """The string values of ``self.correct = {...}`` in a template."""
    out = []
    for node in ast.walk(ast.parse(template)):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "correct" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            out += [v for v in value.values() if isinstance(v, str)]
    return out


def texts(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def one_line_error(r: Result) -> str:
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# -- a full run, shared by the tests that only read it --------------------------------------------


@dataclass(frozen=True)
class MainRun:
    store: Path
    result: Result
    requests: list[dict[str, Any]]


@pytest.fixture(scope="module")
def main_run(seed: Seed, server: FakeLLM, tmp_path_factory: pytest.TempPathFactory) -> MainRun:
    """Pharmacology's three finished questions through fake-answerer and fake-judge, run "main"."""
    folder = tmp_path_factory.mktemp("main") / "store"
    shutil.copytree(seed.path, folder)
    with server.lock:
        server.answers, server.log, server.delay, server.rate_limited = dict(PHARMA_ANSWERS), [], 0.0, 0
    result = verify(str(folder), seed.pharma, server.base_url, "--run", "main", "--concurrency", "2")
    return MainRun(folder, result, server.requests())


def test_verify_completes_and_stores_every_task(main_run: MainRun) -> None:
    r = main_run.result
    assert r.exit_code == 0, r.output
    assert re.search(r"completed run main on \S+: 3 of 3 tasks stored \(0 stored before\), 2 passed", r.stdout)
    assert "Traceback" not in r.output
    assert Counter(kind(b) for b in main_run.requests) == {"answer": 3, "parse": 3}


def test_results_runs_lists_the_run(main_run: MainRun) -> None:
    r = cli("results", "runs", "--store", str(main_run.store))
    assert r.exit_code == 0, r.output
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in r.stdout.splitlines() if "│" in line]
    header = [c.strip() for c in next(line for line in r.stdout.splitlines() if "┃" in line).split("┃")[1:-1]]
    runs = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert set(runs) == {"main"}
    assert runs["main"]["results"] == "3"
    assert runs["main"]["mode"] == "template_only"
    assert runs["main"]["pass rate"].startswith("66.7% (2/3)")


def test_results_runs_names_the_models(main_run: MainRun) -> None:
    s = Store(main_run.store)
    try:
        (summary,) = s.runs()
    finally:
        s.close()
    assert summary.answering_models and summary.parsing_models
    assert "fake-answerer" in summary.answering_models[0] and "fake-judge" in summary.parsing_models[0]


def test_export_rows_name_models_and_usage(main_run: MainRun, seed: Seed) -> None:
    data = export(str(main_run.store), "main")
    rows = by_question(data)
    assert set(rows) == set(seed.pharma_questions)
    verdicts = {seed.pharma_questions[q]["text"]: row["template"]["verify_result"] for q, row in rows.items()}
    assert verdicts == {**dict.fromkeys(PHARMA_ANSWERS, True), "Which receptor does losartan block?": False}
    for row in rows.values():
        meta = row["metadata"]
        assert meta["answering"]["interface"] == "openai_endpoint"
        assert meta["answering"]["model_name"] == "fake-answerer"
        assert meta["parsing"] == {**meta["parsing"], "interface": "openai_endpoint", "model_name": "fake-judge"}
        assert meta["evaluation_mode"] == "template_only"
        assert meta["caveats"] == [] and meta["retry_counts"] is None
        usage = row["template"]["usage_metadata"]
        one = {"input_tokens": PROMPT_TOKENS, "output_tokens": COMPLETION_TOKENS}
        assert usage["answer_generation"] == {**usage["answer_generation"], **one, "model": "fake-answerer"}
        assert usage["parsing"] == {**usage["parsing"], **one, "model": "fake-judge"}
        assert usage["total"] == {
            "input_tokens": 2 * PROMPT_TOKENS,
            "output_tokens": 2 * COMPLETION_TOKENS,
            "total_tokens": 2 * (PROMPT_TOKENS + COMPLETION_TOKENS),
        }
    # The losartan answer is a content failure (verify() said False), not an error.
    failures = [row["metadata"]["failure"] for row in rows.values() if row["metadata"]["failure"]]
    assert [(f["category"], f["group"]) for f in failures] == [("content", "content")]


def test_no_model_sees_reference_answers_or_ground_truths(main_run: MainRun, seed: Seed) -> None:
    secrets = []
    for q in seed.pharma_questions.values():
        secrets.append(q["raw_answer"])
        secrets += ground_truths(q["template"])
    assert len(secrets) >= 6 and all(secrets)
    parses = [b for b in main_run.requests if kind(b) == "parse"]
    assert len(parses) == 3
    for body in main_run.requests:  # judges and answerers alike
        sent = texts(body)
        for secret in secrets:
            assert secret not in sent, f"{secret!r} reached {body['model']}"
    for body in parses:  # the judge gets the question, the response and the schema only
        assert body["model"] == "fake-judge"
        assert any(q["text"] in user_text(body) for q in seed.pharma_questions.values())


# -- recordings -----------------------------------------------------------------------------------


def test_record_then_replay_without_a_server(store: str, seed: Seed, tmp_path: Path) -> None:
    recordings = tmp_path / "rec.jsonl"
    mode = ("--mode", "template_and_rubric")  # Tiny's rubric is one regex trait: no judge call
    with FakeLLM() as own:
        own.answers["What is the capital of France?"] = "Paris, of course."
        r = verify(store, seed.tiny, own.base_url, *mode, "--record", str(recordings), "--run", "recorded")
        assert r.exit_code == 0, r.output
        url = own.base_url
    assert len(recordings.read_text().splitlines()) == 4  # two answers, two parses
    # The server is stopped: a call that is not replayed would fail as a connection error.
    r = verify(store, seed.tiny, url, *mode, "--replay", str(recordings), "--run", "replayed")
    assert r.exit_code == 0, r.output
    assert "completed run replayed" in r.stdout and "2 of 2 tasks stored" in r.stdout
    recorded, replayed = by_question(export(store, "recorded")), by_question(export(store, "replayed"))
    assert set(recorded) == set(replayed) == set(seed.tiny_questions)
    verdicts = {q: row["template"]["verify_result"] for q, row in recorded.items()}
    assert sorted(verdicts.values()) == [False, True]
    for q, row in replayed.items():
        assert row["template"]["verify_result"] == verdicts[q]
        assert row["template"]["raw_llm_response"] == recorded[q]["template"]["raw_llm_response"]
        assert identity(row) == identity(recorded[q])
        assert row["metadata"]["answering"]["interface"] == "openai_endpoint"
        assert row["metadata"]["evaluation_mode"] == "template_and_rubric"
        assert row["rubric"]["regex_trait_scores"] == recorded[q]["rubric"]["regex_trait_scores"]
        assert set(row["rubric"]["regex_trait_scores"]) == {"states_a_number"}
        failure = row["metadata"]["failure"]
        assert failure is None or failure["category"] == "content"


def test_record_after_a_cached_run_records_every_response(store: str, seed: Seed, llm: FakeLLM, tmp_path: Path) -> None:
    recordings = tmp_path / "rec.jsonl"
    for r in (
        verify(store, seed.tiny, llm.base_url, "--run", "first"),
        verify(store, seed.tiny, llm.base_url, "--record", str(recordings), "--run", "second"),
    ):
        if r.exit_code != 0:  # not an AssertionError: only the bug below is the expected failure
            pytest.fail(r.output)
    if len(llm.requests()) != 4:
        pytest.fail("the second run was not answered from the response cache")
    assert recordings.is_file() and len(recordings.read_text().splitlines()) == 4


# -- transport failures ---------------------------------------------------------------------------


def test_rate_limited_then_answered(store: str, seed: Seed, llm: FakeLLM) -> None:
    qid = next(q for q, text in seed.tiny_questions.items() if "France" in text)
    llm.answers["What is the capital of France?"] = "Paris."
    llm.rate_limited = 2  # Retry-After: 0, then the default backoff (about 1 s, then 2 s)
    r = verify(store, seed.tiny, llm.base_url, "--questions", qid, "--concurrency", "1", "--run", "limited")
    assert r.exit_code == 0, r.output
    assert "1 of 1 tasks stored" in r.stdout
    (row,) = export(store, "limited")["results"]
    meta = row["metadata"]
    assert meta["failure"] is None and row["template"]["verify_result"] is True
    assert meta["caveats"] == ["retries_used"]
    assert meta["retry_counts"]["rate_limit"] == {"used": 2, "budget": 5}
    assert len(llm.requests()) == 4  # two refused, then the answer and the parse


def test_server_down_is_a_result_not_a_crash(store: str, seed: Seed) -> None:
    """Connection refused on every call: retried 3 times (about 1 + 2 + 4 s of backoff), then
    stored as a ``connection`` failure of group ``retry``; the command still succeeds."""
    qid = next(q for q, text in seed.tiny_questions.items() if "France" in text)
    dead = f"http://127.0.0.1:{free_port()}/v1"
    r = verify(store, seed.tiny, dead, "--questions", qid, "--concurrency", "1", "--run", "down")
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    assert "1 of 1 tasks stored" in r.stdout and "failures: connection 1" in r.stdout
    (row,) = export(store, "down")["results"]
    failure = row["metadata"]["failure"]
    assert failure["category"] == "connection" and failure["group"] == "retry"
    assert failure["stage"] == "generate_answer"
    assert not row["template"]["raw_llm_response"]
    counts = row["metadata"]["retry_counts"]
    assert counts["connection"] == {"used": 3, "budget": 3}
    assert row["metadata"]["caveats"] == ["retries_used"]
    assert failure["details"]["retry_counts"] == counts


# -- Ctrl-C and --resume --------------------------------------------------------------------------


@contextmanager
def running(command: list[str], env: dict[str, str], **popen: Any) -> Iterator[subprocess.Popen[str]]:
    """The command in its own process, killed if the test leaves it running."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def console_script() -> str:
    beside = Path(sys.executable).parent / "karenina-rdf"
    found = str(beside) if beside.is_file() else shutil.which("karenina-rdf")
    if found is None:
        pytest.skip("the karenina-rdf console script is not installed")
    return found


def test_ctrl_c_stores_what_is_complete_and_resume_finishes(store: str, seed: Seed, llm: FakeLLM) -> None:
    llm.answers.update(PHARMA_ANSWERS)
    llm.delay = 0.4
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KARENINA_RDF_"))}
    command = [console_script(), "verify", seed.pharma, "--answerer", "openai:fake-answerer"]
    command += ["--judge", "openai:fake-judge", "--base-url", llm.base_url, "--no-progress", "--store", store]
    command += ["--concurrency", "1", "--run", "cut"]
    # Its own process group, interrupted as a terminal's Ctrl-C does: SIGINT to the group.
    with running(command, env, start_new_session=True) as proc:
        deadline = time.monotonic() + 60
        # A task is an answer and a parse, one task at a time: the fourth request (the second
        # task's parse) comes 0.4 s after the first task was complete, and its reply 0.4 s later.
        while len(llm.requests()) < 4:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    assert "interrupted run cut" in stdout and "--resume cut" in stdout
    stored = int(re.search(r"(\d+) of 3 tasks stored", stdout).group(1))  # type: ignore[union-attr]
    cut = export(store, "cut")
    assert cut["metadata"]["job_summary"]["is_complete"] is False
    before = by_question(cut)
    assert 1 <= stored == len(before) < 3
    done_texts = {seed.pharma_questions[q]["text"] for q in before}

    with llm.lock:
        llm.delay, llm.log = 0.0, []
    # No --base-url: the run's configuration names its server.
    r = cli("verify", seed.pharma, "--resume", "cut", "--no-progress", "--store", store)
    assert r.exit_code == 0, r.output
    todo = 3 - stored
    assert f"completed run cut on {seed.pharma}: {todo} of {todo} tasks stored ({stored} stored before)" in r.stdout
    finished = export(store, "cut")
    assert finished["metadata"]["job_summary"]["is_complete"] is True
    after = finished["results"]
    keys = [identity(row) for row in after]
    assert len(keys) == len(set(keys)) == 3
    assert {k[0] for k in keys} == set(seed.pharma_questions)
    for q, row in before.items():  # stored results are kept as they were
        assert next(a for a in after if a["metadata"]["question_id"] == q) == row
    asked = {user_text(b) for b in llm.requests("answer")}
    assert asked and not asked & done_texts, "a stored task's question was asked again"
    assert {b["model"] for b in llm.requests()} == {"fake-answerer", "fake-judge"}


@pytest.mark.parametrize("command", ["verify", "rescore"])
def test_ctrl_c_while_starting_ends_quietly(
    monkeypatch: pytest.MonkeyPatch, store: str, seed: Seed, llm: FakeLLM, command: str
) -> None:
    # Ctrl-C before the run's own handler is installed (here: while the store opens).
    import karenina_rdf.cli._verify as cli_verify

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_verify, "_open", interrupted)
    args = [seed.tiny, "-a", "openai:x"] if command == "verify" else ["main"]
    r = cli(command, *args, "-j", "openai:y", "--base-url", llm.base_url, "--store", store)
    assert r.exit_code == 130, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert "interrupted" in r.stderr and "Traceback" not in r.output
    assert llm.requests() == []


def test_a_run_written_through_the_endpoint_shows_while_it_runs(
    store: str, seed: Seed, llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `karenina-rdf serve` holds the embedded store; verify, another process, writes through
    # the endpoint's /sparql with the write token, and the run page shows it while it runs.
    import httpx

    served = start_endpoint(tmp_path, "--write-token", "sekrit", store=store)
    try:
        sparql = f"{served.url}/sparql"
        r = verify(sparql, seed.tiny, llm.base_url, "--run", "served")  # no token: the endpoint refuses
        assert r.exit_code == 1 and "HTTP 401" in one_line_error(r)
        monkeypatch.setenv("KARENINA_RDF_STORE_TOKEN", "sekrit")
        llm.answers.update(PHARMA_ANSWERS)
        llm.delay = 0.3
        env = {**os.environ, "KARENINA_RDF_STORE_TOKEN": "sekrit"}
        command = [console_script(), "verify", seed.pharma, "-a", "openai:fake-answerer", "-j", "openai:fake-judge"]
        command += ["--base-url", llm.base_url, "--no-progress", "--store", sparql, "--run", "served"]
        command += ["--concurrency", "1"]
        seen_running = False
        with running(command, env) as proc:
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                page = httpx.get(f"{served.url}/runs/served", timeout=10)
                if page.status_code == 200 and 'data-status="running"' in page.text:
                    seen_running = True
                    break
                time.sleep(0.05)
            stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, (stdout, stderr)
        assert seen_running, "the run page never showed the run while it ran"
        assert "completed run served" in stdout and "3 of 3 tasks stored" in stdout
        page = httpx.get(f"{served.url}/runs/served", timeout=10)
        assert 'data-status="completed"' in page.text
        data = export(sparql, "served")
        assert data["metadata"]["job_summary"]["is_complete"] is True
        assert {row["metadata"]["question_id"] for row in data["results"]} == set(seed.pharma_questions)
    finally:
        served.stop()


def test_resume_of_an_unknown_run(store: str, seed: Seed, llm: FakeLLM) -> None:
    r = cli("verify", seed.tiny, "--resume", "nosuchrun", "--base-url", llm.base_url, "--no-progress", "--store", store)
    assert r.exit_code == 1, r.output  # bad data (an unknown run), not a usage error
    assert "nosuchrun" in one_line_error(r)
    assert llm.requests() == []


def test_a_stored_run_id_needs_resume(main_run: MainRun, seed: Seed, tmp_path: Path, llm: FakeLLM) -> None:
    folder = tmp_path / "store"
    shutil.copytree(main_run.store, folder)
    r = verify(str(folder), seed.pharma, llm.base_url, "--run", "main")
    assert r.exit_code != 0
    assert "--resume main" in one_line_error(r)
    assert llm.requests() == []
    assert len(export(str(folder), "main")["results"]) == 3


def test_verify_refuses_unboxed_code_unless_told(
    store: str, seed: Seed, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where bubblewrap cannot box template code, verify refuses before it stores or asks anything,
    says why and names the flag; with the flag it runs (and logs a warning)."""
    from karenina_rdf.runner.sandbox import _process

    monkeypatch.setattr(_process, "_isolation_problem", ["bubblewrap (bwrap) is not installed"])
    r = verify(store, seed.tiny, llm.base_url, "--run", "boxless")
    assert r.exit_code == 2, r.output
    assert one_line_error(r) == (
        "error: refusing to run benchmark code without kernel isolation: bubblewrap (bwrap) is not installed; "
        "install bubblewrap, or accept the risk with --unsafe-no-isolation"
    )
    assert llm.requests() == []
    assert "boxless" not in cli("results", "runs", "--store", store).stdout
    r = verify(store, seed.tiny, llm.base_url, "--run", "boxless", "--unsafe-no-isolation")
    assert r.exit_code == 0, r.output
    assert "completed run boxless" in r.stdout


# -- recorded answers -----------------------------------------------------------------------------


def test_grade_recorded_answers(store: str, seed: Seed, llm: FakeLLM, tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    lines = [{"question_id": q, "response": "Paris" if "France" in t else "8"} for q, t in seed.tiny_questions.items()]
    answers.write_text("".join(json.dumps(line) + "\n" for line in lines))
    r = cli(
        "verify",
        seed.tiny,
        "--answers",
        str(answers),
        "--judge",
        "openai:fake-judge",
        "--base-url",
        llm.base_url,
        "--no-progress",
        "--store",
        store,
        "--run",
        "manual",
    )
    assert r.exit_code == 0, r.output
    assert "2 of 2 tasks stored" in r.stdout and "2 passed" in r.stdout
    rows = by_question(export(store, "manual"))
    assert set(rows) == set(seed.tiny_questions)
    for row in rows.values():
        assert row["metadata"]["answering"]["interface"] == "manual"
        assert row["metadata"]["answering"]["model_name"] == "recorded"  # the default answering_model
        assert row["metadata"]["parsing"]["model_name"] == "fake-judge"
        assert row["template"]["verify_result"] is True
        assert "answer_generation" not in row["template"]["usage_metadata"]
    assert {kind(b) for b in llm.requests()} == {"parse"}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "not JSON"),
        ('{"question_id": "q"}', "'response' must be a string"),
        ('{"response": "r"}', "'question_id'"),
    ],
)
def test_a_bad_answers_line_is_named(
    store: str, seed: Seed, llm: FakeLLM, tmp_path: Path, line: str, problem: str
) -> None:
    answers = tmp_path / "answers.jsonl"
    good = json.dumps({"question_id": next(iter(seed.tiny_questions)), "response": "Paris"})
    answers.write_text(f"{good}\n{line}\n")
    r = cli(
        "verify", seed.tiny, "--answers", str(answers), "--judge", "openai:fake-judge", "--base-url", llm.base_url,
        "--store", store,
    )  # fmt: skip
    assert r.exit_code == 1, r.output
    error = one_line_error(r)
    assert "answers.jsonl:2" in error and problem in error
    assert llm.requests() == []


# -- usage errors ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def usage_store(seed: Seed, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("usage") / "store"
    shutil.copytree(seed.path, folder)
    return str(folder)


@pytest.mark.parametrize(
    ("args", "code", "expected"),
    [
        pytest.param(["-a", "openai:x"], 2, ["a run needs a judge: --judge"], id="no-judge"),
        pytest.param(["-a", "openai:x", "-j", "openai:y", "--answers", "ANSWERS"], 2, ["--answers"], id="both"),
        pytest.param(["-j", "openai:y"], 2, ["--answerer", "--answers"], id="neither"),
        pytest.param(["-a", "openai:x", "-j", "openai:y", "--mode", "nonsense"], 2, ["nonsense"], id="mode"),
        pytest.param(
            ["-a", "foo:bar", "-j", "openai:y"], 2, ["unknown provider 'foo'", "anthropic", "openai"], id="provider"
        ),
        pytest.param(["-a", "openai", "-j", "openai:y"], 2, ["PROVIDER:MODEL"], id="not-a-spec"),
        pytest.param(["-a", "openai:x", "-j", "openai:y", "--replay", "R", "--record", "R"], 2, ["one"], id="rr"),
        pytest.param(["-a", "openai:x", "-j", "openai:y", "--questions", "nope"], 2, ["no question 'nope'"], id="q"),
        pytest.param(
            ["-j", "openai:y", "--answers", "MISSING"], 2, ["cannot read answers", "missing.jsonl"], id="file"
        ),
    ],
)
def test_usage_errors_are_one_line(
    usage_store: str, seed: Seed, llm: FakeLLM, tmp_path: Path, args: list[str], code: int, expected: list[str]
) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"question_id": next(iter(seed.tiny_questions)), "response": "x"}) + "\n")
    files = {"ANSWERS": str(answers), "R": str(tmp_path / "r.jsonl"), "MISSING": str(tmp_path / "missing.jsonl")}
    args = [files.get(a, a) for a in args]
    r = cli("verify", seed.tiny, *args, "--base-url", llm.base_url, "--no-progress", "--store", usage_store)
    assert r.exit_code == code, r.output
    error = one_line_error(r)
    assert error.startswith("error: ")
    for part in expected:
        assert part in error
    assert llm.requests() == []


@pytest.mark.parametrize(
    ("args", "code", "expected"),
    [
        (["main"], 2, "rescoring needs a judge"),
        (["main", "-j", "openai:y", "--rubric-only", "--mode", "template_only"], 2, "--rubric-only and --mode"),
        (["nosuchrun", "-j", "openai:y"], 1, "nosuchrun"),
    ],
)
def test_rescore_usage_errors(main_run: MainRun, llm: FakeLLM, args: list[str], code: int, expected: str) -> None:
    r = cli("rescore", *args, "--base-url", llm.base_url, "--no-progress", "--store", str(main_run.store))
    assert r.exit_code == code, r.output
    assert expected in one_line_error(r)
    assert llm.requests() == []


# -- rescore --------------------------------------------------------------------------------------


def test_rescore_with_another_judge(main_run: MainRun, llm: FakeLLM, tmp_path: Path) -> None:
    folder = str(tmp_path / "store")
    shutil.copytree(main_run.store, folder)
    r = cli(
        "rescore", "main", "--judge", "openai:other-judge", "--base-url", llm.base_url, "--no-progress",
        "--store", folder, "--run", "rejudged",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "completed run rejudged" in r.stdout and "3 of 3 tasks stored" in r.stdout
    assert Counter(kind(b) for b in llm.requests()) == {"parse": 3}, "rescoring asked an answering model"
    assert {b["model"] for b in llm.requests()} == {"other-judge"}
    old, new = by_question(export(folder, "main")), by_question(export(folder, "rejudged"))
    assert set(old) == set(new)
    for q, row in new.items():
        assert row["metadata"]["parsing"]["model_name"] == "other-judge"
        assert row["metadata"]["answering"] == old[q]["metadata"]["answering"]
        assert row["template"]["raw_llm_response"] == old[q]["template"]["raw_llm_response"]
        assert row["template"]["verify_result"] == old[q]["template"]["verify_result"]
        assert set(row["template"]["usage_metadata"]) == {"parsing", "total"}
    assert len(export(folder, "main")["results"]) == 3  # the rescored run is left as it was


def test_rescore_rubric_only(main_run: MainRun, seed: Seed, llm: FakeLLM, tmp_path: Path) -> None:
    """Pharmacology's global rubric (an LLM trait, a regex trait, a metric trait) and its
    questions' own traits, evaluated on the stored answers; no template, no answering call."""
    folder = str(tmp_path / "store")
    shutil.copytree(main_run.store, folder)
    r = cli(
        "rescore", "main", "--rubric-only", "--judge", "openai:fake-judge", "--base-url", llm.base_url,
        "--no-progress", "--store", folder, "--run", "rubric",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "3 of 3 tasks stored" in r.stdout
    assert {kind(b) for b in llm.requests()} == {"rubric"}
    data = export(folder, "rubric")
    assert data["shared_data"]["rubric_definition"]["regex_traits"][0]["name"] == "no_dosage_advice"
    for row in data["results"]:
        meta = row["metadata"]
        assert meta["evaluation_mode"] == "rubric_only"
        assert meta["failure"] is None, meta["failure"]
        assert row["template"]["verify_result"] is None
        rubric = row["rubric"]
        assert rubric is not None and rubric["rubric_evaluation_performed"] is True
        assert rubric["regex_trait_scores"]["no_dosage_advice"] is True  # no "20 mg" in any answer
        assert rubric["llm_trait_scores"]["names_target"] is True
    for body in llm.requests():  # the reference answer is given to no rubric trait that did not ask
        for q in seed.pharma_questions.values():
            assert q["raw_answer"] not in texts(body)


# -- templates generate ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "code", "stored"),
    [
        pytest.param(GOOD_TEMPLATE, 0, True, id="good"),
        pytest.param("```python\nclass Answer:\n    planet: str = 'x'\n```", 1, False, id="no-BaseAnswer"),
        pytest.param(GOOD_TEMPLATE.replace('"Jupiter"}', '"Saturn"}'), 1, False, id="rejects-reference"),
    ],
)
def test_templates_generate(store: str, seed: Seed, llm: FakeLLM, reply: str, code: int, stored: bool) -> None:
    qid, text = next((q, t) for q, t in seed.gen_questions.items() if "planet" in t)
    llm.templates[text] = reply
    r = cli("templates", "generate", seed.gen, "--model", "openai:writer", "--questions", qid,
            "--base-url", llm.base_url, "--store", store)  # fmt: skip
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output
    kinds = [kind(b) for b in llm.requests()]
    assert kinds[0] == "generate" and {b["model"] for b in llm.requests()} == {"writer"}
    shown = cli("show", seed.gen, qid, "--store", store)
    assert shown.exit_code == 0, shown.output
    if stored:
        assert f"stored {qid}" in r.stdout and "1 of 1 templates stored" in r.stdout
        assert kinds == ["generate", "parse"]
        assert "class Answer(BaseAnswer)" in shown.stdout and "planet" in shown.stdout
    else:
        assert f"not stored {qid}" in r.stderr
        assert "0 of 1 templates stored" in r.stdout
        assert "template: none" in shown.stdout
        if "Saturn" in reply:
            assert "rejects the reference answer" in r.stderr
        else:
            assert "invalid template" in r.stderr and kinds == ["generate"]
