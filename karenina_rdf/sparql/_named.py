"""Named SPARQL queries: ``queries/*.rq`` files with a header, and safe parameter binding.

A named query is a SPARQL file whose first comment lines say what it is::

    # title: Questions by keyword
    # description: Every question tagged with a keyword, across all stored benchmarks.
    #   (a description may go on over indented comment lines)
    # param: keyword string -- the keyword, e.g. genomics
    # param: benchmark string optional -- limit to one benchmark
    # param: limit integer = 100 -- at most this many rows

``# param: NAME TYPE [= DEFAULT | optional] [-- DESCRIPTION]``; TYPE is one of :data:`TYPES`. A
parameter without a default or ``optional`` is required. Values are bound as RDF terms (a typed
literal or an IRI made by pyoxigraph) in a ``VALUES`` block placed first in the query's WHERE
group, so a value is data and never SPARQL text: ``x" } DROP ALL #`` is a string like any other.
An optional parameter left out stays unbound (test it with ``BOUND(?name)``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import InvalidValueError, QueryNotFoundError

from ._text import tokens

# Output formats (SPARQL results for SELECT/ASK, RDF syntaxes for CONSTRUCT/DESCRIBE): the query
# worker's tables, which it must hold itself (it is loaded alone, importing only pyoxigraph).
from ._worker import GRAPH_FORMATS, RESULT_FORMATS

QUERIES_DIR = Path(__file__).resolve().parent / "queries"  # the top-level queries/ (a symlink in the source tree)
XSD = "http://www.w3.org/2001/XMLSchema#"
TYPES = ("string", "integer", "decimal", "double", "boolean", "date", "datetime", "iri", "search")
# A "search" parameter NAME is a full-text query: ?NAME is bound to its text, and ?NAME_hit /
# ?NAME_score to each question the store's full-text index finds and its bm25 score (a VALUES
# block the rest of the query joins with).
HIT, SCORE = "_hit", "_score"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class QueryParam(BaseModel):
    """One ``# param:`` line."""

    model_config = ConfigDict(frozen=True)

    name: str
    type: str
    required: bool
    default: str | None = None
    description: str = ""

    def usage(self) -> str:
        if self.required:
            tail = ""
        elif self.default is None:
            tail = " (optional)"
        else:
            tail = f" (default {self.default})"
        return f"{self.name}: {self.type}{tail}"


class NamedQuery(BaseModel):
    """A SPARQL query with a title, a description and typed parameters."""

    model_config = ConfigDict(frozen=True)

    name: str
    title: str
    description: str
    params: tuple[QueryParam, ...]
    sparql: str
    path: str | None = None

    def bind(
        self, values: Mapping[str, Any] | None = None, *, search: Callable[[str], Mapping[str, float]] | None = None
    ) -> str:
        """The query text with ``values`` bound (defaults for the ones not given). ``search``:
        question IRI → score for a full-text query (``Store``'s index), for ``search`` parameters."""
        values = dict(values or {})
        known = {p.name for p in self.params}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidValueError(
                f"query {self.name!r} has no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters: {self._param_list()}"
            )
        bound: dict[str, ox.NamedNode | ox.Literal] = {}
        for p in self.params:
            raw = values.get(p.name, p.default)
            if raw is None:
                if p.required:
                    raise InvalidValueError(
                        f"query {self.name!r} needs the parameter {p.name!r} ({p.type}); "
                        f"its parameters: {self._param_list()}"
                    )
                continue
            bound[p.name] = to_term(raw, p.type, f"parameter {p.name!r} of query {self.name!r}")
        sparql = bind_values(self.sparql, bound)
        for p in self.params:
            if p.type != "search" or p.name not in bound:
                continue
            if search is None:
                raise InvalidValueError(
                    f"query {self.name!r}: parameter {p.name!r} is a full-text search; run the query through a Store"
                )
            hits = search(str(values.get(p.name, p.default)))
            double = ox.NamedNode(XSD + "double")
            rows = " ".join(f"({ox.NamedNode(iri)} {ox.Literal(repr(s), datatype=double)})" for iri, s in hits.items())
            at = where_brace(sparql)
            block = f" VALUES (?{p.name}{HIT} ?{p.name}{SCORE}) {{ {rows} }}"
            sparql = f"{sparql[: at + 1]}{block}{sparql[at + 1 :]}"
        return sparql

    def _param_list(self) -> str:
        return ", ".join(p.usage() for p in self.params) or "none"


