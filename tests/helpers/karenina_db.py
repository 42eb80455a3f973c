"""Karenina results databases (SQLite) written without Karenina, for tests and benchmarks.

The layout is the one Karenina's ``storage/`` package creates with SQLAlchemy (spec
verification.md §12; the column list of ``verification_results`` is the one in
/work/notes/karenina-results-facts.md §2, written here independently of
``karenina_rdf.results._sqlite`` so a test can compare the two). Results are flattened as
Karenina's ``pydantic_to_orm`` does and bound as SQLAlchemy binds them:

* a part (template, rubric, …) that is None sets each of its columns to None: a JSON column then
  holds the text ``null`` (SQLAlchemy's JSON type writes Python None as JSON null), the others
  SQL NULL;
* a ``metadata.failure`` that is None sets no failure column (the flattener only recurses into
  a model that is there), so all four stay SQL NULL; ``group`` is computed and has no column;
* JSON columns hold ``json.dumps`` text (an enum as its string), booleans 0/1, DateTime columns
  ``YYYY-MM-DD HH:MM:SS.ffffff`` in UTC without a zone.

Declared types are SQLAlchemy's DDL names, so SQLite gives each column the affinity it has in a
real database (a JSON column has NUMERIC affinity: the JSON text ``1.0`` is stored as the
integer 1, as in Karenina's own files).

    write_db(path, [(run_id, run_name, header, rows), ...], benchmark_name="…")

``rows`` may be any iterable of export rows (a generator of a million is fine: one transaction,
``executemany``, journal and sync off).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

# (column, SQL type, NOT NULL) of verification_results after id, run_id, question_id, created_at.
RESULT_COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("metadata_question_id", "VARCHAR(32)", True),
    ("metadata_template_id", "VARCHAR(32)", True),
    ("metadata_failure_category", "JSON", False),
    ("metadata_failure_stage", "TEXT", False),
    ("metadata_failure_reason", "TEXT", False),
    ("metadata_failure_details", "JSON", False),
    ("metadata_caveats", "JSON", True),
    ("metadata_warnings", "JSON", True),
    ("metadata_partial_content", "TEXT", False),
    ("metadata_retry_counts", "JSON", False),
    ("metadata_question_text", "TEXT", True),
    ("metadata_raw_answer", "TEXT", False),
    ("metadata_keywords", "JSON", False),
    ("metadata_answering_interface", "VARCHAR(50)", True),
    ("metadata_answering_model_name", "VARCHAR(255)", True),
    ("metadata_answering_tools", "JSON", True),
    ("metadata_answering_config_id", "TEXT", False),
    ("metadata_parsing_interface", "VARCHAR(50)", True),
    ("metadata_parsing_model_name", "VARCHAR(255)", True),
    ("metadata_parsing_tools", "JSON", True),
    ("metadata_parsing_config_id", "TEXT", False),
    ("metadata_answering_system_prompt", "TEXT", False),
    ("metadata_parsing_system_prompt", "TEXT", False),
    ("metadata_execution_time", "FLOAT", True),
    ("metadata_timestamp", "VARCHAR(50)", True),
    ("metadata_result_id", "VARCHAR(16)", True),
    ("metadata_run_name", "TEXT", False),
    ("metadata_replicate", "INTEGER", False),
    ("metadata_few_shot_enabled", "BOOLEAN", True),
    ("metadata_few_shot_example_count", "INTEGER", True),
    ("metadata_evaluation_mode", "TEXT", False),
    ("metadata_scenario_id", "TEXT", False),
    ("metadata_scenario_node", "TEXT", False),
    ("metadata_scenario_turn", "INTEGER", False),
    ("metadata_scenario_path", "JSON", False),
    ("template_raw_llm_response", "TEXT", False),
    ("template_trace_messages", "JSON", False),
    ("template_conversation_context", "JSON", False),
    ("template_parsed_gt_response", "JSON", False),
    ("template_parsed_llm_response", "JSON", False),
    ("template_template_verification_performed", "BOOLEAN", False),
    ("template_verify_result", "BOOLEAN", False),
    ("template_verify_granular_result", "JSON", False),
    ("template_field_verification_error", "TEXT", False),
    ("template_field_results", "JSON", False),
    ("template_field_scores", "JSON", False),
    ("template_composition_strategy", "TEXT", False),
    ("template_embedding_check_performed", "BOOLEAN", False),
    ("template_embedding_similarity_score", "FLOAT", False),
    ("template_embedding_override_applied", "BOOLEAN", False),
    ("template_embedding_model_used", "TEXT", False),
    ("template_regex_validations_performed", "BOOLEAN", False),
    ("template_regex_validation_results", "JSON", False),
    ("template_regex_validation_details", "JSON", False),
    ("template_regex_overall_success", "BOOLEAN", False),
    ("template_regex_extraction_results", "JSON", False),
    ("template_recursion_limit_reached", "BOOLEAN", False),
    ("template_response_timeout_partial", "BOOLEAN", False),
    ("template_usage_unavailable", "BOOLEAN", False),
    ("template_investigation_trace", "TEXT", False),
    ("template_agentic_parsing_performed", "BOOLEAN", False),
    ("template_agentic_extraction_recovery", "TEXT", False),
    ("template_agentic_extraction_error", "TEXT", False),
    ("template_dynamic_parsing_performed", "BOOLEAN", False),
    ("template_dynamic_parse_decision", "TEXT", False),
    ("template_dynamic_decision_reasoning", "TEXT", False),
    ("template_abstention_check_performed", "BOOLEAN", False),
    ("template_abstention_detected", "BOOLEAN", False),
    ("template_abstention_override_applied", "BOOLEAN", False),
    ("template_abstention_reasoning", "TEXT", False),
    ("template_sufficiency_check_performed", "BOOLEAN", False),
    ("template_sufficiency_detected", "BOOLEAN", False),
    ("template_sufficiency_override_applied", "BOOLEAN", False),
    ("template_sufficiency_reasoning", "TEXT", False),
    ("template_answering_mcp_servers", "JSON", False),
    ("template_usage_metadata", "JSON", False),
    ("template_agent_metrics", "JSON", False),
    ("rubric_rubric_evaluation_performed", "BOOLEAN", False),
    ("rubric_rubric_evaluation_strategy", "TEXT", False),
    ("rubric_llm_trait_scores", "JSON", False),
    ("rubric_llm_trait_labels", "JSON", False),
    ("rubric_regex_trait_scores", "JSON", False),
    ("rubric_callable_trait_scores", "JSON", False),
    ("rubric_metric_trait_scores", "JSON", False),
    ("rubric_metric_trait_confusion_lists", "JSON", False),
    ("rubric_agentic_trait_scores", "JSON", False),
    ("rubric_agentic_trait_investigation_traces", "JSON", False),
    ("rubric_agentic_trait_extraction_metadata", "JSON", False),
    ("rubric_dynamic_rubric_skipped_traits", "JSON", False),
    ("rubric_dynamic_rubric_promoted_traits", "JSON", False),
    ("rubric_trait_provenance", "JSON", False),
    ("dj_deep_judgment_mode", "TEXT", False),
    ("dj_deep_judgment_performed", "BOOLEAN", False),
    ("dj_extracted_excerpts", "JSON", False),
    ("dj_attribute_reasoning", "JSON", False),
    ("dj_deep_judgment_stages_completed", "JSON", False),
    ("dj_deep_judgment_model_calls", "INTEGER", False),
    ("dj_deep_judgment_excerpt_retry_count", "INTEGER", False),
    ("dj_attributes_without_excerpts", "JSON", False),
    ("dj_deep_judgment_search_enabled", "BOOLEAN", False),
    ("dj_hallucination_risk_assessment", "JSON", False),
    ("djr_deep_judgment_rubric_performed", "BOOLEAN", False),
    ("djr_extracted_rubric_excerpts", "JSON", False),
    ("djr_rubric_trait_reasoning", "JSON", False),
    ("djr_deep_judgment_rubric_scores", "JSON", False),
    ("djr_standard_rubric_scores", "JSON", False),
    ("djr_trait_metadata", "JSON", False),
    ("djr_traits_without_valid_excerpts", "JSON", False),
    ("djr_rubric_hallucination_risk_assessment", "JSON", False),
    ("djr_total_deep_judgment_model_calls", "INTEGER", False),
    ("djr_total_traits_evaluated", "INTEGER", False),
    ("djr_total_excerpt_retries", "INTEGER", False),
    ("evaluation_input", "TEXT", False),
    ("used_full_trace", "BOOLEAN", True),
    ("trace_extraction_error", "TEXT", False),
)
EXTRA_COLUMNS = ("id", "run_id", "question_id", "created_at")
_INDEXED = ("metadata_question_id", "metadata_template_id", "metadata_timestamp", "metadata_result_id")

DDL = f"""
CREATE TABLE benchmarks (
    id INTEGER NOT NULL, name VARCHAR(255) NOT NULL, description TEXT, version VARCHAR(50) NOT NULL,
    creator VARCHAR(255), checkpoint_path TEXT, metadata_json JSON,
    created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL, PRIMARY KEY (id)
);
CREATE UNIQUE INDEX ix_benchmarks_name ON benchmarks (name);
CREATE TABLE questions (
    id VARCHAR(32) NOT NULL, question_text TEXT NOT NULL, raw_answer TEXT NOT NULL, tags JSON,
    few_shot_examples JSON, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL, PRIMARY KEY (id)
);
CREATE INDEX idx_question_text ON questions (question_text);
CREATE TABLE benchmark_questions (
    id INTEGER NOT NULL, benchmark_id INTEGER NOT NULL, question_id VARCHAR(32) NOT NULL,
    template_id VARCHAR(32) NOT NULL, answer_template TEXT, original_answer_template TEXT, finished BOOLEAN,
    keywords JSON, question_rubric JSON, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_benchmark_question_template UNIQUE (benchmark_id, question_id, template_id),
    FOREIGN KEY(benchmark_id) REFERENCES benchmarks (id) ON DELETE CASCADE,
    FOREIGN KEY(question_id) REFERENCES questions (id) ON DELETE CASCADE
);
CREATE INDEX idx_benchmark_finished ON benchmark_questions (benchmark_id, finished);
CREATE TABLE verification_runs (
    id VARCHAR(36) NOT NULL, benchmark_id INTEGER NOT NULL, run_name VARCHAR(255) NOT NULL,
    status VARCHAR(50) NOT NULL, config JSON NOT NULL, total_questions INTEGER NOT NULL,
    processed_count INTEGER, successful_count INTEGER, failed_count INTEGER,
    start_time DATETIME, end_time DATETIME, error_message TEXT, summary_stats JSON,
    created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL, PRIMARY KEY (id),
    FOREIGN KEY(benchmark_id) REFERENCES benchmarks (id) ON DELETE CASCADE
);
CREATE INDEX ix_verification_runs_run_name ON verification_runs (run_name);
CREATE INDEX idx_run_benchmark_status ON verification_runs (benchmark_id, status);
CREATE INDEX idx_run_created_at ON verification_runs (created_at);
CREATE TABLE verification_results (
    id INTEGER NOT NULL, run_id VARCHAR(36) NOT NULL, question_id VARCHAR(32) NOT NULL,
    created_at DATETIME NOT NULL,
    {", ".join(f"{name} {kind}{' NOT NULL' if not_null else ''}" for name, kind, not_null in RESULT_COLUMNS)},
    PRIMARY KEY (id),
    FOREIGN KEY(run_id) REFERENCES verification_runs (id) ON DELETE CASCADE,
    FOREIGN KEY(question_id) REFERENCES questions (id) ON DELETE CASCADE
);
{"".join(f"CREATE INDEX ix_verification_results_{c} ON verification_results ({c});" for c in _INDEXED)}
CREATE INDEX ix_verification_results_template_verify_result ON verification_results (template_verify_result);
CREATE INDEX idx_vr_run_id_metadata_question_id ON verification_results (run_id, metadata_question_id);
CREATE INDEX idx_vr_metadata_answering_interface_metadata_answering_model_name
    ON verification_results (metadata_answering_interface, metadata_answering_model_name);
