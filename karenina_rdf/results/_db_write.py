"""Writing a Karenina database (SQLite) with the standard library: the rows Karenina's
``storage`` package writes with SQLAlchemy, so Karenina's loaders (``load_verification_results``,
``load_benchmark``) read them as what was saved.

The layout is Karenina's own (``_db_schema.DDL``, created when the file is new). Values are bound
as SQLAlchemy binds them on SQLite: a JSON column holds ``json.dumps`` text (Python None as the
text ``null``), a Boolean 0/1, a DateTime ``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC, no zone). A result
is flattened as Karenina's ``pydantic_to_orm`` flattens it: one column per leaf field, prefixed by
its part; a part that is None sets all its columns to None; a failure that is None sets none of
its columns. ``_sqlite`` reads the same layout back.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from karenina_rdf._errors import CheckpointError, InvalidValueError, Problem
from karenina_rdf._progress import QUIET, Progress, counted
from karenina_rdf.rdf import SCHEMA

from ._db_schema import DDL
from ._export import ResultRebuilder
from ._model import ROOT as _ROOT
from ._runs import ordered_results, resolve_run, run_header, run_reader
from ._sqlite import _PARTS, _nested_fields, column_kind, result_columns
from ._sqlite import SQLITE_MAGIC as _MAGIC

if TYPE_CHECKING:
    from karenina_rdf.store import GraphStore

_EXTRA = ("run_id", "question_id", "created_at")


def sqlite_path(storage: Any) -> Path:
    """The file of a Karenina storage URL (``sqlite:///relative.db``, ``sqlite:////abs.db``) or of
    a Karenina ``DBConfig`` (its ``storage_url``). Only SQLite files are written here."""
    url = getattr(storage, "storage_url", storage)
    if isinstance(url, Path):
        return url
    if not isinstance(url, str):
        raise InvalidValueError(f"storage must be a database URL such as 'sqlite:///benchmarks.db', not {url!r}")
    if not url.startswith("sqlite:///") or url in ("sqlite:///", "sqlite:///:memory:"):
        raise InvalidValueError(
            f"storage {url!r}: only SQLite database files are supported here ('sqlite:///path/to/file.db')"
        )
    return Path(url[len("sqlite:///") :].split("?", 1)[0])


def now() -> str:
    """``datetime.now(UTC)`` as SQLAlchemy stores a DateTime on SQLite."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def epoch_datetime(value: Any) -> str | None:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def dumps(value: Any) -> str:
    """SQLAlchemy's JSON serializer: ``json.dumps`` with its defaults (None → ``null``)."""
    return json.dumps(value)


def _column_value(kind: str, value: Any) -> Any:
    if kind == "json":
        return dumps(value)
    if kind == "boolean":
        return None if value is None else int(bool(value))
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def flatten(row: dict[str, Any]) -> list[Any]:
    """The field columns of ``verification_results`` for one result (``_sqlite.result_columns``
    order), as Karenina's flattener and SQLAlchemy's binds make them."""
    out: list[Any] = []
    for key, fields, prefix in _PARTS:
        part = row.get(key)
        for f in fields:
            nested = _nested_fields(f)
            if nested is None:
                column = prefix + f.name
                kind = column_kind(column)
                if part is None:
                    out.append(dumps(None) if kind == "json" else None)
                else:
                    out.append(_column_value(kind, part.get(f.name, f.default)))
                continue
            value = part.get(f.name) if part is not None else None
            for x in nested:
                column = f"{prefix}{f.name}_{x.name}"
                kind = column_kind(column)
                if value is None:
                    # A failure that is None: no column set (SQL NULL); a part that is None: its
                    # flattener sets every leaf to None, which a JSON column stores as null.
                    none_part = part is None and f.store != "failure"
                    out.append(dumps(None) if kind == "json" and none_part else None)
                else:
                    out.append(_column_value(kind, value.get(x.name, x.default)))
    for f in _ROOT:
        out.append(_column_value(column_kind(f.name), row.get(f.name, f.default)))
    return out


class KareninaDatabase:
    """A Karenina database file opened for writing; created with Karenina's layout when new.
    Every change is made in one transaction, committed by :meth:`commit`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        label = str(self.path)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if not fresh:
            with open(self.path, "rb") as fh:
                if fh.read(len(_MAGIC)) != _MAGIC:
                    raise CheckpointError([Problem("not a SQLite database (a Karenina database is one)", label)])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise CheckpointError([Problem(f"cannot open the SQLite database: {exc}", label)]) from None
        try:
            self.db.execute("PRAGMA foreign_keys=ON")  # as Karenina's engine sets it
            self.db.execute("BEGIN IMMEDIATE")
            tables = {n for (n,) in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables:
                for statement in DDL:
                    self.db.execute(statement)
            elif not {"benchmarks", "questions", "benchmark_questions", "verification_runs"} <= tables:
                raise CheckpointError(
                    [Problem("a SQLite database, but not a Karenina one (no 'benchmarks' table)", label)]
                )
            self.result_columns = [r[1] for r in self.db.execute("PRAGMA table_info(verification_results)")]
        except sqlite3.Error as exc:
            self.close()
            raise CheckpointError([Problem(f"cannot write the SQLite database: {exc}", label)]) from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
        self.db.close()

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def __enter__(self) -> KareninaDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- benchmarks and questions --------------------------------------------------------
    def benchmark_id(self, name: str) -> int | None:
        row = self.db.execute("SELECT id FROM benchmarks WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    def save_benchmark(
        self,
        name: str,
        description: str | None,
        version: str,
        creator: str | None,
        checkpoint_path: str | None,
        metadata_json: Any,
    ) -> int:
        """Karenina's ``save_benchmark``: a benchmark of that name is updated, else created."""
        found = self.benchmark_id(name)
        stamp = now()
        if found is not None:
            self.db.execute(
                "UPDATE benchmarks SET description = ?, version = ?, creator = ?, checkpoint_path = ?, "
                "metadata_json = ?, updated_at = ? WHERE id = ?",
                (description, version, creator, checkpoint_path, dumps(metadata_json), stamp, found),
            )
            return found
        cur = self.db.execute(
            "INSERT INTO benchmarks (name, description, version, creator, checkpoint_path, metadata_json, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (name, description, version, creator, checkpoint_path, dumps(metadata_json), stamp, stamp),
        )
        return int(cur.lastrowid or 0)

    def add_question(self, qid: str, text: str, raw_answer: str, **json_fields: Any) -> None:
        """A row of ``questions`` unless one with this id exists (questions are shared between
        benchmarks: Karenina never overwrites one)."""
        if self.db.execute("SELECT 1 FROM questions WHERE id = ?", (qid,)).fetchone():
            return
        stamp = now()
        self.db.execute(
            "INSERT INTO questions (id, question_text, raw_answer, answer_notes, keywords, author, sources, "
            "custom_metadata, few_shot_examples, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                qid,
                text,
                raw_answer,
                json_fields.get("answer_notes"),
                *(dumps(json_fields.get(k)) for k in ("keywords", "author", "sources", "custom_metadata")),
                dumps(json_fields.get("few_shot_examples")),
                stamp,
                stamp,
            ),
        )

    def link_question(
        self,
        benchmark: int,
        qid: str,
        template_id: str,
        template: str,
        finished: bool,
        keywords: Any,
        question_rubric: Any,
    ) -> None:
        """The ``benchmark_questions`` row of (benchmark, question, template), updated or created."""
        found = self.db.execute(
            "SELECT id FROM benchmark_questions WHERE benchmark_id = ? AND question_id = ? AND template_id = ?",
            (benchmark, qid, template_id),
        ).fetchone()
        stamp = now()
        values = (template, template, int(finished), dumps(keywords), dumps(question_rubric))
        if found:
            self.db.execute(
                "UPDATE benchmark_questions SET answer_template = ?, original_answer_template = ?, finished = ?, "
                "keywords = ?, question_rubric = ?, updated_at = ? WHERE id = ?",
                (*values, stamp, found[0]),
            )
        else:
            self.db.execute(
                "INSERT INTO benchmark_questions (benchmark_id, question_id, template_id, answer_template, "
                "original_answer_template, finished, keywords, question_rubric, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (benchmark, qid, template_id, *values, stamp, stamp),
            )

    # -- runs and results ------------------------------------------------------------------
    def add_run(
        self,
        run_id: str,
        benchmark: int,
        run_name: str,
        header: dict[str, Any],
        rows: Iterable[dict[str, Any]],
    ) -> int:
        """A verification run and its results, as Karenina's ``save_verification_results`` writes
        them, and the ``import_metadata`` row its import writes (the export's job id, time,
        version and rubric, which a database has no other place for). Returns the row count."""
        if self.db.execute("SELECT 1 FROM verification_runs WHERE id = ?", (run_id,)).fetchone():
            raise InvalidValueError(f"{self.path}: already holds a verification run with id {run_id!r}")
        meta: dict[str, Any] = header["metadata"] if isinstance(header.get("metadata"), dict) else {}
        summary: dict[str, Any] = meta["job_summary"] if isinstance(meta.get("job_summary"), dict) else {}
        stamp = now()
        self.db.execute(
            "INSERT INTO verification_runs (id, benchmark_id, run_name, status, config, total_questions, "
            "processed_count, successful_count, failed_count, start_time, end_time, error_message, summary_stats, "
            "created_at, updated_at) VALUES (?, ?, ?, 'completed', ?, 0, 0, 0, 0, ?, ?, NULL, NULL, ?, ?)",
            (
                run_id,
                benchmark,
                run_name,
                dumps(meta.get("verification_config") or {}),
                epoch_datetime(summary.get("start_time")),
                epoch_datetime(summary.get("end_time")),
                stamp,
                stamp,
            ),
        )
        have = set(self.result_columns)
        wanted = result_columns()
        keep = [i for i, c in enumerate(wanted) if c in have]
        columns = [*_EXTRA, *(wanted[i] for i in keep)]
        insert = f"INSERT INTO verification_results ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        questions: set[str] = set()
        count = ok = 0
        for row in rows:
            meta_r = row.get("metadata") or {}
            qid = str(meta_r.get("question_id"))
            self.add_question(qid, meta_r.get("question_text") or "", meta_r.get("raw_answer") or "")
            flat = flatten(row)
            self.db.execute(insert, (run_id, qid, stamp, *(flat[i] for i in keep)))
            questions.add(qid)
            count += 1
            ok += meta_r.get("failure") is None
        self.db.execute(
            "UPDATE verification_runs SET total_questions = ?, processed_count = ?, successful_count = ?, "
            "failed_count = ? WHERE id = ?",
            (len(questions), count, ok, count - ok, run_id),
        )
        shared: dict[str, Any] = header["shared_data"] if isinstance(header.get("shared_data"), dict) else {}
        self.db.execute(
            "INSERT INTO import_metadata (run_id, import_source, source_format_version, source_filename, "
            "source_job_id, source_export_timestamp, source_karenina_version, results_count, "
            "shared_rubric_definition, created_at) VALUES (?, 'karenina-rdf', ?, NULL, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                str(header.get("format_version") or "2.2"),
                meta.get("job_id"),
                meta.get("export_timestamp"),
                meta.get("karenina_version"),
                count,
                dumps(shared.get("rubric_definition")),
                stamp,
            ),
        )
        return count


