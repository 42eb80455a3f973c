"""Checkpoint JSON → triples: Karenina's load rules, then the mapping of docs/data-model.md.

The JSON tree is read directly instead of through a JSON-LD processor: Karenina ignores the
``@context`` (eight variants occur, spec §2.3), so the key names, not the context, say what a
value means, and order, number types and JSON-string encodings must survive for export.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from karenina_rdf._errors import CheckpointError, InvalidTypeError, Problem
from karenina_rdf._progress import QUIET_TASK, Task
from karenina_rdf.rdf import (
    KAR,
    RDF,
    SCHEMA,
    TRAIT_TYPES,
    benchmark_iri,
    derived_benchmark_id,
    generate_question_id,
    item_iri,
    md5_hex,
    question_iri,
    template_id,
    trait_iri,
)
from karenina_rdf.rdf import terms as t

from ._json import too_long_integer
from ._properties import map_properties
from ._scenarios import map_scenario
from ._template_defaults import is_default_template
from ._traits import check, normalise_type, settings, trait_class, trait_kind

_TYPE = t.iri(RDF + "type")


def _s(local: str) -> str:
    return t.iri(SCHEMA + local)


class Writer(Protocol):
    def write(self, text: str, /) -> int: ...


class TripleSink:
    """Where mapped triples go: kept in a list, or streamed as N-Triples to a file.

    Streaming keeps a big import's memory flat (docs/performance.md); either way the sink
    hashes what it receives, so the same input gives the same hash. Lines are buffered and
    written in blocks: per-line writes and hash updates were a visible share of import time.
    """

    _BLOCK = 4096

    def __init__(self, stream: Writer | None = None) -> None:
        self.stream = stream
        self.triples: list[t.Triple] = []
        self.count = 0
        self._hash = hashlib.sha256()
        self._lines: list[str] = []

    def append(self, triple: t.Triple) -> None:
        self._lines.append(f"{triple[0]} {triple[1]} {triple[2]} .\n")
        self.count += 1
        if self.stream is None:
            self.triples.append(triple)
        if len(self._lines) >= self._BLOCK:
            self.flush()

    def flush(self) -> None:
        if not self._lines:
            return
        text = "".join(self._lines)
        self._lines.clear()
        self._hash.update(text.encode("utf-8"))  # strict: a lone surrogate is refused here
        if self.stream is not None:
            self.stream.write(text)

    def extend(self, triples: Iterable[t.Triple]) -> None:
        for triple in triples:
            self.append(triple)

    def content_hash(self) -> str:
        self.flush()
        return self._hash.hexdigest()[:16]


@dataclass(frozen=True)
class QuestionText:
    """The texts of one question of a benchmark's items, as the mapper wrote them: what the
    full-text index holds of it (``store._text``), collected while mapping so that an import
    indexes without reading the graph back."""

    question_id: str
    iri: str  # the question node's IRI
    position: int  # the item's place in dataFeedElement
    question: str
    answer: str  # the reference answer's text; "" when there is none
    keywords: tuple[str, ...]  # as written to the graph: distinct, first occurrence first
    template: str  # the answer template's code; "" when there is none


@dataclass
class MappedBenchmark:
    """A checkpoint mapped to triples, not yet stored."""

    benchmark_id: str
    iri: str
    name: str
    version: str | None
    question_ids: list[str]
    sink: TripleSink
    warnings: list[Problem] = field(default_factory=list)
    source: str | None = None

    @property
    def triples(self) -> list[t.Triple]:
        return self.sink.triples

    def content_hash(self) -> str:
        return self.sink.content_hash()


def read_json(data: bytes, source: str) -> Any:
    """Decode a checkpoint's bytes, naming the line of the first fault."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CheckpointError(
            [Problem(f"not UTF-8 text (byte {exc.start}: {exc.reason})", source, line=line)]
        ) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise CheckpointError([Problem("JSON nested too deeply to be a checkpoint", source)]) from None
    except json.JSONDecodeError as exc:
        what = "file ends before the JSON does (truncated?)" if exc.pos >= len(text.rstrip()) else "not valid JSON"
        raise CheckpointError([Problem(f"{what}: {exc.msg} (column {exc.colno})", source, line=exc.lineno)]) from None
    except ValueError:  # json's own refusal of a number Python will not convert
        found = too_long_integer(lambda decoder: decoder.decode(text))
        if found is None:
            raise
        raise CheckpointError([Problem(found[1], source, found[0])]) from None


