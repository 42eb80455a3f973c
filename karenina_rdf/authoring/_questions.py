"""Karenina's question-data members of ``Benchmark``: questions added from objects and in
batches, read back as objects, their metadata and timestamps, filters and counts.

Every answer has Karenina's shape (dicts with its keys, in its order), read from the graph on
each call; Karenina's ``Question`` objects are read by their attributes, never imported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from karenina_rdf._errors import DuplicateQuestionError, InvalidTypeError, InvalidValueError
from karenina_rdf.rdf import md5_hex

from ._core import _NOT_GIVEN, BenchmarkCore, _StoredIds
from ._question import Question, QuestionObject, as_question, question_object


class QuestionMembers(BenchmarkCore):
    """Question data: objects, batches, metadata, filters (Karenina's ``QuestionManager``)."""

    # ``add_question`` lives on Benchmark; the members here call it through ``self``.
    add_question: Callable[..., str]

    # -- adding ----------------------------------------------------------------------------
    def add_question_from_object(self, question_obj: Any, **metadata: Any) -> str:
        """Add a ``Question`` (ours, Karenina's, or any object with its attributes) under the
        MD5 of its text, as Karenina does; ``metadata`` are ``add_question``'s keywords."""
        if as_question(question_obj) is None:
            raise InvalidValueError("question_obj must be a Question instance")
        question_id = md5_hex(question_obj.question)
        if question_id in _StoredIds(self):
            raise DuplicateQuestionError(f"Question with ID {question_id} already exists")
        return self.add_question(question=question_obj, question_id=question_id, **metadata)

    def add_questions_batch(
        self,
        questions_data: Sequence[dict[str, Any] | Question | Any],
        finished: bool | object = _NOT_GIVEN,
    ) -> list[str]:
        """Add each dict or ``Question`` in turn (``add_question``); ``finished`` is the flag
        of those that do not set one. A refused one stops the batch, the ones before it stay."""
        return [self.add_question(data, finished=finished) for data in questions_data]

    def add_questions(
        self,
        questions_data: Sequence[dict[str, Any] | Question | Any],
        finished: bool | object = _NOT_GIVEN,
    ) -> list[str]:
        """The same as ``add_questions_batch`` (Karenina's alias)."""
        return self.add_questions_batch(questions_data, finished=finished)

    # -- reading ---------------------------------------------------------------------------
    def get_question_as_object(self, question_id: str) -> QuestionObject:
        """The question as Karenina's ``Question`` (its ``id`` is the MD5 of the text)."""
        return question_object(self.question_view(question_id).to_dict())

    def get_all_questions_as_objects(self) -> list[QuestionObject]:
        return [question_object(q.to_dict()) for q in self.question_views()]

    def get_question_metadata(self, question_id: str) -> dict[str, Any]:
        """Karenina's summary of one question: its data, ``finished``, ``has_template`` (a
        template of its own) and ``has_rubric``."""
        q = self.question_view(question_id)
        data = q.to_dict()
        return {
            "id": data["id"],
            "question": data["question"],
            "raw_answer": data["raw_answer"],
            "date_created": data["date_created"],
            "date_modified": data["date_modified"],
            "finished": bool(q.finished),
            "author": data["author"],
            "sources": data["sources"],
            "custom_metadata": data["custom_metadata"],
            "has_template": q.has_template,
            "has_rubric": bool(data["question_rubric"]),
        }

    def get_question_timestamps(self, question_id: str) -> dict[str, str]:
        """``created``/``modified`` and Karenina's registry pair ``date_added``/
        ``registry_modified``. Karenina keeps the pair in memory beside the checkpoint and never
        saves it; reloaded, it is the item's own dates, which is what the graph holds."""
        q = self.question_view(question_id)
        # None only for an item saved without dates, which Karenina answers None for too.
        times: dict[str, Any] = {
            "created": q.date_created,
            "modified": q.date_modified,
            "date_added": q.date_created,
            "registry_modified": q.date_modified,
        }
        return times

    # -- filtering -------------------------------------------------------------------------
    def filter_questions(
        self,
        finished: bool | None = None,
        has_template: bool | None = None,
        has_rubric: bool | None = None,
        author: str | None = None,
        custom_filter: Any = None,
    ) -> list[dict[str, Any]]:
        """Questions (dicts) matching every criterion given: the finished flag, a template of
        their own, a rubric of their own, the author's name containing ``author`` (any case),
        and ``custom_filter(question_dict)`` true (a filter that raises skips the question)."""
        out = []
        for q in self.question_views():
            data = q.to_dict()
            if finished is not None and bool(q.finished) != finished:
                continue
            if has_template is not None and q.has_template != has_template:
                continue
            if has_rubric is not None and bool(data["question_rubric"]) != has_rubric:
                continue
            if author is not None and author.lower() not in _author_name(data["author"]).lower():
                continue
            if custom_filter is not None:
                try:
                    if not custom_filter(data):
                        continue
                except Exception:  # Karenina's rule: a filter that fails on a question skips it
                    continue
            out.append(data)
        return out

    def get_questions_by_author(self, author: str) -> list[dict[str, Any]]:
        """Questions whose author's name contains ``author`` (any case)."""
        return self.filter_questions(author=author)

    def filter_by_custom_metadata(self, match_all: bool = True, **criteria: Any) -> list[dict[str, Any]]:
        """Questions whose custom metadata equal every criterion (``match_all``) or any; a
        question without custom metadata never matches."""
        out = []
        for data in (q.to_dict() for q in self.question_views()):
            custom = data["custom_metadata"]
            if not isinstance(custom, dict):
                continue
            hits = (custom.get(key) == value for key, value in criteria.items())
            if all(hits) if match_all else any(hits):
                out.append(data)
        return out

    def count_by_field(self, field_path: str, questions: list[dict[str, Any]] | None = None) -> dict[Any, int]:
        """How many questions (all, or those given as dicts) have each value at the dot path
        ``field_path``; a missing field counts as None. ``finished`` is the flag."""
        finished: dict[str, bool] = {}
        if questions is None:
            views = self.question_views()
            questions = [q.to_dict() for q in views]
            finished = {str(q.id): bool(q.finished) for q in views}
        parts = field_path.split(".")
        values = []
        for data in questions:
            if parts == ["finished"]:
                qid = data.get("id", "")
                if qid not in finished:
                    finished[qid] = self._finished_flag(qid)
                values.append(finished[qid])
                continue
            value: Any = data
            for part in parts:
                value = value.get(part) if isinstance(value, dict) else None
            values.append(value)
        try:
            return dict(Counter(values))
        except TypeError:
            raise InvalidTypeError(
                f"cannot count by {field_path!r}: its values are not hashable (lists, dicts)"
            ) from None

    # -- helpers ---------------------------------------------------------------------------
    def _finished_flag(self, question_id: str) -> bool:
        # An id not in the benchmark counts as unfinished, as a missing registry entry does there.
        if question_id not in _StoredIds(self):
            return False
        return bool(self.question_view(question_id).finished)


def _author_name(author: Any) -> str:
    if not author:
        return ""
    if isinstance(author, dict):
        return str(author.get("name", ""))
    # A string author (Karenina reads an author that is not JSON as its raw text), or another.
    return str(author)
