"""The Python checks (karenina_rdf.validation._checks): each with a passing and a failing graph, the corpus
and the examples, and the evaluation modes each question is ready for."""

from __future__ import annotations

import base64
from pathlib import Path

import pyoxigraph as ox
import pytest

from karenina_rdf import Store, template_id
from karenina_rdf.checkpoint._template_defaults import default_template
from karenina_rdf.rdf._ids import md5_hex
from karenina_rdf.validation import _checks
from karenina_rdf.validation._checks import CHECKS, CHECKS_NS, TemplateCache, evaluation_modes, run_checks
from tests.conftest import EXAMPLES, corpus_params

PREFIXES = """
@prefix schema: <https://schema.org/> .
@prefix karenina: <urn:karenina:vocab:> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix : <http://ex.org/b/> .
@base <http://ex.org/b/> .
"""
GRAPH = ox.NamedNode("http://ex.org/b/graph/0")
K = "urn:karenina:vocab:"
S = "https://schema.org/"
T = "http://ex.org/b/traits/t"
C = "http://ex.org/b/questions/q/template"
Q = "http://ex.org/b/questions/q"

GOOD_TEMPLATE = default_template("What is 2+2?")
VERIFY_TEMPLATE = """class Answer(BaseAnswer):
    value: int = Field(description="the number")

    def model_post_init(self, __context):
        self.correct = {"value": 4}

    def verify(self) -> bool:
        return self.value == 4
"""