def _literal(store: GraphStore, iri: str, predicate: str) -> str | None:
    for q in store.oxigraph.quads_for_pattern(ox.NamedNode(iri), ox.NamedNode(predicate), None, None):
        if isinstance(q.object, ox.Literal):
            return q.object.value
    return None


def export_run_db(store: GraphStore, ref: str, target: str | Path, progress: Progress | None = None) -> int:
    """Add a stored run to a Karenina results database (created when the file is new), under the
    benchmark it was verified on (by name; created without questions when the database lacks
    it). Karenina's ``load_verification_results`` reads the run back, by its name or its id, as
    the results stored here. All or nothing: one transaction. ``progress``: results written."""
    run, graph = resolve_run(store, ref)
    source = run_reader(store, graph)
    header = run_header(source, graph, run)
    rebuild = ResultRebuilder(source, graph)
    run_id = _literal(store, run, SCHEMA + "identifier") or run.rsplit("/", 1)[-1]
    run_name = _literal(store, run, SCHEMA + "name") or run_id
    used = sorted(
        q.object.value
        for q in store.oxigraph.quads_for_pattern(
            ox.NamedNode(run), ox.NamedNode("http://www.w3.org/ns/prov#used"), None, graph
        )
        if isinstance(q.object, ox.NamedNode)
    )
    bench_name = (_literal(store, used[0], SCHEMA + "name") if used else None) or run_name
    version = (_literal(store, used[0], SCHEMA + "version") if used else None) or "0.1.0"
    with KareninaDatabase(target) as db:
        benchmark = db.benchmark_id(bench_name)
        if benchmark is None:
            benchmark = db.save_benchmark(bench_name, None, version, None, None, None)
        iris = ordered_results(source, graph)
        writing = (progress or QUIET).start("writing", len(iris), "results")
        n = db.add_run(run_id, benchmark, run_name, header, counted(map(rebuild.row, iris), writing))
        db.commit()
    return n
