"""Karenina's reporting members of ``Benchmark``: summary and statistics, readiness and health,
validation, the dict, CSV and Markdown exports, benchmark metadata, clones, and the workspace
root (which only lives in memory, on the handle, as in Karenina).

The answers are Karenina's, key for key and character for character (its ``ExportManager``),
computed from one read of the graph per call.
"""

from __future__ import annotations

import ast
import csv
import datetime as dt
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any, Self

from karenina_rdf._errors import InvalidValueError
from karenina_rdf._store import Store
from karenina_rdf.checkpoint import RubricTrait
from karenina_rdf.validation import TEMPLATE_DEFINES_ANSWER, TEMPLATE_PARSES, template_problems

from ._core import BenchmarkCore, _now
from ._question import Question, grouped_rubric

# Karenina's set_metadata sets any checkpoint attribute by name; these are the ones that are
# benchmark metadata (the others have members of their own, which keep the graph consistent).
_METADATA = {"name", "description", "version", "creator", "dateCreated", "dateModified"}
_NOT_METADATA = {"id", "context", "type", "rating", "dataFeedElement", "hasPart", "additionalProperty"}


@dataclass
class _Snapshot:
    """One read of the benchmark: its header fields and its questions, in order."""

    name: str
    description: str
    version: str
    creator: str
    created_at: Any
    modified_at: Any
    global_rubric: dict[str, list[RubricTrait]] | None
    questions: list[Question]

    @property
    def finished_count(self) -> int:
        return sum(1 for q in self.questions if q.finished)

    @property
    def progress(self) -> float:
        return self.finished_count / len(self.questions) * 100 if self.questions else 0.0

    @property
    def is_complete(self) -> bool:
        return bool(self.questions) and all(q.answer_template and q.finished for q in self.questions)


