"""Karenina results databases (SQLite) imported as runs: rows rebuilt as Karenina's loader does.

The databases are written by tests/helpers/karenina_db.py in Karenina's layout from the example exports;
a run read from a database must export the rows of the export it was written from.
"""

from __future__ import annotations

import copy
import io
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import CheckpointError, NotFoundError, Store
from karenina_rdf.results import _sqlite as _results_sqlite
from karenina_rdf.results._sqlite import (
    SQLITE_MAGIC,
    ResultsDatabase,
    RowBuilder,
    column_kind,
    import_results_db,
    result_columns,
)
from tests.conftest import EXAMPLES
from tests.helpers.karenina_db import EXTRA_COLUMNS, RESULT_COLUMNS, Run, write_db

EXPORTS = sorted((EXAMPLES / "results").glob("*.json"))
# The example benchmark each example run is over (by the job id's prefix).
BENCHMARK = {"molecular-biology": "Molecular biology examples", "pharmacology": "Pharmacology examples"}


def _export(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def _run(path: Path, run_id: str | None = None, **kw: Any) -> Run:
    doc = _export(path)
    header = {k: v for k, v in doc.items() if k != "results"}
    job = doc["metadata"]["job_id"]
    bench = next(name for prefix, name in BENCHMARK.items() if job.startswith(prefix))
    return Run(run_id or f"db-{job}", f"name-{job}", header, doc["results"], benchmark_name=bench, **kw)


def _exported(store: Store, run: str) -> dict[str, Any]:
    buf = io.StringIO()
    store.export_results(run, buf)
    doc: dict[str, Any] = json.loads(buf.getvalue())
    return doc


@pytest.fixture
def bench() -> Iterator[Store]:
    """A memory store holding the example benchmarks the example runs are over."""
    s = Store.memory()
    for path in sorted(EXAMPLES.glob("*.jsonld")):
        s.import_checkpoint(path)
    yield s
    s.close()


def _rows_of(db_path: Path, run_id: str) -> list[dict[str, Any]]:
    with ResultsDatabase(db_path) as db:
        builder = RowBuilder(db.tables["verification_results"])
        return [row for _, row in db.rows(db.row_ids(run_id), builder)]


# -- layout ------------------------------------------------------------------------------------
def test_columns_are_karenina_layout() -> None:
    # The reader derives its columns from the field tables of _results_model; the fixture writer
    # has the list from the facts file. They must agree in name, order and type.
    kinds = {"JSON": "json", "BOOLEAN": "boolean", "INTEGER": "integer", "FLOAT": "float"}
    expected = [(name, kinds.get(sql, "text")) for name, sql, _ in RESULT_COLUMNS]
    assert [(c, column_kind(c)) for c in result_columns()] == expected
    assert len(EXTRA_COLUMNS) + len(RESULT_COLUMNS) == 119


# -- round trip --------------------------------------------------------------------------------
@pytest.mark.parametrize("export", EXPORTS, ids=[p.stem for p in EXPORTS])
def test_round_trip(bench: Store, tmp_path: Path, export: Path) -> None:
    original = _export(export)
    db_path = tmp_path / "karenina.db"
    run = _run(export)
    assert write_db(db_path, [run], imported=True) == len(original["results"])
    (result,) = import_results_db(bench, db_path)
    assert (result.run_id, result.run_name, result.status) == (run.run_id, run.run_name, "imported")
    (summary,) = [s for s in bench.runs() if s.run_id == run.run_id]
    assert summary.name == run.run_name  # the database's run_name, kept as the run's schema:name
    assert bench.resolve_run(str(run.run_name)) == summary.iri  # found by its name, as in Karenina
    assert (result.rows, result.added, result.unmatched) == (len(original["results"]), len(original["results"]), 0)
    assert result.benchmarks == (bench.resolve(str(run.benchmark_name)),)

    back = _exported(bench, run.run_id)
    assert len(back["results"]) == len(original["results"])
    for i, (got, want) in enumerate(zip(back["results"], original["results"], strict=True)):
        assert list(got) == list(want), i
        for part, value in want.items():
            assert got[part] == value, (i, part)
            if isinstance(value, dict):
                assert list(got[part]) == list(value), (i, part)  # Karenina's key order
    # The header: what a database keeps of the run. No export was made, so no export timestamp
    # (Karenina's import keeps metadata.get("timestamp"), which a 2.2 export does not have).
    want_meta = {**original["metadata"], "export_timestamp": None}
    assert back["metadata"] == want_meta
    assert back["shared_data"] == original["shared_data"]

    # The same run imported from its export: the same counts and pass rate.
    bench.import_results(export)
    summaries = {s.run_id: s for s in bench.runs()}
    from_db, from_json = summaries[run.run_id], summaries[original["metadata"]["job_id"]]
    fields = ("results", "verified", "passed", "pass_rate", "failures", "answering_models", "parsing_models")
    assert {f: getattr(from_db, f) for f in fields} == {f: getattr(from_json, f) for f in fields}
    assert from_db.pass_rate is not None
    assert from_db.answering_models and from_db.parsing_models  # model labels come from the models graph


def test_two_runs_of_one_name_are_told_apart_by_id(bench: Store, tmp_path: Path) -> None:
    first, second = _run(EXPORTS[0], "run-a"), _run(EXPORTS[0], "run-b")
    write_db(tmp_path / "k.db", [first, second], imported=True)
    import_results_db(bench, tmp_path / "k.db")
    with pytest.raises(
        NotFoundError, match=r"2 verification runs are named .*give one of their ids \('run-a', 'run-b'\)"
    ):
        bench.resolve_run(str(first.run_name))
    assert bench.resolve_run("run-a").endswith("/run-a")


def test_header_of_a_verified_run(bench: Store, tmp_path: Path) -> None:
    # A run Karenina saved itself has no import_metadata row: the job id is the run id, the
    # version unknown, the rubric the benchmark's global rubric.
    export = EXPORTS[0]
    original = _export(export)
    write_db(tmp_path / "k.db", [_run(export, "8d3c2f4e-0000-4000-8000-000000000001")])
    import_results_db(bench, tmp_path / "k.db")
    back = _exported(bench, "8d3c2f4e-0000-4000-8000-000000000001")
    meta = back["metadata"]
    assert meta["job_id"] == "8d3c2f4e-0000-4000-8000-000000000001"
    assert meta["karenina_version"] is None and meta["export_timestamp"] is None
    assert meta["verification_config"] == original["metadata"]["verification_config"]
    assert meta["job_summary"] == original["metadata"]["job_summary"]
    assert back["shared_data"]["rubric_definition"] == original["shared_data"]["rubric_definition"]


def test_header_prefers_the_imported_rubric(bench: Store, tmp_path: Path) -> None:
    db_path = tmp_path / "k.db"
    run = _run(EXPORTS[0])
    write_db(db_path, [run], imported=True)
    kept = {"llm_traits": [{"name": "kept_by_the_import", "kind": "llm", "higher_is_better": False}]}
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE import_metadata SET shared_rubric_definition = ?", (json.dumps(kept),))
        db.execute("UPDATE verification_runs SET status = 'running', start_time = NULL")
    import_results_db(bench, db_path)
    back = _exported(bench, run.run_id)
    assert back["shared_data"]["rubric_definition"] == kept
    summary = back["metadata"]["job_summary"]
    assert summary["is_complete"] is False
    assert summary["start_time"] is None and summary["total_duration"] is None
    assert isinstance(summary["end_time"], float)


# -- selecting runs ----------------------------------------------------------------------------
def _three_runs(tmp_path: Path, **kw: Any) -> Path:
    db_path = tmp_path / "three.db"
    write_db(db_path, [_run(p) for p in EXPORTS], imported=True, **kw)
    return db_path


@pytest.mark.parametrize(
    ("interleave", "chunk"), [(False, 500), (True, 500), (True, 2)], ids=["contiguous", "interleaved", "small-chunks"]
)
def test_every_run(bench: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interleave: bool, chunk: int) -> None:
    # Rows are fetched by id in chunks: with chunks of 2 the order across chunks counts too.
    monkeypatch.setattr(_results_sqlite, "_CHUNK", chunk)
    db_path = _three_runs(tmp_path, interleave=interleave)
    results = import_results_db(bench, db_path)
    assert [r.run_id for r in results] == [f"db-{p.stem}" for p in EXPORTS]
    for export in EXPORTS:
        # Rows of interleaved runs are not contiguous in id order: each run still gets its own, in order.
        assert _exported(bench, f"db-{export.stem}")["results"] == _export(export)["results"]


@pytest.mark.parametrize("ref", ["db-pharmacology-2026-05", "name-pharmacology-2026-05"], ids=["id", "run_name"])
def test_one_run(bench: Store, tmp_path: Path, ref: str) -> None:
    (result,) = import_results_db(bench, _three_runs(tmp_path), run_id=ref)
    assert result.run_id == "db-pharmacology-2026-05"
    assert [s.run_id for s in bench.runs()] == ["db-pharmacology-2026-05"]


def test_unknown_run(bench: Store, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as err:
        import_results_db(bench, _three_runs(tmp_path), run_id="no-such-run")
    message = str(err.value)
    assert "three.db" in message and "'no-such-run'" in message
    assert "db-pharmacology-2026-05 (name-pharmacology-2026-05)" in message  # the runs it has
    assert bench.runs() == []


def test_reimport_updates(bench: Store, tmp_path: Path) -> None:
    db_path = _three_runs(tmp_path)
    first = import_results_db(bench, db_path)
    again = import_results_db(bench, db_path)
    for a, b in zip(first, again, strict=True):
        assert (b.status, b.rows, b.added, b.replaced) == ("updated", a.rows, 0, a.rows)
    for export in EXPORTS:
        assert _exported(bench, f"db-{export.stem}")["results"] == _export(export)["results"]
    assert len(bench.runs()) == len(EXPORTS)


def test_benchmark_named_by_the_run(bench: Store, tmp_path: Path) -> None:
    # The run's benchmark (benchmarks.name) is the stored benchmark its question ids are looked
    # up in, when one stored benchmark has that name: here the pharmacology run claims the
    # molecular-biology benchmark, so none of its questions is found there.
    db_path = tmp_path / "k.db"
    run = _run(EXAMPLES / "results" / "pharmacology-2026-05.json")
    run.benchmark_name = "Molecular biology examples"
    write_db(db_path, [run])
    (claimed,) = import_results_db(bench, db_path)
    assert claimed.unmatched == claimed.rows and claimed.benchmarks == ()
    # A benchmark name the store does not have: question ids are looked up everywhere.
    run = _run(EXAMPLES / "results" / "pharmacology-2026-05.json")
    run.benchmark_name = "not stored"
    write_db(db_path, [run])
    (found,) = import_results_db(bench, db_path)
    assert found.unmatched == 0 and found.benchmarks == (bench.resolve("Pharmacology examples"),)
    # --benchmark wins over the database's.
    (given,) = import_results_db(bench, db_path, benchmark="Molecular biology examples")
    assert given.unmatched == given.rows


# -- values ------------------------------------------------------------------------------------
def _edited_rows() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first example run with rows edited to hold what a database must give back."""
    doc = _export(EXPORTS[0])
    rows = copy.deepcopy(doc["results"][:4])
    no_parts = rows[0]
    no_parts["template"] = None
    no_parts["rubric"] = None
    no_parts["deep_judgment"] = None
    no_parts["deep_judgment_rubric"] = None
    values = rows[1]
    values["metadata"]["execution_time"] = 3.0  # a whole float in a Float column
    values["metadata"]["few_shot_enabled"] = True
    values["metadata"]["failure"] = {
        "category": "timeout",
        "stage": "generate_answer",
        "reason": "took too long",
        "details": None,
        "group": "retry",
    }
    values["template"]["embedding_similarity_score"] = 0.5
    values["template"]["embedding_check_performed"] = True
    values["template"]["abstention_detected"] = False
    values["template"]["field_scores"] = {"answer": 1.0, "evidence": 0.25}
    values["used_full_trace"] = False
    newer = rows[2]
    newer["metadata"]["failure"] = {
        "category": "a_newer_category",
        "stage": "s",
        "reason": "r",
        "details": {"k": 1},
        "group": None,
    }
    granular = rows[3]
    granular["template"]["verify_granular_result"] = 1.0
    return doc, rows


def test_values_round_trip(bench: Store, tmp_path: Path) -> None:
    doc, rows = _edited_rows()
    header = {k: v for k, v in doc.items() if k != "results"}
    db_path = tmp_path / "k.db"
    write_db(db_path, [Run("r1", "r1", header, rows)])
    with sqlite3.connect(db_path) as db:
        stored = db.execute(
            "SELECT typeof(template_raw_llm_response), template_trace_messages, typeof(metadata_few_shot_enabled), "
            "metadata_few_shot_enabled, typeof(metadata_execution_time), metadata_failure_category, "
            "typeof(template_verify_granular_result) FROM verification_results ORDER BY id"
        ).fetchall()
    # How Karenina's files hold them: a None part's JSON columns as JSON null, the others NULL;
    # booleans 0/1; JSON text; a whole JSON number as an integer (NUMERIC affinity).
    assert stored[0][:2] == ("null", "null")
    assert stored[1][2:6] == ("integer", 1, "real", '"timeout"')
    assert stored[3][6] == "integer"

    got = _rows_of(db_path, "r1")
    assert got[0]["template"] is None and got[0]["rubric"] is None
    assert got[0]["deep_judgment"] is None and got[0]["deep_judgment_rubric"] is None
    assert got[0]["metadata"]["failure"] is None
    v = got[1]
    assert v["metadata"]["execution_time"] == 3.0 and type(v["metadata"]["execution_time"]) is float
    assert v["metadata"]["few_shot_enabled"] is True
    assert v["template"]["embedding_check_performed"] is True
    assert v["template"]["abstention_detected"] is False
    assert v["template"]["embedding_override_applied"] is False
    assert v["template"]["field_scores"] == {"answer": 1.0, "evidence": 0.25}
    assert type(v["template"]["field_scores"]["answer"]) is float  # inside JSON text: kept
    assert v["used_full_trace"] is False
    assert v["metadata"]["failure"] == rows[1]["metadata"]["failure"]  # group computed, last
    assert list(v["metadata"]["failure"]) == ["category", "stage", "reason", "details", "group"]
    # A category this version does not know keeps its failure (Karenina's loader would drop it).
    assert got[2]["metadata"]["failure"] == rows[2]["metadata"]["failure"]
    # A whole number alone in a JSON column comes back an integer, as from Karenina's loader.
    assert got[3]["template"]["verify_granular_result"] == 1
    assert type(got[3]["template"]["verify_granular_result"]) is int

    # Through the store: the rows as rebuilt, except that JSON integer.
    import_results_db(bench, db_path)
    back = _exported(bench, "r1")["results"]
    assert back[:3] == rows[:3]
    assert back[3]["template"]["verify_granular_result"] == 1


def test_values_other_writers_leave(tmp_path: Path) -> None:
    # SQLite gives Karenina's columns the types SQLAlchemy declares; a row read from a database
    # another tool wrote may hold an integer in a Float column or 2 in a Boolean one, which
    # Karenina's loader (pydantic, SQLAlchemy's bool()) reads as 3.0 and True.
    db_path = tmp_path / "k.db"
    run = _run(EXPORTS[0])
    write_db(db_path, [run])
    with ResultsDatabase(db_path) as db:
        builder = RowBuilder(db.tables["verification_results"])
        select = ", ".join(builder.columns)
        row = list(db.db.execute(f"SELECT {select} FROM verification_results ORDER BY id LIMIT 1").fetchone())
    row[builder.columns.index("metadata_execution_time")] = 3
    row[builder.columns.index("template_embedding_check_performed")] = 2
    got = builder.build(tuple(row))
    assert got["metadata"]["execution_time"] == 3.0 and type(got["metadata"]["execution_time"]) is float
    assert got["template"]["embedding_check_performed"] is True


def test_columns_a_database_may_lack(bench: Store, tmp_path: Path) -> None:
    # Columns only the newest Karenina has: an older database still loads, the fields fresh.
    db_path = tmp_path / "k.db"
    run = _run(EXPORTS[0])
    write_db(db_path, [run], imported=True)
    dropped = (
        "metadata_answering_config_id",
        "metadata_warnings",
        "template_agentic_extraction_recovery",
        "template_usage_unavailable",
        "rubric_trait_provenance",
    )
    with sqlite3.connect(db_path) as db:
        for column in dropped:
            db.execute(f"ALTER TABLE verification_results DROP COLUMN {column}")
        db.execute("DROP TABLE import_metadata")
    rows = _rows_of(db_path, run.run_id)
    want = _export(EXPORTS[0])["results"]
    assert len(rows) == len(want)
    for got, row in zip(rows, want, strict=True):
        assert got["metadata"]["answering"]["config_id"] is None
        assert got["metadata"]["warnings"] == [] and got["template"]["usage_unavailable"] is False
        assert got["template"]["agentic_extraction_recovery"] is None
        assert got["rubric"] is None or got["rubric"]["trait_provenance"] is None
        assert got["metadata"]["question_id"] == row["metadata"]["question_id"]
    (result,) = import_results_db(bench, db_path)
    assert result.rows == len(want)
    # Without import_metadata: the job id is the run id.
    assert _exported(bench, run.run_id)["metadata"]["job_id"] == run.run_id


# -- errors ------------------------------------------------------------------------------------
def _drop_table(table: str) -> Callable[[sqlite3.Connection], None]:
    return lambda db: db.execute(f"DROP TABLE {table}") and None


def _drop_column(column: str) -> Callable[[sqlite3.Connection], None]:
    return lambda db: db.execute(f"ALTER TABLE verification_results DROP COLUMN {column}") and None


def _sql(statement: str) -> Callable[[sqlite3.Connection], None]:
    return lambda db: db.execute(statement) and None


ERRORS: list[tuple[str, Callable[[sqlite3.Connection], None], type[Exception], tuple[str, ...]]] = [
    ("no results table", _drop_table("verification_results"), CheckpointError, ("no table 'verification_results'",)),
    ("no runs table", _drop_table("verification_runs"), CheckpointError, ("no table 'verification_runs'",)),
    (
        "an older layout",
        _drop_column("metadata_failure_category"),
        CheckpointError,
        ("'verification_results' lacks the column(s) metadata_failure_category",),
    ),
    ("no runs", _sql("DELETE FROM verification_runs"), CheckpointError, ("holds no verification runs",)),
    (
        "bad JSON",
        _sql("UPDATE verification_results SET template_field_scores = '{oops' WHERE id = 3"),
        CheckpointError,
        ("at /verification_results/3/template_field_scores", "does not hold JSON"),
    ),
    (
        "bad run config",
        _sql("UPDATE verification_runs SET config = '[1,'"),
        CheckpointError,
        ("at /verification_runs/db-molecular-biology-2026-05/config",),
    ),
    (
        "a row the import refuses",
        _sql("UPDATE verification_results SET metadata_question_id = X'4142' WHERE id = 5"),
        CheckpointError,
        ("at /verification_results/5", "question_id must be a string"),
    ),
]


@pytest.mark.parametrize(("case", "edit", "error", "expected"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(
    bench: Store,
    tmp_path: Path,
    case: str,
    edit: Callable[[sqlite3.Connection], None],
    error: type[Exception],
    expected: tuple[str, ...],
) -> None:
    db_path = tmp_path / "karenina.db"
    write_db(db_path, [_run(EXPORTS[0])], imported=True)
    with sqlite3.connect(db_path) as db:
        edit(db)
    with pytest.raises(error) as err:
        import_results_db(bench, db_path)
    message = str(err.value)
    assert str(db_path) in message, message  # the file is named
    for text in expected:
        assert text in message, message
    assert bench.runs() == []  # nothing half-imported


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"format_version": "2.2"}', "not a SQLite database"),
        (SQLITE_MAGIC + b"\x00" * 200, "SQLite database"),  # the magic, then garbage
        (b"", "not a SQLite database"),
    ],
    ids=["json", "corrupt", "empty"],
)
def test_not_a_database(bench: Store, tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "results.db"
    path.write_bytes(content)
    with pytest.raises(CheckpointError) as err:
        import_results_db(bench, path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_missing_file(bench: Store, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="cannot read the file"):
        import_results_db(bench, tmp_path / "absent.db")


def test_database_is_not_written(bench: Store, tmp_path: Path) -> None:
    db_path = _three_runs(tmp_path)
    before = db_path.read_bytes()
    import_results_db(bench, db_path)
    assert db_path.read_bytes() == before
