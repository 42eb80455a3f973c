"""The token scanner behind the endpoint's SERVICE/LOAD refusal and its USING clauses."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from karenina_rdf.sparql._text import (
    add_using,
    dataset_clauses,
    load_targets,
    names_dataset,
    service_targets,
    tokens,
    url_allowed,
)

SERVICE_CASES = [
    ("SELECT * { SERVICE <http://a/sparql> { ?s ?p ?o } }", ["http://a/sparql"]),
    ("select * { service silent <http://a/> { ?s ?p ?o } }", ["http://a/"]),
    ("PREFIX ex: <http://ex/> SELECT * { SERVICE ex:sparql { ?s ?p ?o } }", ["http://ex/sparql"]),
    ("SELECT * { ?x <http://p> ?svc SERVICE ?svc { ?s ?p ?o } }", [None]),
    ("BASE <http://b/dir/> SELECT * { SERVICE <sparql> { ?s ?p ?o } }", ["http://b/dir/sparql"]),
    ("SELECT * { SERVICE schema:x { ?s ?p ?o } }", ["https://schema.org/x"]),  # a predeclared prefix
    # The word SERVICE in a string, an IRI, a comment or a name is no SERVICE call.
    ('SELECT * { ?s ?p "SERVICE <http://a/>" }', []),
    ("SELECT * { ?s <http://SERVICE/x> ?o } # SERVICE <http://a/>", []),
    ("SELECT ?SERVICE { ?SERVICE ?p ?o }", []),
    ("SELECT * { ?s ?p '''x\n SERVICE <http://a/> '''}", []),
    (
        "SELECT * { SERVICE <http://a/> { ?s ?p ?o } SERVICE <http://b/> { ?s ?p ?o } }",
        ["http://a/", "http://b/"],
    ),
]


E = "http://127.0.0.1:9/sparql"
# Shapes that once hid a SERVICE from the scan (a review of the endpoint found each one reaching
# an outside server): the scan must split the text where SPARQL's own terminals do.
HIDDEN_SERVICE = [
    f"SELECT * WHERE {{ ?s ?p ?o.SERVICE <{E}> {{ ?a ?b ?x }} }}",
    f"SELECT * WHERE {{ BIND(1 AS ?o) ?s ?p ?o.SERVICE <{E}> {{ ?a ?b ?x }} }}",
    f"SELECT * WHERE {{ ?s ?p 'x'.SERVICE <{E}> {{ ?a ?b ?x }} }}",
    f"SELECT * WHERE {{ ?s ?p <http://x/>.SERVICE <{E}> {{ ?a ?b ?x }} }}",
    f"SELECT * WHERE {{ ?s ?p 1.SERVICE <{E}> {{ ?a ?b ?x }} }}",
    f"SELECT * WHERE {{ BIND(1 AS ?z).SERVICE <{E}> {{ ?a ?b ?x }} }}",
    "SELECT * WHERE { SERVICE <" + E.replace("sparql", r"\u0073parql") + "> { ?s ?p ?x } }",
    "SELECT * WHERE { SERVICE <" + E.replace("sparql", r"\U00000073parql") + "> { ?s ?p ?x } }",
    f"PREFIX ex: <http://e/>\nSELECT * WHERE {{ BIND(ex:a\\# AS ?z) SERVICE <{E}> {{ ?s ?p ?x }} }}",
    f"PREFIX ex: <http://e/>\nSELECT * WHERE {{ BIND(ex:a\\' AS ?z) SERVICE <{E}> {{ ?s ?p ?x }} FILTER(?x != 'q') }}",
    f"SELECT * WHERE {{ BIND(<http://x/\u00a0#> AS ?z) SERVICE <{E}> {{ ?s ?p ?x }} }}",
    # The keyword glued to a prefixed name: pyoxigraph reads SERVICE and then the name (issue 17).
    f"PREFIX : <{E[:-6]}> SELECT * WHERE {{ SERVICE:sparql {{ ?s ?p ?x }} }}",
    f"PREFIX e: <{E[:-6]}> SELECT * WHERE {{ SERVICEe:sparql {{ ?s ?p ?x }} }}",
]


@pytest.mark.parametrize("text", HIDDEN_SERVICE)
def test_hidden_service_is_found(text: str) -> None:
    ox.Store().query(text.replace(E, "http://127.0.0.1:9/x").replace("SERVICE", "GRAPH"))  # valid SPARQL
    assert service_targets(text) == [E]


@pytest.mark.parametrize(
    "text",
    [
        "LOAD zz:data",  # an undeclared prefix
        "SELECT * { SERVICE ex:x { ?s ?p ?o } }",  # an undeclared prefix
        "SELECT * { SERVICE ?where { ?s ?p ?o } }",
    ],
)
def test_what_the_scan_cannot_resolve_is_refused(text: str) -> None:
    targets = service_targets(text) + load_targets(text)
    assert targets and all(t in (None, "") for t in targets)


@pytest.mark.parametrize(("text", "expected"), SERVICE_CASES)
def test_service_targets(text: str, expected: list[str | None]) -> None:
    assert service_targets(text, {"schema": "https://schema.org/"}) == expected


LOAD_CASES = [
    ("LOAD <http://a/data.ttl>", ["http://a/data.ttl"]),
    ("load silent <http://a/x> INTO GRAPH <http://g>", ["http://a/x"]),
    ("PREFIX d: <file:///etc/> LOAD d:passwd", ["file:///etc/passwd"]),
    ("LOAD <http://a/\\u0064ata>", ["http://a/data"]),
    ("PREFIX ex: <http://e/> INSERT DATA { ex:a\\# ex:b 1 } ; LOAD <http://a/x>", ["http://a/x"]),
    ("INSERT DATA { <http://s> <http://p> 'LOAD <http://a/>' }", []),
    ("PREFIX : <http://a/> LOAD:x", ["http://a/x"]),  # the keyword glued to a prefixed name
    ("PREFIX e: <http://a/> LOADe:x", ["http://a/x"]),
    ("PREFIX : <http://a/> load:x", ["http://a/x"]),
    ("PREFIX loader: <http://s/> INSERT DATA { loader:a loader:b 1 }", []),  # a name, no LOAD
]


@pytest.mark.parametrize(("text", "expected"), LOAD_CASES)
def test_load_targets(text: str, expected: list[str]) -> None:
    assert load_targets(text) == expected


USING_CASES = [
    # (update, default, named, expected text)
    (
        "INSERT { GRAPH <http://out> { ?s a <http://C> } } WHERE { ?s ?p ?o }",
        ["http://g1"],
        [],
        "INSERT { GRAPH <http://out> { ?s a <http://C> } } USING <http://g1> WHERE { ?s ?p ?o }",
    ),
    (
        "DELETE { ?s ?p ?o } INSERT { ?s ?p 1 } WHERE { ?s ?p ?o } ; INSERT { ?a ?b 2 } WHERE { ?a ?b ?c }",
        ["http://g1"],
        ["http://n1"],
        "DELETE { ?s ?p ?o } INSERT { ?s ?p 1 } USING <http://g1> USING NAMED <http://n1> WHERE { ?s ?p ?o } ; "
        "INSERT { ?a ?b 2 } USING <http://g1> USING NAMED <http://n1> WHERE { ?a ?b ?c }",
    ),
    # DELETE WHERE and INSERT DATA take no USING; a WHERE inside a group is not an operation's.
    ("DELETE WHERE { ?s ?p ?o }", ["http://g1"], [], "DELETE WHERE { ?s ?p ?o }"),
    (
        "INSERT DATA { <http://a> <http://b> 'WHERE' }",
        ["http://g1"],
        [],
        "INSERT DATA { <http://a> <http://b> 'WHERE' }",
    ),
    ("INSERT { ?s ?p ?o } WHERE { ?s ?p ?o }", [], [], "INSERT { ?s ?p ?o } WHERE { ?s ?p ?o }"),
]


@pytest.mark.parametrize(("update", "default", "named", "expected"), USING_CASES)
def test_add_using(update: str, default: list[str], named: list[str], expected: str) -> None:
    result = add_using(update, default, named)
    assert result == expected
    ox.Store().update(result)  # still a valid update


def test_add_using_changes_what_the_update_reads() -> None:
    store = ox.Store()
    store.update(
        "INSERT DATA { GRAPH <http://g1> { <http://a> a <http://Doc> } "
        "GRAPH <http://g2> { <http://b> a <http://Doc> } }"
    )
    update = "INSERT { GRAPH <http://out> { ?s a <http://Seen> } } WHERE { ?s a <http://Doc> }"
    store.update(add_using(update, ["http://g1"], []))
    seen = {q.subject.value for q in store.quads_for_pattern(None, None, None, ox.NamedNode("http://out"))}
    assert seen == {"http://a"}


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        ("INSERT { ?s ?p ?o } USING <http://g> WHERE { ?s ?p ?o }", True),
        ("WITH <http://g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", True),
        ("INSERT DATA { <http://a> <http://b> 'USING WITH' }", False),
        ("INSERT { ?s ?p ?o } WHERE { ?s ?p ?o }", False),
    ],
)
def test_names_dataset(update: str, expected: bool) -> None:
    assert names_dataset(update) is expected


def test_tokens_track_brace_depth_and_skip_comments() -> None:
    toks = list(tokens("SELECT * { ?s ?p 'a}' # }\n { ?x ?y <http://z> } }"))
    assert [(t.text, t.depth) for t in toks if t.kind == "punct"] == [("*", 0), ("{", 0), ("{", 1), ("}", 1), ("}", 0)]
    assert [t.text for t in toks if t.kind == "iri"] == ["http://z"]


@pytest.mark.parametrize(
    ("target", "allowed", "expected"),
    [
        ("https://query.wikidata.org/sparql", ("https://query.wikidata.org",), True),
        ("https://query.wikidata.org.evil.example/sparql", ("https://query.wikidata.org",), False),
        ("https://query.wikidata.org@evil.example/sparql", ("https://query.wikidata.org",), False),
        ("https://query.wikidata.org:8080/sparql", ("https://query.wikidata.org",), False),
        ("https://query.wikidata.org:443/sparql", ("https://query.wikidata.org/",), True),
        ("http://query.wikidata.org/sparql", ("https://query.wikidata.org",), False),
        ("http://h/sparql/x", ("http://h/sparql",), True),
        ("http://h/sparqlother", ("http://h/sparql",), False),
        ("http://h:99999/", ("http://h/",), False),
        ("", ("http://h/",), False),
        ("anything", ("*",), True),
    ],
)
def test_url_allowed(target: str, allowed: tuple[str, ...], expected: bool) -> None:
    assert url_allowed(target, allowed) is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT * WHERE { ?s ?p ?o }", None),
        ("SELECT * FROM <http://g1> FROM NAMED <http://g2> WHERE { ?s ?p ?o }", (["http://g1"], ["http://g2"])),
        ("PREFIX e: <http://e/> SELECT * FROM e:g WHERE { ?s ?p ?o }", (["http://e/g"], [])),
        ("SELECT * WHERE { ?s ?p 'FROM <http://x>' }", None),
    ],
)
def test_dataset_clauses(query: str, expected: tuple[list[str], list[str]] | None) -> None:
    assert dataset_clauses(query) == expected
