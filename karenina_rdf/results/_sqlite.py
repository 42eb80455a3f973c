"""Verification runs from a Karenina results database (SQLite) into the store, one run per row of
``verification_runs``.

Karenina's ``storage/`` package keeps results in SQLAlchemy tables (spec verification.md §12):
``verification_results`` has one column per leaf field of ``VerificationResult``, prefixed by
its part (``metadata_``, ``template_``, ``rubric_``, ``dj_``, ``djr_``; root fields bare), with
the nested ``ModelIdentity`` and ``Failure`` flattened once more (``metadata_answering_model_name``,
``metadata_failure_category``). Each row is rebuilt here into the result dict Karenina's loader
(``orm_to_pydantic``) makes and ``model_dump`` writes, and the run's rows go through the same
import as an export's (``_results_store._Import``), so the rows of a run read from a database and
from its export are the same triples (the run header differs by what a database keeps: see
``ResultsDatabase._run``).

The reader uses the standard library's ``sqlite3`` on a read-only connection: Karenina (and its
SQLAlchemy dependency) need not be installed, and the database is never written.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import json.scanner
import re
import sqlite3
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from karenina_rdf._errors import (
    AmbiguousBenchmarkError,
    BenchmarkNotFoundError,
    CheckpointError,
    NotFoundError,
    Problem,
)
from karenina_rdf._progress import Progress

from ._model import (
    DEEP_JUDGMENT,
    DEEP_JUDGMENT_RUBRIC,
    FAILURE_FIELDS,
    FAILURE_GROUPS,
    METADATA,
    MODEL_IDENTITY,
    ROOT,
    RUBRIC,
    TEMPLATE,
    Field,
)
from ._runs import ResultsImport, _Import, file_sha256

if TYPE_CHECKING:
    from karenina_rdf.store import GraphStore

SQLITE_MAGIC = b"SQLite format 3\x00"
FORMAT_VERSION = "2.2"  # the runs are handed to the import as exports of the current format

# (JSON key, fields, column prefix) of each part of a result, in Karenina's order; ROOT follows.
_PARTS: tuple[tuple[str, tuple[Field, ...], str], ...] = (
    ("metadata", METADATA, "metadata_"),
    ("template", TEMPLATE, "template_"),
    ("rubric", RUBRIC, "rubric_"),
    ("deep_judgment", DEEP_JUDGMENT, "dj_"),
    ("deep_judgment_rubric", DEEP_JUDGMENT_RUBRIC, "djr_"),
)
# Column types, as Karenina's auto-mapper derives them from the field's Python type (str → Text or
# String(n), int → Integer, float → Float, bool → Boolean, anything else → JSON). Text and
# Integer come back from SQLite as they went in; the other three need the conversion
# SQLAlchemy's result processors do.
_INTEGER = frozenset(
    {
        "metadata_replicate",
        "metadata_few_shot_example_count",
        "metadata_scenario_turn",
        "dj_deep_judgment_model_calls",
        "dj_deep_judgment_excerpt_retry_count",
        "djr_total_deep_judgment_model_calls",
        "djr_total_traits_evaluated",
        "djr_total_excerpt_retries",
    }
)
_FLOAT = frozenset({"metadata_execution_time", "template_embedding_similarity_score"})
_BOOLEAN = frozenset(
    {
        "metadata_few_shot_enabled",
        "template_template_verification_performed",
        "template_verify_result",
        "template_embedding_check_performed",
        "template_embedding_override_applied",
        "template_regex_validations_performed",
        "template_regex_overall_success",
        "template_recursion_limit_reached",
        "template_response_timeout_partial",
        "template_usage_unavailable",
        "template_agentic_parsing_performed",
        "template_dynamic_parsing_performed",
        "template_abstention_check_performed",
        "template_abstention_detected",
        "template_abstention_override_applied",
        "template_sufficiency_check_performed",
        "template_sufficiency_detected",
        "template_sufficiency_override_applied",
        "rubric_rubric_evaluation_performed",
        "dj_deep_judgment_performed",
        "dj_deep_judgment_search_enabled",
        "djr_deep_judgment_rubric_performed",
        "used_full_trace",
    }
)
_TEXT = frozenset(
    {
        "metadata_question_id",
        "metadata_template_id",
        "metadata_failure_stage",
        "metadata_failure_reason",
        "metadata_partial_content",
        "metadata_question_text",
        "metadata_raw_answer",
        "metadata_answering_interface",
        "metadata_answering_model_name",
        "metadata_answering_config_id",
        "metadata_parsing_interface",
        "metadata_parsing_model_name",
        "metadata_parsing_config_id",
        "metadata_answering_system_prompt",
        "metadata_parsing_system_prompt",
        "metadata_timestamp",
        "metadata_result_id",
        "metadata_run_name",
        "metadata_evaluation_mode",
        "metadata_scenario_id",
        "metadata_scenario_node",
        "template_raw_llm_response",
        "template_field_verification_error",
        "template_composition_strategy",
        "template_embedding_model_used",
        "template_investigation_trace",
        "template_agentic_extraction_recovery",
        "template_agentic_extraction_error",
        "template_dynamic_parse_decision",
        "template_dynamic_decision_reasoning",
        "template_abstention_reasoning",
        "template_sufficiency_reasoning",
        "rubric_rubric_evaluation_strategy",
        "dj_deep_judgment_mode",
        "evaluation_input",
        "trace_extraction_error",
    }
)
# Columns a database of the current layout cannot lack: the run and row keys and the fields
# Karenina's model requires (no default). A missing column of any other field is read as that
# field's fresh value, as Karenina's loader does for a key its flat dict lacks: the HEAD-only
# columns (``*_config_id``, ``template_agentic_extraction_*``, ...) are absent from databases
# a slightly older Karenina wrote, and those still load.
_REQUIRED_RESULT_COLUMNS = (
    "id",
    "run_id",
    "metadata_question_id",
    "metadata_template_id",
    "metadata_failure_category",
    "metadata_question_text",
    "metadata_answering_interface",
    "metadata_answering_model_name",
    "metadata_parsing_interface",
    "metadata_parsing_model_name",
    "metadata_execution_time",
    "metadata_timestamp",
    "metadata_result_id",
)
_REQUIRED_RUN_COLUMNS = (
    "id",
    "benchmark_id",
    "run_name",
    "status",
    "config",
    "total_questions",
    "successful_count",
    "failed_count",
    "start_time",
    "end_time",
)
_REQUIRED_TABLES = {
    "benchmarks": ("id", "name"),
    "verification_runs": _REQUIRED_RUN_COLUMNS,
    "verification_results": _REQUIRED_RESULT_COLUMNS,
}
# import_metadata came later than the other tables: a database without it is still Karenina's.
_IMPORT_COLUMNS = ("source_job_id", "source_export_timestamp", "source_karenina_version", "shared_rubric_definition")
_CHUNK = 500  # row ids per SELECT … WHERE id IN (…): well under SQLite's bound-parameter limit


def column_kind(column: str) -> str:
    """How Karenina's auto-mapper types a ``verification_results`` column: ``text``, ``integer``,
    ``float``, ``boolean`` or ``json``."""
    if column in _TEXT:
        return "text"
    if column in _INTEGER:
        return "integer"
    if column in _FLOAT:
        return "float"
    if column in _BOOLEAN:
        return "boolean"
    return "json"


def _nested_fields(f: Field) -> tuple[Field, ...] | None:
    if f.store == "model":
        return MODEL_IDENTITY
    if f.store == "failure":
        # ``group`` is a computed field of Failure: Karenina stores no column for it.
        return tuple(x for x in FAILURE_FIELDS if x.name != "group")
    return None


def result_columns() -> list[str]:
    """The field columns of ``verification_results`` in Karenina's order (after its ``id``,
    ``run_id``, ``question_id`` and ``created_at``): the field tables of ``_results_model``
    flattened by Karenina's rule."""
    out: list[str] = []
    for _, fields, prefix in _PARTS:
        for f in fields:
            nested = _nested_fields(f)
            if nested is None:
                out.append(prefix + f.name)
            else:
                out.extend(f"{prefix}{f.name}_{x.name}" for x in nested)
    out.extend(f.name for f in ROOT)
    return out


