"""Karenina's ``Benchmark.save_to_db`` and ``Benchmark.load_from_db``: a benchmark to and from a
Karenina database (SQLite), the rows Karenina's ``storage.save_benchmark`` writes and
``storage.load_benchmark`` reads (karenina/storage/operations.py), written with the standard
library (``results.KareninaDatabase``).

What Karenina keeps in a database is less than a checkpoint: no question dates, no custom
properties of the benchmark, no dynamic rubric, a trait's Karenina field values (``model_dump``)
instead of its Rating. ``load_from_db`` builds the benchmark as Karenina's does, by creating it and
adding each question, trait and rubric with the authoring API, so the graph holds what Karenina's
loaded benchmark holds.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from karenina_rdf._errors import CheckpointError, InvalidValueError, Problem
from karenina_rdf._store import Store
from karenina_rdf.checkpoint import RubricTrait
from karenina_rdf.rdf import template_id
from karenina_rdf.results import KareninaDatabase, sqlite_path

from ._core import BenchmarkCore
from ._question import Question

# Karenina's trait classes as ``model_dump`` writes them: (field, default) in declaration order.
_FIELDS: dict[str, tuple[tuple[str, Any], ...]] = {
    "llm": (
        ("name", None),
        ("description", None),
        ("summary", None),
        ("kind", "score"),
        ("min_score", 1),
        ("max_score", 5),
        ("classes", None),
        ("deep_judgment_enabled", False),
        ("deep_judgment_excerpt_enabled", True),
        ("deep_judgment_max_excerpts", None),
        ("deep_judgment_fuzzy_match_threshold", None),
        ("deep_judgment_excerpt_retry_attempts", None),
        ("deep_judgment_search_enabled", False),
        ("include_ground_truth", False),
        ("higher_is_better", True),
    ),
    "regex": (
        ("name", None),
        ("description", None),
        ("summary", None),
        ("pattern", ""),
        ("case_sensitive", True),
        ("invert_result", False),
        ("higher_is_better", True),
    ),
    "callable": (
        ("name", None),
        ("description", None),
        ("summary", None),
        ("kind", "boolean"),
        ("callable_code", ""),
        ("min_score", None),
        ("max_score", None),
        ("invert_result", False),
        ("classes", None),
        ("higher_is_better", True),
    ),
    "metric": (
        ("name", None),
        ("description", None),
        ("summary", None),
        ("evaluation_mode", "tp_only"),
        ("metrics", []),
        ("tp_instructions", []),
        ("tn_instructions", []),
        ("repeated_extraction", True),
        ("higher_is_better", None),
    ),
    "agentic": (
        ("name", None),
        ("description", None),
        ("summary", None),
        ("kind", "boolean"),
        ("higher_is_better", True),
        ("min_score", 1),
        ("max_score", 5),
        ("classes", None),
        ("context_mode", "trace_and_workspace"),
        ("materialize_trace", False),
        ("persist_trace", False),
        ("max_turns", 15),
        ("timeout_seconds", 120),
        ("model_override", None),
    ),
}
_LISTS = ("llm_traits", "regex_traits", "callable_traits", "metric_traits", "agentic_traits")


def trait_dict(trait: RubricTrait) -> dict[str, Any]:
    """A trait as Karenina's ``model_dump`` of it (the database keeps that)."""
    s = trait.settings
    values = {
        **s,
        "name": trait.name,
        "description": trait.description,
        "kind": s.get("kind") if isinstance(s.get("kind"), dict) else trait.kind,
        "higher_is_better": trait.higher_is_better,
        "classes": trait.classes,
    }
    if trait.trait_type in ("llm", "callable"):
        # The bounds as Karenina's model holds them (an agentic trait keeps its settings' own).
        values["min_score"], values["max_score"] = trait.min_score, trait.max_score
    return {key: values.get(key, default) for key, default in _FIELDS[trait.trait_type]}


def serialize_rubric(traits: list[RubricTrait] | None) -> dict[str, list[dict[str, Any]]] | None:
    """Karenina's ``serialize_rubric``: every list present, None for no trait."""
    if not traits:
        return None
    return {f"{kind}_traits": [trait_dict(t) for t in traits if t.trait_type == kind] for kind in _FIELDS}


def _kind_of(trait_type: str, data: dict[str, Any]) -> str:
    kind = data.get("kind")
    if trait_type == "regex":
        return "boolean"
    if trait_type == "metric":
        return "metric"
    if isinstance(kind, dict):
        return "template"
    return str(kind or ("score" if trait_type == "llm" else "boolean"))


def trait_from_dict(trait_type: str, data: dict[str, Any]) -> RubricTrait:
    """Karenina's ``deserialize_rubric_from_dict`` for one trait: its read defaults, and an LLM
    trait's score bounds only for a score trait (its constructor derives a literal's)."""
    kind = _kind_of(trait_type, data)
    settings = {k: v for k, v in data.items() if k not in ("name", "description") and v is not None}
    # Karenina's read default: True, but None for a metric trait; a stored None stays None.
    settings["higher_is_better"] = data.get("higher_is_better", None if trait_type == "metric" else True)
    min_score, max_score = data.get("min_score"), data.get("max_score")
    classes = data.get("classes") if isinstance(data.get("classes"), dict) else None
    if trait_type == "llm":
        min_score = data.get("min_score", 1) if kind == "score" else None
        max_score = data.get("max_score", 5) if kind == "score" else None
        if kind == "literal" and classes:
            min_score, max_score = 0, len(classes) - 1
        settings["min_score"], settings["max_score"] = min_score, max_score
        settings = {k: v for k, v in settings.items() if v is not None}
    if trait_type in ("callable", "agentic") and not isinstance(data.get("kind"), dict):
        settings["kind"] = kind
    return RubricTrait(
        name=data["name"],
        trait_type=trait_type,  # type: ignore[arg-type]
        kind=kind,
        description=data.get("description"),
        higher_is_better=settings.get("higher_is_better"),
        min_score=min_score,
        max_score=max_score,
        classes=classes,
        settings=settings,
    )


