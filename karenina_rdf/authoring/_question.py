"""The Question view: one DataFeedItem and its Question, Answer and template, as a value.

Field names are the keys of the dict Karenina's ``Benchmark.get_question`` returns, and the model
answers ``q["question"]`` as well as ``q.question``, so code written against Karenina reads it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from karenina_rdf.checkpoint import RubricTrait, decode_json_string, finished_value, is_default_template
from karenina_rdf.rdf import md5_hex, template_id


class Answer(BaseModel):
    """The reference answer of a question (a ``schema:Answer``)."""

    model_config = ConfigDict(frozen=True)

    text: str
    iri: str | None = None


class AnswerTemplate(BaseModel):
    """An answer template (a ``schema:SoftwareSourceCode``): Python code, never run here."""

    model_config = ConfigDict(frozen=True)

    code: str
    template_id: str
    is_default: bool
    programming_language: str = "Python"
    iri: str | None = None


class Question(BaseModel):
    """A benchmark question. ``id`` is its id in the benchmark (None before it is added)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None = None
    question: str = Field(min_length=1)
    raw_answer: str = ""
    answer_template: str | None = None
    date_created: str | None = None
    date_modified: str | None = None
    finished: bool | None = None
    author: Any = None
    sources: Any = None
    custom_metadata: dict[str, Any] | None = None
    question_rubric: list[RubricTrait] | None = None
    keywords: list[str] | None = None
    few_shot_examples: Any = None
    answer_notes: str | None = None
    workspace_path: str | None = None
    iri: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_tags(cls, data: Any) -> Any:
        # Karenina's Question turns the legacy `tags` into keywords, dropping None entries.
        if isinstance(data, dict) and "tags" in data:
            data = dict(data)
            tags = data.pop("tags") or []
            data.setdefault("keywords", [t for t in tags if t is not None])
        return data

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None) if key in type(self).model_fields else None
        return default if value is None else value

    @property
    def md5_id(self) -> str:
        """Karenina's ``Question.id``: MD5 of the exact text; links the same question across benchmarks."""
        return md5_hex(self.question)

    @property
    def has_template(self) -> bool:
        """Karenina's rule: a template that is not the default one made from this text."""
        return bool(self.answer_template) and not is_default_template(self.answer_template or "", self.question)

    @property
    def template_id(self) -> str:
        return template_id(self.answer_template or "")

    @property
    def answer(self) -> Answer:
        return Answer(text=self.raw_answer, iri=f"{self.iri}/answer" if self.iri else None)

    @property
    def template(self) -> AnswerTemplate | None:
        """The template, Karenina's default one included (``is_default``); None when there is none."""
        if self.answer_template is None:
            return None
        return AnswerTemplate(
            code=self.answer_template,
            template_id=self.template_id,
            is_default=not self.has_template,
            iri=f"{self.iri}/template" if self.iri else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The dict Karenina's ``get_question`` returns: its question cache entry, key for key
        and in its order. ``finished`` is not in it (Karenina keeps that in a registry beside
        the cache); ``question_rubric`` groups the question's own traits by Karenina's five
        kinds (dynamic ones left out), as ``RubricTrait`` values, or is None."""
        return {
            "id": self.id,
            "question": self.question,
            "raw_answer": self.raw_answer,
            "answer_template": self.answer_template,
            "date_created": self.date_created,
            "date_modified": self.date_modified,
            "author": self.author,
            "sources": self.sources,
            "custom_metadata": dict(self.custom_metadata) if self.custom_metadata else None,
            "question_rubric": grouped_rubric(self.question_rubric),
            "keywords": list(self.keywords) if self.keywords else None,
            "few_shot_examples": self.few_shot_examples,
            "answer_notes": self.answer_notes,
            "workspace_path": self.workspace_path,
        }


_RUBRIC_KEYS = {
    "llm": "llm_traits",
    "regex": "regex_traits",
    "callable": "callable_traits",
    "metric": "metric_traits",
    "agentic": "agentic_traits",
}


def grouped_rubric(traits: list[RubricTrait] | None) -> dict[str, list[RubricTrait]] | None:
    """Traits grouped as Karenina's question cache holds a question rubric (the fields of its
    ``Rubric``); None when there is no trait that is not dynamic."""
    kept = [t for t in traits or [] if not t.dynamic]
    if not kept:
        return None
    return {key: [t for t in kept if t.trait_type == kind] for kind, key in _RUBRIC_KEYS.items()}


class QuestionObject(BaseModel):
    """Karenina's ``Question`` entity, field for field: what ``get_question_as_object`` returns.

    ``id`` is computed, as there: the MD5 of the text (not the question's id in a benchmark,
    which a question made from a text need not have). Accepted wherever Karenina's ``Question``
    is, as is Karenina's own (read by its attributes, never imported).
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    question: str = Field(min_length=1)
    raw_answer: str = Field(min_length=1)
    keywords: list[str] = Field(default_factory=list)
    few_shot_examples: list[dict[str, str]] | None = None
    date_created: str = Field(default_factory=lambda: dt.datetime.now().isoformat())
    date_modified: str = Field(default_factory=lambda: dt.datetime.now().isoformat())
    answer_template: str | None = None
    answer_notes: str | None = None
    author: dict[str, Any] | None = None
    sources: list[dict[str, Any]] | None = None
    custom_metadata: dict[str, Any] | None = None
    question_rubric: dict[str, Any] | None = None
    question_dynamic_rubric: dict[str, Any] | None = None
    workspace_path: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_tags(cls, data: Any) -> Any:
        # As Karenina's: the computed id is dropped on input, legacy `tags` become keywords.
        if isinstance(data, dict):
            data = dict(data)
            data.pop("id", None)
            if "tags" in data:
                tags = data.pop("tags")
                data.setdefault("keywords", [t for t in tags or [] if t is not None])
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        """MD5 of the question text, as Karenina's ``Question.id``."""
        return md5_hex(self.question)


