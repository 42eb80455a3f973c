"""Triples → checkpoint JSON in Karenina's canonical form (context C1, key order of spec §3.9)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any

import pyoxigraph as ox

from karenina_rdf.rdf import KAR, SCHEMA
from karenina_rdf.rdf import terms as t

from ._properties import Index, first, properties_json
from ._scenarios import scenario_json
from ._template_defaults import default_template, template_name

CANONICAL_CONTEXT: dict[str, Any] = {
    "@version": 1.1,
    "@vocab": "https://schema.org/",
    "karenina": KAR.base,
    "dataFeedElement": {"@id": "dataFeedElement", "@container": "@set"},
    "item": {"@id": "item", "@type": "@id"},
    "acceptedAnswer": {"@id": "acceptedAnswer", "@type": "@id"},
    "rating": {"@id": "contentRating", "@container": "@set"},
    "additionalProperty": {"@id": "additionalProperty", "@container": "@set"},
    "hasPart": {"@id": "hasPart", "@container": "@set"},
    "keywords": {"@id": "keywords", "@container": "@set"},
}


def _get(index: Index, s: str, local: str) -> Any:
    return first(index, s, SCHEMA + local)


def _objects(index: Index, s: str, local: str) -> list[str]:
    return [o.value for o in index.get(s, {}).get(SCHEMA + local, [])]


def _ordered(index: Index, nodes: list[str]) -> list[str]:
    return sorted(nodes, key=lambda n: first(index, n, KAR.position) or 0)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _list(index: Index, s: str, key: str, values: list[Any]) -> list[Any] | None:
    """A list as Karenina writes it: present when non-empty or when the source had it empty."""
    if values:
        return values
    empty = first(index, s, KAR.emptyLists) or []
    return [] if key in empty else None


def _with_id(index: Index, s: str, type_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {"@type": type_name}
    _put(out, "@id", first(index, s, KAR.sourceId))
    return out


def benchmark_json(index: Index, b: str, items: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The root object; ``items`` defaults to the items found in ``index``."""
    out: dict[str, Any] = {"@context": CANONICAL_CONTEXT, "@type": "DataFeed"}
    if not first(index, b, KAR.derivedIdentifier):
        out["@id"] = _get(index, b, "identifier")
    for key in ("name", "description", "version"):
        _put(out, key, _get(index, b, key))
    creators = index.get(b, {}).get(SCHEMA + "creator", [])
    if creators:
        c = creators[0]
        if isinstance(c, ox.Literal):
            out["creator"] = t.to_python(c)
        else:
            person: dict[str, Any] = {"@type": "Person"}
            for key in ("name", "url", "email"):
                _put(person, key, _get(index, c.value, key))
            out["creator"] = person
    for key in ("dateCreated", "dateModified"):
        _put(out, key, _get(index, b, key))
    ratings = [rating_json(index, r) for r in _ordered(index, _objects(index, b, "contentRating"))]
    _put(out, "rating", _list(index, b, "rating", ratings))
    if items is None:
        items = [item_json(index, i) for i in _ordered(index, _objects(index, b, "dataFeedElement"))]
    out["dataFeedElement"] = items
    scenarios = [scenario_json(index, s) for s in _ordered(index, _objects(index, b, "hasPart"))]
    _put(out, "hasPart", _list(index, b, "hasPart", scenarios))
    _put(out, "additionalProperty", _list(index, b, "additionalProperty", properties_json(index, b, "benchmark") or []))
    return out


def item_json(index: Index, i: str) -> dict[str, Any]:
    q = _objects(index, i, "item")[0]
    out: dict[str, Any] = {"@type": "DataFeedItem"}
    if not first(index, i, KAR.derivedIdentifier):
        out["@id"] = _get(index, q, "identifier")
    else:
        _put(out, "@id", first(index, i, KAR.sourceId))
    for key in ("dateCreated", "dateModified"):
        _put(out, key, _get(index, i, key))
    out["item"] = question_json(index, q)
    return out