def rubric_traits(data: Any, where: str) -> list[RubricTrait]:
    if not data:
        return []
    if not isinstance(data, dict):
        raise InvalidValueError(f"{where}: a rubric must be a JSON object of trait lists")
    if "manual_traits" in data:
        # Karenina's loader refuses it the same way.
        raise InvalidValueError(
            f"{where}: Rubric contains unsupported 'manual_traits'. Please migrate your database "
            "using the migration script."
        )
    out: list[RubricTrait] = []
    for key in _LISTS:
        items = data.get(key) or (data.get("traits", []) if key == "llm_traits" else [])
        out.extend(trait_from_dict(key.removesuffix("_traits"), t) for t in items)
    return out


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


class DatabaseMembers(BenchmarkCore):
    """``save_to_db`` and ``load_from_db``, with Karenina's parameters."""

    def save_to_db(self, storage: str, checkpoint_path: Path | None = None) -> Any:
        """Save this benchmark to a Karenina database (``storage``: ``sqlite:///path.db``, or a
        Karenina ``DBConfig``): a benchmark of the same name is updated, questions are added
        (one already there is kept, as Karenina keeps it), each question's template, finished
        flag and rubric are written. Returns the benchmark."""
        bench: Any = self  # the Benchmark this mixin is part of
        path = sqlite_path(storage)
        header = self._header()
        rubric = bench.get_global_rubric()
        serialized = serialize_rubric(rubric.all_traits() if rubric is not None else None)
        metadata = {"global_rubric": serialized} if serialized else {}
        creator = header.get("creator")
        if isinstance(creator, dict):
            creator = creator.get("name")
        with KareninaDatabase(path) as db:
            bid = db.save_benchmark(
                bench.name,
                bench.description,
                bench.version,
                str(creator) if creator else None,
                str(checkpoint_path) if checkpoint_path else None,
                metadata,
            )
            for q in self.question_views():
                qid = str(q.id)  # a stored question always has its id
                template = q.answer_template or ""
                db.add_question(
                    qid,
                    q.question,
                    q.raw_answer,
                    answer_notes=q.answer_notes,
                    keywords=q.keywords,
                    author=q.author,
                    sources=q.sources,
                    custom_metadata=q.custom_metadata,
                    few_shot_examples=q.few_shot_examples,
                )
                db.link_question(
                    bid,
                    qid,
                    template_id(template),
                    template,
                    bool(q.finished),
                    q.keywords,
                    serialize_rubric(q.question_rubric),
                )
            db.commit()
        return self

    @classmethod
    def load_from_db(cls, benchmark_name: str, storage: str, *, store: Store) -> Any:
        """Load a benchmark from a Karenina database into ``store`` (a new benchmark, as
        Karenina's ``load_benchmark`` builds a new one): its questions in the order they were
        added, with their templates, finished flags and rubrics, and its global rubric."""
        path = sqlite_path(storage)
        label = str(path)
        if not path.is_file():
            # Karenina would create an empty database and then not find the benchmark.
            raise InvalidValueError(f"Benchmark '{benchmark_name}' not found in database ({label} does not exist)")
        try:
            db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise CheckpointError([Problem(f"cannot open the SQLite database: {exc}", label)]) from None
        try:
            found = db.execute(
                "SELECT id, name, description, version, creator, metadata_json FROM benchmarks WHERE name = ?",
                (benchmark_name,),
            ).fetchone()
            if found is None:
                raise InvalidValueError(f"Benchmark '{benchmark_name}' not found in database")
            bid, name, description, version, creator, meta = found
            links = db.execute(
                "SELECT bq.question_id, bq.answer_template, bq.finished, bq.keywords, bq.question_rubric, "
                "q.question_text, q.raw_answer, q.keywords, q.few_shot_examples, q.answer_notes, q.author, "
                "q.sources, q.custom_metadata FROM benchmark_questions bq JOIN questions q ON q.id = bq.question_id "
                "WHERE bq.benchmark_id = ? ORDER BY bq.created_at, bq.id",
                (bid,),
            ).fetchall()
        except sqlite3.Error as exc:
            raise CheckpointError([Problem(f"not a Karenina database: {exc}", label)]) from None
        finally:
            db.close()
        factory: Any = cls
        bench = factory.create(
            name=name, description=description or "", version=version, creator=creator or "Unknown", store=store
        )
        for qid, template, finished, bq_kw, q_rubric, text, raw, q_kw, shots, notes, author, sources, custom in links:
            keywords = [k for k in (_json(bq_kw) or _json(q_kw) or []) if k is not None]
            question = Question(
                question=text,
                raw_answer=raw,
                keywords=keywords,
                few_shot_examples=_json(shots),
                answer_notes=notes,
            )
            bench.add_question(
                question,
                question_id=qid,
                answer_template=template or None,
                finished=bool(finished),
                author=_json(author),
                sources=_json(sources),
                custom_metadata=_json(custom),
                few_shot_examples=_json(shots),
            )
            # Set whole, as Karenina's loader does: a trait re-read from the graph would come
            # back with its class's defaults (an LLM trait's score bounds), which it then writes.
            traits = rubric_traits(_json(q_rubric), f"Question {qid}")
            if traits:
                bench.set_question_rubric(qid, traits)
        meta = _json(meta)
        if isinstance(meta, dict) and meta.get("global_rubric"):
            traits = rubric_traits(meta["global_rubric"], "global rubric")
            if traits:
                bench.set_global_rubric(traits)
        return bench
