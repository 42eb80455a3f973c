"""The Question view: one DataFeedItem and its Question, Answer and template, as a value.

Field names are the keys of the dict Karenina's ``Benchmark.get_question`` returns, and the model
answers ``q["question"]`` as well as ``q.question``, so code written against Karenina reads it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
        """The dict Karenina's ``get_question`` returns (rubric traits as dicts)."""
        out = self.model_dump(exclude={"iri"})
        return out


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