def read_bytes(path: str | Path) -> bytes:
    if not isinstance(path, str | os.PathLike):
        raise InvalidTypeError(f"a checkpoint file is named by a str or a Path, got {type(path).__name__}")
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CheckpointError([Problem(f"cannot read file: {exc.strerror}", str(path))]) from None


def read_checkpoint(path: str | Path) -> Any:
    """A checkpoint file's JSON document, parsed but not checked (``map_checkpoint`` checks it).
    A file that cannot be read, is not UTF-8 or is not JSON raises :class:`CheckpointError`
    naming the file and the line."""
    return read_json(read_bytes(path), str(path))


class _Mapper:
    def __init__(
        self,
        base_iri: str,
        source: str | None,
        sink: TripleSink,
        keep_id: str | None = None,
        pointers: dict[str, str] | None = None,
        templates: list[tuple[str, str]] | None = None,
        texts: list[QuestionText] | None = None,
    ) -> None:
        self.keep_id = keep_id
        # The texts of every question, for the full-text index of an importing store.
        self.texts = texts
        # (template IRI, code) of every template, for the template checks of a validating import.
        self.templates = templates
        # Node IRI → JSON pointer of the object it came from, for validation reports on files.
        self.pointers = pointers
        self.base_iri = base_iri
        self.source = source
        self.triples = sink
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.qid: str | None = None
        self.progress: Task = QUIET_TASK

    # -- reporting -------------------------------------------------------------------------
    def at(self, node: str, ptr: str) -> None:
        if self.pointers is not None:
            self.pointers[node] = ptr

    def fail(self, ptr: str, message: str, trait: str | None = None) -> None:
        self.problems.append(Problem(message, self.source, ptr, self.qid, trait=trait))

    def warn(self, ptr: str, message: str, trait: str | None = None) -> None:
        self.warnings.append(Problem(message, self.source, ptr, self.qid, trait=trait))

    def add(self, s: str, p: str, o: str) -> None:
        self.triples.append((s, p, o))

    # -- field readers ---------------------------------------------------------------------
    def obj(self, node: Any, ptr: str, what: str, type_name: str | None = None) -> dict[str, Any] | None:
        if not isinstance(node, dict):
            self.fail(ptr, f"{what} must be a JSON object, got {_json_type(node)}")
            return None
        declared = node.get("@type")
        if type_name and declared is not None and declared != type_name:
            self.fail(f"{ptr}/@type", f"{what} must have @type {type_name!r}, got {declared!r}")
            return None
        return node

    def text(self, node: dict[str, Any], key: str, ptr: str, required: bool = False) -> str | None:
        if key not in node:
            if required:
                self.fail(ptr, f"missing required field {key!r}")
            return None
        value = node[key]
        if value is None and not required:
            return None  # Karenina's optional fields take null, and its save drops them
        if not isinstance(value, str):
            self.fail(f"{ptr}/{_esc(key)}", f"{key!r} must be a string, got {_json_type(value)}")
            return None
        return value

    def array(self, node: dict[str, Any], key: str, ptr: str, required: bool = False) -> list[Any] | None:
        if key not in node or (node[key] is None and not required):
            if required:
                self.fail(ptr, f"missing required field {key!r}")
            return None
        value = node[key]
        if not isinstance(value, list):
            self.fail(f"{ptr}/{_esc(key)}", f"{key!r} must be an array, got {_json_type(value)}")
            return None
        return value

    def literal(self, s: str, p: str, node: dict[str, Any], key: str, ptr: str, required: bool = False) -> str | None:
        value = self.text(node, key, ptr, required)
        if value is not None:
            self.add(s, p, t.string(value))
        return value

    def source_id(self, s: str, node: dict[str, Any], ptr: str) -> None:
        value = self.text(node, "@id", ptr)
        if value is not None:
            self.add(s, KAR.sourceId.nt, t.string(value))

    def empty_lists(self, s: str, node: dict[str, Any], keys: tuple[str, ...]) -> None:
        # An empty array and a missing key read the same to Karenina but are written back as found.
        empty = [k for k in keys if node.get(k) == []]
        if empty:
            self.add(s, KAR.emptyLists.nt, t.json_literal(empty))

    # -- nodes -----------------------------------------------------------------------------
    def benchmark(self, doc: Any) -> MappedBenchmark:
        root = self.obj(doc, "", "the checkpoint root (a DataFeed)")
        if root is None:
            raise CheckpointError(self.problems)
        if "format_version" in root and "results" in root:
            self.fail(
                "",
                f"this is a Karenina verification results export "
                f"(format_version {root['format_version']!r}), not a checkpoint",
            )
            raise CheckpointError(self.problems)
        # Karenina's root model accepts `context`/`type`/`id` for `@context`/`@type`/`@id`.
        root = {("@" + k if k in ("context", "type", "id") and "@" + k not in doc else k): v for k, v in root.items()}
        if "@context" not in root:
            self.fail("", "missing required field '@context'")
        elif not isinstance(root["@context"], dict):
            self.fail("/@context", "@context must be a JSON object (Karenina refuses string and array contexts)")
        declared = root.get("@type", "DataFeed")
        if declared != "DataFeed":
            hint = (
                ": this is a 2025-08 'Dataset era' checkpoint (questions under hasPart), which Karenina no longer loads"
                if declared == "Dataset"
                else ""
            )
            self.fail("/@type", f"root @type must be 'DataFeed', got {declared!r}{hint}")
            raise CheckpointError(self.problems)
        name = self.text(root, "name", "", required=True)
        if name == "":
            self.fail("/name", "Benchmark must have a name (empty string)")
        version = self.text(root, "version", "")
        self.text(root, "@id", "")
        bid, b, derived = identity(root, self.base_iri, self.keep_id)
        B = t.iri(b)
        self.at(b, "")
        self.add(B, _TYPE, _s("DataFeed"))
        self.add(B, _s("identifier"), t.string(bid))
        if derived:
            self.add(B, KAR.derivedIdentifier.nt, t.boolean(True))
        if name is not None:
            self.add(B, _s("name"), t.string(name))
        self.literal(B, _s("description"), root, "description", "")
        if version is not None:
            self.add(B, _s("version"), t.string(version))
        self.creator(b, root)
        self.literal(B, _s("dateCreated"), root, "dateCreated", "", required=True)
        self.literal(B, _s("dateModified"), root, "dateModified", "", required=True)
        self.ratings(b, root, "", scope="Global")
        items = self.array(root, "dataFeedElement", "", required=True) or []
        question_ids = self.items(b, items)
        scenarios = self.array(root, "hasPart", "") or []
        if scenarios and items:
            self.fail(
                "/hasPart", "checkpoint contains both questions and scenarios; a benchmark holds one or the other"
            )
        taken: set[str] = set()
        for i, scenario in enumerate(scenarios):
            self.scenario(b, i, scenario, taken)
            self.progress.advance()
        pvs = self.array(root, "additionalProperty", "")
        if pvs is not None:
            self.triples.extend(map_properties(b, "benchmark", pvs, "/additionalProperty", self))
        self.empty_lists(B, root, ("rating", "hasPart", "additionalProperty"))
        if self.problems:
            raise CheckpointError(self.problems)
        self.triples.flush()
        return MappedBenchmark(bid, b, name or "", version, question_ids, self.triples, self.warnings, self.source)

    def creator(self, b: str, root: dict[str, Any]) -> None:
        if "creator" not in root:
            return
        value = root["creator"]
        if isinstance(value, str):
            self.add(t.iri(b), _s("creator"), t.string(value))
            return
        person = self.obj(value, "/creator", "creator (a string or a Person)", "Person")
        if person is None:
            return
        P = t.iri(f"{b}/creator")
        self.at(f"{b}/creator", "/creator")
        self.add(t.iri(b), _s("creator"), P)
        self.add(P, _TYPE, _s("Person"))
        self.literal(P, _s("name"), person, "name", "/creator", required=True)
        self.literal(P, _s("url"), person, "url", "/creator")
        self.literal(P, _s("email"), person, "email", "/creator")

    def items(self, b: str, items: list[Any]) -> list[str]:
        seen: dict[str, int] = {}
        last = _last_occurrences(items)
        for i, node in enumerate(items):
            self.item(b, i, node, seen, last)
            self.progress.advance()
        self.qid = None
        return list(seen)

    def shadowed(self, b: str, i: int, node: dict[str, Any], qid: str, kept: int) -> None:
        """An item whose question id a later item takes again. Karenina keeps both in its file
        and answers with the last one (its question cache is keyed by id), so this one is no
        question here either: it is kept whole, as JSON, to be written back where it was."""
        ptr = f"/dataFeedElement/{i}"
        # Karenina's load still builds it, so its load rules hold: mapped apart, triples dropped.
        scratch = _Mapper(self.base_iri, self.source, TripleSink())
        scratch.item(b, i, node, {}, {})
        self.problems.extend(p for p in scratch.problems if p not in self.problems)
        self.warn(
            f"{ptr}/@id",
            f"question id also used at /dataFeedElement/{kept}, the item Karenina answers with; "
            "this one is kept only to be written back",
        )
        S = t.iri(f"{b}/shadowed/{i}")
        self.at(S[1:-1], ptr)
        self.add(t.iri(b), KAR.shadowedItem.nt, S)
        self.add(S, _TYPE, KAR.ShadowedItem.nt)
        self.add(S, _s("identifier"), t.string(qid))
        self.add(S, KAR.position.nt, t.integer(i))
        self.add(S, KAR.itemJson.nt, t.json_literal(node))

    def item(self, b: str, i: int, node: Any, seen: dict[str, int], last: dict[str, int]) -> None:
        ptr = f"/dataFeedElement/{i}"
        self.qid = None
        item = self.obj(node, ptr, "a dataFeedElement entry (DataFeedItem)", "DataFeedItem")
        if item is None:
            return
        question = None
        if "item" in item:
            question = self.obj(item["item"], f"{ptr}/item", "item (a Question)", "Question")
        else:
            self.fail(ptr, "missing required field 'item'")
        text = question.get("text") if question else None
        qid = self.text(item, "@id", ptr)
        if not qid:  # Karenina: `item.id or generate_question_id(text)`
            qid = generate_question_id(text if isinstance(text, str) else "")
        self.qid = qid
        if last.get(qid, i) > i:
            self.shadowed(b, i, item, qid, last[qid])
            return
        if qid in seen:  # cannot happen once _last_occurrences has seen every id; kept as a guard
            self.fail(f"{ptr}/@id", f"duplicate question id (first used at /dataFeedElement/{seen[qid]})")
            return
        seen[qid] = i
        it, Q = t.iri(item_iri(b, qid)), question_iri(b, qid)
        self.at(it[1:-1], ptr)
        self.at(Q, f"{ptr}/item")
        self.add(t.iri(b), _s("dataFeedElement"), it)
        self.add(it, _TYPE, _s("DataFeedItem"))
        self.add(it, KAR.position.nt, t.integer(i))
        if not item.get("@id"):
            self.add(it, KAR.derivedIdentifier.nt, t.boolean(True))
            if "@id" in item:  # an empty id: Karenina derives the id but writes "" back
                self.add(it, KAR.sourceId.nt, t.string(""))
        self.add(it, _s("item"), t.iri(Q))
        self.literal(it, _s("dateCreated"), item, "dateCreated", ptr, required=True)
        self.literal(it, _s("dateModified"), item, "dateModified", ptr, required=True)
        legacy_keywords = self.keywords(item, ptr)
        if question is not None:
            self.question(b, Q, qid, question, f"{ptr}/item", legacy_keywords, i)

    def keywords(self, node: dict[str, Any], ptr: str) -> list[str] | None:
        words = self.array(node, "keywords", ptr)
        if words is None:
            return None
        bad = [j for j, w in enumerate(words) if not isinstance(w, str)]
        for j in bad:
            self.fail(f"{ptr}/keywords/{j}", "keywords must be strings")
        return None if bad else words

    def question(
        self,
        b: str,
        q: str,
        qid: str,
        node: dict[str, Any],
        ptr: str,
        legacy_keywords: list[str] | None,
        position: int = 0,
    ) -> None:
        Q = t.iri(q)
        self.add(Q, _TYPE, _s("Question"))
        self.add(Q, _s("identifier"), t.string(qid))
        self.add(Q, _s("isPartOf"), t.iri(b))
        self.source_id(Q, node, ptr)
        text = self.literal(Q, _s("text"), node, "text", ptr, required=True)
        if text == "":
            self.fail(f"{ptr}/text", "question has an empty text")
        if text is not None:
            self.add(Q, KAR.textMd5.nt, t.string(md5_hex(text)))
        answer_text = code = None
        if "acceptedAnswer" not in node:
            self.fail(ptr, "missing required field 'acceptedAnswer'")
        else:
            answer = self.obj(node["acceptedAnswer"], f"{ptr}/acceptedAnswer", "acceptedAnswer (an Answer)", "Answer")
            if answer is not None:
                A = t.iri(f"{q}/answer")
                self.at(f"{q}/answer", f"{ptr}/acceptedAnswer")
                self.add(Q, _s("acceptedAnswer"), A)
                self.add(A, _TYPE, _s("Answer"))
                self.source_id(A, answer, f"{ptr}/acceptedAnswer")
                answer_text = self.literal(A, _s("text"), answer, "text", f"{ptr}/acceptedAnswer", required=True)
        if "hasPart" in node:
            code = self.template(q, node["hasPart"], f"{ptr}/hasPart", text or "")
        else:
            self.warn(
                ptr, "question has no answer template (no hasPart); stored without one, so it can only run rubric_only"
            )
        self.ratings(q, node, ptr, scope=None)
        pvs = self.array(node, "additionalProperty", ptr)
        if pvs is not None:
            self.triples.extend(map_properties(q, "question", pvs, f"{ptr}/additionalProperty", self))
        own = self.keywords(node, ptr)
        # Karenina reads item-level keywords (pre-2026-03 files) when the question has none.
        words = own if own else (legacy_keywords or own)
        if words is not None:
            for w in dict.fromkeys(words):
                self.add(Q, _s("keywords"), t.string(w))
            self.add(Q, KAR.keywordOrder.nt, t.json_literal(words))
        self.empty_lists(Q, node, ("rating", "additionalProperty"))
        if self.texts is not None and text is not None:
            # What the graph now says of this question's texts (an import that is refused
            # never uses them: a missing text or answer is a problem that refuses the file).
            self.texts.append(
                QuestionText(qid, q, position, text, answer_text or "", tuple(dict.fromkeys(words or ())), code or "")
            )

    def template(self, q: str, value: Any, ptr: str, question: str) -> str | None:
        """Map an answer template; returns its code (None when it has none)."""
        code = self.obj(value, ptr, "hasPart (the answer template, a SoftwareSourceCode)", "SoftwareSourceCode")
        if code is None:
            return None
        T = t.iri(f"{q}/template")
        self.at(f"{q}/template", ptr)
        self.add(t.iri(q), _s("hasPart"), T)
        self.add(T, _TYPE, _s("SoftwareSourceCode"))
        self.source_id(T, code, ptr)
        self.literal(T, _s("name"), code, "name", ptr, required=True)
        source = self.literal(T, _s("text"), code, "text", ptr, required=True)
        language = code.get("programmingLanguage", "Python")
        if language != "Python":
            self.fail(f"{ptr}/programmingLanguage", f"programmingLanguage must be exactly 'Python', got {language!r}")
        self.add(T, _s("programmingLanguage"), t.string("Python"))
        self.literal(T, _s("codeRepository"), code, "codeRepository", ptr)
        if source is not None:
            if self.templates is not None:
                self.templates.append((f"{q}/template", source))
            self.add(T, KAR.templateId.nt, t.string(template_id(source)))
            if is_default_template(source, question):
                self.add(T, KAR.isDefaultTemplate.nt, t.boolean(True))
        return source

    def ratings(self, owner: str, node: dict[str, Any], ptr: str, scope: str | None) -> None:
        ratings = self.array(node, "rating", ptr)
        taken: set[str] = set()
        for i, r in enumerate(ratings or []):
            self.rating(owner, i, r, f"{ptr}/rating/{i}", scope, taken)

    def rating(self, owner: str, i: int, node: Any, ptr: str, scope: str | None, taken: set[str]) -> None:
        r = self.obj(node, ptr, "a rating entry (a rubric trait)", "Rating")
        if r is None:
            return
        name = self.text(r, "name", ptr, required=True)
        for key in ("bestRating", "worstRating"):
            v = r.get(key)
            if key not in r:
                self.fail(ptr, f"missing required field {key!r}")
            elif isinstance(v, bool) or not isinstance(v, (int, float)):
                self.fail(f"{ptr}/{key}", f"{key!r} must be a number, got {_json_type(v)}")
        raw_type = self.text(r, "additionalType", ptr, required=True)
        if raw_type is None:
            return
        kind_type = normalise_type(raw_type)
        local = kind_type.removeprefix("karenina:")
        if local not in TRAIT_TYPES:
            hint = " (Manual traits were replaced by regex and callable traits in 2025-11)" if "Manual" in local else ""
            self.fail(f"{ptr}/additionalType", f"unknown rubric trait type {kind_type!r}{hint}")
            return
        if scope == "Global" and not local.startswith("Global"):
            self.fail(f"{ptr}/additionalType", f"Dataset-level rating must be a global trait type, got {kind_type}")
        props = settings(r)
        cls = trait_class(kind_type, props)
        kind = trait_kind(cls, r, props)
        for severity, prop, message in check(cls, kind, r, props):
            # Karenina builds a question's traits when it loads the file (its trait models refuse
            # the file then), and the global rubric's only when the rubric is asked for: such a
            # global trait is reported and the import goes on, as Karenina's load does.
            where = _setting_pointer(ptr, r, prop)
            if severity != "error":
                self.warn(where, message, trait=name)
            elif scope == "Global":
                later = "; Karenina loads the file and refuses this global trait when the rubric is built"
                self.warn(where, message + later, trait=name)
            else:
                self.fail(where, message, trait=name)
        T = t.iri(trait_iri(owner, name or "", taken))
        self.at(T[1:-1], ptr)
        self.add(t.iri(owner), _s("contentRating"), T)
        self.add(T, _TYPE, _s("Rating"))
        self.add(T, _TYPE, KAR.term(cls).nt)
        self.add(T, KAR.position.nt, t.integer(i))
        self.source_id(T, r, ptr)
        if name is not None:
            self.add(T, _s("name"), t.string(name))
        self.literal(T, _s("description"), r, "description", ptr)
        for key in ("bestRating", "worstRating"):
            if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool):
                # Karenina reads and re-writes these as floats whatever the file had (spec §10).
                try:
                    self.add(T, _s(key), t.double(float(r[key])))
                except OverflowError:
                    self.fail(f"{ptr}/{key}", f"{key!r} is too large for a number")
        if "ratingValue" in r:
            self.add(T, _s("ratingValue"), t.value(r["ratingValue"]))
        self.literal(T, _s("ratingExplanation"), r, "ratingExplanation", ptr)
        self.add(T, _s("additionalType"), KAR.term(local).nt)
        self.add(T, KAR.traitKind.nt, t.string(kind))
        pvs = self.array(r, "additionalProperty", ptr)
        if pvs is not None:
            self.triples.extend(map_properties(T[1:-1], "trait", pvs, f"{ptr}/additionalProperty", self))
        self.empty_lists(T, r, ("additionalProperty",))

    def scenario(self, b: str, i: int, node: Any, taken: set[str]) -> None:
        map_scenario(self, b, i, node, taken)