def question_json(index: Index, q: str) -> dict[str, Any]:
    out = _with_id(index, q, "Question")
    text = _get(index, q, "text")
    out["text"] = text
    answer = _objects(index, q, "acceptedAnswer")
    if answer:
        a = _with_id(index, answer[0], "Answer")
        a["text"] = _get(index, answer[0], "text")
        out["acceptedAnswer"] = a
    templates = _objects(index, q, "hasPart")
    if templates:
        out["hasPart"] = template_json(index, templates[0])
    else:
        # A question stored without a template is written with Karenina's default one,
        # which Karenina in turn reads as "no template".
        out["hasPart"] = {
            "@type": "SoftwareSourceCode",
            "name": template_name(text or ""),
            "text": default_template(text or ""),
            "programmingLanguage": "Python",
        }
    ratings = [rating_json(index, r) for r in _ordered(index, _objects(index, q, "contentRating"))]
    _put(out, "rating", _list(index, q, "rating", ratings))
    _put(out, "additionalProperty", _list(index, q, "additionalProperty", properties_json(index, q, "question") or []))
    _put(out, "keywords", first(index, q, KAR.keywordOrder))
    return out


def template_json(index: Index, s: str) -> dict[str, Any]:
    out = _with_id(index, s, "SoftwareSourceCode")
    for key in ("name", "text", "programmingLanguage", "codeRepository"):
        _put(out, key, _get(index, s, key))
    return out


def rating_json(index: Index, r: str) -> dict[str, Any]:
    out = _with_id(index, r, "Rating")
    for key in ("name", "description", "bestRating", "worstRating", "ratingValue", "ratingExplanation"):
        _put(out, key, _get(index, r, key))
    kind = index[r][SCHEMA + "additionalType"][0].value
    out["additionalType"] = "karenina:" + kind.removeprefix(KAR.base)
    _put(out, "additionalProperty", _list(index, r, "additionalProperty", properties_json(index, r, "trait") or []))
    return out


def _dumps(value: Any, indent: str) -> str:
    """What ``json.dumps(value, indent=2, ensure_ascii=False)`` writes, re-indented for the
    depth ``indent``. CPython's C encoder does not indent, so ``json.dumps(indent=2)`` runs the
    pure-Python one, a generator per nesting level yielding one token at a time; this writes the
    same bytes in one recursion, 1.85x faster on the items of a 20k export (docs/performance.md
    § Issue 20 point 3), and a string member in the same step as its key (most values of a
    checkpoint are strings: a third less again, § Export from the generation's files). Anything
    but plain JSON types goes to ``json.dumps`` itself."""
    parts: list[str] = []
    _encode(value, "\n" + indent, parts)
    return "".join(parts)


_encode_str = json.encoder.encode_basestring  # ensure_ascii=False: the C escaper, as json uses


def _encode(o: Any, newline: str, parts: list[str]) -> None:
    put = parts.append
    kind = type(o)
    if kind is str:
        put(_encode_str(o))
    elif kind is dict:
        if not o:
            put("{}")
            return
        mark = len(parts)
        inner = newline + "  "
        sep = "{" + inner
        for k, v in o.items():
            if type(k) is not str:  # keys json converts (1 -> "1"): json writes the whole object
                del parts[mark:]
                put(json.dumps(o, indent=2, ensure_ascii=False).replace("\n", newline))
                return
            if type(v) is str:
                put(sep + _encode_str(k) + ": " + _encode_str(v))
            else:
                put(sep + _encode_str(k) + ": ")
                _encode(v, inner, parts)
            sep = "," + inner
        put(newline + "}")
    elif kind is list or kind is tuple:
        if not o:
            put("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        for v in o:
            if type(v) is str:
                put(sep + _encode_str(v))
            else:
                put(sep)
                _encode(v, inner, parts)
            sep = "," + inner
        put(newline + "]")
    elif o is None:
        put("null")
    elif o is True:
        put("true")
    elif o is False:
        put("false")
    elif kind is int:
        put(int.__repr__(o))
    else:  # floats (NaN, Infinity), subclasses, and what json refuses with its own error
        put(json.dumps(o, indent=2, ensure_ascii=False).replace("\n", newline))


def write_json(out: IO[str], header: dict[str, Any], items: Iterable[dict[str, Any]]) -> None:
    """Write a checkpoint as Karenina's ``json.dump(indent=2, ensure_ascii=False)`` would,
    with the items streamed one by one so a 100k-question export never holds them all."""
    out.write("{")
    for n, (key, value) in enumerate(header.items()):
        out.write(("\n  " if n == 0 else ",\n  ") + json.dumps(key, ensure_ascii=False) + ": ")
        if key != "dataFeedElement":
            out.write(_dumps(value, "  "))
            continue
        first_item = True
        for item in items:
            out.write(("[\n    " if first_item else ",\n    ") + _dumps(item, "    "))
            first_item = False
        out.write("[]" if first_item else "\n  ]")
    out.write("\n}" if header else "}")
