"""docs/shapes.md is generated from shapes/*.ttl and the Python checks, and must not drift."""

from __future__ import annotations

import rdflib
from rdflib import RDF, Namespace

from karenina_rdf.validation._checks import CHECKS
from karenina_rdf.validation._docs import render
from karenina_rdf.validation._shapes import SH, shape_files
from tests.conftest import ROOT

DOC = ROOT / "docs" / "shapes.md"
SH_NS = Namespace(SH)
KS = "urn:karenina-rdf:shapes:"


def test_doc_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/shapes.md is out of date: regenerate it with `python -m karenina_rdf.validation._docs > docs/shapes.md`"
    )


def test_every_shape_file_and_shape_is_documented() -> None:
    doc = render()
    for path in shape_files():
        assert f"## `{path.name}`" in doc, path.name
        g = rdflib.Graph().parse(path, format="turtle")
        shapes = set(g.subjects(RDF.type, SH_NS["NodeShape"])) | set(g.subjects(RDF.type, SH_NS["PropertyShape"]))
        shapes |= set(g.objects(None, SH_NS["property"]))
        assert shapes, path.name
        for shape in shapes:
            if isinstance(shape, rdflib.URIRef):
                assert f"`ks:{str(shape).removeprefix(KS)}`" in doc, shape
        for message in g.objects(None, SH_NS["message"]):
            assert str(message).replace("|", "\\|") in doc, message


def test_every_check_is_documented() -> None:
    doc = render()
    for check in CHECKS:
        assert f"`checks:{check.name}` |" in doc, check.name
        assert f"| {check.severity} |" in doc