def _lit(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _load(turtle: str) -> ox.Store:
    store = ox.Store()
    store.load((PREFIXES + turtle).encode("utf-8"), format=ox.RdfFormat.TURTLE, to_graph=GRAPH)
    return store


def _template(code: str, tid: str | None = None) -> str:
    return f"<questions/q/template> a schema:SoftwareSourceCode ; schema:text {_lit(code)} ; " + (
        f"karenina:templateId {_lit(template_id(code) if tid is None else tid)} ."
    )


CASES = [
    # (id, turtle, expected: None or (check name, focus, path, message fragment))
    ("regex-ok", '<traits/t> a karenina:RegexRubricTrait ; karenina:pattern "^[A-Z]+\\\\d$" .', None),
    (
        "regex-bad",
        '<traits/t> a karenina:RegexRubricTrait ; karenina:pattern "([a-z]" .',
        ("RegexCompiles", T, K + "pattern", "The regex pattern '([a-z]' does not compile in Python"),
    ),
    (
        "callable-ok",
        f'<traits/t> a karenina:CallableRubricTrait ; karenina:callableCode "{base64.b64encode(b"x" * 10).decode()}"'
        "^^xsd:base64Binary .",
        None,
    ),
    ("callable-empty", '<traits/t> a karenina:CallableRubricTrait ; karenina:callableCode "" .', None),
    (
        "callable-bad",
        '<traits/t> a karenina:CallableRubricTrait ; karenina:callableCode "not base64!" .',
        ("CallableCodeDecodes", T, K + "callableCode", "callable_code is not standard base64"),
    ),
    (
        "classes-ok",
        '<traits/t> karenina:traitKind "literal" ; karenina:classes "{\\"a\\":\\"A\\",\\"b\\":\\"B\\"}"^^rdf:JSON .',
        None,
    ),
    (
        "classes-one",
        '<traits/t> karenina:traitKind "literal" ; karenina:classes "{\\"a\\":\\"A\\"}"^^rdf:JSON .',
        ("LiteralClasses", T, K + "classes", "has 1 classes; a literal trait needs 2 to 20"),
    ),
    (
        "classes-too-many",
        '<traits/t> karenina:traitKind "literal" ; karenina:classes '
        + _lit("{" + ",".join(f'"c{i}":"d"' for i in range(21)) + "}")
        + "^^rdf:JSON .",
        ("LiteralClasses", T, K + "classes", "has 21 classes; a literal trait needs 2 to 20"),
    ),
    (
        "classes-not-string",
        '<traits/t> karenina:traitKind "literal" ; karenina:classes "{\\"a\\":\\"A\\",\\"b\\":3}"^^rdf:JSON .',
        ("LiteralClasses", T, K + "classes", "has descriptions that are not strings (classes 'b')"),
    ),
    (
        "classes-not-json",
        '<traits/t> karenina:traitKind "literal" ; karenina:classes "a, b" .',
        ("LiteralClasses", T, K + "classes", "The classes of this literal trait is not JSON"),
    ),
    (
        "metrics-tp-ok",
        '<traits/t> a karenina:MetricRubricTrait ; karenina:metrics "[\\"precision\\",\\"f1\\"]"^^rdf:JSON .',
        None,
    ),
    (
        "metrics-full-ok",
        '<traits/t> a karenina:MetricRubricTrait ; karenina:evaluationMode "full_matrix" ; '
        'karenina:metrics "[\\"specificity\\",\\"accuracy\\"]"^^rdf:JSON .',
        None,
    ),
    (
        "metrics-tp-bad",
        '<traits/t> a karenina:MetricRubricTrait ; karenina:evaluationMode "tp_only" ; '
        'karenina:metrics "[\\"precision\\",\\"accuracy\\"]"^^rdf:JSON .',
        ("MetricsAllowedForMode", T, K + "metrics", "Metric(s) 'accuracy' are not allowed with evaluation_mode"),
    ),
    (
        "metrics-legacy-string-bad",
        '<traits/t> a karenina:MetricRubricTrait ; karenina:metrics "[\\"auc\\"]" .',
        ("MetricsAllowedForMode", T, K + "metrics", "Metric(s) 'auc' are not allowed with evaluation_mode 'tp_only'"),
    ),
    ("template-default-ok", _template(GOOD_TEMPLATE), None),
    ("template-verify-ok", _template(VERIFY_TEMPLATE), None),
    ("template-empty-skipped", _template(""), None),
    (
        "template-syntax",
        _template("class Answer(BaseAnswer:\n    pass\n"),
        ("TemplateParses", C, S + "text", "The answer template is not valid Python"),
    ),
    (
        # Karenina finds the answer class by any name (find_answer_class): no finding.
        "template-other-class-name-ok",
        _template("class Reply(BaseAnswer):\n    def verify(self):\n        return True\n"),
        None,
    ),
    (
        "template-wrong-base",
        _template("class Answer(object):\n    def verify(self):\n        return True\n"),
        ("TemplateDefinesAnswer", C, S + "text", "it has no top-level class deriving from BaseAnswer"),
    ),
    (
        "template-two-leaves",
        _template("class A(BaseAnswer):\n    pass\n\nclass B(BaseAnswer):\n    pass\n"),
        ("TemplateDefinesAnswer", C, S + "text", "it has 2 leaf classes deriving from BaseAnswer (A, B)"),
    ),
    (
        "template-verify-inherited-ok",
        _template(
            "class Base(BaseAnswer):\n    def verify(self):\n        return 1\n\nclass Final(Base):\n    x: int = 1\n"
        ),
        None,
    ),
    (
        "template-intermediate-base-ok",
        _template(
            "class Base(BaseAnswer):\n    pass\n\nclass Answer(Base):\n    def verify(self):\n        return 1\n"
        ),
        None,
    ),
    (
        "template-no-verify",
        _template("class Answer(BaseAnswer):\n    x: int = 1\n"),
        ("TemplateDefinesVerify", C, S + "text", "The answer class Answer defines no verify() method"),
    ),
    (
        "template-id-bad",
        _template(GOOD_TEMPLATE, tid="0" * 32),
        ("TemplateIdMatches", C, K + "templateId", f"karenina:templateId '{'0' * 32}' is not the template id"),
    ),
    (
        "md5-ok",
        f'<questions/q> a schema:Question ; schema:text "Why?" ; karenina:textMd5 "{md5_hex("Why?")}" .',
        None,
    ),
    (
        "md5-bad",
        f'<questions/q> a schema:Question ; schema:text "Why not?" ; karenina:textMd5 "{md5_hex("Why?")}" .',
        ("TextMd5Matches", Q, K + "textMd5", "is not the MD5 of the question text"),
    ),
    (
        "shadowed-item",
        "<> schema:dataFeedElement <items/q> ; karenina:shadowedItem <shadowed/0> . "
        '<items/q> karenina:position 1 ; schema:item <questions/q> . <questions/q> schema:identifier "q" . '
        '<shadowed/0> karenina:position 0 ; schema:identifier "q" .',
        (
            "NoShadowedItem",
            "http://ex.org/b/shadowed/0",
            K + "shadowedItem",
            "question id 'q' is also used at /dataFeedElement/1, the item Karenina answers with",
        ),
    ),
]


@pytest.mark.parametrize(("turtle", "expected"), [pytest.param(t, e, id=i) for i, t, e in CASES])
def test_check(turtle: str, expected: tuple[str, str, str, str] | None) -> None:
    results = run_checks(_load(turtle), [GRAPH])
    if expected is None:
        assert results == []
        return
    name, focus, path, fragment = expected
    assert len(results) == 1, results
    (r,) = results
    assert r.source_constraint_component == r.source_shape == CHECKS_NS + name
    assert (r.focus_node, r.path) == (focus, path)
    assert fragment in r.message
    check = next(c for c in CHECKS if c.name == name)
    assert r.severity == check.severity


@pytest.mark.parametrize(("turtle", "expected"), [pytest.param(t, e, id=i) for i, t, e in CASES])
def test_template_cache_gives_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, turtle: str, expected: object
) -> None:
    store = _load(turtle)
    uncached = run_checks(store, [GRAPH])
    assert run_checks(store, [GRAPH], cache=TemplateCache(tmp_path)) == uncached  # fills the file
    templates = "SoftwareSourceCode" in turtle
    assert any(tmp_path.iterdir()) == templates

    def no_parsing(code: str) -> object:
        raise AssertionError("a cached template was parsed again")

    monkeypatch.setattr(_checks, "template_problems", no_parsing)
    assert run_checks(store, [GRAPH], cache=TemplateCache(tmp_path)) == uncached  # read back from the file