CREATE INDEX idx_vr_metadata_parsing_interface_metadata_parsing_model_name
    ON verification_results (metadata_parsing_interface, metadata_parsing_model_name);
CREATE INDEX idx_vr_metadata_question_id_metadata_answering_model_name_metadata_timestamp
    ON verification_results (metadata_question_id, metadata_answering_model_name, metadata_timestamp);
CREATE TABLE import_metadata (
    id INTEGER NOT NULL, run_id VARCHAR(36) NOT NULL, import_source VARCHAR(50),
    source_format_version VARCHAR(20), source_filename VARCHAR(255), source_job_id VARCHAR(100),
    source_export_timestamp VARCHAR(50), source_karenina_version VARCHAR(50), results_count INTEGER NOT NULL,
    shared_rubric_definition JSON, created_at DATETIME NOT NULL, PRIMARY KEY (id),
    FOREIGN KEY(run_id) REFERENCES verification_runs (id) ON DELETE CASCADE
);
"""

_PARTS = {"metadata_": "metadata", "template_": "template", "rubric_": "rubric", "djr_": "deep_judgment_rubric"}
_IDENTITY = ("interface", "model_name", "tools", "config_id")  # ModelIdentity
_NESTED = {"answering": _IDENTITY, "parsing": _IDENTITY, "failure": ("category", "stage", "reason", "details")}
_NOW = "2026-05-02 10:00:00.000000"  # created_at/updated_at: fixed, so databases are reproducible
_dumps = json.JSONEncoder().encode  # json.dumps with its defaults: what SQLAlchemy's JSON type writes


def _path(column: str) -> tuple[str | None, str, str | None]:
    """(part, field, sub-field) a column holds, by Karenina's prefixes (``djr_`` before ``dj_``)."""
    for prefix, part in (*_PARTS.items(), ("dj_", "deep_judgment")):
        if column.startswith(prefix):
            rest = column[len(prefix) :]
            if part == "metadata":
                for nested, subs in _NESTED.items():
                    sub = rest[len(nested) + 1 :]
                    if rest.startswith(nested + "_") and sub in subs:
                        return part, nested, sub
            return part, rest, None
    return None, column, None


