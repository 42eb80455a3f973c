"""Karenina's template members, the same calls in both libraries (issue 18, point 3): a call
sequence on a benchmark built the same way in Karenina (its own environment,
tests/helpers/karenina_ref.py) and here; each step's return value, or the type and message of the
error it raises, is compared, then the checkpoints both save (timestamps and the benchmark's
time-stamped ``@id`` normalised), and Karenina's generated-templates file both ways: each library
imports the file the other exported.

What cannot run offline in Karenina is not driven here: template generation and verification call
a model through Karenina's adapters (LangChain, Anthropic's SDK), and GEPA's ``optimize`` calls
one too. (Pointed at the fake chat server of tests/helpers/fake_llm_server.py with interface
``openai_endpoint``, Karenina's answering call streams, ``"stream": true``, which that server does
not speak: the run records "No generation chunks were returned" for every question.) Their
result shapes follow Karenina's source, read for this (benchmark_helpers'
``generate_template_for_question``: the ``success``/``template_code``/``error``/``raw_response``/
``skipped`` dict; ``VerificationResultSet.results``: Karenina's ``VerificationResult`` records),
and are tested with fake models in tests/authoring/test_templates.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store
from tests.helpers.karenina_ref import karenina

pytestmark = [pytest.mark.slow]  # Karenina runs in a subprocess of its own environment

FORMATS: tuple[tuple[str, str, str, str], ...] = (
    (
        "generated-templates file (`export_generated_templates` / `import_generated_templates`)",
        "import and export",
        "same bytes, and each library imports the other's file",
        "test_generated_templates_files_are_byte_identical",
    ),
)

QUESTIONS = [
    ("What is the capital of France?", "Paris"),
    ("How many legs has a spider?", "8"),
    ("Which of these " + "very " * 30 + "long words is longest?", "longest"),
]
CAPITAL = """class Answer(BaseAnswer):
    capital: str = Field(description="the capital named")

    def verify(self) -> bool:
        return self.capital.strip().lower() == "paris"
"""
LEGS = """class LegsAnswer(BaseAnswer):
    legs: int = Field(description="number of legs")

    def verify(self) -> bool:
        return self.legs == 8
"""
# (call, arguments). "Q0".."Q2" stand for the question ids, "FILE:name" for a file in the test's
# folder (one per library). Only the type of an error and the start of its message are compared
# where Karenina's message comes from running the code ("Invalid template: ..." + its exec error;
# ours is the static check's finding, never running it): see PREFIX_ONLY.
STEPS: list[tuple[str, list[Any]]] = [
    ("get_missing_templates", [True]),
    ("has_template", ["Q0"]),
    ("get_template", ["Q0"]),
    ("copy_template", ["Q0", "Q1"]),
    ("add_answer_template", ["Q0", CAPITAL]),
    ("has_template", ["Q0"]),
    ("copy_template", ["Q0", "nope"]),
    ("copy_template", ["Q0", "Q1"]),
    ("get_template", ["Q1"]),
    ("update_template", ["Q0", "class X:\n    pass\n"]),
    ("update_template", ["Q0", "def ("]),
    ("update_template", ["Q0", 42]),
    ("update_template", ["nope", CAPITAL]),
    ("update_template", ["Q1", LEGS]),
    ("get_template", ["Q1"]),
    ("get_finished_templates", []),
    ("mark_unfinished", ["Q1"]),
    ("get_finished_templates", [["Q1", "Q2"]]),
    ("validate_templates", []),
    ("export_generated_templates", ["FILE:before-apply.json"]),
    ("import_generated_templates", ["FILE:before-apply.json"]),
    ("apply_global_template", [CAPITAL]),
    ("apply_global_template", [CAPITAL]),
    ("get_missing_templates", [True]),
    ("import_generated_templates", ["FILE:before-apply.json", True]),
    ("get_template", ["Q2"]),
    ("export_generated_templates", ["FILE:generated.json"]),
    ("optimization_history", ["FILE:no-tracker.db"]),
    ("validate_templates", []),
]
PREFIX_ONLY = {9, 10}  # step indices: "Invalid template: " and the error type only

# The calls, run by either library: ``bench`` is the benchmark, ``ids`` its question ids, ``folder``
# where files go. Returns (results, ids); an error is ["ERR", builtin type, message].
RUN = r"""
def run(bench, ids, steps, folder):
    from pathlib import Path
    def arg(a):
        if isinstance(a, str) and a[:1] == "Q" and a[1:].isdigit():
            return ids[int(a[1:])]
        if isinstance(a, str) and a.startswith("FILE:"):
            return Path(folder) / a[5:]
        if isinstance(a, list):
            return {arg(x) for x in a}
        return a
    def plain(value):
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json")
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value
    out = []
    for name, args in steps:
        try:
            out.append(plain(getattr(bench, name)(*[arg(a) for a in args])))
        except Exception as exc:
            kinds = (TypeError, ValueError, KeyError, ImportError, Exception)
            kind = next(k.__name__ for k in kinds if isinstance(exc, k))
            out.append(["ERR", kind, str(exc)])
    return out