def identity(root: Any, base_iri: str, keep_id: str | None = None) -> tuple[str, str, bool]:
    """(benchmark id, stored IRI, derived?) of a checkpoint root, before or without mapping it.

    A file without ``@id`` is identified by name and version; an edited benchmark keeps the
    identity it was imported under (``keep_id``), even when renamed.
    """
    if not isinstance(root, dict):
        return "", "", True
    bid = root["@id"] if "@id" in root else root.get("id")
    if isinstance(bid, str):
        return bid, benchmark_iri(base_iri, bid), False
    name, version = root.get("name"), root.get("version")
    derived = keep_id or derived_benchmark_id(
        name if isinstance(name, str) else "", version if isinstance(version, str) else None
    )
    return derived, benchmark_iri(base_iri, derived), True


def entries(doc: Any) -> int | None:
    """How many questions (or scenarios) the mapper walks in ``doc``, for progress reports."""
    if not isinstance(doc, dict):
        return None
    return sum(len(doc[k]) for k in ("dataFeedElement", "hasPart") if isinstance(doc.get(k), list))


def map_checkpoint(
    doc: Any,
    *,
    base_iri: str,
    source: str | None = None,
    stream: Writer | None = None,
    keep_id: str | None = None,
    pointers: dict[str, str] | None = None,
    templates: list[tuple[str, str]] | None = None,
    progress: Task | None = None,
    texts: list[QuestionText] | None = None,
) -> MappedBenchmark:
    """Check a parsed checkpoint against Karenina's load rules and map it to triples.

    With ``stream`` the triples are written there as N-Triples instead of kept in memory.
    ``keep_id`` is the identity to use when the document has no ``@id`` (an edited benchmark).
    ``pointers``, when given, is filled with node IRI → JSON pointer of the object it came from;
    ``templates`` with (template IRI, code) pairs; ``texts`` with the texts of every question
    of the items, as the full-text index holds them. ``progress`` is advanced by one per question
    (or scenario) mapped.
    """
    mapper = _Mapper(base_iri, source, TripleSink(stream), keep_id, pointers, templates, texts)
    mapper.progress = progress or QUIET_TASK
    try:
        return mapper.benchmark(doc)
    except UnicodeEncodeError as exc:
        raise CheckpointError([_surrogate(exc, source, mapper.qid)]) from None