# -- rebuilding a row -------------------------------------------------------------------------
_loads = json.loads
# The decoder's own scanner, called directly: json.loads adds two regex matches and three calls
# around it, which cost as much as the scan for the short texts most columns hold (measured).
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def _json(value: Any) -> Any:
    # SQLAlchemy's JSON type stores json.dumps text; a column declared JSON has NUMERIC affinity
    # in SQLite, so a number comes back as a number (1.0 even as the integer 1), which
    # SQLAlchemy's SQLite JSON processor passes through. Karenina's loader sees the same.
    if value.__class__ is str:
        if value == "null":
            return None
        try:
            result, end = _scan(value, 0)
        except StopIteration:
            end = -1
        # Anything the scanner does not take whole (leading space, trailing text, bad JSON):
        # json.loads decides, and raises the error with its position.
        return result if end == len(value) else _loads(value)
    return value


def _float(value: Any) -> Any:
    # Float columns have REAL affinity, so SQLite already returns floats; an integer only when
    # something other than SQLAlchemy wrote the column.
    return float(value) if value.__class__ is int else value


def _nested(values: tuple[Any, ...], present: tuple[bool, ...], keys: tuple[str, ...]) -> dict[str, Any] | None:
    # Every column NULL: the nested model was None when saved (a failure), or Karenina's
    # constructor fails on it and the loader makes it None.
    if all(v is None for v, p in zip(values, present, strict=True) if p):
        return None
    return dict(zip(keys, values, strict=True))