def to_term(value: Any, type_: str, what: str = "value") -> ox.NamedNode | ox.Literal:
    """``value`` (a Python value or the text a user typed) as the RDF term of ``type_``."""
    text = value if isinstance(value, str) else None
    try:
        if type_ in ("string", "search"):
            return ox.Literal(str(value))
        if type_ == "iri":
            return ox.NamedNode(str(value))
        if type_ == "integer":
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(f"{value!r} is not an integer")
            return ox.Literal(str(int(value)), datatype=ox.NamedNode(XSD + "integer"))
        if type_ == "decimal":
            return ox.Literal(str(Decimal(str(value))), datatype=ox.NamedNode(XSD + "decimal"))
        if type_ == "double":
            return ox.Literal(repr(float(value)), datatype=ox.NamedNode(XSD + "double"))
        if type_ == "boolean":
            if isinstance(value, bool):
                return ox.Literal(value)
            flag = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}.get(
                str(text).lower() if text is not None else ""
            )
            if flag is None:
                raise ValueError(f"{value!r} is not a boolean (true/false)")
            return ox.Literal(flag)
        if type_ == "date":
            day = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
            return ox.Literal(day.isoformat(), datatype=ox.NamedNode(XSD + "date"))
        if type_ == "datetime":
            when = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
            return ox.Literal(when.isoformat(), datatype=ox.NamedNode(XSD + "dateTime"))
    except (ValueError, InvalidOperation, TypeError) as exc:
        raise InvalidValueError(f"{what}: {value!r} is not a valid {type_} ({exc})") from None
    raise InvalidValueError(f"{what}: unknown type {type_!r} (one of {', '.join(TYPES)})")


def python_term(value: Any) -> ox.NamedNode | ox.Literal:
    """A Python value as an RDF term, for parameters of a query without a header."""
    if isinstance(value, ox.NamedNode | ox.Literal):
        return value
    if isinstance(value, bool):
        return ox.Literal(value)
    for kind, type_ in ((int, "integer"), (float, "double"), (Decimal, "decimal")):
        if isinstance(value, kind):
            return to_term(value, type_)
    if isinstance(value, dt.datetime):
        return to_term(value, "datetime")
    if isinstance(value, dt.date):
        return to_term(value, "date")
    return ox.Literal(str(value))


def bind_values(sparql: str, values: Mapping[str, ox.NamedNode | ox.Literal]) -> str:
    """``sparql`` with a ``VALUES`` block binding ``values`` first in its WHERE group."""
    if not values:
        return sparql
    for name in values:
        if not _NAME.match(name):
            raise InvalidValueError(f"{name!r} is not a SPARQL variable name")
    at = where_brace(sparql)
    names = " ".join(f"?{n}" for n in values)
    terms = " ".join(str(t) for t in values.values())  # pyoxigraph writes escaped N-Triples terms
    return f"{sparql[: at + 1]} VALUES ({names}) {{ ({terms}) }}{sparql[at + 1 :]}"


def where_brace(sparql: str) -> int:
    """Index of the ``{`` opening the query's WHERE group (strings, IRIs, comments skipped):
    the first top-level ``{`` after the keyword WHERE, or the first one when there is none."""
    first, after_where = -1, False
    for tok in tokens(sparql):
        if tok.depth != 0:
            continue
        if tok.kind == "word" and tok.text.upper() == "WHERE":
            after_where = True
        elif tok.kind == "punct" and tok.text == "{":
            if after_where:
                return tok.start
            first = tok.start if first < 0 else first
    if first >= 0 and not after_where:
        return first
    raise InvalidValueError("cannot bind parameters: the query has no WHERE group")


