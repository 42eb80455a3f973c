"""``Benchmark``: a live handle on one stored benchmark, with Karenina's authoring API.

Nothing is cached: every read goes to the graph and every change is one SPARQL update on it.
A change is expressed as the checkpoint JSON Karenina would hold after it, mapped with the
importer's own rules and applied as a diff, so the authoring API and import cannot disagree.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import DuplicateQuestionError, InvalidTypeError, InvalidValueError
from karenina_rdf._store import Store
from karenina_rdf.checkpoint import (
    CANONICAL_CONTEXT,
    RubricTrait,
    default_template,
    template_name,
)
from karenina_rdf.rdf import (
    DATA_FEED_ELEMENT,
    KAR,
    count_items,
    diff_update,
    generate_question_id,
    index_triples,
    shadowed_items,
    solutions,
)

from ._core import _NOT_GIVEN, BenchmarkCore, _dumps, _now, _pv, _set_pv, _StoredIds
from ._database import DatabaseMembers
from ._question import Question, as_question
from ._questions import QuestionMembers
from ._reports import ReportMembers
from ._rubrics import RubricMembers
from ._scenarios import ScenarioMembers
from ._search import matches, search_hits
from ._templates import TemplateMembers, template_code_of

_MATCH_MODES = ("exact", "contains", "in", "regex")


class BenchmarkInfo(BaseModel):
    """The DataFeed node of a benchmark, as a value (``Benchmark.info()``)."""

    model_config = ConfigDict(frozen=True)

    id: str
    iri: str
    name: str
    description: str
    version: str
    creator: str
    date_created: str | None
    date_modified: str | None
    custom_properties: dict[str, Any]
    global_rubric: list[RubricTrait]
    question_count: int


def benchmark_info(header: dict[str, Any], *, benchmark_id: str, iri: str, question_count: int) -> BenchmarkInfo:
    """A benchmark's header JSON (its checkpoint without the items) as a BenchmarkInfo."""
    ratings = [RubricTrait.from_rating(r) for r in header.get("rating") or []]
    return BenchmarkInfo(
        id=benchmark_id,
        iri=iri,
        name=header.get("name") or "",
        description=header.get("description") or "",
        version=header.get("version") or "0.1.0",
        creator=_creator_name(header.get("creator")),
        date_created=header.get("dateCreated"),
        date_modified=header.get("dateModified"),
        custom_properties=_properties(header),
        global_rubric=[t for t in ratings if not t.dynamic],
        question_count=question_count,
    )