def _failure(values: tuple[Any, ...], present: tuple[bool, ...], keys: tuple[str, ...]) -> dict[str, Any] | None:
    out = _nested(values, present, keys)
    if out is not None:
        # The computed ``group`` is dumped last; an unknown category (a newer Karenina's) keeps
        # its failure, with no group, rather than losing it.
        category = out["category"]
        out["group"] = FAILURE_GROUPS.get(category) if isinstance(category, str) else None
    return out


def _part(value: dict[str, Any], present: tuple[str, ...]) -> dict[str, Any] | None:
    # Karenina's loader: a part whose columns all read None was None when saved.
    for key in present:
        if value[key] is not None:
            return value
    return None


class RowBuilder:
    """Rebuilds the result dict of a ``verification_results`` row (a tuple of the columns in
    :attr:`columns` order) as Karenina's ``orm_to_pydantic`` + ``model_dump`` make it: fields in
    Karenina's order, JSON decoded, 0/1 as booleans, a part (or failure) whose columns are all
    None as None, ``failure.group`` from the category, and the fresh value of a field whose
    column the database lacks.

    The function that does it is generated once per database layout (the present columns): a
    million rows of 115 columns are read, and a loop over a column table per row would cost
    more than the SQLite read."""

    def __init__(self, present: Sequence[str]) -> None:
        have = set(present)
        self.columns: tuple[str, ...] = ("id", *(c for c in result_columns() if c in have))
        position = {c: i for i, c in enumerate(self.columns)}
        env: dict[str, Any] = {"J": _json, "F": _float, "N": _nested, "FAIL": _failure, "P": _part}
        consts: list[Any] = []

        def const(value: Any) -> str:
            consts.append(value)
            return f"C[{len(consts) - 1}]"

        def read(column: str, default: Any) -> str:
            i = position.get(column)
            if i is None:
                # No column: the field's fresh value (Karenina's model default); a fresh list each row.
                return "[]" if default == [] else repr(default)
            kind = column_kind(column)
            if kind == "json":
                return f"J(r[{i}])"
            if kind == "boolean":
                # SQLAlchemy's Boolean stores 0/1 and reads back bool(value).
                return f"(None if r[{i}] is None else bool(r[{i}]))"
            if kind == "float":
                return f"F(r[{i}])"
            return f"r[{i}]"

        lines = ["def build(r):"]
        for key, fields, prefix in _PARTS:
            items, stored = [], []
            for f in fields:
                nested = _nested_fields(f)
                if nested is None:
                    items.append(f"{f.name!r}: {read(prefix + f.name, f.default)}")
                    if prefix + f.name in position:
                        stored.append(f.name)
                    continue
                base = f"{prefix}{f.name}_"
                values = ", ".join(read(base + x.name, x.default) for x in nested)
                flags = const(tuple(base + x.name in position for x in nested))
                keys = const(tuple(x.name for x in nested))
                items.append(f"{f.name!r}: {'FAIL' if f.store == 'failure' else 'N'}(({values},), {flags}, {keys})")
                stored.append(f.name)
            body = "{" + ", ".join(items) + "}"
            if key == "metadata":
                lines.append(f"    {key} = {body}")
            else:
                lines.append(f"    {key} = P({body}, {const(tuple(stored))})")
        root = ", ".join(f"{f.name!r}: {read(f.name, f.default)}" for f in ROOT)
        parts = ", ".join(f"{key!r}: {key}" for key, _, _ in _PARTS)
        lines.append(f"    return {{{parts}, {root}}}")
        env["C"] = consts
        exec(compile("\n".join(lines), "<karenina_rdf results row builder>", "exec"), env)
        self.build: Callable[[tuple[Any, ...]], dict[str, Any]] = env["build"]

    def failing_column(self, row: tuple[Any, ...]) -> str | None:
        """The first column whose JSON does not decode (for the error message)."""
        for column, v in zip(self.columns, row, strict=True):
            if isinstance(v, str) and column != "id" and column_kind(column) == "json":
                try:
                    json.loads(v)
                except ValueError:
                    return column
        return None