"""

KARENINA_SCRIPT = (
    RUN
    + r"""
import json, sys
from pathlib import Path
from karenina import Benchmark

questions, steps, folder = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
b = Benchmark.create(name="calls", description="d", version="1.0.0")
ids = [b.add_question(question=q, raw_answer=a) for q, a in questions]
results = run(b, ids, steps, folder)
b.save(Path(folder) / "saved.jsonld")
print(json.dumps({"ids": ids, "results": results}))
"""
)

CROSS_SCRIPT = r"""
import json, sys
from pathlib import Path
from karenina import Benchmark

questions, path, broken = json.loads(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
b = Benchmark.create(name="calls", description="d", version="1.0.0")
for q, a in questions:
    b.add_question(question=q, raw_answer=a)
imported = b.import_generated_templates(path)
templates = {q: b.get_template(q) for q in b.get_question_ids() if b.has_template(q)}
print(json.dumps({"imported": imported, "templates": templates,
                  "validate": Benchmark.load(Path(broken)).validate_templates()}))
"""

HISTORY_SCRIPT = r"""
import json, sys
from datetime import datetime
from karenina import Benchmark
from karenina.integrations.gepa import OptimizationRun, OptimizationTracker

path = sys.argv[1]
tracker = OptimizationTracker(path)
for i, name in enumerate(["calls", "other", "calls"]):
    tracker.log_run(OptimizationRun(
        run_id=f"run-{i}", timestamp=datetime(2026, 1, 1 + i, 10, 0, 0), benchmark_name=name,
        targets=["answering_system_prompt"], seed_prompts={"answering_system_prompt": ""},
        optimized_prompts={"answering_system_prompt": f"be brief {i}"}, train_score=0.5, val_score=0.25 * i,
        test_score=None, improvement=0.1, reflection_model="openai/gpt-4o", metric_calls=10,
        best_generation=1, total_generations=2, model_scores={"m": 0.5} if i else None,
    ))
b = Benchmark.create(name="calls")
runs = [r.model_dump(mode="json") for r in b.optimization_history(path, limit=5)]
print(json.dumps({"all": runs, "one": [r.run_id for r in b.optimization_history(path, limit=1)]}))
"""

_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?")
_FEED_ID = re.compile(r"urn:uuid:karenina-checkpoint-[0-9.]+")


def normal(value: Any) -> Any:
    """Timestamps and the benchmark's time-stamped @id, which differ between any two runs."""
    return json.loads(_FEED_ID.sub("<feed-id>", _TIME.sub("<time>", json.dumps(value))))


def _run_ours(folder: Path) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(RUN, namespace)  # the very function Karenina's side runs
    with Store.memory() as store:
        b = Benchmark.create("calls", description="d", version="1.0.0", store=store)
        ids = [b.add_question(q, a) for q, a in QUESTIONS]
        results = namespace["run"](b, ids, STEPS, folder)
        b.save(folder / "saved.jsonld")
        return {"ids": ids, "results": results}


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any], dict[str, Any]]:
    theirs_dir, ours_dir = tmp_path_factory.mktemp("karenina"), tmp_path_factory.mktemp("ours")
    theirs = karenina(KARENINA_SCRIPT, json.dumps(QUESTIONS), json.dumps(STEPS), str(theirs_dir))
    ours = json.loads(json.dumps(_run_ours(ours_dir)))
    return theirs_dir, ours_dir, theirs, ours


