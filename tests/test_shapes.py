# ruff: noqa: E501  (the expected messages are asserted verbatim, so lines stay long)
"""SHACL shapes (shapes/*.ttl) checked with pyshacl, the reference engine.

Each shape file has a conforming and a violating fixture in tests/fixtures/shapes/, validated
against that shape file alone; for a violating fixture the exact set of (focus node, path,
message) is asserted. Every loadable corpus file and every example must give no Violation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import rdflib
from rdflib.namespace import SH

from karenina_rdf import Store
from karenina_rdf._shapes import (
    SHAPES_DIR,
    ValidationReport,
    shape_files,
    shapes_graph,
    store_graph_to_rdflib,
    validate_graph_pyshacl,
)

from .conftest import EXAMPLES, ROOT, corpus_params

FIXTURES = ROOT / "tests" / "fixtures" / "shapes"
SHAPE_NAMES = [p.stem for p in shape_files()]
PREFIXES = {"http://example.org/": ":", "https://schema.org/": "schema:", "urn:karenina:vocab:": "karenina:"}

# (focus node, path, message) of every result, with the prefixes above; "_:" is a blank node.
EXPECTED: dict[str, set[tuple[str, str | None, str]]] = {
    "answer": {
        (
            ":a1",
            "schema:text",
            "A reference answer needs its text: one string, possibly empty (Question.acceptedAnswer.text)",
        ),
        (
            ":a2",
            "^schema:acceptedAnswer",
            "A reference answer belongs to exactly one question (Question.acceptedAnswer)",
        ),
        (
            ":a2",
            "schema:text",
            "A reference answer needs its text: one string, possibly empty (Question.acceptedAnswer.text)",
        ),
        (
            ":a3",
            "^schema:acceptedAnswer",
            "A reference answer belongs to exactly one question (Question.acceptedAnswer)",
        ),
        (
            ":a3",
            "schema:text",
            "A reference answer needs its text: one string, possibly empty (Question.acceptedAnswer.text)",
        ),
    },
    "benchmark": {
        (
            ":b1",
            "schema:contentRating/schema:additionalType",
            "A benchmark-level rubric trait must have a Global… additionalType, not QuestionSpecific… (DataFeed.rating[].additionalType)",
        ),
        (":b1", "schema:creator", "The benchmark creator must be one string or one Person (DataFeed.creator)"),
        (":b1", "schema:dateModified", "A benchmark needs its modification date, a string (DataFeed.dateModified)"),
        (":b1", "schema:name", "A benchmark needs a name: one non-empty string (DataFeed.name)"),
        (
            ":b1",
            "schema:version",
            'The benchmark version must be a single string, e.g. "1.0.0", not a number (DataFeed.version)',
        ),
        (
            ":b1",
            None,
            "A benchmark cannot have both questions (DataFeed.dataFeedElement) and scenarios (DataFeed.hasPart)",
        ),
        (":p", "schema:name", "A creator Person needs a name, a string (DataFeed.creator.name)"),
        (":p", "schema:url", "A creator's url must be one string (DataFeed.creator.url)"),
        (":sc2", "^schema:hasPart", "A scenario belongs to exactly one benchmark (DataFeed.hasPart)"),
        (
            ":sc2",
            "karenina:position",
            "A scenario needs its position in DataFeed.hasPart: one integer >= 0 (karenina:position)",
        ),
        (
            ":sc2",
            "karenina:scenarioJson",
            "A scenario keeps its whole JSON object as one rdf:JSON value (karenina:scenarioJson)",
        ),
    },
    "item": {
        (
            ":i1",
            "karenina:position",
            "A question entry needs its position in DataFeed.dataFeedElement: one integer >= 0 (karenina:position)",
        ),
        (":i1", "schema:dateCreated", "A question entry needs its creation date, a string (DataFeedItem.dateCreated)"),
        (
            ":i1",
            "schema:dateModified",
            "A question entry needs its modification date, a string (DataFeedItem.dateModified)",
        ),
        (":i1", "schema:item", "A question entry needs exactly one Question (DataFeedItem.item)"),
        (":i2", "schema:item", "A question entry needs exactly one Question (DataFeedItem.item)"),
        (
            ":i3",
            "^schema:dataFeedElement",
            "A question entry belongs to exactly one benchmark (DataFeed.dataFeedElement)",
        ),
        (
            ":i3",
            "karenina:position",
            "A question entry needs its position in DataFeed.dataFeedElement: one integer >= 0 (karenina:position)",
        ),
        (":i3", "schema:item", "A question entry needs exactly one Question (DataFeedItem.item)"),
        (
            "_:",
            "^schema:dataFeedElement",
            "A question entry belongs to exactly one benchmark (DataFeed.dataFeedElement)",
        ),
        ("_:", None, "A question entry must be a node with an IRI (DataFeed.dataFeedElement[])"),
    },
    "property-value": {
        (":pv0", "schema:name", "An additional property needs a name, a string (PropertyValue.name)"),
        (
            ":pv0",
            "schema:value",
            "An additional property has at most one value, a JSON value: string, boolean, integer, number, array or object (PropertyValue.value)",
        ),
        (
            ":pv1",
            "schema:value",
            "An additional property has at most one value, a JSON value: string, boolean, integer, number, array or object (PropertyValue.value)",
        ),
        (
            ":pv2",
            "^schema:additionalProperty",
            "An additional property belongs to exactly one benchmark, question or trait (additionalProperty)",
        ),
        (
            ":pv2",
            "karenina:position",
            "An additional property needs its position in the additionalProperty list: one integer >= 0 (karenina:position)",
        ),
        (
            ":pv2",
            "schema:value",
            "An additional property has at most one value, a JSON value: string, boolean, integer, number, array or object (PropertyValue.value)",
        ),
    },
    "question": {
        (
            ":q1",
            "karenina:author",
            "The question author should be a JSON object or a string (additionalProperty author)",
        ),
        (
            ":q1",
            "karenina:finished",
            "The question's 'finished' flag must be one boolean (additionalProperty finished)",
        ),
        (
            ":q1",
            "karenina:textMd5",
            "A question needs the MD5 of its text: 32 lowercase hex characters (karenina:textMd5)",
        ),
        (
            ":q1",
            "schema:acceptedAnswer",
            "A question needs exactly one reference answer, an Answer node (Question.acceptedAnswer)",
        ),
        (
            ":q1",
            "schema:hasPart",
            "This question has no answer template (Question.hasPart): it can only run rubric_only, and Karenina refuses such a file",
        ),
        (":q1", "schema:text", "A question needs its text: one non-empty string (Question.text)"),
        (":q2", "^schema:item", "A question is the item of exactly one question entry (DataFeedItem.item)"),
        (":q2", "karenina:workspacePath", "The workspace path must be one string (additionalProperty workspace_path)"),
        (
            ":q2",
            "schema:hasPart",
            "A question has at most one answer template, a SoftwareSourceCode node (Question.hasPart)",
        ),
        (":q2", "schema:isPartOf", "A question belongs to exactly one benchmark (schema:isPartOf a DataFeed)"),
        (":q2", "schema:keywords", "Each keyword must be a string (Question.keywords)"),
    },
    "template": {
        (
            ":t1",
            "karenina:templateId",
            "An answer template needs Karenina's template id: 32 lowercase hex characters, or no_template for a blank template (karenina:templateId)",
        ),
        (":t1", "schema:name", "An answer template needs a name, a string (SoftwareSourceCode.name)"),
        (
            ":t1",
            "schema:programmingLanguage",
            'An answer template\'s language must be exactly "Python" (SoftwareSourceCode.programmingLanguage)',
        ),
        (
            ":t1",
            "schema:text",
            "The answer template is empty (SoftwareSourceCode.text): Karenina loads it but cannot verify answers with it",
        ),
        (":t2", "^schema:hasPart", "An answer template belongs to exactly one question (Question.hasPart)"),
        (":t2", "schema:text", "An answer template needs its Python source, a string (SoftwareSourceCode.text)"),
    },
    "trait-agentic": {
        (":t1", "karenina:maxTurns", "max_turns must be one positive integer (Rating additionalProperty max_turns)"),
        (":t1", "schema:description", "An agentic trait needs a non-empty description (Rating.description)"),
        (
            ":t1",
            None,
            "materialize_trace cannot be used with context_mode workspace_only (Rating additionalProperty materialize_trace)",
        ),
        (
            ":t2",
            "karenina:contextMode",
            "context_mode must be 'workspace_only', 'trace_and_workspace' or 'trace_only' (Rating additionalProperty context_mode)",
        ),
        (
            ":t2",
            "karenina:timeoutSeconds",
            "timeout_seconds must be one positive integer (Rating additionalProperty timeout_seconds)",
        ),
        (
            ":t2",
            "karenina:traitKind",
            "An agentic trait is boolean, score, literal or a template (additionalProperty kind)",
        ),
        (":t2", "schema:description", "An agentic trait needs a non-empty description (Rating.description)"),
    },
    "trait-callable": {
        (
            ":t1",
            "karenina:callableCode",
            "This callable trait has no code (Rating additionalProperty callable_code): Karenina loads it, but it cannot be evaluated",
        ),
        (
            ":t2",
            "karenina:callableCode",
            "This callable trait has no code (Rating additionalProperty callable_code): Karenina loads it, but it cannot be evaluated",
        ),
        (
            ":t3",
            "karenina:callableCode",
            "callable_code must be one standard base64 string (Rating additionalProperty callable_code)",
        ),
        (":t3", "karenina:traitKind", "A callable trait is boolean, score or literal (additionalProperty kind)"),
    },
    "trait-llm": {
        (
            ":t",
            "karenina:deepJudgmentEnabled",
            "deep_judgment_enabled must be true or false (Rating additionalProperty deep_judgment_enabled)",
        ),
        (
            ":t",
            "karenina:deepJudgmentFuzzyMatchThreshold",
            "deep_judgment_fuzzy_match_threshold must be one number from 0 to 1 (Rating additionalProperty deep_judgment_fuzzy_match_threshold)",
        ),
        (
            ":t",
            "karenina:deepJudgmentMaxExcerpts",
            "deep_judgment_max_excerpts must be one integer (Rating additionalProperty deep_judgment_max_excerpts)",
        ),
        (":t", "karenina:traitKind", "An LLM trait is boolean, score, literal or a template (additionalProperty kind)"),
    },
    "trait-metric": {
        (
            ":t1",
            "karenina:metrics",
            "A metric trait needs at least one metric, a list such as ['precision', 'recall'] (Rating additionalProperty metrics)",
        ),
        (
            ":t1",
            "karenina:tpInstructions",
            "A metric trait needs tp_instructions, a non-empty list (Rating additionalProperty tp_instructions)",
        ),
        (
            ":t2",
            "karenina:evaluationMode",
            "evaluation_mode must be 'tp_only' or 'full_matrix' (Rating additionalProperty evaluation_mode)",
        ),
        (
            ":t2",
            "karenina:metrics",
            "A metric trait needs at least one metric, a list such as ['precision', 'recall'] (Rating additionalProperty metrics)",
        ),
        (
            ":t2",
            "karenina:repeatedExtraction",
            "repeated_extraction must be true or false (Rating additionalProperty repeated_extraction)",
        ),
        (
            ":t2",
            "karenina:tpInstructions",
            "A metric trait needs tp_instructions, a non-empty list (Rating additionalProperty tp_instructions)",
        ),
        (":t2", "karenina:traitKind", "A metric trait is always of kind metric (MetricRubricTrait)"),
        (
            ":t2",
            None,
            "full_matrix evaluation needs tn_instructions, a non-empty list (Rating additionalProperty tn_instructions)",
        ),
        (
            ":t3",
            None,
            "full_matrix evaluation needs tn_instructions, a non-empty list (Rating additionalProperty tn_instructions)",
        ),
    },
    "trait-regex": {
        (
            ":t1",
            "karenina:pattern",
            "This regex trait has no pattern (Rating additionalProperty pattern): Karenina loads it, but it matches every answer",
        ),
        (
            ":t2",
            "karenina:pattern",
            "This regex trait has no pattern (Rating additionalProperty pattern): Karenina loads it, but it matches every answer",
        ),
        (
            ":t3",
            "karenina:caseSensitive",
            "case_sensitive must be true or false (Rating additionalProperty case_sensitive)",
        ),
        (":t3", "karenina:pattern", "A regex pattern must be one string (Rating additionalProperty pattern)"),
        (":t3", "karenina:traitKind", "A regex trait is always boolean (RegexRubricTrait)"),
    },
    "trait": {
        (
            ":t0",
            "schema:additionalType",
            "A rubric trait needs exactly one additionalType, one of the 14 karenina:…Trait types (Rating.additionalType)",
        ),
        (
            ":t0",
            "schema:bestRating",
            "A rubric trait needs bestRating: one number, stored as xsd:double (Rating.bestRating)",
        ),
        (":t0", "schema:name", "A rubric trait name may not contain '.' (Rating.name; Karenina's Rubric refuses it)"),
        (
            ":t0",
            None,
            "A rubric trait must be a node with an IRI, typed with its trait class (karenina:LLMRubricTrait, RegexRubricTrait, CallableRubricTrait, MetricRubricTrait or AgenticRubricTrait)",
        ),
        (
            ":t1",
            "karenina:higherIsBetter",
            "higher_is_better must be true or false (Rating additionalProperty higher_is_better)",
        ),
        (":t1", "karenina:minScore", "min_score must be one integer (Rating additionalProperty min_score)"),
        (
            ":t1",
            "karenina:traitKind",
            "A rubric trait has one kind: boolean, score, literal, a template, or metric (additionalProperty kind)",
        ),
        (
            ":t1",
            "schema:additionalType",
            "A rubric trait needs exactly one additionalType, one of the 14 karenina:…Trait types (Rating.additionalType)",
        ),
        (
            ":t1",
            "schema:bestRating",
            "A rubric trait needs bestRating: one number, stored as xsd:double (Rating.bestRating)",
        ),
        (":t1", "schema:name", "A rubric trait needs a name: one non-empty string (Rating.name)"),
        (
            ":t1",
            "schema:worstRating",
            "A rubric trait needs worstRating: one number, stored as xsd:double (Rating.worstRating)",
        ),
        (
            ":t2",
            "karenina:dynamicTraitType",
            "Unknown dynamic_trait_type (llm, regex, callable, metric or agentic): Karenina skips this dynamic trait",
        ),
        (
            ":t2",
            None,
            "A literal trait needs its classes: an object of 2 to 20 class names (Rating additionalProperty classes)",
        ),
        (
            ":t3",
            None,
            "A score trait's range is empty: min_score must be less than max_score (Rating additionalProperty min_score, max_score)",
        ),
        (
            ":t4",
            "^schema:contentRating",
            "A rubric trait belongs to exactly one benchmark or question (DataFeed.rating or Question.rating)",
        ),
    },
}


def _short(term: str | None) -> str | None:
    if term is None:
        return None
    term = term.replace("<", "").replace(">", "")
    for iri, prefix in PREFIXES.items():
        term = term.replace(iri, prefix)
    return term


def _validate_fixture(name: str) -> ValidationReport:
    shape = name.rsplit("-", 1)[0]
    data = rdflib.Graph().parse(FIXTURES / name, format="turtle")
    return validate_graph_pyshacl(data, shapes_graph([f"{shape}.ttl"]))


def test_every_shape_file_has_fixtures_and_expectations() -> None:
    assert SHAPE_NAMES, f"no shape files in {SHAPES_DIR}"
    for shape in SHAPE_NAMES:
        assert (FIXTURES / f"{shape}-conforms.ttl").is_file(), shape
        assert (FIXTURES / f"{shape}-violates.ttl").is_file(), shape
    assert set(EXPECTED) == set(SHAPE_NAMES)


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_conforming_fixture(shape: str) -> None:
    report = _validate_fixture(f"{shape}-conforms.ttl")
    assert report.conforms, [r.message for r in report.results]
    assert report.results == []


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_violating_fixture(shape: str) -> None:
    report = _validate_fixture(f"{shape}-violates.ttl")
    assert not report.conforms
    got = {
        (_short(r.focus_node) if r.focus_node.startswith("http") else "_:", _short(r.path), r.message)
        for r in report.results
    }
    assert got == EXPECTED[shape]


def test_severities_and_result_fields() -> None:
    report = _validate_fixture("question-violates.ttl")
    warnings = {(_short(r.focus_node), _short(r.path)) for r in report.warnings}
    assert warnings == {(":q1", "schema:hasPart"), (":q1", "karenina:author")}
    text = next(r for r in report.results if r.path == "https://schema.org/text")
    assert text.severity == "Violation"
    assert text.source_shape == "urn:karenina-rdf:shapes:QuestionShape-text"
    assert text.source_constraint_component == str(SH.MinLengthConstraintComponent)
    assert text.value == ""
    with pytest.raises(ValueError):
        text.message = "changed"  # type: ignore[misc]


def test_every_property_shape_has_message_and_severity() -> None:
    for path in shape_files():
        g = rdflib.Graph().parse(path, format="turtle")
        assert any(g.triples((None, SH.message, None))), f"{path.name} has no sh:message"
        props = set(g.subjects(SH.path, None)) | set(g.objects(None, SH.property))
        named = {p for p in props if isinstance(p, rdflib.URIRef)}
        assert named, f"{path.name} has no property shapes"
        for prop in named:
            assert g.value(prop, SH.severity) is not None, f"{path.name}: {prop} has no sh:severity"
            assert g.value(prop, SH.message) is not None, f"{path.name}: {prop} has no sh:message"
        for node in g.subjects(rdflib.RDF.type, SH.NodeShape):
            assert str(node).startswith("urn:karenina-rdf:shapes:"), node
        assert not any(g.triples((None, SH.sparql, None))), f"{path.name} uses sh:sparql (SHACL Core only)"


def test_shape_files_start_with_a_comment() -> None:
    for path in shape_files():
        assert path.read_text(encoding="utf-8").startswith("# "), path.name


def _validate_file(path: Path) -> ValidationReport:
    store = Store.memory()
    try:
        result = store.import_checkpoint(path)
        graph = store.graph_of(result.iri)[1]
        return validate_graph_pyshacl(store_graph_to_rdflib(store, graph))
    finally:
        store.close()


@pytest.mark.parametrize("path", corpus_params(loadable_only=True))
def test_corpus_has_no_violations(path: Path) -> None:
    report = _validate_file(path)
    assert report.violations == [], [(r.focus_node, r.path, r.message) for r in report.violations]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.jsonld")), ids=lambda p: p.name)
def test_examples_conform(path: Path) -> None:
    report = _validate_file(path)
    assert report.conforms, [(r.focus_node, r.path, r.message) for r in report.results]
