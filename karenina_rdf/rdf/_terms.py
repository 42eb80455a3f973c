"""RDF terms as N-Triples text, and JSON values ⇄ typed literals.

Triples are built as N-Triples term strings rather than pyoxigraph objects: building millions
of Python ``Quad`` objects costs more than the store's own bulk load (see docs/performance.md),
while one text stream feeds both ``bulk_load`` and SPARQL ``INSERT DATA``.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring
from typing import Any

import pyoxigraph as ox

from karenina_rdf._errors import InvalidTypeError, InvalidValueError

from ._vocab import RDF, XSD

Triple = tuple[str, str, str]

_XSD_STRING = XSD + "string"
_XSD_BOOLEAN = XSD + "boolean"
_XSD_INTEGER = XSD + "integer"
_XSD_DOUBLE = XSD + "double"
_XSD_BASE64 = XSD + "base64Binary"
_RDF_JSON = RDF + "JSON"


def iri(value: str) -> str:
    return f"<{value}>"


def string(value: str) -> str:
    # JSON's string escapes (quote, backslash, control characters; other text raw) are valid
    # N-Triples and SPARQL. json's C encoder is the fastest escaper in the standard library.
    return encode_basestring(value)


def typed(lexical: str, datatype: str) -> str:
    return f"{string(lexical)}^^<{datatype}>"


def boolean(value: bool) -> str:
    return typed("true" if value else "false", _XSD_BOOLEAN)


def integer(value: int) -> str:
    return typed(str(value), _XSD_INTEGER)


def double(value: float) -> str:
    return typed(repr(float(value)), _XSD_DOUBLE)


def base64_binary(value: str) -> str:
    return typed(value, _XSD_BASE64)


def json_literal(value: Any) -> str:
    """``value`` as an ``rdf:JSON`` literal; a value JSON cannot hold (an object, a set, a
    reference cycle) raises :class:`~karenina_rdf.InvalidTypeError` / ``InvalidValueError``."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except TypeError as exc:
        raise InvalidTypeError(f"not a JSON value: {exc}") from exc
    except ValueError as exc:  # a reference cycle
        raise InvalidValueError(f"not a JSON value: {exc}") from exc
    return typed(text, _RDF_JSON)


def value(v: Any) -> str:
    """A JSON value as the literal of its own JSON type (bool, integer, double, string, rdf:JSON)."""
    if isinstance(v, bool):
        return boolean(v)
    if isinstance(v, int):
        return integer(v)
    if isinstance(v, float):
        # Python's json reads NaN/Infinity; xsd:double spells them NaN/INF/-INF.
        if math.isnan(v):
            return typed("NaN", _XSD_DOUBLE)
        if math.isinf(v):
            return typed("INF" if v > 0 else "-INF", _XSD_DOUBLE)
        return double(v)
    if isinstance(v, str):
        return string(v)
    return json_literal(v)


def to_python(term: ox.Literal | ox.NamedNode | ox.BlankNode) -> Any:
    """A stored literal back to the JSON value it was made from."""
    if not isinstance(term, ox.Literal):
        return term.value
    dt = term.datatype.value
    lexical = term.value
    if dt == _XSD_BOOLEAN:
        return lexical in ("true", "1")
    if dt == _XSD_INTEGER:
        return int(lexical)
    if dt == _XSD_DOUBLE:
        return float(lexical)
    if dt == _RDF_JSON:
        return json.loads(lexical)
    return lexical


def to_term(text: str) -> ox.NamedNode | ox.Literal:
    """Parse one N-Triples term string (used for the few writes that go through Quad objects)."""
    if text.startswith("<"):
        return ox.NamedNode(text[1:-1])
    lexical_end = text.rindex('"')
    lexical = json.loads(text[: lexical_end + 1])
    rest = text[lexical_end + 1 :]
    if rest.startswith("^^<"):
        return ox.Literal(lexical, datatype=ox.NamedNode(rest[3:-1]))
    return ox.Literal(lexical)