class ReportMembers(BenchmarkCore):
    """Reports on the benchmark (Karenina's ``ExportManager``) and its metadata."""

    _workspace_root: Path | None = None  # set on the handle only (set_workspace_root)

    # -- summaries -------------------------------------------------------------------------
    def get_summary(self) -> dict[str, Any]:
        """Karenina's summary: metadata, counts, progress, completeness, global rubric."""
        return _summary(self._snapshot())

    def get_statistics(self) -> dict[str, Any]:
        """The summary with template lengths and how many questions carry metadata."""
        return _statistics(self._snapshot())

    def check_readiness(self) -> dict[str, Any]:
        """Whether the benchmark is ready for verification, and what is missing if not."""
        return _readiness(self._snapshot())

    def get_health_report(self) -> dict[str, Any]:
        """Karenina's 0-100 health score, its level, the readiness check, the statistics and
        recommendations; ``timestamp`` is now."""
        snap = self._snapshot()
        readiness, stats = _readiness(snap), _statistics(snap)
        health_score: float = 0.0
        if readiness["has_questions"]:
            score = 20 + int((snap.progress / 100) * 30)
            score += 25 if readiness["templates_valid"] else 0
            score += 15 if readiness["rubrics_valid"] else 0
            score += 10 if readiness["all_finished"] else 0
            health_score = min(score, 100)
        levels = ((90, "excellent"), (75, "good"), (50, "fair"), (25, "poor"))
        status = next((name for floor, name in levels if health_score >= floor), "critical")
        return {
            "health_score": round(health_score, 1),
            "health_status": status,
            "timestamp": dt.datetime.now().isoformat(),
            "readiness": readiness,
            "statistics": stats,
            "recommendations": _recommendations(snap, readiness),
        }

    def validate(self) -> tuple[bool, str]:
        """Karenina's structure check, then every template's: ``(True, "Benchmark is valid")``
        or ``(False, why)``. Templates are read, never run: one that does not parse or has no
        answer class (a leaf ``BaseAnswer`` subclass) is invalid, as Karenina's exec finds it."""
        snap = self._snapshot()
        if not snap.name:
            return False, "Benchmark must have a name"
        for i, q in enumerate(snap.questions):
            if not q.question:
                return False, f"Question {i} missing text"
            if q.answer_template is None:
                return False, f"Question {i} missing answer template"
        for q in snap.questions:
            if q.answer_template is None:
                continue
            for check, message in template_problems(q.answer_template):
                if check in (TEMPLATE_PARSES, TEMPLATE_DEFINES_ANSWER):
                    return False, f"Invalid template for {q.id}: {message}"
        return True, "Benchmark is valid"

    # -- metadata --------------------------------------------------------------------------
    def set_metadata(self, **metadata: Any) -> None:
        """Set the benchmark's name, description, version or creator (and its dates) at once;
        names Karenina's checkpoint does not have are ignored, as there."""
        fields: dict[str, Any] = {}
        for key, value in metadata.items():
            if key in _NOT_METADATA:
                raise InvalidValueError(
                    f"set_metadata cannot set {key!r}: it is not metadata here; use the members that change it"
                )
            if key in _METADATA:
                fields[key] = value
        if "name" in fields and not fields["name"]:
            raise InvalidValueError("Benchmark must have a name")
        self._set_header(**fields, dateModified=_now())

    @property
    def jsonld_data(self) -> dict[str, Any]:
        """The benchmark as checkpoint JSON, read from the graph now. Karenina's is its live
        ``JsonLdCheckpoint`` model; this is a copy: changing it changes nothing stored."""
        return self.store.export_checkpoint(self.iri)

    # -- exports ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Karenina's plain-dict export: metadata, the summary, the questions (dicts as
        ``get_question`` gives them) and the global rubric grouped by trait kind, or None."""
        snap = self._snapshot()
        rubric = snap.global_rubric
        return {
            "metadata": {
                "name": snap.name,
                "description": snap.description,
                "version": snap.version,
                "creator": snap.creator,
                "created_at": snap.created_at,
                "modified_at": snap.modified_at,
            },
            "statistics": _summary(snap),
            "questions": [q.to_dict() for q in snap.questions],
            "global_rubric": (
                {key: [t.model_dump() for t in traits] for key, traits in rubric.items()} if rubric else None
            ),
        }

    def to_csv(self) -> str:
        """Karenina's CSV of the questions (one row each, ``csv`` module defaults)."""
        out = StringIO()
        writer = csv.writer(out)
        writer.writerow(
            ["Question ID", "Question", "Raw Answer", "Has Template", "Finished", "Author", "Created", "Modified"]
        )
        for q in self._snapshot().questions:
            author = q.author.get("name", "") if isinstance(q.author, dict) and q.author else ""
            writer.writerow(
                [
                    q.id,
                    q.question,
                    q.raw_answer,
                    "Yes" if q.answer_template else "No",  # Karenina's default template counts
                    "Yes" if q.finished else "No",
                    author,
                    q.date_created or "",
                    q.date_modified or "",
                ]
            )
        return out.getvalue()

    def to_markdown(self) -> str:
        """Karenina's Markdown document of the benchmark."""
        snap = self._snapshot()
        stats = _summary(snap)
        lines = [f"# {snap.name}", ""]
        if snap.description:
            lines += [snap.description, ""]
        lines += [
            "## Metadata",
            f"- **Version**: {snap.version}",
            f"- **Creator**: {snap.creator}",
            f"- **Created**: {snap.created_at}",
            f"- **Modified**: {snap.modified_at}",
            "",
            "## Statistics",
            f"- **Questions**: {stats['question_count']}",
            f"- **Finished**: {stats['finished_count']}",
            f"- **Progress**: {stats['progress_percentage']:.1f}%",
            f"- **Has Templates**: {stats['has_template_count']}",
            "",
        ]
        if snap.global_rubric:
            lines.append("## Global Rubric")
            lines += [f"- **{t.name}**: {t.description}" for t in snap.global_rubric["llm_traits"]]
            lines.append("")
        lines.append("## Questions")
        for i, q in enumerate(snap.questions, 1):
            lines += [
                f"### {i}. {q.question}",
                f"**Status**: {'✅' if q.finished else '❌'} | **Template**: {'📝' if q.answer_template else '❌'}",
                "",
            ]
            if q.raw_answer:
                lines += [f"**Expected Answer**: {q.raw_answer}", ""]
        return "\n".join(lines)

    def clone(self, *, store: Store | None = None) -> Self:
        """A copy of the benchmark, independent of this one: same id, questions and rubrics, in
        a new in-memory store (or ``store``, which must not be this benchmark's own: a copy
        with the same id there would replace it). The workspace root goes with it."""
        if store is self.store:
            raise InvalidValueError("a clone in the benchmark's own store would replace it; pass another store")
        target = store if store is not None else Store.memory()
        copy = type(self)(target, target.import_checkpoint(self.store.export_checkpoint(self.iri)).iri)
        copy._workspace_root = self.workspace_root
        return copy

    # -- the workspace root: in memory only ------------------------------------------------
    @property
    def workspace_root(self) -> Path | None:
        """Where the questions' workspaces are (``workspace_path`` is relative to it). As in
        Karenina it is not saved: it belongs to this handle, and a new handle has none."""
        return self._workspace_root

    def set_workspace_root(self, path: Path | None) -> None:
        """Set this handle's workspace root (not stored, as Karenina does not save it)."""
        self._workspace_root = path

    # -- one read --------------------------------------------------------------------------
    def _snapshot(self) -> _Snapshot:
        header = self._header()
        creator = header.get("creator")
        ratings = [RubricTrait.from_rating(r) for r in header.get("rating") or []]
        return _Snapshot(
            name=header.get("name") or "",
            description=header.get("description") or "",
            version=header.get("version") or "0.1.0",
            creator=str(creator.get("name")) if isinstance(creator, dict) else str(creator or "Unknown"),
            created_at=header.get("dateCreated"),
            modified_at=header.get("dateModified"),
            global_rubric=grouped_rubric(ratings),
            questions=self.question_views(),
        )


