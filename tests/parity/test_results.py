"""Verification results round-trip through Karenina (issue 18, point 5), judged by Karenina itself
(the snapshot in ../shared, in an environment of its own: tests/helpers/karenina_ref.py).

Karenina builds the results (``GENERATE``: every part of a ``VerificationResult``, a failure, a
global rubric and question-specific traits, deep judgment, a missing template) and writes them with
its own exporters; the corpus's results exports and ours in examples/results are used too. Each
test moves the same results through Karenina and through this package and compares what comes out.

``FORMATS`` lists the result formats checked, with the direction and the test that checks each;
docs/karenina-parity.md is generated from it.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, KareninaRDFError, RubricTrait, Store
from karenina_rdf.results import _export
from tests.conftest import CORPUS, EXAMPLES, needs_corpus
from tests.helpers.karenina_ref import karenina

pytestmark = [pytest.mark.slow]  # Karenina runs in a subprocess of its own environment

# (format, direction, status, test): "import" = Karenina writes, we read; "export" = we write,
# Karenina reads (or, for CSV, writes the same bytes from the same results).
FORMATS: tuple[tuple[str, str, str, str], ...] = (
    (
        "results export JSON (format 2.2)",
        "import and export",
        "same: Karenina's loader reads our export as the results it wrote",
        "test_runner_results_load_in_karenina_as_stored",
    ),
    (
        "results CSV (`export_verification_results_csv`, what `karenina verify --output x.csv` writes)",
        "export",
        "same bytes, except the key order inside `question_specific_rubrics` (Karenina's follows a set's"
        " hash order, which changes between runs; ours is sorted) and `karenina_version`, which is the"
        " run's where Karenina writes its own",
        "test_csv_is_karenina_s",
    ),
    (
        '`ResultsStore` JSON (`{"runs": {name: [result, …]}}`, `ResultsStore.export_to_file`)',
        "import",
        "same: one run per run name, the rows Karenina's `ResultsStore.from_file` reads",
        "test_results_store_json_imports",
    ),
    (
        "results database (SQLite, Karenina's `storage`)",
        "import and export",
        "same: Karenina's `load_verification_results` reads our database as the results it wrote, and"
        " we read Karenina's",
        "test_karenina_db_round_trip",
    ),
    (
        "benchmark database (SQLite, `Benchmark.save_to_db` / `load_from_db`)",
        "import and export",
        "same: each loads what the other saved",
        "test_benchmark_db_parity",
    ),
)

GENERATE = r"""
import json, sys
from pathlib import Path
from types import SimpleNamespace as NS
from karenina.benchmark.verification import export_verification_results_json_stream
from karenina.schemas.entities.rubric import LLMRubricTrait, MetricRubricTrait, RegexRubricTrait, Rubric
from karenina.schemas.results.caveat import Caveat
from karenina.schemas.results.failure import Failure, FailureCategory
from karenina.schemas.verification import VerificationResult
from karenina.schemas.verification.job import VerificationJob
from karenina.schemas.verification.model_identity import ModelIdentity
from karenina.schemas.verification.result_components import (
    VerificationResultDeepJudgment as DJ, VerificationResultDeepJudgmentRubric as DJR,
    VerificationResultMetadata as M, VerificationResultRubric as R, VerificationResultTemplate as T,
)

out = Path(sys.argv[1])
ans = ModelIdentity(interface="langchain", model_name="gpt-4o", tools=["search"], config_id="cfg-1")
par = ModelIdentity(interface="openrouter", model_name="claude-haiku")
rubric = Rubric(
    llm_traits=[LLMRubricTrait(name="clarity", description="Clear.", kind="boolean"),
                LLMRubricTrait(name="depth", description="Deep.", kind="score")],
    regex_traits=[RegexRubricTrait(name="cites", pattern=r"\[\d+\]")],
    metric_traits=[MetricRubricTrait(name="entities", evaluation_mode="tp_only", metrics=["precision"],
                                     tp_instructions=["names a drug"])],
)


def meta(qid, ts, **kw):
    base = dict(question_id=qid, template_id="no_template",
                question_text=f'Question {qid}, with "quotes"\nand a newline?',
                answering=ans, parsing=par, execution_time=1.5, timestamp=ts,
                result_id=M.compute_result_id(qid, ans, par, ts, kw.get("replicate")))
    base.update(kw)
    return M(**base)