def _surrogate(exc: UnicodeEncodeError, source: str | None, qid: str | None) -> Problem:
    # JSON allows "\ud800" escapes that no Unicode text can hold; Python parses them anyway.
    bad = exc.object[exc.start : exc.end].encode("utf-16-be", "surrogatepass").hex()
    return Problem(
        f"a string holds an unpaired UTF-16 surrogate (\\u{bad}), which is not text", source, question_id=qid
    )


def map_item(node: Any, *, bench_iri: str, position: int, base_iri: str) -> list[t.Triple]:
    """Map one DataFeedItem (an authoring change) to triples, with the load rules of a file."""
    mapper = _Mapper(base_iri, None, TripleSink())
    try:
        mapper.item(bench_iri, position, node, {}, {})
        if mapper.problems:
            raise CheckpointError(mapper.problems)
        mapper.triples.flush()
    except UnicodeEncodeError as exc:
        raise CheckpointError([_surrogate(exc, None, mapper.qid)]) from None
    return mapper.triples.triples


def _last_occurrences(items: list[Any]) -> dict[str, int]:
    """Question id → index of the last item that has it, with the item's rule for the id."""
    last: dict[str, int] = {}
    for i, node in enumerate(items):
        if not isinstance(node, dict):
            continue
        qid = node.get("@id")
        if not (isinstance(qid, str) and qid):
            question = node.get("item")
            text = question.get("text") if isinstance(question, dict) else None
            qid = generate_question_id(text if isinstance(text, str) else "")
        last[qid] = i
    return last


def _setting_pointer(ptr: str, rating: dict[str, Any], prop: str) -> str:
    """JSON pointer to the value of a trait setting (the last one, which Karenina reads)."""
    if prop in ("name", "description"):
        return f"{ptr}/{prop}"
    pvs = rating.get("additionalProperty")
    if isinstance(pvs, list):
        for j in range(len(pvs) - 1, -1, -1):
            if isinstance(pvs[j], dict) and pvs[j].get("name") == prop:
                return f"{ptr}/additionalProperty/{j}/value"
        return f"{ptr}/additionalProperty"
    return ptr


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