def _summary(snap: _Snapshot) -> dict[str, Any]:
    rubric = snap.global_rubric
    return {
        "name": snap.name,
        "version": snap.version,
        "creator": snap.creator,
        "created_at": snap.created_at,
        "modified_at": snap.modified_at,
        "question_count": len(snap.questions),
        "finished_count": snap.finished_count,
        "has_template_count": sum(1 for q in snap.questions if q.has_template),
        "has_rubric_count": sum(1 for q in snap.questions if grouped_rubric(q.question_rubric)),
        "progress_percentage": snap.progress,
        "is_complete": snap.is_complete,
        "has_global_rubric": rubric is not None,
        # Karenina counts the LLM traits only here.
        "global_rubric_traits": len(rubric["llm_traits"]) if rubric else 0,
    }


def _statistics(snap: _Snapshot) -> dict[str, Any]:
    templates = [q.answer_template or "" for q in snap.questions if q.has_template]
    average = int(sum(len(t) for t in templates) / len(templates)) if templates else 0
    return {
        **_summary(snap),
        "avg_template_length": round(average, 1),
        "min_template_length": min(len(t) for t in templates) if templates else 0,
        "max_template_length": max(len(t) for t in templates) if templates else 0,
        "questions_with_custom_metadata": sum(1 for q in snap.questions if q.custom_metadata or q.author or q.sources),
    }