def parse_query_file(path: Path) -> NamedQuery:
    """Read a ``.rq`` file and its header."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise QueryNotFoundError(f"cannot read query file {path}: {exc}") from None
    return parse_query(text, name=path.stem, path=str(path))


def parse_query(text: str, *, name: str, path: str | None = None) -> NamedQuery:
    fields: dict[str, str] = {}
    params: list[QueryParam] = []
    last: str | None = None
    where = path or name
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped.startswith("#"):
            if stripped:
                break  # the header ends with the first line of SPARQL
            continue
        body = stripped[1:]
        m = re.match(r"\s*(title|description|param):\s*(.*)$", body)
        if m:
            key, value = m.group(1), m.group(2).strip()
            if key == "param":
                params.append(_parse_param(value, f"{where}:{lineno}"))
            else:
                fields[key] = value
            last = key
        elif last in ("title", "description") and body.startswith((" ", "\t")) and body.strip():
            fields[last] += " " + body.strip()  # a continuation line
    if len({p.name for p in params}) != len(params):
        raise InvalidValueError(f"{where}: a parameter is declared twice")
    return NamedQuery(
        name=name,
        title=fields.get("title", name),
        description=fields.get("description", ""),
        params=tuple(params),
        sparql=text,
        path=path,
    )


def _parse_param(spec: str, where: str) -> QueryParam:
    spec, _, description = spec.partition("--")
    m = re.match(r"^([A-Za-z_]\w*)\s+(\w+)\s*(?:(=)\s*(.*?)|(optional))?\s*$", spec.strip())
    if not m or m.group(2) not in TYPES:
        raise InvalidValueError(
            f"{where}: bad '# param:' line {spec.strip()!r}; write "
            f"'# param: NAME TYPE [= DEFAULT | optional] [-- description]' with TYPE one of {', '.join(TYPES)}"
        )
    name, type_, has_default, default, optional = m.groups()
    if has_default:
        to_term(default, type_, f"{where}: default of {name!r}")  # a bad default fails when read
    return QueryParam(
        name=name,
        type=type_,
        required=not (has_default or optional),
        default=default if has_default else None,
        description=description.strip(),
    )


@lru_cache(maxsize=4)
def _catalog(folder: str) -> dict[str, NamedQuery]:
    return {p.stem: parse_query_file(p) for p in sorted(Path(folder).glob("*.rq"))}


def named_queries(folder: Path | None = None) -> dict[str, NamedQuery]:
    """The named queries of ``queries/`` (or ``folder``), by name."""
    return dict(_catalog(str(folder or QUERIES_DIR)))


def find_query(ref: str) -> NamedQuery:
    """A named query by name, or any ``.rq`` file by path."""
    catalog = named_queries()
    if ref in catalog:
        return catalog[ref]
    if ref.endswith(".rq") or "/" in ref or Path(ref).is_file():
        path = Path(ref)
        if not path.is_file():
            raise QueryNotFoundError(f"no query file {ref!r}")
        return parse_query_file(path)
    raise QueryNotFoundError(f"no named query {ref!r}; the named queries: {', '.join(sorted(catalog)) or 'none'}")


def looks_like_reference(text: str) -> bool:
    """Whether ``text`` names a query (a name or an .rq path) rather than being SPARQL."""
    if text.endswith(".rq") and Path(text).is_file():
        return True  # a path, spaces and all
    return "{" not in text and not any(c.isspace() for c in text.strip()) and bool(text.strip())


def serialize_graph(
    triples: Any, fmt: str, output: Any = None, *, prefixes: Mapping[str, str] | None = None
) -> bytes | None:
    """Triples in ``fmt`` (a key of :data:`GRAPH_FORMATS`), to ``output`` or as bytes; the
    prefixes are declared in the formats that have prefixes (Turtle, RDF/XML)."""
    pre = dict(prefixes or {}) if fmt in ("turtle", "rdfxml") else None
    return ox.serialize(triples, output, GRAPH_FORMATS[fmt], prefixes=pre)


def serialize_results(results: Any, fmt: str, prefixes: Mapping[str, str] | None = None) -> bytes:
    """Query results as bytes in ``fmt`` (a key of :data:`RESULT_FORMATS` for SELECT and ASK, of
    :data:`GRAPH_FORMATS` for CONSTRUCT and DESCRIBE); a format of the other kind is refused."""
    if isinstance(results, ox.QueryTriples):
        if fmt not in GRAPH_FORMATS:
            raise InvalidValueError(
                f"a CONSTRUCT or DESCRIBE query gives a graph: use one of {', '.join(GRAPH_FORMATS)}, not {fmt!r}"
            )
        return serialize_graph(results, fmt, prefixes=prefixes) or b""
    if fmt not in RESULT_FORMATS:
        raise InvalidValueError(
            f"a SELECT or ASK query gives results: use one of table, {', '.join(RESULT_FORMATS)}, not {fmt!r}"
        )
    return bytes(results.serialize(format=RESULT_FORMATS[fmt]))
