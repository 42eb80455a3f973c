"""additionalProperty lists ⇄ typed properties (docs/data-model.md, "Settings become typed data").

A known name (``finished``, ``min_score``, ``custom_*`` …) becomes a predicate of its own on the
owner node, with the literal type of its JSON value, so that shapes and queries can use it.
Any other name stays a ``schema:PropertyValue`` node. ``karenina:propertyLayout`` records the
list's order and encodings so that export writes back exactly what Karenina wrote.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from karenina_rdf.rdf import (
    BENCHMARK_SETTINGS,
    CUSTOM_PREFIX,
    JSON_STRING_SETTINGS,
    KAR,
    QUESTION_SETTINGS,
    RDF,
    SCHEMA,
    TRAIT_SETTINGS,
    camel,
    segment,
)
from karenina_rdf.rdf import terms as t

Index = Mapping[str, Mapping[str, Sequence[Any]]]

_BOOL_WORDS = {"true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n"}
_LAYOUT = KAR.propertyLayout
# The typed predicate of each known setting, looked up once: a name the vocabulary lacks fails at import.
_QUESTION_PREDICATES = {name: KAR.term(camel(name)) for name in QUESTION_SETTINGS}
_BENCHMARK_PREDICATES = {name: KAR.term(camel(name)) for name in BENCHMARK_SETTINGS}
_TRAIT_PREDICATES = {name: KAR.term(camel(name)) for name in TRAIT_SETTINGS}


class Reporter(Protocol):
    def fail(self, ptr: str, message: str) -> None: ...

    def warn(self, ptr: str, message: str) -> None: ...

    def at(self, node: str, ptr: str) -> None: ...


def predicate(owner_kind: str, name: str) -> str | None:
    """The typed predicate for a property name on a benchmark, question or trait, if known."""
    if owner_kind == "question":
        if name in _QUESTION_PREDICATES:
            return _QUESTION_PREDICATES[name]
        if name.startswith(CUSTOM_PREFIX):
            # The whole name segment-escaped; escaping leaves the "custom_" it starts with as it is.
            return KAR.custom_property(segment(name).removeprefix(CUSTOM_PREFIX))
        return None
    if owner_kind == "benchmark":
        if name in _BENCHMARK_PREDICATES:
            return _BENCHMARK_PREDICATES[name]
        # Every other benchmark property is a user custom property (spec §5).
        return KAR.custom_property(segment(name))
    return _TRAIT_PREDICATES.get(name)


def _decode(name: str, value: Any) -> tuple[Any, bool]:
    """Decode a JSON-string value when Karenina's ``json.dumps`` would write it back identically."""
    if name in JSON_STRING_SETTINGS and isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value, False
        if isinstance(decoded, (list, dict)) and json.dumps(decoded) == value:
            return decoded, True
    return value, False