def _readiness(snap: _Snapshot) -> dict[str, Any]:
    missing = [q.id for q in snap.questions if not q.has_template]
    unfinished = [q.id for q in snap.questions if not q.finished]
    template_errors = _template_errors(snap)
    rubric_errors = _rubric_errors(snap)
    has_questions = bool(snap.questions)
    ready = has_questions and not missing and not unfinished and not template_errors and not rubric_errors
    return {
        "ready_for_verification": ready,
        "has_questions": has_questions,
        "all_have_templates": not missing,
        "all_finished": not unfinished,
        "templates_valid": not template_errors,
        "rubrics_valid": not rubric_errors,
        "missing_templates_count": len(missing),
        "unfinished_count": float(len(unfinished)),  # a float in Karenina
        "template_errors_count": len(template_errors),
        "rubric_errors_count": len(rubric_errors),
        "missing_templates": missing,
        "unfinished_questions": unfinished,
        "template_errors": template_errors,
        "rubric_errors": rubric_errors,
    }


def _template_errors(snap: _Snapshot) -> list[dict[str, str]]:
    """Karenina's validate_templates: each template must parse (``ast.parse``, not run)."""
    errors = []
    for q in snap.questions:
        if not q.answer_template:
            continue
        try:
            ast.parse(q.answer_template)
        except SyntaxError as e:
            errors.append({"question_id": str(q.id), "error": f"Syntax error: {e.msg} at line {e.lineno}"})
        except (ValueError, RecursionError, MemoryError) as e:
            errors.append({"question_id": str(q.id), "error": f"Parse error: {e}"})
    return errors


def _rubric_errors(snap: _Snapshot) -> list[dict[str, str]]:
    """Karenina's validate_rubrics: traits with their required fields."""
    errors: list[dict[str, str]] = []

    def add(source: str, error: str) -> None:
        errors.append({"source": source, "error": error})

    rubric = snap.global_rubric or {}
    for t in rubric.get("llm_traits", []):
        if not t.name or not t.description:
            add(t.name or "global", "Global LLM rubric trait missing name or description")
        if t.kind == "score" and (t.min_score is None or t.max_score is None):
            add(t.name or "global", "Score trait missing min/max scores")
    for t in rubric.get("regex_traits", []):
        if not t.name or not t.description:
            add(t.name or "global", "Global regex rubric trait missing name or description")
        if not t.settings.get("pattern"):
            add(t.name or "global", "Regex trait missing pattern")
    for t in rubric.get("callable_traits", []):
        if not t.name or not t.description:
            add(t.name or "global", "Global callable rubric trait missing name or description")
    for t in rubric.get("metric_traits", []):
        if not t.name or not t.description:
            add(t.name or "global", "Global metric rubric trait missing name or description")
        if not t.settings.get("metrics"):
            add(t.name or "global", "Metric trait has no metrics defined")
    for q in snap.questions:
        own = grouped_rubric(q.question_rubric) or {}
        for t in (t for traits in own.values() for t in traits):
            source = f"question:{q.id}"
            if not t.name or not t.description:
                add(source, "Rubric trait missing name or description")
            if t.trait_type == "llm" and t.kind == "score" and (t.min_score is None or t.max_score is None):
                add(source, f"Score trait '{t.name}' missing min/max scores")
            if t.trait_type == "regex" and not t.settings.get("pattern"):
                add(source, f"Regex trait '{t.name}' missing pattern")
            if t.trait_type == "metric" and not t.settings.get("metrics"):
                add(source, f"Metric trait '{t.name}' has no metrics defined")
    return errors


def _recommendations(snap: _Snapshot, readiness: dict[str, Any]) -> list[str]:
    out = []
    if not readiness["has_questions"]:
        out.append("Add questions to the benchmark")
    if readiness["missing_templates_count"] > 0:
        out.append(f"Add templates to {readiness['missing_templates_count']} questions")
    if readiness["unfinished_count"] > 0:
        out.append(f"Mark {readiness['unfinished_count']} questions as finished")  # "2.0": a float there
    if not readiness["templates_valid"]:
        out.append("Fix template syntax errors")
    if not readiness["rubrics_valid"]:
        out.append("Fix rubric configuration issues")
    if len(snap.questions) < 5:
        out.append("Consider adding more questions for a robust benchmark")
    if not snap.global_rubric:
        out.append("Consider adding a global rubric for consistent evaluation")
    return out
