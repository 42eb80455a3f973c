"""W3C SHACL Core conformance tests for the SPARQL engine (karenina_rdf.validation._shacl).

The suite is ../shared/conformance/shacl-w3c/tests/core/ (data only; the tests skip when it is
absent). Each test file holds a manifest entry ``sht:Validate`` with a data graph, a shapes graph
and the expected ``sh:ValidationReport``; a test passes when ``conforms`` and the set of
(focus node, result path, source constraint component) equal the expected report's (messages and
values are not compared; blank-node focus nodes compare as "_:"; literal focus nodes compare in
the canonical lexical form pyoxigraph stores, e.g. ``4.0`` as "4" — a known difference: the
engine reports literal focus nodes and values as pyoxigraph holds them).

Run: the tests of the SHACL Core features that shapes/*.ttl use — targets (sh:targetClass, and
sh:targetNode which most tests use to pick their focus nodes), sh:property, paths (IRI,
sh:inversePath and sequence paths), sh:minCount, sh:maxCount, sh:datatype, sh:nodeKind,
sh:class, sh:in, sh:minLength, sh:pattern, sh:minInclusive, sh:maxInclusive, sh:minExclusive,
sh:hasValue, sh:lessThan, sh:or, sh:and, sh:not, sh:closed (with sh:ignoredProperties),
sh:severity and sh:message: see ``RUN``.

Skipped (``SKIP``, each with its reason): tests of components the shapes do not use and the
engine does not implement (sh:disjoint, sh:equals, sh:languageIn, sh:uniqueLang,
sh:lessThanOrEquals, qualified value shapes), tests whose point is a feature the shapes do not
use even where the engine has it (sh:maxLength, sh:maxExclusive, sh:xone, sh:node,
sh:deactivated, implicit class targets, sh:targetSubjectsOf/ObjectsOf, alternative and
repetition paths, shapes graphs with SHACL-SHACL).
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
from rdflib import RDF, BNode, Literal, URIRef

from karenina_rdf.validation import _shacl
from karenina_rdf.validation._shacl import validate_turtle
from karenina_rdf.validation._shapes import _path_text
from tests.conftest import SHARED

CORE = SHARED / "conformance" / "shacl-w3c" / "tests" / "core"
SHT = rdflib.Namespace("http://www.w3.org/ns/shacl-test#")
MF = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
SH = rdflib.Namespace("http://www.w3.org/ns/shacl#")

needs_suite = pytest.mark.skipif(
    not CORE.is_dir(), reason=f"the W3C SHACL test suite is not at {CORE} (a fresh clone has no ../shared)"
)

RUN = [
    "complex/personexample",
    "misc/message-001",
    "misc/severity-001",
    "misc/severity-002",
    "node/and-001",
    "node/and-002",
    "node/class-001",
    "node/class-002",
    "node/class-003",
    "node/closed-001",
    "node/closed-002",
    "node/datatype-001",
    "node/datatype-002",
    "node/hasValue-001",
    "node/in-001",
    "node/maxInclusive-001",
    "node/minExclusive-001",
    "node/minInclusive-001",
    "node/minInclusive-002",
    "node/minInclusive-003",
    "node/minLength-001",
    "node/nodeKind-001",
    "node/not-001",
    "node/not-002",
    "node/or-001",
    "node/pattern-001",
    "node/pattern-002",
    "path/path-inverse-001",
    "path/path-sequence-001",
    "path/path-sequence-002",
    "path/path-sequence-duplicate-001",
    "property/and-001",
    "property/class-001",
    "property/datatype-001",
    "property/datatype-002",
    "property/datatype-003",
    "property/datatype-ill-formed",
    "property/hasValue-001",
    "property/in-001",
    "property/lessThan-001",
    "property/lessThan-002",
    "property/maxCount-001",
    "property/maxCount-002",
    "property/maxInclusive-001",
    "property/minCount-001",
    "property/minCount-002",
    "property/minExclusive-001",
    "property/minExclusive-002",
    "property/minLength-001",
    "property/nodeKind-001",
    "property/not-001",
    "property/or-001",
    "property/or-datatypes-001",
    "property/pattern-001",
    "property/pattern-002",
    "property/property-001",
    "targets/targetClass-001",
    "targets/targetNode-001",
    "validation-reports/shared",
]

_UNUSED = "a component the shapes do not use; the engine does not implement it"
_NOT_USED = "a feature the shapes do not use (not part of the claimed subset)"
SKIP = {
    "complex/shacl-shacl": "validates shapes with SHACL-SHACL: sh:disjoint, sh:equals, … not implemented",
    "misc/deactivated-001": _NOT_USED,
    "misc/deactivated-002": _NOT_USED,
    "node/disjoint-001": _UNUSED,
    "node/equals-001": _UNUSED,
    "node/languageIn-001": _UNUSED,
    "node/maxExclusive-001": _NOT_USED,
    "node/maxLength-001": _NOT_USED,
    "node/node-001": _NOT_USED,
    "node/qualified-001": _UNUSED,
    "node/xone-001": _NOT_USED,
    "node/xone-duplicate": _NOT_USED,
    "path/path-alternative-001": _NOT_USED,
    "path/path-complex-001": _NOT_USED,
    "path/path-complex-002": _NOT_USED,
    "path/path-oneOrMore-001": _NOT_USED,
    "path/path-strange-001": _NOT_USED,
    "path/path-strange-002": _NOT_USED,
    "path/path-unused-001": _NOT_USED,
    "path/path-zeroOrMore-001": _NOT_USED,
    "path/path-zeroOrOne-001": _NOT_USED,
    "property/disjoint-001": _UNUSED,
    "property/equals-001": _UNUSED,
    "property/languageIn-001": _UNUSED,
    "property/lessThanOrEquals-001": _UNUSED,
    "property/maxExclusive-001": _NOT_USED,
    "property/maxLength-001": _NOT_USED,
    "property/node-001": _NOT_USED,
    "property/node-002": _NOT_USED,
    "property/qualifiedMinCountDisjoint-001": _UNUSED,
    "property/qualifiedValueShape-001": _UNUSED,
    "property/qualifiedValueShapesDisjoint-001": _UNUSED,
    "property/uniqueLang-001": _UNUSED,
    "property/uniqueLang-002": _UNUSED,
    "targets/multipleTargets-001": _NOT_USED + ": sh:targetSubjectsOf",
    "targets/targetClassImplicit-001": _NOT_USED,
    "targets/targetObjectsOf-001": _NOT_USED,
    "targets/targetSubjectsOf-001": _NOT_USED,
    "targets/targetSubjectsOf-002": _NOT_USED,
}

Key = tuple[str, str | None, str]


def _test_files() -> list[str]:
    """Every test of the core suite: a file with a ``sht:Validate`` entry (not ``-data``/``-shapes``)."""
    return sorted(
        str(p.relative_to(CORE).with_suffix(""))
        for p in CORE.glob("*/*.ttl")
        if p.name != "manifest.ttl" and "sht:Validate" in p.read_text(encoding="utf-8")
    )


@needs_suite
def test_every_core_test_is_run_or_skipped_with_a_reason() -> None:
    assert set(RUN).isdisjoint(SKIP)
    assert set(_test_files()) == set(RUN) | set(SKIP)


def _expected(manifest: rdflib.Graph, result: rdflib.term.Node) -> tuple[bool, set[Key]]:
    conforms = str(manifest.value(result, SH.conforms)).lower() == "true"  # type: ignore[arg-type]
    keys: set[Key] = set()
    for res in manifest.objects(result, SH.result):  # type: ignore[arg-type]
        focus = manifest.value(res, SH.focusNode)  # type: ignore[arg-type]
        path = manifest.value(res, SH.resultPath)  # type: ignore[arg-type]
        component = manifest.value(res, SH.sourceConstraintComponent)  # type: ignore[arg-type]
        keys.add(
            (
                "_:" if isinstance(focus, BNode) else _canonical(focus) if isinstance(focus, Literal) else str(focus),
                None if path is None else (str(path) if isinstance(path, URIRef) else _path_text(manifest, path)),
                str(component),
            )
        )
    return conforms, keys


def _canonical(literal: Literal) -> str:
    """The lexical form pyoxigraph keeps: it stores numbers in canonical form ("4.0" → "4")."""
    store = ox.Store()
    value = ox.Literal(
        str(literal),
        datatype=ox.NamedNode(str(literal.datatype)) if literal.datatype else None,
        language=literal.language,
    )
    store.add(ox.Quad(ox.NamedNode("urn:s"), ox.NamedNode("urn:p"), value))
    return str(next(iter(store)).object.value)


def _local(iri: rdflib.term.Node) -> Path:
    return Path(str(iri).removeprefix("file://"))


@pytest.mark.slow  # runs the whole W3C SHACL core suite
@needs_suite
@pytest.mark.parametrize("name", RUN)
@pytest.mark.parametrize("small_focus", [-1, 10**9], ids=["scan", "focus-first"])
def test_w3c_core(name: str, small_focus: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shacl, "SMALL_FOCUS", small_focus)
    file = CORE / f"{name}.ttl"
    manifest = rdflib.Graph().parse(file, format="turtle")
    entries = list(manifest.subjects(RDF.type, SHT.Validate))
    assert entries, f"{name}: no sht:Validate entry"
    for entry in entries:
        action = manifest.value(entry, MF.action)
        data = _local(manifest.value(action, SHT.dataGraph))  # type: ignore[arg-type]
        shapes = rdflib.Graph().parse(_local(manifest.value(action, SHT.shapesGraph)), format="turtle")  # type: ignore[arg-type]
        conforms, expected = _expected(manifest, manifest.value(entry, MF.result))  # type: ignore[arg-type]
        report = validate_turtle(data, shapes)
        got = {
            ("_:" if r.focus_node.startswith("_:") else r.focus_node, r.path, r.source_constraint_component)
            for r in report.results
        }
        assert report.conforms == conforms, name
        assert got == expected, name