def test_template_cache_survives_a_torn_line(tmp_path: Path) -> None:
    store = _load(_template("x = 1\n"))
    run_checks(store, [GRAPH], cache=TemplateCache(tmp_path))
    (cache_file,) = tmp_path.iterdir()
    cache_file.write_text(cache_file.read_text(encoding="utf-8") + '["abc", [[', encoding="utf-8")
    (r,) = run_checks(store, [GRAPH], cache=TemplateCache(tmp_path))
    assert r.source_constraint_component == CHECKS_NS + "TemplateDefinesAnswer"


def test_every_check_has_a_failing_case() -> None:
    failing = {e[0] for _, _, e in CASES if e is not None}
    assert failing == {c.name for c in CHECKS}
    assert len({c.iri for c in CHECKS}) == len(CHECKS)


def test_other_graphs_are_not_checked() -> None:
    store = _load('<traits/t> a karenina:RegexRubricTrait ; karenina:pattern "(" .')
    assert run_checks(store, [ox.NamedNode("http://ex.org/other")]) == []


def _import(store: Store, path: Path) -> ox.NamedNode:
    r = store.import_checkpoint(path)
    graph = store.graph_of(r.iri)[1]
    assert isinstance(graph, ox.NamedNode)
    return graph


@pytest.mark.parametrize("path", corpus_params(loadable_only=True))
def test_corpus_has_no_violation(store: Store, path: Path) -> None:
    results = run_checks(store.oxigraph, [_import(store, path)])
    assert [r for r in results if r.severity == "Violation"] == []


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.jsonld")), ids=lambda p: p.name)
def test_examples_pass_and_are_ready_for_every_mode(store: Store, path: Path) -> None:
    graph = _import(store, path)
    assert run_checks(store.oxigraph, [graph]) == []
    modes = evaluation_modes(store.oxigraph, graph)
    assert modes
    assert all(m == ALL_MODES for m in modes.values()), modes


ALL_MODES = ["template_only", "template_and_rubric", "rubric_only"]
MODE_CASES = [
    # (id, question template turtle, question traits, global traits, expected modes)
    ("template-and-traits", _template(VERIFY_TEMPLATE), 1, 0, ALL_MODES),
    ("template-global-trait", _template(VERIFY_TEMPLATE), 0, 1, ALL_MODES),
    ("template-no-traits", _template(VERIFY_TEMPLATE), 0, 0, ["template_only"]),
    ("no-template-traits", "", 1, 0, ["rubric_only"]),
    ("no-template-no-traits", "", 0, 0, []),
    (
        "default-template",
        _template(GOOD_TEMPLATE) + " <questions/q/template> karenina:isDefaultTemplate true .",
        0,
        1,
        ["rubric_only"],
    ),
    ("empty-template", _template("  \n"), 1, 0, ["rubric_only"]),
]


@pytest.mark.parametrize(
    ("template", "q_traits", "g_traits", "expected"), [pytest.param(*c[1:], id=c[0]) for c in MODE_CASES]
)
def test_evaluation_modes(template: str, q_traits: int, g_traits: int, expected: list[str]) -> None:
    turtle = ':b a schema:DataFeed . <questions/q> a schema:Question ; schema:text "Q?" .\n'
    if template:
        turtle += template + "\n<questions/q> schema:hasPart <questions/q/template> .\n"
    for i in range(q_traits):
        turtle += f"<questions/q> schema:contentRating <questions/q/traits/t{i}> .\n"
    for i in range(g_traits):
        turtle += f":b schema:contentRating <traits/g{i}> .\n"
    assert evaluation_modes(_load(turtle), GRAPH) == {Q: expected}


@pytest.mark.parametrize("path", corpus_params(loadable_only=True))
def test_corpus_questions_without_real_template_are_rubric_only_at_most(store: Store, path: Path) -> None:
    graph = _import(store, path)
    modes = evaluation_modes(store.oxigraph, graph)
    rows = store.oxigraph.query(
        "SELECT ?q WHERE { ?q a <https://schema.org/Question> "
        "FILTER NOT EXISTS { ?q <https://schema.org/hasPart> ?c . "
        "FILTER NOT EXISTS { ?c <urn:karenina:vocab:isDefaultTemplate> true } } }",
        default_graph=graph,
    )
    assert isinstance(rows, ox.QuerySolutions)
    for row in rows:
        q = row["q"]
        assert q is not None
        assert modes[q.value] in ([], ["rubric_only"])
