"""Karenina's template members of ``Benchmark`` that need no model: set, update, copy and apply
templates, list the finished ones, validate them, Karenina's generated-templates file, and the
history of GEPA optimisation runs (``optimize`` itself is not available here: see its docstring).

Every change is written to the graph through the core's item diff, as the rest of the API does.
The members that call models (template generation, verification runs) are in the runner room
(``karenina_rdf.runner._members``), which builds on this handle: the authoring room never
imports the runner.
"""

from __future__ import annotations

import ast
import datetime as dt
import inspect
import json
import sqlite3
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import FeatureUnavailableError, InvalidTypeError, InvalidValueError, QuestionNotFoundError
from karenina_rdf.checkpoint import is_default_template, template_name
from karenina_rdf.rdf import ordered_items, owning_question, question_iri
from karenina_rdf.validation import TEMPLATE_DEFINES_ANSWER, TEMPLATE_PARSES, template_problems

from ._core import BenchmarkCore
from ._question import Question, question_from_item


class FinishedTemplate(BaseModel):
    """Karenina's ``FinishedTemplate``: a finished question as verification takes it."""

    model_config = ConfigDict(frozen=True)

    question_id: str
    question_text: str
    question_preview: str
    raw_answer: str | None = None
    template_code: str
    last_modified: str
    finished: bool = True
    question_rubric: dict[str, Any] | None = None
    question_dynamic_rubric: dict[str, Any] | None = None
    keywords: list[str] | None = None
    few_shot_examples: list[dict[str, str]] | None = None
    workspace_path: str | None = None