def question_object(data: dict[str, Any]) -> QuestionObject:
    """A question's cache dict as Karenina's ``get_question_as_object`` turns it into a
    ``Question`` (workspace_path is not carried over there either)."""
    return QuestionObject(
        question=data["question"],
        raw_answer=data["raw_answer"],
        keywords=data.get("keywords", []) or [],
        few_shot_examples=data.get("few_shot_examples"),
        date_created=data.get("date_created", ""),
        date_modified=data.get("date_modified", ""),
        answer_template=data.get("answer_template"),
        answer_notes=data.get("answer_notes"),
        author=data.get("author"),
        sources=data.get("sources"),
        custom_metadata=data.get("custom_metadata"),
        question_rubric=data.get("question_rubric"),
    )


def as_question(obj: Any) -> Question | None:
    """Any question object, read by duck typing (ours, Karenina's ``Question``, or another
    with its attributes), as a Question view; None when ``obj`` is not one."""
    if isinstance(obj, Question):
        return obj
    if isinstance(obj, str | dict | bytes) or not isinstance(getattr(obj, "question", None), str):
        return None
    if not hasattr(obj, "raw_answer"):
        return None

    def attr(name: str) -> Any:
        return getattr(obj, name, None)

    return Question(
        question=obj.question,
        raw_answer=attr("raw_answer") or "",
        keywords=list(attr("keywords") or []) or None,
        few_shot_examples=attr("few_shot_examples"),
        answer_notes=attr("answer_notes"),
        author=attr("author"),
        sources=attr("sources"),
        custom_metadata=attr("custom_metadata"),
        workspace_path=attr("workspace_path"),
    )


def question_from_item(item: dict[str, Any], iri: str | None = None) -> Question:
    """Read a DataFeedItem as Karenina's reader does (spec §4)."""
    q = item["item"]
    props: dict[str, Any] = {}
    custom: dict[str, Any] = {}
    for pv in q.get("additionalProperty") or []:
        name = pv.get("name")
        if not isinstance(name, str):
            continue
        value = pv.get("value")
        if name.startswith("custom_"):
            custom[name.replace("custom_", "")] = value
        else:
            props[name] = value
    template = (q.get("hasPart") or {}).get("text")
    rubric = [RubricTrait.from_rating(r) for r in q.get("rating") or []]
    return Question(
        id=item.get("@id"),
        question=q["text"],
        raw_answer=(q.get("acceptedAnswer") or {}).get("text", ""),
        answer_template=template,
        date_created=item.get("dateCreated"),
        date_modified=item.get("dateModified"),
        finished=finished_value(props.get("finished", False)),
        author=decode_json_string(props.get("author")),
        sources=decode_json_string(props.get("sources")),
        custom_metadata=custom or None,
        question_rubric=rubric or None,
        keywords=q.get("keywords") if q.get("keywords") is not None else item.get("keywords"),
        few_shot_examples=decode_json_string(props.get("few_shot_examples")),
        answer_notes=props.get("answer_notes"),
        workspace_path=props.get("workspace_path"),
        iri=iri,
    )
