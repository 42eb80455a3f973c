"""RDF terms and named queries as the HTML pages show them."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox
from markupsafe import Markup
from pygments import formatters, highlight, lexers

from karenina_rdf._errors import InvalidValueError
from karenina_rdf.linked import Site
from karenina_rdf.rdf import PREFIXES, sparql_prefixes
from karenina_rdf.sparql import NamedQuery, named_queries, to_term, where_brace

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
        at = where_brace(body)
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


# -- the heatmap of a comparison -----------------------------------------------------------------------
# Colour of a pass rate: ColorBrewer's RdYlBu, red (0) through pale yellow (0.5) to blue (1), a
# diverging scale that stays readable with red-green colour blindness; each cell also prints its
# percentage, so the colour is never the only cue.
_STOPS = (
    (0.0, (0xD7, 0x30, 0x27)),
    (0.25, (0xFC, 0x8D, 0x59)),
    (0.5, (0xFE, 0xE0, 0x90)),
    (0.75, (0x91, 0xBF, 0xDB)),
    (1.0, (0x45, 0x75, 0xB4)),
)
NO_VERDICT = "#c9ced8"  # results, but no true/false verify_result among them
NOT_RUN = "#ffffff"  # no result for this question and model
_CELL_W, _CELL_H, _LABEL_W, _HEAD_H, _LEGEND_H = 58, 22, 440, 130, 64
_LABEL_CHARS = 60  # about 400 px of 12 px text: what the label column holds


def rate_colour(rate: float) -> str:
    rate = min(max(rate, 0.0), 1.0)
    for (a, ca), (b, cb) in itertools.pairwise(_STOPS):
        if rate <= b:
            f = (rate - a) / (b - a)
            return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(ca, cb, strict=True))
    return "#" + "".join(f"{x:02x}" for x in _STOPS[-1][1])


def _ink(fill: str) -> str:
    """``light`` (white text) on a dark cell, ``dark`` on a light one (relative luminance, WCAG)."""
    r, g, b = (int(fill[i : i + 2], 16) / 255 for i in (1, 3, 5))
    lum = sum(
        w * (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
        for w, c in zip((0.2126, 0.7152, 0.0722), (r, g, b), strict=True)
    )
    return "dark" if lum > 0.22 else "light"


def percent(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.0f} %"


def heatmap(comparison: Any, site: Site) -> dict[str, Any]:
    """The geometry of a comparison's heatmap (rows: questions, columns: answering models), which
    ``templates/_heatmap.html`` draws as inline SVG."""
    models, rows = comparison.models, comparison.rows
    columns = [
        {
            "x": _LABEL_W + i * _CELL_W + _CELL_W / 2,
            "label": m.label,
            "href": site.path_for(m.iri),
        }
        for i, m in enumerate(models)
    ]
    out_rows, cells = [], []
    for j, row in enumerate(rows):
        y = _HEAD_H + j * _CELL_H
        text = row.text or row.question_id
        short = text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"
        out_rows.append(
            {
                "y": y + _CELL_H / 2,
                "label": short,
                "title": text,
                "href": site.path_for(row.question) if row.question else None,
            }
        )
        for i, m in enumerate(models):
            tally = row.cells.get(m.iri)
            if tally is None or tally.results == 0:
                fill, label = NOT_RUN, ""
                title = f"{text} — {m.label}: not run"
            elif tally.pass_rate is None:
                fill, label = NO_VERDICT, "–"
                title = f"{text} — {m.label}: no verdict in {tally.results} result{'s' if tally.results != 1 else ''}"
            else:
                fill, label = rate_colour(tally.pass_rate), f"{tally.pass_rate * 100:.0f}"
                title = (
                    f"{text} — {m.label}: {percent(tally.pass_rate)} passed "
                    f"({tally.passed} of {tally.verified} verified; {tally.results} result"
                    f"{'s' if tally.results != 1 else ''}, {tally.failures} with a failure)"
                )
            cells.append(
                {
                    "x": _LABEL_W + i * _CELL_W,
                    "y": y,
                    "fill": fill,
                    "ink": _ink(fill),
                    "label": label,
                    "title": title,
                    "state": "not-run" if fill == NOT_RUN else ("no-verdict" if fill == NO_VERDICT else "rated"),
                }
            )
    height = _HEAD_H + len(rows) * _CELL_H
    return {
        # Room for the last column's slanted label and for the legend.
        "width": _LABEL_W + max(len(models) * _CELL_W + 150, 420),
        "height": height + _LEGEND_H,
        "grid_height": height,
        "cell_w": _CELL_W,
        "cell_h": _CELL_H,
        "label_w": _LABEL_W,
        "head_h": _HEAD_H,
        "columns": columns,
        "rows": out_rows,
        "cells": cells,
        "legend_y": height + 22,
        "stops": [{"offset": f"{a * 100:.0f}%", "colour": rate_colour(a)} for a in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "no_verdict": NO_VERDICT,
        "not_run": NOT_RUN,
    }