results = [
    VerificationResult(
        metadata=meta("q1", "2026-01-01T00:00:00+00:00", replicate=1, keywords=["pharma", "é"], run_name="night",
                      answering_system_prompt="You answer.", parsing_system_prompt="You parse.",
                      evaluation_mode="template_and_rubric"),
        template=T(raw_llm_response="Aspirin inhibits COX-1 [1].", parsed_gt_response={"target": "COX-1"},
                   parsed_llm_response={"target": "COX-1"}, template_verification_performed=True,
                   verify_result=True, verify_granular_result={"target": True}, embedding_check_performed=True,
                   embedding_similarity_score=0.0,
                   usage_metadata={"answer_generation": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}),
        rubric=R(rubric_evaluation_performed=True, llm_trait_scores={"clarity": True, "depth": 4, "q_tone": 2},
                 regex_trait_scores={"cites": True}, callable_trait_scores={"short": 3.5},
                 metric_trait_scores={"entities": {"precision": 1.0}},
                 metric_trait_confusion_lists={"entities": {"tp": ["aspirin"], "fn": [], "fp": [], "tn": []}}),
    ),
    VerificationResult(
        metadata=meta("q2", "2026-01-01T00:00:01+00:00", execution_time=2, caveats=[Caveat.RETRIES_USED],
                      failure=Failure(category=FailureCategory.TIMEOUT, stage="answer_generation",
                                      reason="timed out, twice", details={"after": 30})),
    ),
    VerificationResult(
        metadata=meta("q3", "2026-01-01T00:00:02+00:00", replicate=2),
        template=T(raw_llm_response="No idea.", parsed_llm_response={"target": "none"},
                   parsed_gt_response={"target": "COX-1"}, template_verification_performed=True,
                   verify_result=False, embedding_similarity_score=0.87, embedding_model_used="mini",
                   answering_mcp_servers=["pubmed"], agent_metrics={"iterations": 3, "tools_used": ["a"]}),
        rubric=R(rubric_evaluation_performed=True, llm_trait_scores={"clarity": None, "depth": 1}),
        deep_judgment=DJ(deep_judgment_mode="full", deep_judgment_performed=True,
                         extracted_excerpts={"target": [{"text": "x", "confidence": "low"}]},
                         attribute_reasoning={"target": "because"}, deep_judgment_stages_completed=["excerpts"],
                         deep_judgment_model_calls=3, attributes_without_excerpts=[],
                         hallucination_risk_assessment={"target": "low"}),
        deep_judgment_rubric=DJR(deep_judgment_rubric_performed=True, rubric_trait_reasoning={"depth": "thin"},
                                 deep_judgment_rubric_scores={"depth": 1}, total_traits_evaluated=1),
        used_full_trace=False, evaluation_input="No idea.",
    ),
    VerificationResult(
        metadata=meta("q4", "2026-01-01T00:00:03+00:00"),
        template=T(raw_llm_response="", template_verification_performed=False),
        rubric=R(rubric_evaluation_performed=False),
    ),
]
cfg = NS(answering_models=[NS(model_provider="openai", model_name="gpt-4o", temperature=0.0, interface="langchain")],
         parsing_models=[NS(model_provider=None, model_name="claude-haiku", temperature=0.1, interface="openrouter")])
job = VerificationJob.model_construct(job_id="job-parity-1", config=cfg, start_time=1700000000.0,
                                      end_time=1700000010.5, total_questions=4, successful_count=3, failed_count=1)
export_verification_results_json_stream(job, iter(results), rubric, is_complete=True, out_path=out)
print(json.dumps({"rows": len(results)}))
"""

# Karenina's CSV of a results export: its loader, then the exporter `karenina verify --output
# x.csv` calls, with the run's global rubric. The export time is fixed on both sides.
KARENINA_CSV = r"""
import json, sys, time
from pathlib import Path
from types import SimpleNamespace as NS
import karenina.benchmark.verification.stages.helpers.results_exporter as rx
from karenina.benchmark import export_verification_results_csv
from karenina.benchmark.core.results_io import ResultsIOManager
from karenina.schemas.entities.rubric import Rubric
from karenina.schemas.verification.job import VerificationJob

