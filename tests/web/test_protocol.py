"""SPARQL 1.1 Protocol parts that need no server: reading a request and negotiating a format."""

from __future__ import annotations

import pytest

from karenina_rdf.sparql._protocol import GRAPHS, RESULTS, ProtocolError, negotiate, parse_request

FORM = "application/x-www-form-urlencoded"

# (method, query string, content type, body) -> (kind, text, default graphs, named graphs)
GOOD = [
    ("GET", "query=ASK%20%7B%7D", None, b"", ("query", "ASK {}", [], [])),
    (
        "GET",
        "query=ASK%7B%7D&default-graph-uri=http%3A%2F%2Fg1&named-graph-uri=http%3A%2F%2Fn1&default-graph-uri=http://g2",
        None,
        b"",
        ("query", "ASK{}", ["http://g1", "http://g2"], ["http://n1"]),
    ),
    ("POST", "", FORM, b"query=ASK+%7B%7D&default-graph-uri=http%3A%2F%2Fg", ("query", "ASK {}", ["http://g"], [])),
    ("POST", "default-graph-uri=http%3A%2F%2Fg", FORM, b"query=ASK+%7B%7D", ("query", "ASK {}", ["http://g"], [])),
    ("POST", "", "application/sparql-query; charset=utf-8", "ASK { 'é' }".encode(), ("query", "ASK { 'é' }", [], [])),
    ("POST", "", FORM, b"update=CLEAR+ALL", ("update", "CLEAR ALL", [], [])),
    (
        "POST",
        "using-graph-uri=http%3A%2F%2Fg&using-named-graph-uri=http%3A%2F%2Fn",
        "application/sparql-update",
        b"CLEAR ALL",
        ("update", "CLEAR ALL", ["http://g"], ["http://n"]),
    ),
]


@pytest.mark.parametrize(("method", "qs", "ctype", "body", "expected"), GOOD)
def test_parse_request(method: str, qs: str, ctype: str | None, body: bytes, expected: tuple[object, ...]) -> None:
    op = parse_request(method, qs, ctype, body)
    assert op is not None
    assert (op.kind, op.text, op.default_graphs, op.named_graphs) == expected


def test_no_operation_means_service_description() -> None:
    assert parse_request("GET", "", None, b"") is None
    assert parse_request("GET", "format=turtle", None, b"") is None


# (method, query string, content type, body) -> (status, part of the message)
BAD = [
    ("GET", "update=CLEAR%20ALL", None, b"", 400, "POST, not GET"),
    ("GET", "query=ASK%7B%7D&query=ASK%7B%7D", None, b"", 400, "exactly one 'query', this one has 2"),
    ("POST", "", FORM, b"query=ASK%7B%7D&update=CLEAR%20ALL", 400, "not both"),
    ("POST", "", FORM, b"default-graph-uri=x", 400, "neither a 'query' nor an 'update'"),
    ("POST", "", "text/plain", b"ASK {}", 415, "cannot read a body of type 'text/plain'"),
    ("POST", "", None, b"query=ASK", 400, "needs a Content-Type"),
    ("POST", "", "application/sparql-query", b"\xfe\xff\x00A\x00S\x00K", 400, "not UTF-8"),
    ("POST", "query=ASK%7B%7D", "application/sparql-query", b"ASK {}", 400, "must not carry a 'query' too"),
    ("PUT", "", FORM, b"query=ASK", 405, "not a SPARQL protocol method"),
    ("GET", "query=ASK%7B%7D&default-graph-uri=not%20an%20iri", None, b"", 400, "is not a graph IRI"),
]


@pytest.mark.parametrize(("method", "qs", "ctype", "body", "status", "message"), BAD)
def test_bad_requests(method: str, qs: str, ctype: str | None, body: bytes, status: int, message: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_request(method, qs, ctype, body)
    assert caught.value.status == status
    assert message in caught.value.message


NEGOTIATION = [
    # (Accept, offered, format parameter, expected)
    (None, RESULTS, None, "json"),
    ("*/*", RESULTS, None, "json"),
    ("application/sparql-results+xml", RESULTS, None, "xml"),
    ("text/csv;q=0.5, text/tab-separated-values", RESULTS, None, "tsv"),
    ("application/json", RESULTS, None, "json"),
    ("application/json", GRAPHS, None, "jsonld"),
    ("text/*", RESULTS, None, "csv"),
    ("text/*", GRAPHS, None, "turtle"),
    ("application/rdf+xml;q=0.9, text/turtle;q=0.8", GRAPHS, None, "rdfxml"),
    ("text/plain", GRAPHS, None, "ntriples"),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", RESULTS, None, "xml"),
    ("image/png", RESULTS, "csv", "csv"),  # the parameter wins
    (None, GRAPHS, "text/turtle", "turtle"),  # a media type as the parameter
]


@pytest.mark.parametrize(("accept", "offered", "fmt", "expected"), NEGOTIATION)
def test_negotiate(accept: str | None, offered: tuple[str, ...], fmt: str | None, expected: str) -> None:
    assert negotiate(accept, offered, fmt) == expected


@pytest.mark.parametrize(
    ("accept", "offered", "fmt"),
    [
        ("image/png", RESULTS, None),
        ("text/turtle", RESULTS, None),
        ("application/sparql-results+json;q=0", RESULTS, None),
        (None, RESULTS, "turtle"),
        (None, GRAPHS, "csv"),
    ],
)
def test_not_acceptable(accept: str | None, offered: tuple[str, ...], fmt: str | None) -> None:
    with pytest.raises(ProtocolError) as caught:
        negotiate(accept, offered, fmt)
    assert caught.value.status == 406