class Benchmark(
    QuestionMembers, ReportMembers, TemplateMembers, RubricMembers, ScenarioMembers, DatabaseMembers, BenchmarkCore
):
    """One benchmark in a :class:`Store`, addressed by its IRI."""

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        name: str,
        description: str = "",
        version: str = "0.1.0",
        creator: str = "Karenina Benchmarking System",
        workspace_root: Path | None = None,
        *,
        store: Store,
    ) -> Benchmark:
        """A new empty benchmark, with the defaults and ``@id`` form Karenina uses;
        ``workspace_root`` is the handle's, not stored (as Karenina does not save it)."""
        if not name:
            raise InvalidValueError("Benchmark must have a name")
        now = _now()
        doc = {
            "@context": CANONICAL_CONTEXT,
            "@type": "DataFeed",
            "@id": f"urn:uuid:karenina-checkpoint-{time.time()}",
            "name": name,
            "description": description or "Benchmark containing questions",
            "version": version,
            "creator": creator,
            "dateCreated": now,
            "dateModified": now,
            "dataFeedElement": [],
            "additionalProperty": [
                {"@type": "PropertyValue", "name": "benchmark_format_version", "value": "3.0.0-jsonld"}
            ],
        }
        bench = cls(store, store.import_checkpoint(doc).iri)
        bench.set_workspace_root(workspace_root)
        return bench

    @classmethod
    def load(cls, path: str | Path, workspace_root: Path | None = None, *, store: Store) -> Benchmark:
        """Import a checkpoint file into ``store`` and return its handle (``workspace_root`` as
        in ``create``)."""
        bench = cls(store, store.import_checkpoint(path).iri)
        bench.set_workspace_root(workspace_root)
        return bench

    def save(self, path: str | Path) -> Path:
        """Write the benchmark as a Karenina checkpoint (suffix rules of Karenina's ``save``)."""
        target = Path(path)
        if target.suffix not in (".jsonld", ".json"):
            target = target.with_suffix(".jsonld")
        self._set_header(dateModified=_now())
        self.store.save(self.iri, target)
        return target

    def to_checkpoint(self) -> dict[str, Any]:
        return self.store.export_checkpoint(self.iri)

    # -- metadata --------------------------------------------------------------------------
    def info(self) -> BenchmarkInfo:
        """The benchmark's own data in one read of its DataFeed node."""
        return benchmark_info(self._header(), benchmark_id=self.id, iri=self.iri, question_count=len(self))

    @property
    def name(self) -> str:
        return str(self._header_value("name") or "")

    @name.setter
    def name(self, value: str) -> None:
        if not value:
            raise InvalidValueError("Benchmark must have a name")
        self._set_header(name=value, dateModified=_now())

    @property
    def description(self) -> str:
        return str(self._header_value("description") or "")

    @description.setter
    def description(self, value: str) -> None:
        self._set_header(description=value, dateModified=_now())

    @property
    def version(self) -> str:
        return str(self._header_value("version") or "0.1.0")

    @version.setter
    def version(self, value: str) -> None:
        self._set_header(version=value, dateModified=_now())

    @property
    def creator(self) -> str:
        return _creator_name(self._header_value("creator"))

    @property
    def created_at(self) -> str:
        return str(self._header_value("dateCreated"))

    @property
    def modified_at(self) -> str:
        return str(self._header_value("dateModified"))

    def get_custom_property(self, name: str) -> Any:
        for pv in self._header().get("additionalProperty") or []:
            if pv.get("name") == name:
                return pv.get("value")
        return None

    def get_all_custom_properties(self) -> dict[str, Any]:
        return _properties(self._header())

    def set_custom_property(self, name: str, value: Any) -> None:
        header = self._header()
        pvs = list(header.get("additionalProperty") or [])
        for pv in pvs:
            if pv.get("name") == name:
                pv["value"] = value
                break
        else:
            pvs.append({"@type": "PropertyValue", "name": name, "value": value})
        header.update(additionalProperty=pvs, dateModified=_now())
        self._apply(self._header_update(header))

    def set_multiple_custom_properties(self, properties: dict[str, Any]) -> None:
        for name, value in properties.items():
            self.set_custom_property(name, value)

    def remove_custom_property(self, name: str) -> bool:
        header = self._header()
        pvs = list(header.get("additionalProperty") or [])
        for i, pv in enumerate(pvs):
            if pv.get("name") == name:
                del pvs[i]
                header.update(additionalProperty=pvs, dateModified=_now())
                self._apply(self._header_update(header))
                return True
        return False

    # -- questions -------------------------------------------------------------------------
    def get_question_ids(self) -> list[str]:
        return self._question_ids()

    def get_question(self, question_id: str) -> dict[str, Any]:
        """The question as Karenina returns it: a dict of its fields, without ``finished``
        (``question_view`` gives the typed value, ``get_question_metadata`` the flag)."""
        return self.question_view(question_id).to_dict()

    def get_all_questions(self, ids_only: bool = False) -> list[Any]:
        """Question ids, or the questions as dicts (``get_question``'s), in order."""
        return self.get_question_ids() if ids_only else [q.to_dict() for q in self.question_views()]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.get_all_questions())

    def __len__(self) -> int:
        return count_items(self.store.oxigraph, self._graph, self.iri)

    def __contains__(self, question_id: object) -> bool:
        return question_id in _StoredIds(self)

    @property
    def question_count(self) -> int:
        return len(self)

    def add_question(
        self,
        question: str | dict[str, Any] | Question,
        raw_answer: str | None = None,
        answer_template: str | type | None = None,
        question_id: str | None = None,
        finished: bool = _NOT_GIVEN,
        author: dict[str, Any] | None = None,
        sources: list[dict[str, Any]] | None = None,
        custom_metadata: dict[str, Any] | None = None,
        few_shot_examples: list[dict[str, str]] | None = None,
        answer_notes: str | None = None,
    ) -> str:
        """Add a question as Karenina does; returns its id (spec §7.1, collision suffixes included)."""
        if isinstance(question, dict):
            if "question" not in question:
                raise InvalidValueError(
                    "Dict input must contain a 'question' key. Expected keys: 'question', 'raw_answer', and "
                    "optionally 'answer_template', 'question_id', 'finished', 'author', 'sources', "
                    "'custom_metadata', 'few_shot_examples', 'answer_notes'."
                )
            d = question
            return self.add_question(
                d["question"],
                d.get("raw_answer", raw_answer),
                d.get("answer_template", answer_template),
                d.get("question_id", question_id),
                d.get("finished", finished),
                d.get("author", author),
                d.get("sources", sources),
                d.get("custom_metadata", custom_metadata),
                d.get("few_shot_examples", few_shot_examples),
                d.get("answer_notes", answer_notes),
            )
        keywords = workspace_path = None
        obj = as_question(question)  # ours, Karenina's Question, or one with its attributes
        if obj is not None:
            # Karenina takes these from the object unless given; not its template or rubric.
            text, answer = obj.question, obj.raw_answer
            question_id = question_id or obj.md5_id
            keywords = obj.keywords or None
            few_shot_examples = few_shot_examples if few_shot_examples is not None else obj.few_shot_examples
            answer_notes = answer_notes if answer_notes is not None else obj.answer_notes
            author = author if author is not None else obj.author
            sources = sources if sources is not None else obj.sources
            custom_metadata = custom_metadata if custom_metadata is not None else obj.custom_metadata
            workspace_path = obj.workspace_path
        elif isinstance(question, str):
            if raw_answer is None:
                raise InvalidValueError("raw_answer is required when question is a string")
            text, answer = question, raw_answer
        else:
            raise InvalidTypeError(f"question must be a string, dict, or Question object, got {type(question)}")
        if not text:
            raise InvalidValueError("question text must not be empty")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidValueError("question text holds an unpaired UTF-16 surrogate, which is not text") from None
        if self._header().get("hasPart"):
            raise InvalidValueError(
                "Cannot add standalone questions to a scenario benchmark. "
                "Scenarios and standalone questions cannot coexist in the same benchmark."
            )
        code = template_code_of(answer_template) if answer_template is not None else default_template(text)
        existing = _StoredIds(self)
        if question_id is None:
            question_id = generate_question_id(text, existing)
        elif question_id in existing:
            raise DuplicateQuestionError(f"Question with ID {question_id} already exists")
        if finished is _NOT_GIVEN:
            finished = True  # Karenina's programmatic default: ready for verification
        props = [_pv("finished", bool(finished))]
        if author:
            props.append(_pv("author", _dumps(author)))
        if sources:
            props.append(_pv("sources", _dumps(sources)))
        for key, value in (custom_metadata or {}).items():
            props.append(_pv(f"custom_{key}", value))
        if few_shot_examples:
            props.append(_pv("few_shot_examples", _dumps(few_shot_examples)))
        if answer_notes:
            props.append(_pv("answer_notes", answer_notes))
        if workspace_path:
            props.append(_pv("workspace_path", workspace_path))
        now = _now()
        q: dict[str, Any] = {
            "@type": "Question",
            "text": text,
            "acceptedAnswer": {"@type": "Answer", "text": answer},
            "hasPart": {
                "@type": "SoftwareSourceCode",
                "name": template_name(text),
                "text": code,
                "programmingLanguage": "Python",
            },
            "additionalProperty": props,
        }
        if keywords:
            q["keywords"] = list(keywords)
        item = {"@type": "DataFeedItem", "@id": question_id, "dateCreated": now, "dateModified": now, "item": q}
        self._write_item(question_id, item, self._next_position(), None)
        return question_id

    def remove_question(self, question_id: str) -> bool:
        index = self._item_index(question_id)
        if index is None:
            return False
        pos = index[self._item_iri(question_id)].get(KAR.position)
        position = int(pos[0].value) if pos else 0
        old = index_triples(index)
        old.add((ox.NamedNode(self.iri), ox.NamedNode(DATA_FEED_ELEMENT), ox.NamedNode(self._item_iri(question_id))))
        graph = self._graph
        shadows = shadowed_items(self.store.oxigraph, graph, self.iri)
        if shadows:
            self._apply(diff_update(graph, old, set()), self._remove_shadowed(question_id, shadows), self._touch())
            return True
        # Later items move up one, so positions stay 0..n-1, as a re-import would number them.
        renumber = (
            f"DELETE {{ GRAPH {graph} {{ ?i {KAR.position.nt} ?p }} }} "
            f"INSERT {{ GRAPH {graph} {{ ?i {KAR.position.nt} ?q }} }} "
            f"WHERE {{ GRAPH {graph} {{ <{self.iri}> <{DATA_FEED_ELEMENT}> ?i . ?i {KAR.position.nt} ?p "
            f"FILTER(?p > {position}) BIND(?p - 1 AS ?q) }} }}"
        )
        self._apply(diff_update(graph, old, set()), renumber, self._touch())
        return True

    def _remove_shadowed(self, question_id: str, shadows: list[tuple[int, str, str, str]]) -> str:
        """With the question, the items it shadows go (Karenina's remove_question drops every
        item with the id from its file); items and shadowed items are numbered 0..n-1 again."""
        graph, position = self._graph, KAR.position.nt
        gone = {self._item_iri(question_id)} | {node for _, node, qid, _ in shadows if qid == question_id}
        rows = self.store.oxigraph.query(
            f"SELECT ?n ?p WHERE {{ {{ <{self.iri}> <{DATA_FEED_ELEMENT}> ?n }} UNION "
            f"{{ <{self.iri}> {KAR.shadowedItem.nt} ?n }} ?n {position} ?p }}",
            default_graph=graph,
        )
        kept = sorted((int(r["p"].value), r["n"].value) for r in solutions(rows) if r["n"].value not in gone)
        delete = [f"<{self.iri}> {KAR.shadowedItem.nt} <{n}>" for _, n, q, _ in shadows if q == question_id]
        insert = []
        for new, (old, node) in enumerate(kept):
            if new != old:
                delete.append(f"<{node}> {position} {old}")
                insert.append(f"<{node}> {position} {new}")
        drop = " ".join(f"<{n}> ?p{i} ?o{i} ." for i, n in enumerate(sorted(gone - {self._item_iri(question_id)})))
        updates = []
        if drop:
            updates.append(f"DELETE WHERE {{ GRAPH {graph} {{ {drop} }} }}")
        if delete:
            updates.append(f"DELETE DATA {{ GRAPH {graph} {{ {' . '.join(delete)} }} }}")
        if insert:
            updates.append(f"INSERT DATA {{ GRAPH {graph} {{ {' . '.join(insert)} }} }}")
        return " ;\n".join(updates)

    def update_question_metadata(self, question_id: str, **metadata: Any) -> None:
        """Karenina's semantics: author/sources written raw, custom keys upserted."""

        def change(q: dict[str, Any]) -> None:
            if "question" in metadata:
                q["text"] = metadata["question"]
            if "raw_answer" in metadata:
                q.setdefault("acceptedAnswer", {"@type": "Answer"})["text"] = metadata["raw_answer"]
            for key in ("author", "sources"):
                if key in metadata:
                    _set_pv(q, key, metadata[key])
            for key, value in (metadata.get("custom_metadata") or {}).items():
                _set_pv(q, f"custom_{key}", value)

        self._edit_question(question_id, change)

    def get_question_author(self, question_id: str) -> dict[str, Any] | None:
        """The question's author as Karenina keeps it (a dict such as ``{"name": …}``); also
        stored as a schema.org Person, which pages and queries use."""
        author = self.question_view(question_id).author
        return author if isinstance(author, dict) else None

    def set_question_author(self, question_id: str, author: dict[str, Any] | None) -> None:
        self.update_question_metadata(question_id, author=author)

    def get_question_sources(self, question_id: str) -> list[dict[str, Any]] | None:
        """The question's sources as Karenina keeps them (dicts such as ``{"title", "url"}``);
        also stored as schema.org CreativeWorks the question cites."""
        sources = self.question_view(question_id).sources
        return sources if isinstance(sources, list) else None

    def set_question_sources(self, question_id: str, sources: list[dict[str, Any]] | None) -> None:
        self.update_question_metadata(question_id, sources=sources)

    def set_question_custom_property(self, question_id: str, name: str, value: Any) -> None:
        self._edit_question(question_id, lambda q: _set_pv(q, f"custom_{name}", value))

    def remove_question_custom_property(self, question_id: str, name: str) -> bool:
        """Remove a question's custom property; False when it has none of that name."""
        if name not in (self.question_view(question_id).custom_metadata or {}):
            return False

        def change(q: dict[str, Any]) -> None:
            pvs = q.get("additionalProperty") or []
            q["additionalProperty"] = [pv for pv in pvs if pv.get("name") != f"custom_{name}"]

        self._edit_question(question_id, change)
        return True

    def get_question_custom_property(self, question_id: str, name: str) -> Any:
        return (self.question_view(question_id).custom_metadata or {}).get(name)

    def mark_finished(self, question_id: str) -> None:
        if question_id in self:
            self._edit_question(question_id, lambda q: _set_pv(q, "finished", True))

    def mark_unfinished(self, question_id: str) -> None:
        if question_id in self:
            self._edit_question(question_id, lambda q: _set_pv(q, "finished", False))

    def get_finished_questions(self, ids_only: bool = False) -> list[Any]:
        qs = [q for q in self.question_views() if q.finished]
        return [q.id for q in qs] if ids_only else [q.to_dict() for q in qs]

    def get_unfinished_questions(self, ids_only: bool = False) -> list[Any]:
        qs = [q for q in self.question_views() if not q.finished]
        return [q.id for q in qs] if ids_only else [q.to_dict() for q in qs]

    def get_missing_templates(self, ids_only: bool = False) -> list[Any]:
        """Questions without a template of their own (Karenina's default one does not count)."""
        qs = [q for q in self.question_views() if not q.has_template]
        return [q.id for q in qs] if ids_only else [q.to_dict() for q in qs]

    def clear_questions(self) -> int:
        """Remove every question; returns how many there were."""
        ids = self.get_question_ids()
        for question_id in ids:
            self.remove_question(question_id)
        return len(ids)

    def mark_finished_batch(self, question_ids: list[str]) -> None:
        for question_id in question_ids:
            self.mark_finished(question_id)

    def mark_unfinished_batch(self, question_ids: list[str]) -> None:
        for question_id in question_ids:
            self.mark_unfinished(question_id)

    def toggle_finished(self, question_id: str) -> bool:
        """Flip the question's finished flag; returns the new one (Karenina's semantics)."""
        finished = not self.question_view(question_id).finished
        self._edit_question(question_id, lambda q: _set_pv(q, "finished", finished))
        return finished

    @property
    def finished_count(self) -> int:
        return sum(1 for q in self.question_views() if q.finished)

    @property
    def is_empty(self) -> bool:
        return len(self) == 0

    @property
    def is_complete(self) -> bool:
        """Every question has a template (Karenina's default one counts) and is finished."""
        questions = self.question_views()
        return bool(questions) and all(q.answer_template and q.finished for q in questions)

    def get_progress(self) -> float:
        """Finished questions as a percentage (0-100) of all questions; 0.0 when there are none."""
        total = len(self)
        return 0.0 if total == 0 else self.finished_count / total * 100

    # -- filtering -------------------------------------------------------------------------
    def filter_by_metadata(self, field_path: str, value: Any, match_mode: str = "exact") -> list[dict[str, Any]]:
        """Karenina's dot-path filter: ``exact``, ``contains`` (case-insensitive), ``in`` (list
        contains value) or ``regex`` (case-insensitive search); None fields never match."""
        if match_mode not in _MATCH_MODES:  # Karenina finds out at the first field it compares
            raise InvalidValueError(f"Invalid match_mode: {match_mode}. Must be one of {', '.join(_MATCH_MODES)}")
        out = []
        parts = field_path.split(".")
        for q in self.question_views():
            data = q.to_dict()
            # `finished` is not in the dict: Karenina reads it from its registry for this path.
            current: Any = bool(q.finished) if parts == ["finished"] else data
            if parts != ["finished"]:
                for part in parts:
                    current = current.get(part) if isinstance(current, dict) else None
            if current is None:
                continue
            if _matches(current, value, match_mode):
                out.append(data)
        return out

    def search_questions(
        self,
        query: str | list[str],
        match_all: bool = True,
        fields: list[str] | None = None,
        case_sensitive: bool = False,
        regex: bool = False,
    ) -> list[dict[str, Any]]:
        queries = [query] if isinstance(query, str) else list(query)
        if not queries:
            return []
        # The full-text index decides for the fields it holds (authoring/_search.py).
        found = search_hits(self, queries, match_all, fields, case_sensitive, regex)
        if found is not None:
            return [self.get_question(i) for i in found]
        out = []
        for data in self:
            text = " ".join(str(data[f]) for f in fields or ["question"] if data.get(f))
            hits = [matches(text, term, case_sensitive, regex) for term in queries]
            if all(hits) if match_all else any(hits):
                out.append(data)
        return out


def _creator_name(value: Any) -> str:
    """Karenina's ``creator`` getter: a Person's name, the string, or "Unknown"."""
    return str(value.get("name")) if isinstance(value, dict) else str(value or "Unknown")


def _properties(header: dict[str, Any]) -> dict[str, Any]:
    """Karenina's ``get_all_custom_properties``: every benchmark property, system ones included."""
    return {pv["name"]: pv.get("value") for pv in header.get("additionalProperty") or []}


def _matches(field: Any, value: Any, mode: str) -> bool:
    if mode == "exact":
        return bool(field == value)
    if mode == "contains":
        return isinstance(field, str) and isinstance(value, str) and value.lower() in field.lower()
    if mode == "in":
        return isinstance(field, (list, tuple)) and value in field
    if mode == "regex":
        if not (isinstance(field, str) and isinstance(value, str)):
            return False
        try:
            return re.search(value, field, re.IGNORECASE) is not None
        except re.error:
            return False
    raise InvalidValueError(f"Invalid match_mode: {mode}. Must be one of {', '.join(_MATCH_MODES)}")