# -- the database -----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class DatabaseRun:
    """One row of ``verification_runs``, with what the run header is built from."""

    id: str
    run_name: str | None
    status: str | None
    benchmark: str | None  # benchmarks.name
    results: int
    header: dict[str, Any]


def _problem(label: str, message: str, pointer: str | None = None) -> CheckpointError:
    return CheckpointError([Problem(message, label, pointer)])


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _epoch(value: Any) -> float | None:
    """A DateTime column as epoch seconds. SQLAlchemy stores ``YYYY-MM-DD HH:MM:SS.ffffff``
    without a zone on SQLite; Karenina writes UTC times, so a naive value is UTC."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        moment = dt.datetime.fromisoformat(str(value).strip())
    except ValueError:
        # Not a time Karenina writes: the summary says "unknown" rather than refusing the run.
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


class ResultsDatabase:
    """A Karenina results database opened read-only, its layout checked."""

    def __init__(self, path: str | Path, label: str | None = None) -> None:
        self.path = Path(path)
        self.label = label or str(path)
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise _problem(self.label, f"cannot read the file: {exc.strerror or exc}") from None
        if head != SQLITE_MAGIC:
            raise _problem(self.label, "not a SQLite database (a Karenina results database is one)")
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            # isolation_level=None: transactions are begun and ended here, one per run, so a
            # run's header and rows come from one snapshot even if Karenina writes meanwhile.
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise _problem(self.label, f"cannot open the SQLite database: {exc}") from None
        try:
            self.tables = self._tables()
            self._check_layout()
        except sqlite3.Error as exc:
            self.db.close()
            raise _problem(self.label, f"cannot read the SQLite database: {exc}") from None
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ResultsDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tables(self) -> dict[str, list[str]]:
        names = [r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: [r[1] for r in self.db.execute(f"PRAGMA table_info({_quote(n)})")] for n in names}

    def _check_layout(self) -> None:
        problems: list[Problem] = []
        for table, required in _REQUIRED_TABLES.items():
            if table not in self.tables:
                problems.append(Problem(f"no table {table!r}: not a Karenina results database", self.label))
                continue
            missing = [c for c in required if c not in self.tables[table]]
            if missing:
                problems.append(
                    Problem(
                        f"table {table!r} lacks the column(s) {', '.join(missing)}: not a results database "
                        "of the layout Karenina writes today (an older Karenina's?)",
                        self.label,
                    )
                )
        if problems:
            raise CheckpointError(problems)

    def runs(self) -> list[DatabaseRun]:
        """Every run, in the order they were written (rowid)."""
        return [self._run(row) for row in self.db.execute(self._run_select() + " ORDER BY r.rowid")]

    def run(self, ref: str) -> DatabaseRun:
        """The run with this ``verification_runs.id``, else the one run with this ``run_name``."""
        rows = self.db.execute(self._run_select() + " WHERE r.id = ?", (ref,)).fetchall()
        if not rows:
            rows = self.db.execute(self._run_select() + " WHERE r.run_name = ? ORDER BY r.rowid", (ref,)).fetchall()
        if len(rows) == 1:
            return self._run(rows[0])
        listed = [f"{r.id} ({r.run_name})" if r.run_name else r.id for r in self.runs()]
        if rows:
            raise NotFoundError(
                f"{self.label}: {len(rows)} runs are named {ref!r}; name one by id: "
                + ", ".join(self._run(r).id for r in rows)
            )
        raise NotFoundError(f"{self.label}: no verification run {ref!r} (runs: {', '.join(listed) or 'none'})")

    def _run_select(self) -> str:
        # metadata_json (the benchmark's global rubric) is optional: the run still imports without.
        meta = "b.metadata_json" if "metadata_json" in self.tables["benchmarks"] else "NULL"
        return (
            "SELECT r.id, r.run_name, r.status, r.config, r.total_questions, r.successful_count, r.failed_count, "
            f"r.start_time, r.end_time, b.name, {meta}, "
            "(SELECT COUNT(*) FROM verification_results v WHERE v.run_id = r.id) "
            "FROM verification_runs r LEFT JOIN benchmarks b ON b.id = r.benchmark_id"
        )

    def _json_column(self, value: Any, pointer: str) -> Any:
        try:
            return _json(value) if value is not None else None
        except ValueError as exc:
            raise _problem(self.label, f"the column does not hold JSON: {exc}", pointer) from None

    def _run(self, row: tuple[Any, ...]) -> DatabaseRun:
        rid, name, status, config, total, ok, failed, start, end, bench, bench_meta, count = row
        rid = str(rid)
        where = f"/verification_runs/{rid}"
        imported = self._import_metadata(rid)
        start_s, end_s = _epoch(start), _epoch(end)
        summary = {
            "total_questions": total,
            "successful_count": ok,
            "failed_count": failed,
            "start_time": start_s,
            "end_time": end_s,
            # As Karenina's exporter: end - start when both are known.
            "total_duration": end_s - start_s if start_s is not None and end_s is not None else None,
            "is_complete": status == "completed",
        }
        # The rubric shared by the run: the one an import kept (import_metadata), else the
        # benchmark's global rubric, which is what the run was verified with.
        rubric = imported.get("shared_rubric_definition")
        if rubric is None:
            meta = self._json_column(bench_meta, "/benchmarks/metadata_json")
            rubric = meta.get("global_rubric") if isinstance(meta, dict) else None
        job = imported.get("source_job_id")
        header = {
            "format_version": FORMAT_VERSION,
            "metadata": {
                # No export was made: an imported run keeps its export's time, a run Karenina
                # verified has none.
                "export_timestamp": imported.get("source_export_timestamp"),
                "karenina_version": imported.get("source_karenina_version"),
                # An imported run's job is the one its export names; a verified run's id is its job id.
                "job_id": job if isinstance(job, str) and job else rid,
                "verification_config": self._json_column(config, where + "/config"),
                "job_summary": summary,
            },
            "shared_data": {"rubric_definition": rubric},
        }
        return DatabaseRun(rid, name, status, bench, int(count), header)

    def _import_metadata(self, rid: str) -> dict[str, Any]:
        columns = self.tables.get("import_metadata")
        if not columns or "run_id" not in columns:
            return {}
        present = [c for c in _IMPORT_COLUMNS if c in columns]
        if not present:
            return {}
        order = " ORDER BY id DESC" if "id" in columns else " ORDER BY rowid DESC"
        row = self.db.execute(
            f"SELECT {', '.join(present)} FROM import_metadata WHERE run_id = ?{order} LIMIT 1", (rid,)
        ).fetchone()
        if row is None:
            return {}
        out = dict(zip(present, row, strict=True))
        if "shared_rubric_definition" in out:
            out["shared_rubric_definition"] = self._json_column(
                out["shared_rubric_definition"], f"/import_metadata/{rid}/shared_rubric_definition"
            )
        return out

    def row_ids(self, rid: str) -> array[int]:
        """The ids of a run's rows, in id order (Karenina's insertion order)."""
        ids = array("q")
        for (i,) in self.db.execute("SELECT id FROM verification_results WHERE run_id = ? ORDER BY id", (rid,)):
            ids.append(i)
        return ids

    def rows(self, ids: array[int], builder: RowBuilder) -> Iterator[tuple[int, dict[str, Any]]]:
        """(id, result dict) of each row, in the order of ``ids``. Rows are fetched by primary
        key in chunks: a run's rows need not be contiguous, and neither a scan of the whole
        table per run nor a sort of whole rows is needed."""
        select = ", ".join(_quote(c) for c in builder.columns)
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT {select} FROM verification_results WHERE id IN ({marks}) ORDER BY id"
            for row in self.db.execute(query, tuple(chunk)):
                try:
                    result = builder.build(row)
                except ValueError as exc:
                    column = builder.failing_column(row) or "?"
                    raise _problem(
                        self.label, f"the column does not hold JSON: {exc}", f"/verification_results/{row[0]}/{column}"
                    ) from None
                yield row[0], result


_POINTER = re.compile(r"^/results/(\d+)(.*)$", re.DOTALL)


def _relocate(exc: CheckpointError, ids: array[int]) -> CheckpointError:
    """Errors of the import name ``/results/{n}``: the n-th row of the run. In a database the
    row is found by its id: ``/verification_results/{id}``."""
    problems = []
    for p in exc.problems:
        m = _POINTER.match(p.pointer or "")
        if m and int(m.group(1)) < len(ids):
            p = dataclasses.replace(p, pointer=f"/verification_results/{ids[int(m.group(1))]}{m.group(2)}")
        problems.append(p)
    return CheckpointError(problems)


def _benchmark_hint(store: GraphStore, name: str | None) -> str | None:
    """The stored benchmark the database's run names, when exactly one stored benchmark has that
    name (or id): it says which benchmark a question id held by several means."""
    if not name:
        return None
    try:
        return store.resolve(name)
    except (BenchmarkNotFoundError, AmbiguousBenchmarkError):
        return None


def import_results_db(
    store: GraphStore,
    path: str | Path,
    *,
    benchmark: str | None = None,
    run_id: str | None = None,
    label: str | None = None,
    progress: Progress | None = None,
) -> list[ResultsImport]:
    """Import the runs of a Karenina results database (SQLite) into the store: each row of
    ``verification_runs`` becomes the run ``verification_runs.id``, its results rebuilt as
    Karenina's loader rebuilds them, in ``id`` order.

    ``run_id`` imports only the run with that id (or that unique ``run_name``). ``benchmark``
    says which stored benchmark question ids mean; without it, the benchmark the database's run
    names is used when one stored benchmark has that name. Atomic per run, like an export: a
    failing run leaves the runs imported before it in place. Re-importing replaces rows of the
    same identity and keeps the others.
    """
    label = label or str(path)
    source = Path(path)
    with ResultsDatabase(source, label) as db:
        try:
            runs = [db.run(run_id)] if run_id is not None else db.runs()
        except sqlite3.Error as exc:
            raise _problem(label, f"cannot read the SQLite database: {exc}") from None
        if not runs:
            raise _problem(label, "the database holds no verification runs (table 'verification_runs' is empty)")
        file_hash = file_sha256(source, label)
        builder = RowBuilder(db.tables["verification_results"])
        out: list[ResultsImport] = []
        for run in runs:
            out.append(_import_run(store, db, run, builder, label, file_hash, benchmark, progress))
        return out


def _import_run(
    store: GraphStore,
    db: ResultsDatabase,
    run: DatabaseRun,
    builder: RowBuilder,
    label: str,
    file_hash: str,
    benchmark: str | None,
    progress: Progress | None = None,
) -> ResultsImport:
    hint = benchmark if benchmark is not None else _benchmark_hint(store, run.benchmark)
    db.db.execute("BEGIN")
    try:
        # Read again inside the transaction: the header's counts and the rows from one snapshot.
        run = db.run(run.id)
        ids = db.row_ids(run.id)

        def rows() -> Iterator[tuple[str, int, Any]]:
            for n, (_, row) in enumerate(db.rows(ids, builder)):
                yield "results", n, row

        header = run.header
        try:
            result = _Import(
                store, run.id, label, file_hash, hint, name=run.run_name, progress=progress, rows_total=len(ids)
            ).execute(header, rows(), lambda: header, FORMAT_VERSION)
        except CheckpointError as exc:
            raise _relocate(exc, ids) from None
        except sqlite3.Error as exc:
            raise _problem(label, f"cannot read the SQLite database: {exc}", f"/verification_runs/{run.id}") from None
    finally:
        db.db.execute("COMMIT")
    return result