src = Path(sys.argv[1])
doc = json.loads(src.read_text(encoding="utf-8"))
meta = doc.get("metadata") or {}
result_set = ResultsIOManager.load_result_set_from_json(src)
definition = (doc.get("shared_data") or {}).get("rubric_definition")
try:
    rubric = Rubric.model_validate(definition) if definition else None
except ValueError:  # a rubric Karenina would not build (a file written elsewhere): the exporter takes its names
    names = [t["name"] for ts in definition.values() if isinstance(ts, list) for t in ts]
    rubric = NS(get_trait_names=lambda: names)
_gmtime = time.gmtime
time.gmtime = lambda *a: _gmtime(0)
rx.get_karenina_version = lambda: meta.get("karenina_version")
job = VerificationJob.model_construct(job_id=meta.get("job_id"))
print(json.dumps({"csv": export_verification_results_csv(job, result_set, rubric)}))
"""
FIXED_STAMP = "1970-01-01 00:00:00 UTC"


@pytest.fixture(scope="module")
def karenina_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results export Karenina wrote, of results Karenina built."""
    path = tmp_path_factory.mktemp("karenina") / "results.json"
    assert karenina(GENERATE, str(path)) == {"rows": 4}
    return path


def _exports(generated: Path) -> list[Path]:
    corpus = sorted(CORPUS.glob("*results_export*.json")) if CORPUS.is_dir() else []
    return [generated, *corpus, *sorted((EXAMPLES / "results").glob("*.json"))]


def _unordered(cell: str) -> Any:
    return json.loads(cell) if cell else cell


@needs_corpus
def test_csv_is_karenina_s(karenina_export: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_export, "export_stamp", lambda: FIXED_STAMP)
    for path in _exports(karenina_export):
        theirs = karenina(KARENINA_CSV, str(path))["csv"]
        store = Store.memory()
        run = store.import_results(path).run_id
        buf = io.StringIO()
        store.export_results(run, buf, format="csv")
        ours = buf.getvalue()
        if ours == theirs:
            continue
        # The one cell allowed to differ: question_specific_rubrics, whose key order in Karenina
        # follows a set's (hash-seeded) order. Everything else must match byte for byte.
        a, b = list(csv.reader(io.StringIO(theirs))), list(csv.reader(io.StringIO(ours)))
        assert a[0] == b[0], path.name
        col = a[0].index("question_specific_rubrics")
        for x, y in zip(a[1:], b[1:], strict=True):
            assert _unordered(x.pop(col)) == _unordered(y.pop(col)), path.name
            assert x == y, path.name
        assert theirs.count("\r\n") == ours.count("\r\n"), path.name


# What Karenina's loaders read from a file, as plain JSON: per run name, each result's
# ``model_dump(mode="json")``. "export": a results export (ResultsIOManager, as a user's analysis
# loads one); "store": a ResultsStore file; "db": a results database (storage's loader).
KARENINA_READ = r"""
import json, sys
kind, path = sys.argv[1], sys.argv[2]
dump = lambda rs: [r.model_dump(mode="json") for r in rs]
if kind == "export":
    from pathlib import Path
    from karenina.benchmark.core.results_io import ResultsIOManager
    out = {"": dump(ResultsIOManager.load_result_set_from_json(Path(path)).results)}
elif kind == "store":
    from karenina.benchmark.core.results_store import ResultsStore
    s = ResultsStore.from_file(path)
    out = {name: dump(s.get_by_run(name).results) for name in s.get_all_runs()}
else:
    import sqlite3
    from karenina.storage import DBConfig, load_verification_results
    names = [r[0] for r in sqlite3.connect(path).execute("SELECT run_name FROM verification_runs ORDER BY rowid")]
    config = DBConfig(storage_url="sqlite:///" + path)
    out = {n: dump(load_verification_results(config, run_name=n).values()) for n in names}
print(json.dumps(out))
"""

