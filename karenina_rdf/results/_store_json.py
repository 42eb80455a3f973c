"""Karenina's ``ResultsStore`` file into the store: ``{"runs": {run_name: [result, …]}}``, what
``ResultsStore.export_to_file`` writes and ``ResultsStore.from_file`` reads
(karenina/benchmark/core/results_store.py): each run a list of ``VerificationResult.model_dump()``
dicts, keyed by the name the user gave the run.

Each run becomes a stored run whose id and name are its run name (Karenina keys runs by name
only), its rows imported as an export's rows are. The file has no header: the run header is
built as for a database run that was never exported (no export time, no Karenina version), with
the counts of its rows. Karenina reads the whole file at once, and so does this reader.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from karenina_rdf._errors import CheckpointError, NotFoundError, Problem
from karenina_rdf._progress import Progress

from ._model import FORMAT_VERSION
from ._runs import ResultsImport, RunCheck, _Import, file_sha256

if TYPE_CHECKING:
    from karenina_rdf.store import GraphStore

_HEAD = re.compile(rb'^\s*\{\s*"runs"\s*:')


def is_results_store(path: str | Path) -> bool:
    """A ``ResultsStore`` file: a JSON object whose first member is ``runs`` (Karenina writes it
    first; an export starts with ``format_version``)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return _HEAD.match(head.removeprefix(b"\xef\xbb\xbf")) is not None


def _header(rid: str, rows: list[Any]) -> dict[str, Any]:
    ok = sum(1 for r in rows if isinstance(r, dict) and (r.get("metadata") or {}).get("failure") is None)
    questions = {(r.get("metadata") or {}).get("question_id") for r in rows if isinstance(r, dict)}
    return {
        "format_version": FORMAT_VERSION,
        "metadata": {
            "export_timestamp": None,
            "karenina_version": None,
            "job_id": rid,
            "verification_config": None,
            "job_summary": {
                "total_questions": len(questions),
                "successful_count": ok,
                "failed_count": len(rows) - ok,
                "start_time": None,
                "end_time": None,
                "total_duration": None,
                "is_complete": True,
            },
        },
        "shared_data": {"rubric_definition": None},
    }


def import_results_store(
    store: GraphStore,
    path: str | Path,
    *,
    benchmark: str | None = None,
    run_name: str | None = None,
    label: str | None = None,
    check: RunCheck | None = None,
    progress: Progress | None = None,
) -> list[ResultsImport]:
    """Import the runs of a ``ResultsStore`` file, each atomic, as exports are imported;
    ``run_name`` imports only that run. A run already stored under the name is upserted."""
    label = label or str(path)
    source = Path(path)
    file_hash = file_sha256(source, label)
    try:
        doc = json.loads(source.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise CheckpointError([Problem(f"not UTF-8 text: {exc.reason}", label)]) from None
    except json.JSONDecodeError as exc:
        raise CheckpointError([Problem(f"not JSON: {exc.msg} (line {exc.lineno})", label)]) from None
    runs = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(runs, dict):
        # Karenina's from_file: "Invalid results file: missing 'runs' key".
        raise CheckpointError([Problem("not a Karenina ResultsStore file: no 'runs' object", label, "/runs")])
    if run_name is not None:
        if run_name not in runs:
            raise NotFoundError(f"{label}: no run named {run_name!r} (runs: {', '.join(map(repr, runs)) or 'none'})")
        runs = {run_name: runs[run_name]}
    if not runs:
        raise CheckpointError([Problem("the file holds no runs ('runs' is empty)", label, "/runs")])
    out = []
    for name, rows in runs.items():
        pointer = "/runs/" + name.replace("~", "~0").replace("/", "~1")
        if not isinstance(rows, list):
            raise CheckpointError([Problem("a run must be a list of results", label, pointer)])

        def items(rows: list[Any] = rows, pointer: str = pointer) -> Iterator[tuple[str, int, Any]]:
            for n, row in enumerate(rows):
                yield pointer[1:], n, row

        header = _header(name, rows)

        def complete(header: dict[str, Any] = header) -> dict[str, Any]:
            return header

        out.append(
            _Import(
                store,
                name,
                label,
                file_hash,
                benchmark,
                name=name,
                check=check,
                progress=progress,
                rows_total=len(rows),
            ).execute(header, items(), complete, FORMAT_VERSION)
        )
    return out