def _json(v: Any) -> str:
    # Most JSON columns hold None or an empty list: skip the encoder for those.
    if v is None:
        return "null"
    if v == [] and v.__class__ is list:
        return "[]"
    return _dumps(v)


def _encoder(kind: str) -> Any:
    if kind == "JSON":
        return _json
    if kind == "BOOLEAN":
        return lambda v: None if v is None else int(v)
    return lambda v: v


@dataclass
class Run:
    """One run to write: its id, name and export (header and rows)."""

    run_id: str
    run_name: str | None
    header: dict[str, Any]
    rows: Iterable[dict[str, Any]]
    status: str | None = None  # default: "completed" when job_summary.is_complete, else "running"
    benchmark_name: str | None = None  # default: write_db's benchmark_name
    counts: dict[str, int] = field(default_factory=dict)  # filled while writing: the run row's counts


def _datetime(epoch: Any) -> str | None:
    if not isinstance(epoch, (int, float)) or isinstance(epoch, bool):
        return None
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC).replace(tzinfo=None)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


class _Flattener:
    """Export rows → verification_results values (Karenina's flattening, SQLAlchemy's binding).

    The per-row function is generated from RESULT_COLUMNS (one list display per part) because a
    loop over 115 columns per row would dominate writing a million rows."""

    def __init__(self) -> None:
        parts: dict[str | None, list[str]] = {}
        nulls: dict[str | None, list[str | None]] = {}
        var = {"metadata": "m", "template": "t", "rubric": "r", "deep_judgment": "d", "deep_judgment_rubric": "e"}
        nested = {"failure": "fa", "answering": "an", "parsing": "pa"}
        for column, kind, _ in RESULT_COLUMNS:
            part, name, sub = _path(column)
            source = "row" if part is None else var[part]
            if sub is not None:
                # A nested model that is None sets none of its columns: SQL NULL, even for JSON.
                value = f"(None if {nested[name]} is None else {nested[name]}.get({sub!r}))"
                expr = f"J({value})" if kind == "JSON" else value
            else:
                expr = f"J({source}.get({name!r}))" if kind == "JSON" else f"{source}.get({name!r})"
            parts.setdefault(part, []).append(expr)
            # A part that is None: JSON columns get JSON null, the others SQL NULL. (Booleans need
            # no conversion: sqlite3 binds True/False as 1/0.)
            nulls.setdefault(part, []).append(_json(None) if kind == "JSON" else None)
        lines = [
            "def values(row):",
            "    m = row['metadata']",
            "    fa, an, pa = m.get('failure'), m.get('answering'), m.get('parsing')",
            "    t, r = row.get('template'), row.get('rubric')",
            "    d, e = row.get('deep_judgment'), row.get('deep_judgment_rubric')",
            "    return (",
        ]
        names: dict[str, Any] = {"J": _json}
        for part, exprs in parts.items():
            body = "[" + ", ".join(exprs) + "]"
            if part in (None, "metadata"):
                lines.append(f"        {body} +")
            else:
                names[f"NONE_{var[part]}"] = nulls[part]
                lines.append(f"        ({body} if {var[part]} is not None else NONE_{var[part]}) +")
        lines[-1] = lines[-1][:-2]
        lines.append("    )")
        exec(compile("\n".join(lines), "<karenina_db flattener>", "exec"), names)
        self.values = names["values"]