def finished_value(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on", "t", "y")
    return bool(value)


def _valid_finished(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return value in (0, 1)
    return isinstance(value, str) and value.strip().lower() in _BOOL_WORDS


def _term(name: str, value: Any) -> str:
    # Callable payloads are opaque bytes (cloudpickle); typing them says so to shapes and queries.
    if name == "callable_code" and isinstance(value, str) and value and _is_base64(value):
        return t.base64_binary(value)
    return t.value(value)


def _is_base64(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# A question's author and sources are free-form objects in Karenina (``dict[str, Any]``), kept as
# written in karenina:author / karenina:sources for export. They are also described as what they
# are, a schema.org Person (or Organization) and CreativeWorks, so that pages and queries can name
# them: the keys below become schema.org properties when their value is a string.
_PERSON_KEYS = {
    "name": "name",
    "email": "email",
    "url": "url",
    "affiliation": "affiliation",
    "identifier": "identifier",
    "orcid": "identifier",
}
_WORK_KEYS = {
    "title": "name",
    "name": "name",
    "url": "url",
    "doi": "identifier",
    "identifier": "identifier",
    "date": "datePublished",
    "year": "datePublished",
    "publisher": "publisher",
    "description": "description",
}


def _described(node: str, kind: str, value: Mapping[str, Any], keys: Mapping[str, str]) -> list[t.Triple]:
    subj = t.iri(node)
    out = [(subj, t.iri(RDF + "type"), t.iri(SCHEMA + kind))]
    for key, local in keys.items():
        v = value.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            v = str(v)  # a year
        if isinstance(v, str) and v.strip():
            out.append((subj, t.iri(SCHEMA + local), t.string(v)))
    return out


def people_and_works(owner: str, name: str, value: Any) -> list[t.Triple]:
    """schema:author / schema:citation nodes for a question's decoded author or sources."""
    if name == "author" and isinstance(value, dict):
        kind = "Organization" if value.get("@type") == "Organization" else "Person"
        node = f"{owner}/author"
        return [(t.iri(owner), t.iri(SCHEMA + "author"), t.iri(node)), *_described(node, kind, value, _PERSON_KEYS)]
    if name == "sources" and isinstance(value, list):
        out: list[t.Triple] = []
        for i, work in enumerate(value):
            if isinstance(work, dict):
                node = f"{owner}/sources/{i}"
                out.append((t.iri(owner), t.iri(SCHEMA + "citation"), t.iri(node)))
                out.extend(_described(node, "CreativeWork", work, _WORK_KEYS))
                out.append((t.iri(node), KAR.position.nt, t.integer(i)))
        return out
    return []


def map_properties(owner: str, owner_kind: str, pvs: list[Any], ptr: str, report: Reporter) -> list[t.Triple]:
    subj = t.iri(owner)
    triples: list[t.Triple] = []
    layout: list[list[Any]] = []
    stored: dict[str, str] = {}
    for i, pv in enumerate(pvs):
        here = f"{ptr}/{i}"
        if not isinstance(pv, dict):
            report.fail(here, "additionalProperty entries must be PropertyValue objects")
            continue
        name = pv.get("name")
        if not isinstance(name, str):
            report.fail(here, "a PropertyValue needs a string 'name'")
            continue
        if pv.get("@type", "PropertyValue") != "PropertyValue":
            report.fail(f"{here}/@type", f"must have @type 'PropertyValue', got {pv['@type']!r}")
            continue
        raw = pv.get("value")
        if name == "finished" and owner_kind == "question" and not _valid_finished(raw):
            report.fail(f"{here}/value", f"'finished' must be a boolean, got {json.dumps(raw)}")
        odd = (
            name in ("answer_notes", "workspace_path") and owner_kind == "question" and not isinstance(raw, str | None)
        )
        if odd:
            # Karenina loads it (tests/parity/test_load.py): kept as written, as an untyped
            # PropertyValue, so that it exports as it came.
            report.warn(f"{here}/value", f"{name!r} should be a string, got {json.dumps(raw)}; kept as written")
        pred = None if odd else predicate(owner_kind, name)
        # Karenina drops null values on save (exclude_none): a null is the same as no value.
        has_value = raw is not None
        value, as_string = _decode(name, raw)
        if owner_kind == "question" and name in ("author", "sources") and name not in stored:
            triples.extend(people_and_works(owner, name, value))
        term = _term(name, value) if has_value else None
        coerced = name == "finished" and owner_kind == "question" and has_value and not isinstance(raw, bool)
        if coerced and _valid_finished(raw):
            # Typed as the boolean Karenina reads it as; the layout keeps the original to write back.
            term = t.boolean(finished_value(raw))
        # A repeated name with a different value cannot share the typed predicate.
        if pred is not None and (term is None or stored.get(name, term) == term):
            if term is not None and name not in stored:
                triples.append((subj, t.iri(pred), term))
                stored[name] = term
            if coerced:
                layout.append([name, "r", raw])
            else:
                layout.append([name, "o" if term is None else ("s" if as_string else "v")])
            continue
        P = t.iri(f"{owner}/properties/{i}")
        report.at(P[1:-1], here)
        triples.append((subj, t.iri(SCHEMA + "additionalProperty"), P))
        triples.append((P, t.iri(RDF + "type"), t.iri(SCHEMA + "PropertyValue")))
        triples.append((P, t.iri(SCHEMA + "name"), t.string(name)))
        triples.append((P, KAR.position.nt, t.integer(i)))
        if has_value:
            triples.append((P, t.iri(SCHEMA + "value"), t.value(pv["value"])))
        layout.append(["@", i])
    if layout:
        triples.append((subj, t.iri(_LAYOUT), t.json_literal(layout)))
    return triples


def first(index: Index, s: str, p: str) -> Any:
    values = index.get(s, {}).get(p)
    return t.to_python(values[0]) if values else None


def properties_json(index: Index, owner: str, owner_kind: str) -> list[dict[str, Any]] | None:
    """Rebuild an owner's additionalProperty list from its typed properties and layout."""
    layout = first(index, owner, _LAYOUT)
    if layout is None:
        return None
    out: list[dict[str, Any]] = []
    for entry in layout:
        if entry[0] == "@":
            node = f"{owner}/properties/{entry[1]}"
            pv: dict[str, Any] = {"@type": "PropertyValue", "name": first(index, node, SCHEMA + "name")}
            raw = index.get(node, {}).get(SCHEMA + "value")
            if raw:
                pv["value"] = t.to_python(raw[0])
            out.append(pv)
            continue
        name, enc = entry[0], entry[1]
        pv = {"@type": "PropertyValue", "name": name}
        if enc == "r":
            pv["value"] = entry[2]
        elif enc != "o":
            pred = predicate(owner_kind, name)
            value = first(index, owner, pred) if pred else None
            pv["value"] = json.dumps(value) if enc == "s" else value
        out.append(pv)
    return out