# Karenina's ResultsStore holding the results of an export under two run names, saved to a file.
KARENINA_RESULTS_STORE = r"""
import json, sys
from pathlib import Path
from karenina.benchmark.core.results_io import ResultsIOManager
from karenina.benchmark.core.results_store import ResultsStore
from karenina.schemas.results.verification_result_set import VerificationResultSet

rs = ResultsIOManager.load_result_set_from_json(Path(sys.argv[1]))
store = ResultsStore()
store.add(rs, run_name="baseline")
store.add(VerificationResultSet(results=rs.results[:2]), run_name="night run/2")
store.export_to_file(sys.argv[2])
print(json.dumps(store.get_all_runs()))
"""


def _export_rows(store: Store, run: str, tmp: Path) -> list[dict[str, Any]]:
    """A stored run exported (format 2.2) and read back by Karenina's loader."""
    target = tmp / f"export-{abs(hash(run))}.json"
    store.export_results(run, target)
    rows: list[dict[str, Any]] = karenina(KARENINA_READ, "export", str(target))[""]
    return rows


def test_results_store_json_imports(karenina_export: Path, tmp_path: Path) -> None:
    path = tmp_path / "results_store.json"
    assert karenina(KARENINA_RESULTS_STORE, str(karenina_export), str(path)) == ["baseline", "night run/2"]
    theirs = karenina(KARENINA_READ, "store", str(path))
    store = Store.memory()
    imported = store.import_results_store(path)
    assert [(r.run_id, r.run_name, r.rows) for r in imported] == [
        ("baseline", "baseline", 4),
        ("night run/2", "night run/2", 2),
    ]
    for name, rows in theirs.items():
        assert store.resolve_run(name) == imported[list(theirs).index(name)].iri
        assert _export_rows(store, name, tmp_path) == rows
    # One run picked by name; the file is recognised where exports are (import of a folder).
    again = Store.memory()
    assert again.import_results(path, run="night run/2").rows == 2
    report = Store.memory().import_paths([path])
    assert [r.run_id for r in report.results] == ["baseline", "night run/2"]


# -- databases ---------------------------------------------------------------------------------
LAYOUT = r"""
import json, sqlite3, sys
from karenina.storage import DBConfig, init_database
init_database(DBConfig(storage_url="sqlite:///" + sys.argv[1]))
db = sqlite3.connect(sys.argv[1])
print(json.dumps([s for (s,) in db.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")]))
"""

# Karenina saves a benchmark and a run of the given export's results in a database, as its
# verification does (save_verification_results), under a run name.
KARENINA_SAVE_RUN = r"""
import json, sys
from pathlib import Path
from karenina import Benchmark
from karenina.benchmark.core.results_io import ResultsIOManager
from karenina.storage import DBConfig, save_verification_results

export, db, run_name = sys.argv[1], sys.argv[2], sys.argv[3]
rs = ResultsIOManager.load_result_set_from_json(Path(export))
b = Benchmark.create(name="parity results", version="1.0.0")
for r in rs.results:  # the results' questions: its database links results to them
    if r.metadata.question_id not in b.get_question_ids():
        b.add_question(question=r.metadata.question_text, raw_answer="-", question_id=r.metadata.question_id)
b.save_to_db("sqlite:///" + db)
results = {f"r{i}": r for i, r in enumerate(rs.results)}
save_verification_results(results, DBConfig(storage_url="sqlite:///" + db), run_id="0b7c4c1e-run-by-karenina",
                          benchmark_name="parity results", run_name=run_name)
print(json.dumps(len(results)))
"""