def write_db(
    path: str | Path,
    runs: Iterable[Run | tuple[str, str | None, dict[str, Any], Iterable[dict[str, Any]]]],
    *,
    benchmark_name: str = "benchmark",
    imported: bool = False,
    interleave: bool = False,
) -> int:
    """Write a Karenina results database with these runs; returns the number of result rows.

    ``imported``: each run also gets the ``import_metadata`` row Karenina's
    ``import_verification_results`` writes (its job id and version; it keeps
    ``metadata.get("timestamp")`` and ``shared_data.get("rubric")``, which a 2.2 export does not
    have, so those are null as in Karenina's files). A benchmark's ``metadata_json`` holds
    ``{"global_rubric": …}``, the ``rubric_definition`` of its first run. ``interleave``: the
    runs' rows alternate in ``id`` order (rows of a run need not be contiguous in a database).
    """
    target = Path(path)
    target.unlink(missing_ok=True)
    items = [r if isinstance(r, Run) else Run(*r) for r in runs]
    db = sqlite3.connect(target, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA cache_size=-262144")  # 256 MiB: the index builds after a million rows sort in memory
        # Indexes are built after the rows: one sorted build is faster than a million updates.
        statements = [x.strip() for x in DDL.split(";") if x.strip()]
        db.executescript(";\n".join(x for x in statements if "INDEX" not in x.split("(")[0]) + ";")
        db.execute("BEGIN")
        benchmarks: dict[str, int] = {}
        for run in items:
            name = run.benchmark_name or benchmark_name
            if name not in benchmarks:
                rubric = (run.header.get("shared_data") or {}).get("rubric_definition")
                meta = _dumps({"global_rubric": rubric}) if rubric is not None else None
                cur = db.execute(
                    "INSERT INTO benchmarks (name, description, version, creator, checkpoint_path, metadata_json, "
                    "created_at, updated_at) VALUES (?, NULL, '1.0.0', NULL, NULL, ?, ?, ?)",
                    (name, meta, _NOW, _NOW),
                )
                assert cur.lastrowid is not None
                benchmarks[name] = cur.lastrowid
        flat = _Flattener()
        questions: dict[str, tuple[str, str]] = {}
        links: set[tuple[int, str, str]] = set()
        marks = ", ".join("?" * (len(EXTRA_COLUMNS) - 1 + len(RESULT_COLUMNS)))
        insert = (
            f"INSERT INTO verification_results ({', '.join(EXTRA_COLUMNS[1:])}, "
            f"{', '.join(c for c, _, _ in RESULT_COLUMNS)}) VALUES ({marks})"
        )

        def tuples(run: Run) -> Iterator[list[Any]]:
            counts = run.counts
            counts.clear()  # a Run written twice counts its rows once
            qids: set[str] = set()
            for row in run.rows:
                meta = row["metadata"]
                qid = meta["question_id"]
                qids.add(qid)
                counts["processed"] = counts.get("processed", 0) + 1
                ok = meta.get("failure") is None
                counts["successful" if ok else "failed"] = counts.get("successful" if ok else "failed", 0) + 1
                if qid not in questions:
                    questions[qid] = (meta.get("question_text") or "", meta.get("raw_answer") or "")
                links.add((benchmarks[run.benchmark_name or benchmark_name], qid, meta["template_id"]))
                yield [run.run_id, qid, _NOW, *flat.values(row)]
            counts["questions"] = len(qids)

        if interleave:
            streams = [tuples(r) for r in items]
            merged = (v for group in zip_longest(*streams) for v in group if v is not None)
            db.executemany(insert, merged)
        else:
            for run in items:
                db.executemany(insert, tuples(run))
        db.executemany(
            "INSERT INTO questions (id, question_text, raw_answer, tags, few_shot_examples, created_at, updated_at) "
            "VALUES (?, ?, ?, NULL, NULL, ?, ?)",
            ((qid, text, answer, _NOW, _NOW) for qid, (text, answer) in questions.items()),
        )
        db.executemany(
            "INSERT INTO benchmark_questions (benchmark_id, question_id, template_id, finished, created_at, "
            "updated_at) VALUES (?, ?, ?, 1, ?, ?)",
            ((b, q, t, _NOW, _NOW) for b, q, t in sorted(links)),
        )
        total = 0
        for run in items:
            total += _write_run(db, run, benchmarks[run.benchmark_name or benchmark_name], imported)
        for statement in statements:
            if "INDEX" in statement.split("(")[0]:
                db.execute(statement)
        db.execute("COMMIT")
    finally:
        db.close()
    return total


def _write_run(db: sqlite3.Connection, run: Run, benchmark: int, imported: bool) -> int:
    meta = run.header.get("metadata") or {}
    summary = meta.get("job_summary") or {}
    counts = run.counts
    status = run.status or ("completed" if summary.get("is_complete") else "running")
    db.execute(
        "INSERT INTO verification_runs (id, benchmark_id, run_name, status, config, total_questions, processed_count, "
        "successful_count, failed_count, start_time, end_time, error_message, summary_stats, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
        (
            run.run_id,
            benchmark,
            run.run_name or f"run_{run.run_id[:8]}",  # Karenina's default name
            status,
            _dumps(meta.get("verification_config") or {}),
            summary.get("total_questions", counts.get("questions", 0)),
            counts.get("processed", 0),
            summary.get("successful_count", counts.get("successful", 0)),
            summary.get("failed_count", counts.get("failed", 0)),
            _datetime(summary.get("start_time")),
            _datetime(summary.get("end_time")),
            _NOW,
            _NOW,
        ),
    )
    if imported:
        db.execute(
            "INSERT INTO import_metadata (run_id, import_source, source_format_version, source_filename, "
            "source_job_id, source_export_timestamp, source_karenina_version, results_count, "
            "shared_rubric_definition, created_at) VALUES (?, 'json_file', ?, NULL, ?, ?, ?, ?, ?, ?)",
            (
                run.run_id,
                run.header.get("format_version"),
                meta.get("job_id"),
                meta.get("timestamp"),
                meta.get("karenina_version"),
                counts.get("processed", 0),
                _dumps((run.header.get("shared_data") or {}).get("rubric")),
                _NOW,
            ),
        )
    return counts.get("processed", 0)


def export_runs(paths: Iterable[str | Path]) -> list[Run]:
    """Runs from results exports (the run id is the export's job id; no run name)."""
    out = []
    for p in paths:
        doc = json.loads(Path(p).read_text(encoding="utf-8"))
        header = {k: v for k, v in doc.items() if k != "results"}
        out.append(Run(doc["metadata"]["job_id"], None, header, doc["results"]))
    return out