class OptimizationRun(BaseModel):
    """One row of Karenina's GEPA optimisation tracker (``OptimizationRun``, the same fields)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    timestamp: dt.datetime
    benchmark_name: str
    targets: list[str]
    seed_prompts: dict[str, str]
    optimized_prompts: dict[str, str]
    train_score: float
    val_score: float
    test_score: float | None
    improvement: float
    reflection_model: str
    metric_calls: int
    best_generation: int
    total_generations: int
    model_scores: dict[str, float] | None = None


class TemplateMembers(BenchmarkCore):
    """Answer templates, their generation, verification runs and optimisation history."""

    # -- reading -------------------------------------------------------------------------
    def _question_value(self, question_id: str) -> Question:
        item = self._item_json(question_id)
        item.setdefault("@id", question_id)
        return question_from_item(item, question_iri(self.iri, question_id))

    def _template_ids(self) -> list[str]:
        items = ordered_items(self.store.oxigraph, self._graph, self.iri)
        return [owned[0] for i in items if (owned := owning_question(self.iri, i))]

    # -- templates -----------------------------------------------------------------------
    def add_answer_template(self, question_id: str, template_code: str | type) -> None:
        """Set a question's template (Karenina's checks first: the code parses and defines one
        ``BaseAnswer`` subclass, by any name; then the question must exist)."""
        code = template_code_of(template_code)
        check_template(code)

        def change(q: dict[str, Any]) -> None:
            part = q.get("hasPart") or {
                "@type": "SoftwareSourceCode",
                "name": template_name(q["text"]),
                "programmingLanguage": "Python",
            }
            part["text"] = code
            q["hasPart"] = part

        self._edit_question(question_id, change)

    def has_template(self, question_id: str) -> bool:
        try:
            return self._question_value(question_id).has_template
        except QuestionNotFoundError:
            return False

    def get_template(self, question_id: str) -> str:
        q = self._question_value(question_id)
        if not q.answer_template or is_default_template(q.answer_template, q.question):
            raise InvalidValueError(f"Question {question_id} has no template")
        return q.answer_template

    def update_template(self, question_id: str, template_code: str | type) -> None:
        """Karenina's alias of ``add_answer_template``."""
        self.add_answer_template(question_id, template_code)

    def copy_template(self, from_id: str, to_id: str) -> None:
        """Copy ``from_id``'s template to ``to_id``; ValueError when the source has none."""
        self.add_answer_template(to_id, self.get_template(from_id))

    def get_finished_templates(self, question_ids: set[str] | None = None) -> list[FinishedTemplate]:
        """The finished questions (of ``question_ids``, when given) as verification takes them;
        Karenina's default template counts."""
        out = []
        for qid in self._template_ids():
            if question_ids is not None and qid not in question_ids:
                continue
            q = self._question_value(qid)
            if not q.finished:
                continue
            text = q.question
            out.append(
                FinishedTemplate(
                    question_id=qid,
                    question_text=text,
                    question_preview=text[:100] + "..." if len(text) > 100 else text,
                    raw_answer=q.raw_answer,
                    template_code=q.answer_template or "",
                    last_modified=q.date_modified or dt.datetime.now().isoformat(),
                    question_rubric=_rubric_dict(q),
                    keywords=q.keywords,
                    few_shot_examples=q.few_shot_examples,
                    workspace_path=q.workspace_path,
                )
            )
        return out

    def apply_global_template(self, template_code: str) -> list[str]:
        """Give ``template_code`` to every question without a template of its own; their ids."""
        updated = []
        for qid in self._template_ids():
            if not self.has_template(qid):
                self.add_answer_template(qid, template_code)
                updated.append(qid)
        return updated

    def validate_templates(self) -> tuple[bool, list[dict[str, str]]]:
        """Karenina's check: every template (default ones included) parses as Python."""
        errors = []
        for qid in self._template_ids():
            code = self._question_value(qid).answer_template
            if not code:
                continue
            try:
                ast.parse(code)
            except SyntaxError as e:
                errors.append({"question_id": qid, "error": f"Syntax error: {e.msg} at line {e.lineno}"})
            except Exception as e:  # ValueError for a NUL byte, as Karenina reports it
                errors.append({"question_id": qid, "error": f"Parse error: {e}"})
        return not errors, errors

    def _templates_by_id(self) -> dict[str, str]:
        return {qid: self.get_template(qid) for qid in self._template_ids() if self.has_template(qid)}

    def _write_backup(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.partial")
        try:
            tmp.write_text(json.dumps(self._templates_by_id(), indent=2), encoding="utf-8")
            tmp.replace(path)
        except OSError:  # as Karenina: a backup that cannot be written does not stop generation
            tmp.unlink(missing_ok=True)

    def _restore_backup(self, path: Path) -> int:
        try:
            blocks = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        restored = 0
        known = self._template_id_set()
        for qid, code in blocks.items() if isinstance(blocks, dict) else ():
            if qid not in known or self.has_template(qid):
                continue
            try:
                self.add_answer_template(qid, code)
                restored += 1
            except (InvalidValueError, QuestionNotFoundError):
                continue
        return restored

    def export_generated_templates(self, file_path: Path) -> None:
        """Write Karenina's generated-templates file: ``{question id: template code}`` for every
        question with a template of its own, as ``json.dump(..., indent=2)`` writes it."""
        with Path(file_path).open("w") as f:
            json.dump(self._templates_by_id(), f, indent=2)

    def import_generated_templates(self, file_path: Path, force_overwrite: bool = False) -> dict[str, bool]:
        """Read a generated-templates file; per question id, whether its template was set (False
        for an unknown question, or one with a template unless ``force_overwrite``). Every block
        is checked first, as Karenina loads them all before setting any."""
        path = Path(file_path)
        try:
            blocks = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InvalidValueError(f"{path}: cannot read the templates file ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise InvalidValueError(f"{path}: not JSON ({exc})") from None
        if not isinstance(blocks, dict) or not all(isinstance(v, str) for v in blocks.values()):
            raise InvalidValueError(f"{path}: a generated-templates file maps question ids to template code")
        for qid, code in blocks.items():
            try:
                check_template(code)
            except InvalidValueError as exc:
                raise InvalidValueError(f"{path}: question {qid!r}: {exc}") from None
        known = self._template_id_set()
        results: dict[str, bool] = {}
        for qid, code in blocks.items():
            if qid not in known or (not force_overwrite and self.has_template(qid)):
                results[qid] = False
                continue
            try:
                self.add_answer_template(qid, code)
                results[qid] = True
            except (InvalidValueError, QuestionNotFoundError):
                results[qid] = False
        return results

    def _template_id_set(self) -> set[str]:
        return set(self._template_ids())

    # -- optimisation --------------------------------------------------------------------
    def optimize(
        self,
        targets: list[str],
        config: Any = None,
        train_ratio: float = 0.8,
        val_ratio: float = 0.2,
        test_ratio: float | None = None,
        seed: int | None = None,
        reflection_model: str = "openai/gpt-4o",
        max_metric_calls: int = 150,
        objective_config: Any = None,
        frontier_type: str = "objective",
        seed_prompts: dict[str, str] | None = None,
        tracker_path: Path | str | None = None,
        export_preset_path: Path | str | None = None,
        progress_callback: Callable[[float, str], None] | None = None,
        verbose: bool = False,
    ) -> Any:
        """Not available here: Karenina's GEPA optimisation drives its own verification engine
        with the ``gepa`` package. Raises ``ImportError`` (as Karenina does without ``gepa``);
        run ``optimize`` in Karenina on the exported checkpoint."""
        raise FeatureUnavailableError(
            "optimize needs Karenina's GEPA integration (the gepa package and Karenina's verification "
            "engine), which karenina-rdf does not have: save the benchmark and run Benchmark.optimize "
            "in Karenina"
        )

    def optimization_history(
        self, tracker_path: Path | str = "~/.karenina/optimization_history.db", limit: int = 20
    ) -> list[OptimizationRun]:
        """This benchmark's runs in Karenina's optimisation tracker (a SQLite file), newest first;
        [] when the file does not exist (read only: Karenina would create it)."""
        path = Path(tracker_path).expanduser()
        if not path.exists():
            return []
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                conn.row_factory = sqlite3.Row
                rows = conn.execute(
                    "SELECT * FROM optimization_runs WHERE benchmark_name = ? ORDER BY timestamp DESC LIMIT ?",
                    (self._header().get("name") or "", limit),
                ).fetchall()
        except sqlite3.Error as exc:
            raise InvalidValueError(f"{path}: not a Karenina optimisation tracker ({exc})") from None
        return [_optimization_run(row) for row in rows]


# -- helpers ---------------------------------------------------------------------------------
def template_code_of(template: str | type) -> str:
    """A template's source: the string itself, or a ``BaseAnswer`` subclass's source kept as
    written, class name included (Karenina's resolve_template_code: ``_source_code`` or
    ``get_source_code()`` first, for classes made by exec, then ``inspect.getsource``)."""
    if isinstance(template, str):
        return template
    if inspect.isclass(template):
        if not any(c.__name__ == "BaseAnswer" for c in template.__mro__[1:]):
            raise InvalidTypeError(f"Template class must inherit from BaseAnswer, got {template.__name__}")
        getter = getattr(template, "get_source_code", None)
        source = getter() if callable(getter) else getattr(template, "_source_code", None)
        if not isinstance(source, str):
            try:
                source = inspect.getsource(template)
            except (OSError, TypeError) as exc:
                raise InvalidValueError(
                    f"Could not extract source code from class {template.__name__}: {exc}"
                ) from None
        return textwrap.dedent(source)
    raise InvalidTypeError(f"template must be a string or BaseAnswer subclass, got {type(template).__name__}")


def check_template(code: str) -> None:
    """Static check (the code is never run here), as Karenina's add_answer_template refuses: the
    code parses and has exactly one leaf class deriving from BaseAnswer, by any name."""
    for check, message in template_problems(code):
        if check in (TEMPLATE_PARSES, TEMPLATE_DEFINES_ANSWER):
            raise InvalidValueError(f"Invalid template: {message}")


def _rubric_dict(q: Question) -> dict[str, Any] | None:
    """The question's rubric as FinishedTemplate carries it: traits grouped by kind."""
    if not q.question_rubric:
        return None
    out: dict[str, list[dict[str, Any]]] = {
        "llm_traits": [],
        "regex_traits": [],
        "callable_traits": [],
        "metric_traits": [],
    }
    for trait in q.question_rubric:
        out.setdefault(f"{trait.trait_type}_traits", []).append(trait.model_dump(mode="json"))
    return out


def _optimization_run(row: sqlite3.Row) -> OptimizationRun:
    return OptimizationRun(
        run_id=row["run_id"],
        timestamp=dt.datetime.fromisoformat(row["timestamp"]),
        benchmark_name=row["benchmark_name"],
        targets=json.loads(row["targets"]),
        seed_prompts=json.loads(row["seed_prompts"]),
        optimized_prompts=json.loads(row["optimized_prompts"]),
        train_score=row["train_score"],
        val_score=row["val_score"],
        test_score=row["test_score"],
        improvement=row["improvement"],
        reflection_model=row["reflection_model"],
        metric_calls=row["metric_calls"],
        best_generation=row["best_generation"],
        total_generations=row["total_generations"],
        model_scores=json.loads(row["model_scores"]) if row["model_scores"] else None,
    )