def _layout(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [s for (s,) in db.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")]
    finally:
        db.close()


def test_karenina_db_layout(tmp_path: Path, karenina_export: Path) -> None:
    from karenina_rdf.results._db_schema import DDL

    theirs = karenina(LAYOUT, str(tmp_path / "karenina.db"))
    # The statements Karenina's init_database runs (the order of its indexes follows a set's, which
    # changes between runs of Karenina itself).
    assert sorted(DDL) == sorted(theirs)
    store = Store.memory()
    run = store.import_results(karenina_export).run_id
    store.export_results(run, tmp_path / "ours.db", format="karenina-db")
    assert sorted(_layout(tmp_path / "ours.db")) == sorted(theirs)


def test_karenina_db_round_trip(tmp_path: Path, karenina_export: Path) -> None:
    # Ours → Karenina: two runs (one named, one known by its id) into one new database; Karenina's
    # loader reads each as the rows it reads from our export of the run.
    store = Store.memory()
    by_id = store.import_results(karenina_export).run_id
    named_file = tmp_path / "results_store.json"
    karenina(KARENINA_RESULTS_STORE, str(karenina_export), str(named_file))
    store.import_results_store(named_file, run="night run/2")
    ours_db = tmp_path / "ours.db"
    assert store.export_results(by_id, ours_db, format="karenina-db") == 4
    assert store.export_results("night run/2", ours_db, format="karenina-db") == 2
    read = karenina(KARENINA_READ, "db", str(ours_db))
    assert list(read) == [by_id, "night run/2"]
    for name, rows in read.items():
        assert rows == _export_rows(store, name, tmp_path), name
    # The same run twice into one database is refused, the database unchanged.
    with pytest.raises(KareninaRDFError, match="already holds"):
        store.export_results(by_id, ours_db, format="karenina-db")
    assert karenina(KARENINA_READ, "db", str(ours_db)) == read

    # Karenina → ours: a run Karenina saved, imported, found by its name (Karenina finds runs by
    # name; the id is a UUID), exported and read by Karenina as the rows it reads from its database.
    theirs_db = tmp_path / "karenina.db"
    assert karenina(KARENINA_SAVE_RUN, str(karenina_export), str(theirs_db), "nightly") == 4
    want = karenina(KARENINA_READ, "db", str(theirs_db))["nightly"]
    again = Store.memory()
    [imported] = again.import_results_db(theirs_db)
    assert (imported.run_id, imported.run_name) == ("0b7c4c1e-run-by-karenina", "nightly")
    assert again.resolve_run("nightly") == imported.iri
    got = _export_rows(again, "nightly", tmp_path)
    assert got == want
    # and from the command line, by name
    out = tmp_path / "nightly.json"
    assert again.export_results("nightly", out) == 4


def _normal_db(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The benchmark tables, without their times; a trait kind given as a class (``template``)
    compared without the ``default: null`` Karenina's rebuilt class adds to its schema."""

    def clean(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if not (k == "default" and x is None)}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    db = sqlite3.connect(path)
    try:
        out: dict[str, list[dict[str, Any]]] = {}
        for table in ("benchmarks", "questions", "benchmark_questions"):
            cur = db.execute(f"SELECT * FROM {table} ORDER BY rowid")
            names = [d[0] for d in cur.description]
            rows = []
            for row in cur:
                values = {}
                for k, v in zip(names, row, strict=True):
                    if k in ("created_at", "updated_at"):
                        continue
                    if k in ("metadata_json", "question_rubric") and isinstance(v, str):
                        v = clean(json.loads(v))
                    values[k] = v
                rows.append(values)
            out[table] = rows
        return out
    finally:
        db.close()


KARENINA_SAVE_TO_DB = r"""
import json, sys
from karenina import Benchmark
b = Benchmark.load(sys.argv[1])
b.save_to_db("sqlite:///" + sys.argv[2])
print(json.dumps(b.name))
"""

KARENINA_LOAD_FROM_DB = r"""
import json, sys
from karenina import Benchmark
b = Benchmark.load_from_db(sys.argv[1], "sqlite:///" + sys.argv[2])
b.save(sys.argv[3])
print(json.dumps(len(b.get_question_ids())))
"""


def _normal_checkpoint(doc: Any) -> Any:
    """A checkpoint without what differs between any two saves: times and the minted ``@id``."""
    if isinstance(doc, dict):
        return {k: _normal_checkpoint(v) for k, v in doc.items() if k not in ("dateCreated", "dateModified", "@id")}
    if isinstance(doc, list):
        return [_normal_checkpoint(x) for x in doc]
    return doc


DB_CHECKPOINTS = ("generated__all_features.jsonld", "constructed__spec_worked_example.jsonld")


@needs_corpus
@pytest.mark.parametrize("name", DB_CHECKPOINTS)
def test_benchmark_db_parity(name: str, tmp_path: Path) -> None:
    source = CORPUS / name
    theirs_db, ours_db = tmp_path / "karenina.db", tmp_path / "ours.db"
    bench_name = karenina(KARENINA_SAVE_TO_DB, str(source), str(theirs_db))
    store = Store.memory()
    bench = Benchmark.load(source, store=store)
    assert bench.save_to_db(f"sqlite:///{ours_db}") is bench
    # save_to_db writes the rows Karenina's writes, and saving again updates them in place.
    assert _normal_db(ours_db) == _normal_db(theirs_db)
    bench.save_to_db(f"sqlite:///{ours_db}")
    assert _normal_db(ours_db) == _normal_db(theirs_db)

    # load_from_db: what each loads from Karenina's database, saved as a checkpoint.
    want_file, got_file = tmp_path / "karenina.jsonld", tmp_path / "ours.jsonld"
    count = karenina(KARENINA_LOAD_FROM_DB, bench_name, str(theirs_db), str(want_file))
    loaded = Benchmark.load_from_db(bench_name, f"sqlite:///{theirs_db}", store=Store.memory())
    assert len(loaded) == count
    loaded.save(got_file)
    want = _normal_checkpoint(json.loads(want_file.read_text(encoding="utf-8")))
    got = _normal_checkpoint(json.loads(got_file.read_text(encoding="utf-8")))
    assert got == want
    # and Karenina loads what we saved as it loads what it saved
    again = tmp_path / "again.jsonld"
    karenina(KARENINA_LOAD_FROM_DB, bench_name, str(ours_db), str(again))
    assert _normal_checkpoint(json.loads(again.read_text(encoding="utf-8"))) == want


@pytest.mark.parametrize(
    ("storage", "message"),
    [
        ("postgresql://host/db", "only SQLite"),
        ("sqlite:///:memory:", "only SQLite"),
        (42, "database URL"),
    ],
)
def test_save_to_db_refuses_what_it_cannot_write(storage: Any, message: str) -> None:
    bench = Benchmark.create("b", store=Store.memory())
    with pytest.raises(KareninaRDFError, match=message):
        bench.save_to_db(storage)


def test_load_from_db_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(KareninaRDFError, match="not found in database"):
        Benchmark.load_from_db("nope", f"sqlite:///{tmp_path / 'none.db'}", store=Store.memory())
    bench = Benchmark.create("there", store=Store.memory())
    bench.save_to_db(f"sqlite:///{tmp_path / 'one.db'}")
    with pytest.raises(KareninaRDFError, match="'nope' not found"):
        Benchmark.load_from_db("nope", f"sqlite:///{tmp_path / 'one.db'}", store=Store.memory())
    (tmp_path / "text.db").write_text("not a database")
    with pytest.raises(KareninaRDFError, match="not a SQLite database"):
        bench.save_to_db(f"sqlite:///{tmp_path / 'text.db'}")


# -- results our runner writes ------------------------------------------------------------------
def _judge(request: Any) -> str:
    """Parses as the runner tests' judge does; scores the LLM trait ``clear`` True."""
    from tests.runner.test_pipeline import extracting_judge

    if request.stage == "parsing":
        return extracting_judge(request)
    return json.dumps({"scores": {"clear": True}})


def _answerer(request: Any) -> str:
    from tests.runner.test_pipeline import answers_right

    if "capital" in request.messages[-1].content:
        raise TimeoutError("the answering model timed out")  # a failure row
    return answers_right(request)


def _diff(ours: Any, theirs: Any, where: str = "") -> list[str]:
    """Every field where two results differ, by path."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = [f"{where}/{k}: only {'ours' if k in ours else 'Karenina'}" for k in ours.keys() ^ theirs.keys()]
        for k in ours.keys() & theirs.keys():
            out += _diff(ours[k], theirs[k], f"{where}/{k}")
        if not out and list(ours) != list(theirs):
            out.append(f"{where}: fields in another order")
        return out
    if ours != theirs or type(ours) is not type(theirs):
        return [f"{where}: ours {ours!r}, Karenina's {theirs!r}"]
    return []


def test_runner_results_load_in_karenina_as_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from karenina_rdf.runner import Limits, RunOptions, Sandbox, run_verification
    from tests.runner.test_pipeline import Fake, make_bench

    store = Store.memory()
    bench = make_bench(store, rubric=True)
    Benchmark(store, bench).add_global_rubric_trait(RubricTrait.llm("clear", "Is it clear?"))
    answerer, judge = Fake("fake-a", _answerer), Fake("fake-j", _judge)
    with Sandbox(workers=1, limits=Limits(cpu_seconds=2, wall_seconds=6, memory_mb=512)) as sandbox:
        report = run_verification(
            store,
            bench,
            judges=[judge.spec],
            answerers=[answerer.spec],
            sandbox=sandbox,
            options=RunOptions(mode="template_and_rubric", replicates=2),
        )
    assert report.tasks == 4
    target = tmp_path / "run.json"
    store.export_results(report.run_id, target)
    stored = json.loads(target.read_text(encoding="utf-8"))["results"]
    loaded = karenina(KARENINA_READ, "export", str(target))[""]
    assert len(stored) == len(loaded) == 4
    assert {r["metadata"]["failure"] is None for r in stored} == {True, False}  # both kinds of row
    for ours, theirs in zip(stored, loaded, strict=True):
        assert _diff(ours, theirs) == [], ours["metadata"]["question_id"]
    # Karenina's CSV of them is ours (the question-specific cell aside, as in test_csv_is_karenina_s).
    monkeypatch.setattr(_export, "export_stamp", lambda: FIXED_STAMP)
    buf = io.StringIO()
    store.export_results(report.run_id, buf, format="csv")
    assert buf.getvalue() == karenina(KARENINA_CSV, str(target))["csv"]
    # The same results through a Karenina database.
    db = tmp_path / "run.db"
    store.export_results(report.run_id, db, format="karenina-db")
    [from_db] = karenina(KARENINA_READ, "db", str(db)).values()
    # Karenina's own database round trip of the same results is the reference (SQLite gives a JSON
    # column holding a bare 1.0 back as the integer 1, for Karenina's database as for ours).
    reference_db = tmp_path / "karenina.db"
    karenina(KARENINA_SAVE_RUN, str(target), str(reference_db), "reference")
    reference = karenina(KARENINA_READ, "db", str(reference_db))["reference"]
    for ours, theirs in zip(from_db, reference, strict=True):
        assert _diff(ours, theirs) == [], ours["metadata"]["question_id"]


# -- the command line --------------------------------------------------------------------------
def test_command_line_exports_and_imports(
    tmp_path: Path, karenina_export: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the tests above check through the Store, from the command line: the same bytes and
    the same database; a ResultsStore file imported; a clear one-line error for a database export
    without a file."""
    from typer.testing import CliRunner

    from karenina_rdf.cli import app

    monkeypatch.setattr(_export, "export_stamp", lambda: FIXED_STAMP)
    runner = CliRunner()
    store = str(tmp_path / "store")
    r = runner.invoke(app, ["results", "import", str(karenina_export), "--store", store])
    assert r.exit_code == 0, r.output
    csv_file = tmp_path / "cli.csv"
    r = runner.invoke(app, ["results", "export", "job-parity-1", "-f", "csv", "-o", str(csv_file), "--store", store])
    assert r.exit_code == 0, r.output
    with Store(store) as s:
        buf = io.StringIO()
        s.export_results("job-parity-1", buf, format="csv")
    assert csv_file.read_bytes() == buf.getvalue().encode("utf-8")
    r = runner.invoke(app, ["results", "export", "job-parity-1", "-f", "karenina-db", "--store", store])
    assert r.exit_code != 0 and "--output" in r.output and "Traceback" not in r.output
    db = tmp_path / "cli.db"
    r = runner.invoke(app, ["results", "export", "job-parity-1", "-f", "karenina-db", "-o", str(db), "--store", store])
    assert r.exit_code == 0, r.output
    assert list(karenina(KARENINA_READ, "db", str(db))) == ["job-parity-1"]
    named = tmp_path / "results_store.json"
    karenina(KARENINA_RESULTS_STORE, str(karenina_export), str(named))
    r = runner.invoke(app, ["results", "import", str(named), "--store", store])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("imported run ") == 2
    r = runner.invoke(app, ["results", "export", "night run/2", "--store", store])
    assert r.exit_code == 0 and r.stdout.count('"question_id"') == 2


def test_every_format_names_its_test() -> None:
    for name, _, _, test in FORMATS:
        assert callable(globals().get(test)), f"{name}: no test {test}"
