"""SHACL shapes (``shapes/*.ttl``) and the pyshacl reference validator.

The shapes are the contract of the RDF model (docs/data-model.md): every rule Karenina enforces
that SHACL Core can express. pyshacl over rdflib is the reference engine; it is slow on large
stores, so faster engines must agree with :func:`validate_graph_pyshacl` on every fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import InvalidValueError

if TYPE_CHECKING:
    import rdflib

    from karenina_rdf.store import GraphStore

SHAPES_DIR = Path(__file__).resolve().parent / "shapes"  # the top-level shapes/ (a symlink in the source tree)
SH = "http://www.w3.org/ns/shacl#"
PYSHACL_MISSING = (
    "pyshacl is not installed: pip install 'karenina-rdf[pyshacl]' "
    "(or validate with the default engine, which needs no extra)"
)

Severity = Literal["Violation", "Warning", "Info"]


class ValidationResult(BaseModel):
    """One sh:ValidationResult: what is wrong, where, and which shape says so."""

    model_config = ConfigDict(frozen=True)

    focus_node: str
    path: str | None
    message: str
    severity: Severity
    source_shape: str
    source_constraint_component: str
    value: str | None
    # The value in N-Triples syntax (an IRI or a typed literal), for the report graph.
    value_term: str | None = None


class ValidationReport(BaseModel):
    """The sh:ValidationReport: ``conforms`` is false when there is at least one result."""

    model_config = ConfigDict(frozen=True)

    conforms: bool
    results: list[ValidationResult]

    @property
    def violations(self) -> list[ValidationResult]:
        return [r for r in self.results if r.severity == "Violation"]

    @property
    def warnings(self) -> list[ValidationResult]:
        return [r for r in self.results if r.severity == "Warning"]


def shape_files() -> list[Path]:
    return sorted(SHAPES_DIR.glob("*.ttl"))


@lru_cache(maxsize=1)
def _shapes_turtle() -> tuple[tuple[str, str], ...]:
    return tuple((p.name, p.read_text(encoding="utf-8")) for p in shape_files())


def shapes_graph(files: Iterable[str] | None = None) -> rdflib.Graph:
    """All shapes of ``shapes/*.ttl`` in one rdflib graph (a fresh copy each call).

    ``files`` (names such as ``"question.ttl"``) limits it to some shape files.
    """
    import rdflib

    wanted = None if files is None else set(files)
    g = rdflib.Graph()
    for name, text in _shapes_turtle():
        if wanted is not None and name not in wanted:
            continue
        g.parse(data=text, format="turtle", publicID=f"urn:karenina-rdf:shapes:file:{name}")
    return g


def store_graph_to_rdflib(store: GraphStore, graph_iri: str | ox.NamedNode) -> rdflib.Graph:
    """Copy one named graph of the store into an rdflib graph (through N-Triples)."""
    import rdflib

    graph = graph_iri if isinstance(graph_iri, ox.NamedNode) else ox.NamedNode(graph_iri)
    data: bytes | None = store.oxigraph.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph)
    g = rdflib.Graph()
    g.parse(data=(data or b"").decode("utf-8"), format="nt")
    return g


def validate_graph_pyshacl(data: rdflib.Graph, shapes: rdflib.Graph | None = None) -> ValidationReport:
    """Validate ``data`` with pyshacl (no inference, SHACL Core only) against ``shapes``, by
    default all of ``shapes/``. As in SHACL, ``conforms`` is false if there is any result,
    warnings included; :attr:`ValidationReport.violations` holds what Karenina refuses.
    Without pyshacl installed (it is the extra ``karenina-rdf[pyshacl]``) this raises
    :class:`~karenina_rdf.InvalidValueError` saying how to get it."""
    try:
        import pyshacl
    except ImportError as exc:
        raise InvalidValueError(PYSHACL_MISSING) from exc

    conforms, report_graph, _ = pyshacl.validate(
        data,
        shacl_graph=shapes if shapes is not None else shapes_graph(),
        inference="none",
        advanced=False,
        allow_warnings=False,
    )
    results = _read_report(report_graph)
    return ValidationReport(conforms=bool(conforms), results=results)


def _read_report(report: rdflib.Graph) -> list[ValidationResult]:
    from rdflib import RDF, BNode, URIRef

    sh = _ns(SH)
    out: list[ValidationResult] = []
    for res in report.subjects(RDF.type, sh["ValidationResult"]):
        path = report.value(res, sh["resultPath"])
        value = report.value(res, sh["value"])
        severity = report.value(res, sh["resultSeverity"])
        messages = sorted(str(m) for m in report.objects(res, sh["resultMessage"]))
        out.append(
            ValidationResult(
                focus_node=str(report.value(res, sh["focusNode"])),
                path=None if path is None else (str(path) if isinstance(path, URIRef) else _path_text(report, path)),
                message=messages[0] if messages else "",
                severity=_severity(severity if isinstance(severity, URIRef) else None),
                source_shape=str(report.value(res, sh["sourceShape"])),
                source_constraint_component=str(report.value(res, sh["sourceConstraintComponent"])),
                value=None if value is None else str(value),
                value_term=None if value is None or isinstance(value, BNode) else value.n3(),
            )
        )
    out.sort(key=lambda r: (r.focus_node, r.path or "", r.message, r.value or ""))
    return out


def _ns(base: str) -> rdflib.Namespace:
    from rdflib import Namespace

    return Namespace(base)


def _severity(node: object | None) -> Severity:
    local = str(node).removeprefix(SH) if node is not None else "Violation"
    if local == "Warning":
        return "Warning"
    if local == "Info":
        return "Info"
    return "Violation"


def _path_text(g: rdflib.Graph, node: rdflib.term.Node, iri: Callable[[str], str] = "<{}>".format) -> str:
    """A SHACL property path as text: ``<iri>``, ``^<iri>``, ``<a>/<b>``, ``<a>|<b>``, ``<a>*``…
    (``iri`` renders each IRI: angle brackets here, CURIEs in docs/shapes.md)."""
    from rdflib import BNode, URIRef
    from rdflib.collection import Collection

    sh = _ns(SH)
    if isinstance(node, URIRef):
        return iri(str(node))
    if not isinstance(node, BNode):
        return str(node)
    if (inv := g.value(node, sh["inversePath"])) is not None:
        return f"^{_path_text(g, inv, iri)}"
    if (alt := g.value(node, sh["alternativePath"])) is not None:
        return "(" + "|".join(_path_text(g, p, iri) for p in Collection(g, alt)) + ")"
    for pred, suffix in (("zeroOrMorePath", "*"), ("oneOrMorePath", "+"), ("zeroOrOnePath", "?")):
        if (inner := g.value(node, sh[pred])) is not None:
            return f"{_path_text(g, inner, iri)}{suffix}"
    return "/".join(_path_text(g, p, iri) for p in Collection(g, node))
