"""Karenina's template, generation and verification members of ``Benchmark`` (issue 18, point 3),
on the graph: what each returns, what it stores, the errors it raises. What Karenina itself
answers to the same calls is compared in tests/parity/test_calls_templates.py.

Generation here uses a fake model (``FunctionProvider``) and a fake sandbox that accepts every
template (the sandbox's own checks are tested in tests/runner); the slow tests at the end run the
real sandbox and a verification run with fake models. No test reaches a real model.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import (
    Benchmark,
    FeatureUnavailableError,
    InvalidTypeError,
    InvalidValueError,
    QuestionNotFoundError,
    Store,
    VerificationError,
)
from karenina_rdf.runner import ChatRequest, FunctionProvider, ModelSpec, TemplateProgressEvent

T_CAPITAL = """class Answer(BaseAnswer):
    capital: str = Field(description="the capital named")

    def verify(self) -> bool:
        return self.capital.strip().lower() == "paris"
"""
T_LEGS = """class LegsAnswer(BaseAnswer):
    legs: int = Field(description="number of legs")

    def verify(self) -> bool:
        return self.legs == 8
"""
LONG = "Which of these " + "very " * 30 + "long words is longest?"


@pytest.fixture
def bench() -> Iterator[Benchmark]:
    with Store.memory() as store:
        b = Benchmark.create("tpl", description="d", version="1.0.0", store=store)
        b.add_question("What is the capital of France?", "Paris", question_id="q0")
        b.add_question("How many legs has a spider?", "8", question_id="q1")
        b.add_question(LONG, "longest", question_id="q2")
        yield b


# -- templates ---------------------------------------------------------------------------------
# (call, arguments, error type, message): Karenina's types and messages for the same calls.
REFUSALS: list[tuple[str, list[Any], type[Exception], str]] = [
    ("copy_template", ["q0", "q1"], ValueError, "Question q0 has no template"),
    ("update_template", ["q0", 42], TypeError, "template must be a string or BaseAnswer subclass, got int"),
    ("update_template", ["q0", "class X:\n    pass\n"], ValueError, "Invalid template"),
    ("update_template", ["q0", "def ("], ValueError, "Invalid template"),
    ("update_template", ["nope", T_CAPITAL], ValueError, "Question not found: nope"),
    ("get_template", ["q0"], ValueError, "Question q0 has no template"),
    ("get_template", ["nope"], ValueError, "Question not found: nope"),
]


@pytest.mark.parametrize(("call", "args", "kind", "message"), REFUSALS, ids=[f"{r[0]}{r[1][:1]}" for r in REFUSALS])
def test_template_calls_refuse_as_karenina(
    bench: Benchmark, call: str, args: list[Any], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind, match=message):
        getattr(bench, call)(*args)


def test_update_copy_and_apply_write_the_graph(bench: Benchmark) -> None:
    bench.update_template("q0", T_CAPITAL)
    bench.copy_template("q0", "q1")
    assert bench.get_template("q1") == T_CAPITAL
    with pytest.raises(QuestionNotFoundError, match="Question not found: nope"):
        bench.copy_template("q0", "nope")
    bench.update_template("q1", T_LEGS)  # any class name, kept as written
    # A second handle on the same store reads what the first wrote: nothing is cached.
    again = Benchmark(bench.store, bench.iri)
    assert again.get_template("q1") == T_LEGS
    assert again.apply_global_template(T_CAPITAL) == ["q2"]
    assert again.apply_global_template(T_CAPITAL) == []
    assert again.get_missing_templates(ids_only=True) == []


def test_get_finished_templates_is_karenina_s_finished_template(bench: Benchmark) -> None:
    bench.add_answer_template("q0", T_CAPITAL)
    bench.mark_unfinished("q1")
    got = bench.get_finished_templates()
    assert [t.question_id for t in got] == ["q0", "q2"]  # Karenina's default template counts
    first = got[0].model_dump()
    assert set(first) == {
        "question_id",
        "question_text",
        "question_preview",
        "raw_answer",
        "template_code",
        "last_modified",
        "finished",
        "question_rubric",
        "question_dynamic_rubric",
        "keywords",
        "few_shot_examples",
        "workspace_path",
    }
    assert (first["template_code"], first["raw_answer"], first["finished"]) == (T_CAPITAL, "Paris", True)
    assert got[1].question_preview == LONG[:100] + "..."
    assert [t.question_id for t in bench.get_finished_templates({"q2", "q1"})] == ["q2"]


def test_validate_templates_reports_syntax_errors_by_question(tmp_path: Path) -> None:
    with Store.memory() as store:
        b = Benchmark.create("v", store=store)
        b.add_question("Q?", "A", T_CAPITAL, question_id="ok")
        b.add_question("R?", "B", question_id="broken")
        assert b.validate_templates() == (True, [])
        doc = b.to_checkpoint()
        for item in doc["dataFeedElement"]:
            if item["@id"] == "broken":
                item["item"]["hasPart"]["text"] = "class Answer(BaseAnswer:\n    pass\n"
        path = tmp_path / "broken.jsonld"
        path.write_text(json.dumps(doc), encoding="utf-8")
        loaded = Benchmark.load(path, store=Store.memory())
        ok, errors = loaded.validate_templates()
        assert not ok
        assert [e["question_id"] for e in errors] == ["broken"]
        assert errors[0]["error"].startswith("Syntax error: ") and errors[0]["error"].endswith(" at line 1")


# -- Karenina's generated-templates file ---------------------------------------------------------
def test_export_and_import_generated_templates(bench: Benchmark, tmp_path: Path) -> None:
    bench.add_answer_template("q0", T_CAPITAL)
    bench.add_answer_template("q1", T_LEGS)
    path = tmp_path / "generated.json"
    assert bench.export_generated_templates(path) is None
    # json.dump(..., indent=2): Karenina's bytes (compared with Karenina's own in the parity test)
    assert path.read_text() == json.dumps({"q0": T_CAPITAL, "q1": T_LEGS}, indent=2)
    with Store.memory() as store:
        other = Benchmark.create("other", store=store)
        other.add_question("What is the capital of France?", "Paris", question_id="q0")
        other.add_question("How many legs has a spider?", "8", T_CAPITAL, question_id="q1")
        assert other.import_generated_templates(path) == {"q0": True, "q1": False}
        assert other.get_template("q1") == T_CAPITAL  # has one: kept without force_overwrite
        assert other.import_generated_templates(path, force_overwrite=True) == {"q0": True, "q1": True}
        assert other.get_template("q1") == T_LEGS
        unknown = tmp_path / "unknown.json"
        unknown.write_text(json.dumps({"zz": T_CAPITAL}))
        assert other.import_generated_templates(unknown) == {"zz": False}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "maps question ids to template code"),
        (json.dumps({"q0": "class X:\n    pass\n"}), "question 'q0': Invalid template"),
    ],
)
def test_import_generated_templates_refuses_bad_files(
    bench: Benchmark, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InvalidValueError, match=message):
        bench.import_generated_templates(path)
    assert not bench.has_template("q0")  # nothing set: every block is checked first


# -- optimisation ------------------------------------------------------------------------------
def test_optimize_is_not_available_and_says_so(bench: Benchmark) -> None:
    with pytest.raises(ImportError, match="GEPA") as caught:
        bench.optimize(["answering_system_prompt"])
    assert isinstance(caught.value, FeatureUnavailableError)


def test_optimization_history_reads_karenina_s_tracker(bench: Benchmark, tmp_path: Path) -> None:
    assert bench.optimization_history(tmp_path / "none.db") == []
    assert not (tmp_path / "none.db").exists()  # read only: no file made
    db = tmp_path / "history.db"
    with sqlite3.connect(db) as conn:  # Karenina's OptimizationTracker schema
        conn.execute(
            "CREATE TABLE optimization_runs (run_id TEXT PRIMARY KEY, timestamp TEXT NOT NULL, "
            "benchmark_name TEXT NOT NULL, targets TEXT NOT NULL, seed_prompts TEXT NOT NULL, "
            "optimized_prompts TEXT NOT NULL, train_score REAL NOT NULL, val_score REAL NOT NULL, "
            "test_score REAL, improvement REAL NOT NULL, reflection_model TEXT NOT NULL, "
            "metric_calls INTEGER NOT NULL, best_generation INTEGER NOT NULL, "
            "total_generations INTEGER NOT NULL, model_scores TEXT)"
        )
        for i, name in enumerate(["tpl", "other", "tpl"]):
            conn.execute(
                "INSERT INTO optimization_runs VALUES "
                "(?, ?, ?, ?, '{}', '{}', 0.5, 0.6, NULL, 0.2, 'm', 10, 1, 2, NULL)",
                (f"r{i}", f"2026-01-0{i + 1}T10:00:00", name, '["answering_system_prompt"]'),
            )
    runs = bench.optimization_history(db)
    assert [r.run_id for r in runs] == ["r2", "r0"]  # this benchmark's, newest first
    assert runs[0].targets == ["answering_system_prompt"] and runs[0].val_score == 0.6
    assert [r.run_id for r in bench.optimization_history(db, limit=1)] == ["r2"]
    (tmp_path / "junk.db").write_text("not sqlite")
    with pytest.raises(InvalidValueError, match="not a Karenina optimisation tracker"):
        bench.optimization_history(tmp_path / "junk.db")


# -- generation (fake model, fake sandbox) -----------------------------------------------------
@dataclass
class _Outcome:
    ok: bool
    value: Any = None
    error: str | None = None


class AcceptingSandbox:
    """Accepts every template (the real sandbox's checks are tested in tests/runner)."""

    def validate_template(self, code: str) -> _Outcome:
        return _Outcome(True, {"json_schema": {"type": "object", "properties": {}}, "regex_only": False})

    def verify_template(self, code: str, parsed: Any, raw: str, qid: str | None = None) -> _Outcome:
        return _Outcome(True, {"verify_result": True})

    def run_callable(self, payload_b64: str, text: str) -> _Outcome:
        raise AssertionError("not used")


def writer(request: ChatRequest) -> str:
    if request.json_schema is not None:  # parsing the reference answer
        return "{}"
    question = request.messages[-1].content.split("\n")[1]
    if "spider" in question:
        return "no code here, just words"
    return f"```python\n{T_CAPITAL}```"


MODEL = ModelSpec(FunctionProvider(writer), "fake-writer", "claude_tool", spec="anthropic:fake-writer")


def test_generate_template_for_question(bench: Benchmark) -> None:
    got = bench.generate_template_for_question("q0", model_spec=MODEL, sandbox=AcceptingSandbox())
    assert got == {
        "success": True,
        "template_code": T_CAPITAL,
        "error": None,
        "raw_response": T_CAPITAL,
        "skipped": False,
    }
    assert bench.get_template("q0") == T_CAPITAL
    again = bench.generate_template_for_question("q0", model_spec=MODEL, sandbox=AcceptingSandbox())
    assert again["skipped"] is True and again["success"] is True and again["raw_response"] is None
    assert again["error"] == "Template already exists (use force_regenerate=True to override)"
    failed = bench.generate_template_for_question("q1", model_spec=MODEL, sandbox=AcceptingSandbox())
    assert failed["success"] is False and failed["template_code"] == "" and failed["error"]
    assert not bench.has_template("q1")
    with pytest.raises(ValueError, match="Question not found: nope"):
        bench.generate_template_for_question("nope", model_spec=MODEL, sandbox=AcceptingSandbox())


def test_generate_templates_reports_progress_as_karenina(bench: Benchmark) -> None:
    events: list[TemplateProgressEvent] = []
    with pytest.raises(ValueError, match=r"Questions not found: \['nope'\]"):
        bench.generate_templates(["q0", "nope"], model_spec=MODEL, sandbox=AcceptingSandbox())
    out = bench.generate_templates(
        ["q0", "q1"], progress_callback=events.append, model_spec=MODEL, sandbox=AcceptingSandbox()
    )
    assert [(k, v["success"]) for k, v in out.items()] == [("q0", True), ("q1", False)]
    assert [(e.event, e.question_id) for e in events] == [
        ("job_started", None),
        ("task_started", "q0"),
        ("task_completed", "q0"),
        ("task_started", "q1"),
        ("task_failed", "q1"),
        ("job_completed", None),
    ]
    last = events[-1]
    assert (last.processed_count, last.successful_count, last.failed_count, last.percentage) == (2, 1, 1, 100.0)


def test_generate_templates_on_workers_writes_the_same(bench: Benchmark) -> None:
    out = bench.generate_templates(["q0", "q2"], max_workers=2, model_spec=MODEL, sandbox=AcceptingSandbox())
    assert {k: v["success"] for k, v in out.items()} == {"q0": True, "q2": True}
    assert bench.get_template("q2") == T_CAPITAL


def test_a_cancelled_generation_stops_before_the_next_question(bench: Benchmark) -> None:
    cancel = threading.Event()
    events: list[str] = []

    def on(e: TemplateProgressEvent) -> None:
        events.append(e.event)
        if e.event == "task_completed":
            cancel.set()

    out = bench.generate_templates(
        ["q0", "q2"], progress_callback=on, cancel_event=cancel, model_spec=MODEL, sandbox=AcceptingSandbox()
    )
    assert list(out) == ["q0"] and events[-1] == "job_cancelled"


def test_generate_all_templates_backs_up_and_restores(bench: Benchmark, tmp_path: Path) -> None:
    backup = tmp_path / "backup.json"
    out = bench.generate_all_templates(backup_path=backup, model_spec=MODEL, sandbox=AcceptingSandbox())
    assert {k: v["success"] for k, v in out.items()} == {"q0": True, "q1": False, "q2": True}
    assert json.loads(backup.read_text()) == {"q0": T_CAPITAL, "q2": T_CAPITAL}
    assert bench.generate_all_templates(backup_path=backup, model_spec=MODEL, sandbox=AcceptingSandbox()) == {
        "q1": out["q1"]
    }
    with Store.memory() as store:  # an interrupted run's backup is restored before generating
        fresh = Benchmark.create("tpl", store=store)
        fresh.add_question("What is the capital of France?", "Paris", question_id="q0")
        assert fresh.generate_all_templates(backup_path=backup, model_spec=MODEL, sandbox=AcceptingSandbox()) == {}
        assert fresh.get_template("q0") == T_CAPITAL


def test_the_default_backup_file_is_karenina_s(bench: Benchmark, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    bench.generate_all_templates(model_spec=MODEL, sandbox=AcceptingSandbox())
    assert (tmp_path / "tpl_templates_backup.json").exists()
    bench.generate_all_templates(
        progressive_backup=False, force_regenerate=True, model_spec=MODEL, sandbox=AcceptingSandbox()
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model_provider": "google_genai"}, "model_provider='google_genai' with interface='langchain'"),
        ({"interface": "openrouter", "model_provider": "openai"}, "interface='openrouter'"),
        ({"interface": "openai_endpoint"}, "needs endpoint_base_url"),
    ],
)
def test_generation_models_the_runner_cannot_call_are_refused(
    bench: Benchmark, kwargs: dict[str, Any], message: str, monkeypatch: Any
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(InvalidValueError, match=message):
        bench.generate_template_for_question("q0", **kwargs)


# -- verification: what is refused before anything runs ---------------------------------------
def _config(**extra: Any) -> dict[str, Any]:
    model = {"model_name": "m", "model_provider": "openai", "interface": "openai_endpoint"}
    model["endpoint_base_url"] = "http://127.0.0.1:9/v1"
    return {"answering_models": [model], "parsing_models": [dict(model)], **extra}


@pytest.mark.parametrize(
    ("config", "kwargs", "kind", "message"),
    [
        (_config(), {"sink": object()}, InvalidValueError, "sink is not supported"),
        (None, {}, InvalidTypeError, "config must be a VerificationConfig"),
        (_config(abstention_enabled=True), {}, InvalidValueError, r"VerificationConfig\.abstention_enabled=True"),
        (_config(deep_judgment_mode="enabled"), {}, InvalidValueError, r"VerificationConfig\.deep_judgment_mode"),
        (_config(db_config={"x": 1}), {}, InvalidValueError, r"VerificationConfig\.db_config"),
        (
            {
                "answering_models": [{"model_name": "m", "interface": "manual", "manual_traces": None}],
                "parsing_models": [],
            },
            {},
            InvalidValueError,
            r"answering_models\[0\]: interface 'manual'",
        ),
        (
            _config(few_shot_config={"pool_mode": "k-shot"}),
            {},
            InvalidValueError,
            r"VerificationConfig\.few_shot_config",
        ),
        (
            {**_config(), "answering_models": [{"model_name": "m", "mcp_urls_dict": {"a": "http://x"}}]},
            {},
            InvalidValueError,
            r"answering_models\[0\]\.mcp_urls_dict is not supported",
        ),
    ],
)
def test_verification_settings_the_runner_cannot_honour_are_named(
    bench: Benchmark, config: Any, kwargs: dict[str, Any], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind, match=message):
        bench.run_verification(config, **kwargs)


def test_resume_verification_takes_a_stored_run(bench: Benchmark, tmp_path: Path) -> None:
    state = tmp_path / "run.state"
    state.write_text("{}")
    with pytest.raises(InvalidValueError, match=r"a Karenina \.state file cannot be resumed here"):
        bench.resume_verification(state)
    with pytest.raises(VerificationError, match="no stored run by that id"):
        bench.resume_verification("no-such-run")


# -- slow: the real sandbox and a verification run with fake models ---------------------------
def _answers(request: ChatRequest) -> str:
    return "The capital is Paris." if "France" in request.messages[-1].content else "Eight."


def _judge(request: ChatRequest) -> str:
    props = (request.json_schema or {}).get("properties", {})
    response = request.messages[-1].content
    return json.dumps({name: "Paris" if "Paris" in response else "Lyon" for name in props})


@pytest.mark.slow
def test_run_and_resume_verification_store_the_run() -> None:
    from karenina_rdf.runner import Sandbox

    answerer = ModelSpec(FunctionProvider(_answers), "fake-a", "claude_tool", spec="anthropic:fake-a")
    judge = ModelSpec(FunctionProvider(_judge), "fake-j", "claude_tool", spec="anthropic:fake-j")
    progress: list[tuple[float, str]] = []
    with Store.memory() as store, Sandbox(workers=1) as sandbox:
        b = Benchmark.create("verify", store=store)
        b.add_question("What is the capital of France?", "Paris", T_CAPITAL, question_id="q0")
        b.add_question("Name a French city.", "Lyon", T_CAPITAL, question_id="q1")
        config = {"answering_models": [answerer], "parsing_models": [judge], "replicate_count": 1}
        got = b.run_verification(
            config, run_name="first", progress_callback=lambda p, m: progress.append((p, m)), sandbox=sandbox
        )
        assert len(got) == 2 and got.scenario_results is None and got.errors is None
        verdicts = {r["metadata"]["question_id"]: r["template"]["verify_result"] for r in got}
        assert verdicts == {"q0": True, "q1": False}
        assert {r["metadata"]["run_name"] for r in got.results} == {"first"}
        assert progress[-1][0] == 100.0
        # Stored in the graph: the run is the store's, found by its id.
        run_id = got.metadata["run_id"]
        assert [s.run_id for s in store.runs()] == [run_id]
        again = b.resume_verification(run_id, config=config, sandbox=sandbox)
        assert again.metadata["report"]["skipped"] == 2 and len(again) == 2
        only = b.run_verification(config, question_ids=["q1"], async_enabled=False, sandbox=sandbox)
        assert [r["metadata"]["question_id"] for r in only] == ["q1"]


@pytest.mark.slow
def test_generation_with_the_real_sandbox_checks_the_template() -> None:
    from karenina_rdf.runner import Sandbox

    def parse_reference(request: ChatRequest) -> str:
        if request.json_schema is not None:  # the reference answer, parsed as it reads
            return json.dumps({"capital": "Rome" if "Rome" in request.messages[-1].content else "Paris"})
        return f"```python\n{T_CAPITAL}```"

    model = ModelSpec(FunctionProvider(parse_reference), "w", "claude_tool", spec="anthropic:w")
    with Store.memory() as store, Sandbox(workers=1) as sandbox:
        b = Benchmark.create("gen", store=store)
        b.add_question("What is the capital of France?", "Paris", question_id="q0")
        b.add_question("What is the capital of Italy?", "Rome", question_id="q1")
        got = b.generate_templates(["q0", "q1"], model_spec=model, sandbox=sandbox)
        assert got["q0"]["success"] is True and b.get_template("q0") == T_CAPITAL
        # The template rejects Rome as the reference answer: not stored, and said why.
        assert got["q1"]["success"] is False and "rejects the reference answer" in got["q1"]["error"]
        assert not b.has_template("q1")


@pytest.mark.slow
def test_karenina_s_model_configs_reach_an_openai_compatible_server(tmp_path: Path) -> None:
    """Karenina's ModelConfig fields (as a dict) through HTTP to the fake chat server; the run
    records them, so resume_verification rebuilds the models from the store alone."""
    from karenina_rdf.runner import Sandbox
    from tests.helpers.fake_llm_server import FakeLLM, kind

    with FakeLLM() as llm, Store(tmp_path / "store") as store, Sandbox(workers=1) as sandbox:
        llm.answers["What is the capital of France?"] = "paris"
        llm.templates["What is the capital of Italy?"] = f"```python\n{T_CAPITAL}```"
        b = Benchmark.create("http", store=store)
        b.add_question("What is the capital of France?", "Paris", T_CAPITAL, question_id="q0")
        b.add_question("What is the capital of Italy?", "Rome", question_id="q1")
        model = {
            "id": "fake",
            "model_name": "fake-model",
            "model_provider": "openai",
            "interface": "openai_endpoint",
            "endpoint_base_url": llm.base_url,
            "endpoint_api_key": "sk-test",
            "temperature": 0.0,
        }
        # Generation: the fake server's template rejects Rome, the reference answer.
        got = b.generate_template_for_question(
            "q1", "fake-model", "openai", 0, "openai_endpoint", endpoint_base_url=llm.base_url, sandbox=sandbox
        )
        assert got["success"] is False and "rejects the reference answer" in (got["error"] or "")
        assert [kind(r) for r in llm.requests()][:1] == ["generate"]
        b.mark_unfinished("q1")
        config = {"answering_models": [model], "parsing_models": [model], "evaluation_mode": "template_only"}
        first = b.run_verification(config, run_name="http", sandbox=sandbox)
        row = first.results[0]
        assert row["metadata"]["question_id"] == "q0" and row["template"]["verify_result"] is True
        assert row["metadata"]["answering"]["interface"] == "openai_endpoint"
        assert row["metadata"]["answering"]["model_name"] == "fake-model"
        again = b.resume_verification(first.metadata["run_id"], sandbox=sandbox)
        assert again.metadata["report"]["skipped"] == 1 and again.metadata["run_id"] == first.metadata["run_id"]


@pytest.mark.slow
def test_extend_template_adds_a_judge_and_a_replicate_to_the_stored_run() -> None:
    """Karenina's extend_template: prior answers graded by the new judge without calling the
    answerer again, a new replicate answered live, prior results passed through."""
    from karenina_rdf.runner import Sandbox

    calls: list[str] = []

    def answers(request: ChatRequest) -> str:
        calls.append(request.messages[-1].content)
        return _answers(request)

    answerer = ModelSpec(FunctionProvider(answers), "fake-a", "claude_tool", spec="anthropic:fake-a")
    judge = ModelSpec(FunctionProvider(_judge), "fake-j", "claude_tool", spec="anthropic:fake-j")
    judge2 = ModelSpec(FunctionProvider(_judge), "fake-j2", "claude_tool", spec="anthropic:fake-j2")
    with Store.memory() as store, Sandbox(workers=1) as sandbox:
        b = Benchmark.create("extend", store=store)
        b.add_question("What is the capital of France?", "Paris", T_CAPITAL, question_id="q0")
        prior = b.run_verification(
            {"answering_models": [answerer], "parsing_models": [judge]}, run_name="base", sandbox=sandbox
        )
        assert len(prior) == 1 and len(calls) == 1
        with pytest.raises(InvalidValueError, match="does not cover the answering identities"):
            b.extend_template(prior, {"answering_models": [judge2], "parsing_models": [judge]}, sandbox=sandbox)
        with pytest.raises(InvalidValueError, match="run_name='other'"):
            b.extend_template(
                prior, {"answering_models": [answerer], "parsing_models": [judge]}, run_name="other", sandbox=sandbox
            )
        merged = b.extend_template(
            prior, {"answering_models": [answerer], "parsing_models": [judge, judge2]}, sandbox=sandbox
        )
        assert len(calls) == 1  # the new judge graded the stored answer
        assert merged.metadata["run_id"] == prior.metadata["run_id"]
        assert merged.results[0] == prior.results[0]  # the prior result, verbatim
        assert sorted(r["metadata"]["parsing"]["model_name"] for r in merged) == ["fake-j", "fake-j2"]
        assert {r["metadata"]["run_name"] for r in merged} == {"base"}
        more = b.extend_template(
            merged,
            {"answering_models": [answerer], "parsing_models": [judge, judge2], "replicate_count": 2},
            sandbox=sandbox,
        )
        # As in Karenina: a one-replicate run's results have replicate None, so two replicates
        # are replicates 1 and 2, both new: answered once each, graded by both judges.
        assert len(more) == 6 and len(calls) == 3
        assert sorted(str(r["metadata"]["replicate"]) for r in more) == ["1", "1", "2", "2", "None", "None"]
        with pytest.raises(InvalidValueError, match="replicate_count=1 is lower"):
            b.extend_template(more, {"answering_models": [answerer], "parsing_models": [judge]}, sandbox=sandbox)
        assert [s.run_id for s in store.runs()] == [prior.metadata["run_id"]]


@pytest.mark.parametrize(
    ("prior", "kwargs", "kind", "message"),
    [
        ({"results": []}, {}, InvalidTypeError, "must be a VerificationResultSet returned by run_verification"),
        (None, {"sink": object()}, InvalidValueError, "sink is not supported"),
        (None, {"store": False}, InvalidValueError, "store=False is not supported"),
    ],
)
def test_extend_template_refusals(
    bench: Benchmark, prior: Any, kwargs: dict[str, Any], kind: type[Exception], message: str
) -> None:
    from karenina_rdf.runner import VerificationResultSet

    given = VerificationResultSet(results=[], metadata={"run_id": "r"}) if prior is None else prior
    with pytest.raises(kind, match=message):
        bench.extend_template(given, _config(), **kwargs)


def test_extend_template_needs_prior_results(bench: Benchmark) -> None:
    from karenina_rdf.runner import VerificationResultSet

    empty = VerificationResultSet(results=[], metadata={"run_id": "r"})
    with pytest.raises(InvalidValueError, match="prior_results must contain at least one VerificationResult"):
        bench.extend_template(empty, _config())


@pytest.mark.slow
def test_extend_rubric_grades_the_stored_answers_with_the_rubric_set_since() -> None:
    """Karenina's extend_rubric: the prior rows come back in order with the new trait scores
    merged into their rubric; no answering model is called, no template runs."""
    from karenina_rdf.runner import Sandbox

    calls: list[str] = []

    def answers(request: ChatRequest) -> str:
        calls.append(request.messages[-1].content)
        return _answers(request)

    answerer = ModelSpec(FunctionProvider(answers), "fake-a", "claude_tool", spec="anthropic:fake-a")
    judge = ModelSpec(FunctionProvider(_judge), "fake-j", "claude_tool", spec="anthropic:fake-j")
    config = {"answering_models": [answerer], "parsing_models": [judge]}
    with Store.memory() as store, Sandbox(workers=1) as sandbox:
        b = Benchmark.create("extend-rubric", store=store)
        b.add_question("What is the capital of France?", "Paris", T_CAPITAL, question_id="q0")
        b.add_question("How many legs has a spider?", "8", T_LEGS, question_id="q1")
        prior = b.run_verification(config, run_name="base", sandbox=sandbox)
        assert len(prior) == 2 and len(calls) == 2
        with pytest.raises(InvalidValueError, match="benchmark has no rubric attached"):
            b.extend_rubric(prior, config, sandbox=sandbox)
        b.add_global_rubric_trait({"name": "names_paris", "trait_type": "regex", "pattern": "Paris"})
        b.add_question_rubric_trait("q1", {"name": "has_digit", "trait_type": "regex", "pattern": r"\d"})
        with pytest.raises(InvalidValueError, match=r"config\.parsing_models does not match"):
            b.extend_rubric(prior, {"answering_models": [answerer], "parsing_models": [answerer]}, sandbox=sandbox)
        with pytest.raises(InvalidValueError, match="replicate_count=2 does not match"):
            b.extend_rubric(prior, {**config, "replicate_count": 2}, sandbox=sandbox)
        with pytest.raises(InvalidValueError, match="evaluation_mode must be 'template_only' or 'rubric_only'"):
            b.extend_rubric(prior, {**config, "evaluation_mode": "template_and_rubric"}, sandbox=sandbox)
        merged = b.extend_rubric(prior, config, sandbox=sandbox)
        assert len(calls) == 2  # the stored answers were graded; nobody answered again
        assert [r["metadata"]["question_id"] for r in merged] == [r["metadata"]["question_id"] for r in prior]
        scores = {r["metadata"]["question_id"]: r["rubric"]["regex_trait_scores"] for r in merged}
        assert scores == {"q0": {"names_paris": True}, "q1": {"names_paris": False, "has_digit": False}}
        for before, after in zip(prior, merged, strict=True):
            assert after["template"] == before["template"]  # the template verdicts pass through
            assert after["rubric"]["rubric_evaluation_performed"] is True
        # The rubric pass is a run of its own, derived from the prior one.
        assert merged.metadata["prior_run_id"] == prior.metadata["run_id"]
        assert sorted(s.run_id for s in store.runs()) == sorted([prior.metadata["run_id"], merged.metadata["run_id"]])
        # A second extension with the same traits collides, as in Karenina.
        with pytest.raises(InvalidValueError, match="trait name collision in regex_trait_scores"):
            b.extend_rubric(merged, config, sandbox=sandbox)
        unstored = b.extend_rubric(prior, config, store=False, sandbox=sandbox)
        assert unstored.results == merged.results and len(store.runs()) == 2