def test_the_same_template_calls_give_the_same_answers(both: tuple[Path, Path, dict[str, Any], dict[str, Any]]) -> None:
    _, _, theirs, ours = both
    assert ours["ids"] == theirs["ids"]
    for i, ((name, args), got, want) in enumerate(zip(STEPS, ours["results"], theirs["results"], strict=True)):
        if i in PREFIX_ONLY:
            assert want[:2] == got[:2] == ["ERR", "ValueError"], (name, got, want)
            assert got[2].startswith("Invalid template: ") and want[2].startswith("Invalid template: ")
            continue
        assert normal(got) == normal(want), f"step {i} {name}({args}): ours {got!r}, Karenina's {want!r}"


def test_the_saved_checkpoints_are_the_same(both: tuple[Path, Path, dict[str, Any], dict[str, Any]]) -> None:
    theirs_dir, ours_dir, _, _ = both
    theirs = json.loads((theirs_dir / "saved.jsonld").read_text(encoding="utf-8"))
    ours = json.loads((ours_dir / "saved.jsonld").read_text(encoding="utf-8"))
    assert normal(ours) == normal(theirs)


def test_generated_templates_files_are_byte_identical(both: tuple[Path, Path, dict[str, Any], dict[str, Any]]) -> None:
    theirs_dir, ours_dir, _, _ = both
    for name in ("before-apply.json", "generated.json"):
        assert (ours_dir / name).read_bytes() == (theirs_dir / name).read_bytes(), name


def _broken(saved: Path, folder: Path) -> Path:
    """Karenina's saved checkpoint with one template that does not parse (Karenina loads it)."""
    doc = json.loads(saved.read_text(encoding="utf-8"))
    doc["dataFeedElement"][1]["item"]["hasPart"]["text"] = "class Answer(BaseAnswer:\n    x: int\n"
    path = folder / "broken.jsonld"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def test_each_library_imports_the_generated_templates_file_of_the_other(
    both: tuple[Path, Path, dict[str, Any], dict[str, Any]],
) -> None:
    theirs_dir, ours_dir, _, _ = both
    broken = _broken(theirs_dir / "saved.jsonld", theirs_dir)
    # Karenina reads our file; we read Karenina's: the same templates land on the same ids.
    theirs = karenina(CROSS_SCRIPT, json.dumps(QUESTIONS), str(ours_dir / "generated.json"), str(broken))
    with Store.memory() as store:
        b = Benchmark.create("calls", description="d", version="1.0.0", store=store)
        for q, a in QUESTIONS:
            b.add_question(q, a)
        imported = b.import_generated_templates(theirs_dir / "generated.json")
        templates = {q: b.get_template(q) for q in b.get_question_ids() if b.has_template(q)}
        validate = list(Benchmark.load(broken, store=store).validate_templates())
    assert imported == theirs["imported"] and all(imported.values())
    assert templates == theirs["templates"]
    assert json.loads(json.dumps(validate)) == theirs["validate"]
    assert validate[0] is False and len(validate[1]) == 1


def test_optimization_history_reads_karenina_s_tracker(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    theirs = karenina(HISTORY_SCRIPT, str(db))
    with Store.memory() as store:
        b = Benchmark.create("calls", store=store)
        ours = [r.model_dump(mode="json") for r in b.optimization_history(db, limit=5)]
        one = [r.run_id for r in b.optimization_history(db, limit=1)]
    assert ours == theirs["all"] and [r["run_id"] for r in ours] == ["run-2", "run-0"]
    assert one == theirs["one"]
