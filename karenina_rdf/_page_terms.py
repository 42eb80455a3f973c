"""RDF terms and named queries as the HTML pages show them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox
from markupsafe import Markup
from pygments import formatters, highlight, lexers

from ._errors import InvalidValueError
from ._linked import Site
from ._queries import NamedQuery, _where_brace, named_queries, to_term
from ._vocab import PREFIXES, sparql_prefixes

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF_JSON = "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON"
_EXAMPLE = re.compile(r"\be\.g\.\s*(\S+)")


@dataclass(frozen=True)
class Term:
    """One cell of a triples table."""

    text: str
    kind: str  # "local" (a link on this server), "iri", "blank", "literal" or "json"
    href: str | None = None
    title: str | None = None  # the full IRI
    datatype: str | None = None  # compact; None for a plain string
    lang: str | None = None


def compact(iri: str) -> str:
    """``schema:text`` for ``https://schema.org/text``; other IRIs as they are."""
    for prefix, namespace in PREFIXES.items():
        if iri.startswith(namespace) and iri != namespace:
            return f"{prefix}:{iri[len(namespace) :]}"
    return iri


def term_view(term: Any, site: Site, bench: str) -> Term:
    """A term for display: IRIs minted by this store become local links labelled relative to
    their benchmark, literals keep their datatype or language, rdf:JSON is pretty-printed."""
    if isinstance(term, ox.NamedNode):
        iri = term.value
        if iri.startswith(site.base):
            label = iri[len(bench) + 1 :] if iri.startswith(bench + "/") else iri[len(site.base) :]
            return Term(label or iri, "local", site.path_for(iri), iri)
        external = iri if iri.startswith(("http://", "https://")) else None
        return Term(compact(iri), "iri", external, iri)
    if isinstance(term, ox.BlankNode):
        return Term("_:" + term.value, "blank")
    if isinstance(term, ox.Literal):
        datatype = term.datatype.value
        if datatype == _RDF_JSON:
            try:
                value = json.loads(term.value)
            except ValueError:
                return Term(term.value, "json", datatype="rdf:JSON")
            # Short values stay on one line; longer ones are indented to be readable.
            text = json.dumps(value, ensure_ascii=False)
            if len(text) > 80:
                text = json.dumps(value, indent=2, ensure_ascii=False)
            return Term(text, "json", datatype="rdf:JSON")
        if term.language:
            return Term(term.value, "literal", lang=term.language)
        shown = None if datatype in (_XSD_STRING, "") else compact(datatype)
        return Term(term.value, "literal", datatype=shown)
    return Term(str(term), "literal")


def highlighted(code: str, language: str) -> Markup:
    """``code`` as highlighted HTML (pygments escapes it; static/pygments.css colours it)."""
    lexer = lexers.PythonLexer() if language == "python" else lexers.SparqlLexer()
    return Markup(highlight(code, lexer, formatters.HtmlFormatter(cssclass="highlight")))


def editor_text(named: NamedQuery, values: Mapping[str, str] | None = None) -> str:
    """A named query as the SPARQL editor shows it: its header comments, the PREFIX lines the
    editor's syntax check needs, and every parameter in one VALUES block to edit. A parameter
    gets the value given, else its default, else (when required) the example its description
    gives, else UNDEF, which leaves it unbound as an omitted optional parameter is."""
    given = dict(values or {})
    terms = []
    for p in named.params:
        raw = given.get(p.name) or p.default
        if raw is None and p.required:
            found = _EXAMPLE.search(p.description)
            raw = found.group(1).rstrip(".,;)") if found else None
        terms.append("UNDEF" if raw is None else str(to_term(raw, p.type, f"parameter {p.name!r}")))
    unknown = sorted(set(given) - {p.name for p in named.params})
    if unknown:
        raise InvalidValueError(f"query {named.name!r} has no parameter {', '.join(map(repr, unknown))}")
    lines = named.sparql.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")), 0)
    head, body = "".join(lines[:first]), "".join(lines[first:])
    if named.params:
        at = _where_brace(body)
        names = " ".join(f"?{p.name}" for p in named.params)
        body = f"{body[: at + 1]}\n  VALUES ({names}) {{ ({' '.join(terms)}) }}{body[at + 1 :]}"
    return head + sparql_prefixes() + body


def named_query_views() -> list[dict[str, Any]]:
    """Every named query with what the pages show of it (a fresh copy per request)."""
    out = []
    for q in named_queries().values():
        out.append(
            {
                "name": q.name,
                "title": q.title,
                "description": q.description,
                "params": [p.model_dump() for p in q.params],
                "sparql": q.sparql,
                "text": editor_text(q),
            }
        )
    return out
