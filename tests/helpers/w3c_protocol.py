"""A replayer for the W3C SPARQL 1.1 Protocol test manifest (``sparql11/protocol/manifest.ttl``).

The manifest (parsed here with pyoxigraph) lists ``mf:ProtocolTest`` entries; each has an
``mf:action`` ``ht:Connection`` whose ``ht:requests`` is an RDF list of ``ht:Request`` (method,
``ht:absolutePath`` starting with ``/sparql/``, an ``ht:headers`` list, an optional ``ht:body``
``[cnt:chars; cnt:characterEncoding]``) each with an ``ht:resp`` giving the accepted status classes
(``hts:StatusCode2xx`` …), and optionally ``mf:expectedFormat`` ("boolean", "tabular" or "RDF")
and ``mf:expectedBoolean``. ``ut:graphData [ut:graph <dataN.nt>; rdfs:label "graph IRI"]`` names
the data a test expects in the dataset before it runs.

Library only (no tests here): :func:`load_manifest` reads the manifest, :func:`replay` runs one
test against an endpoint, :func:`reset_and_load_via_update` makes the ``load`` callable that
empties the endpoint's dataset and loads a test's data through the protocol itself.

The ``/sparql/`` prefix is mapped per request to ``query_url`` or ``update_url``
(:func:`request_operation` decides which): a server with one endpoint passes the same URL twice;
``oxigraph serve`` wants ``…/query`` and ``…/update``. Query strings are sent byte for byte as the
manifest writes them (repeated parameters included); redirects are never followed: a 3xx passes
where the manifest accepts 3xx, and its body is then not checked.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit
from urllib.request import url2pathname

import httpx
import pyoxigraph as ox

__all__ = [
    "GraphData",
    "Loader",
    "Outcome",
    "ProtocolRequest",
    "ProtocolTest",
    "encode_chars",
    "load_manifest",
    "replay",
    "request_operation",
    "request_url",
    "reset_and_load_via_update",
]

PREFIX = "/sparql/"

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
_QT = "http://www.w3.org/2001/sw/DataAccess/tests/test-query#"
_UT = "http://www.w3.org/2009/sparql/tests/test-update#"
_HT = "http://www.w3.org/2011/http#"
_HTS = "http://www.w3.org/2011/http-statusCodes#"
_CNT = "http://www.w3.org/2011/content#"

RDF_TYPE = ox.NamedNode(_RDF + "type")
RDF_FIRST = ox.NamedNode(_RDF + "first")
RDF_REST = ox.NamedNode(_RDF + "rest")
RDF_NIL = ox.NamedNode(_RDF + "nil")
RDFS_LABEL = ox.NamedNode(_RDFS + "label")
MF_MANIFEST = ox.NamedNode(_MF + "Manifest")
MF_ENTRIES = ox.NamedNode(_MF + "entries")
MF_PROTOCOL_TEST = ox.NamedNode(_MF + "ProtocolTest")
MF_NAME = ox.NamedNode(_MF + "name")
MF_ACTION = ox.NamedNode(_MF + "action")
MF_EXPECTED_STATUS = ox.NamedNode(_MF + "expectedStatus")
MF_EXPECTED_FORMAT = ox.NamedNode(_MF + "expectedFormat")
MF_EXPECTED_BOOLEAN = ox.NamedNode(_MF + "expectedBoolean")
QT_DATA = ox.NamedNode(_QT + "data")
QT_GRAPH_DATA = ox.NamedNode(_QT + "graphData")
UT_DATA = ox.NamedNode(_UT + "data")
UT_GRAPH_DATA = ox.NamedNode(_UT + "graphData")
UT_GRAPH = ox.NamedNode(_UT + "graph")
HT_REQUESTS = ox.NamedNode(_HT + "requests")
HT_METHOD_NAME = ox.NamedNode(_HT + "methodName")
HT_ABSOLUTE_PATH = ox.NamedNode(_HT + "absolutePath")
HT_HEADERS = ox.NamedNode(_HT + "headers")
HT_FIELD_NAME = ox.NamedNode(_HT + "fieldName")
HT_FIELD_VALUE = ox.NamedNode(_HT + "fieldValue")
HT_BODY = ox.NamedNode(_HT + "body")
HT_RESP = ox.NamedNode(_HT + "resp")
CNT_CHARS = ox.NamedNode(_CNT + "chars")
CNT_CHARACTER_ENCODING = ox.NamedNode(_CNT + "characterEncoding")

QUERY_MEDIA_TYPE = "application/sparql-query"
UPDATE_MEDIA_TYPE = "application/sparql-update"
FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"

GraphData = list[tuple[str, Path]]
"""(graph IRI, path of the N-Triples file to load into it)."""
Loader = Callable[[GraphData, list[Path]], None]
"""``load(graph_data, default_data)``: empty the dataset, then load the files."""
Operation = Literal["query", "update"]
Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple


@dataclass
class ProtocolRequest:
    """One ``ht:Request`` of a test and the response it expects."""

    method: str
    path_and_query: str  # ht:absolutePath as written, "/sparql/" prefix kept: the caller maps it
    headers: list[tuple[str, str]]
    body: bytes | None  # cnt:chars encoded with cnt:characterEncoding (see encode_chars)
    expected_statuses: set[str]  # status classes: {"2xx", "3xx"}, {"4xx"} …
    expected_format: str | None = None  # "boolean", "tabular", "RDF" or None
    expected_boolean: bool | None = None
    body_encoding: str | None = None  # cnt:characterEncoding, e.g. "UTF-8" or "UTF-16"

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        return next((v for n, v in self.headers if n.lower() == name.lower()), None)

    @property
    def media_type(self) -> str | None:
        """The Content-Type without parameters, lower-cased, or None when the request has none."""
        value = self.header("content-type")
        return None if value is None else value.split(";", 1)[0].strip().lower()

    @property
    def query_string(self) -> str:
        return self.path_and_query.partition("?")[2]

    @property
    def operation(self) -> Operation:
        return request_operation(self)


@dataclass
class ProtocolTest:
    name: str  # local name of the test IRI, e.g. "query_post_form"
    title: str  # mf:name
    kind: Operation
    graph_data: GraphData
    default_data: list[Path]
    requests: list[ProtocolRequest]
    iri: str = ""


@dataclass
class Outcome:
    passed: bool
    reason: str  # why it failed, or "ok" (with notes, e.g. an accepted 3xx)
    statuses: list[int] = field(default_factory=list)  # of the requests sent, in order


# -- reading the manifest ----------------------------------------------------------------------------------------------


def encode_chars(text: str, encoding: str | None) -> bytes:
    """The bytes of ``cnt:chars`` in ``cnt:characterEncoding`` (UTF-8 when absent).

    "UTF-16" (``bad_query_non_utf8``, ``bad_update_non_utf8``) is written as RFC 2781 reads the
    unsuffixed label: a byte-order mark, then big-endian code units (Python's own "utf-16" codec
    would use the machine's byte order). The mark (FE FF) makes the body invalid UTF-8, which is
    the point of those tests: "ASK {}" in bare UTF-16BE would be ASCII with NULs, valid UTF-8.
    """
    name = codecs.lookup(encoding or "utf-8").name
    if name == "utf-16":
        return codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    if name == "utf-32":
        return codecs.BOM_UTF32_BE + text.encode("utf-32-be")
    return text.encode(name)


def _objects(store: ox.Store, subject: ox.NamedNode | ox.BlankNode, predicate: ox.NamedNode) -> list[Term]:
    return [q.object for q in store.quads_for_pattern(subject, predicate, None)]


def _one(store: ox.Store, subject: ox.NamedNode | ox.BlankNode, predicate: ox.NamedNode) -> Term | None:
    values = _objects(store, subject, predicate)
    if len(values) > 1:
        raise ValueError(f"{subject} has {len(values)} values of {predicate}, expected at most one")
    return values[0] if values else None


def _node(term: Term | None, what: str) -> ox.NamedNode | ox.BlankNode:
    if not isinstance(term, ox.NamedNode | ox.BlankNode):
        raise ValueError(f"{what}: expected an IRI or blank node, got {term!r}")
    return term


def _text(term: Term | None, what: str) -> str:
    if not isinstance(term, ox.Literal):
        raise ValueError(f"{what}: expected a literal, got {term!r}")
    return term.value


def _list(store: ox.Store, head: Term | None) -> list[Term]:
    """The members of the RDF collection starting at ``head``."""
    items: list[Term] = []
    node = head
    while node != RDF_NIL:
        cell = _node(node, "rdf:List")
        first = _one(store, cell, RDF_FIRST)
        if first is None:
            raise ValueError(f"RDF list cell {cell} has no rdf:first")
        items.append(first)
        node = _one(store, cell, RDF_REST)
        if len(items) > 100_000:
            raise ValueError("RDF list too long (cyclic?)")
    return items


def _path_of(term: Term, what: str) -> Path:
    iri = _node(term, what)
    if not isinstance(iri, ox.NamedNode) or not iri.value.startswith("file:"):
        raise ValueError(f"{what}: expected a file IRI (relative to the manifest), got {term}")
    return Path(url2pathname(unquote(urlsplit(iri.value).path)))


def _local_name(iri: str) -> str:
    return re.split(r"[#/]", iri)[-1]


def _request(store: ox.Store, node: ox.NamedNode | ox.BlankNode) -> ProtocolRequest:
    method = _text(_one(store, node, HT_METHOD_NAME), "ht:methodName").upper()
    path = _text(_one(store, node, HT_ABSOLUTE_PATH), "ht:absolutePath")
    headers: list[tuple[str, str]] = []
    for h in _list(store, _one(store, node, HT_HEADERS) or RDF_NIL):
        h_node = _node(h, "ht:headers item")
        headers.append(
            (
                _text(_one(store, h_node, HT_FIELD_NAME), "ht:fieldName"),
                _text(_one(store, h_node, HT_FIELD_VALUE), "ht:fieldValue"),
            )
        )
    body: bytes | None = None
    encoding: str | None = None
    body_term = _one(store, node, HT_BODY)
    if body_term is not None:
        body_node = _node(body_term, "ht:body")
        enc_term = _one(store, body_node, CNT_CHARACTER_ENCODING)
        encoding = None if enc_term is None else _text(enc_term, "cnt:characterEncoding")
        body = encode_chars(_text(_one(store, body_node, CNT_CHARS), "cnt:chars"), encoding)
    resp = _node(_one(store, node, HT_RESP), "ht:resp")
    statuses: set[str] = set()
    for status in _objects(store, resp, MF_EXPECTED_STATUS):
        match = re.fullmatch(re.escape(_HTS) + r"StatusCode(\d)xx", _node(status, "mf:expectedStatus").value)
        if match is None:  # a precise code, e.g. hts:BadRequest, is not used by this manifest
            raise ValueError(f"unsupported mf:expectedStatus {status}")
        statuses.add(f"{match.group(1)}xx")
    fmt = _one(store, resp, MF_EXPECTED_FORMAT)
    boolean = _one(store, resp, MF_EXPECTED_BOOLEAN)
    return ProtocolRequest(
        method=method,
        path_and_query=path,
        headers=headers,
        body=body,
        expected_statuses=statuses,
        expected_format=None if fmt is None else _text(fmt, "mf:expectedFormat"),
        expected_boolean=None if boolean is None else _text(boolean, "mf:expectedBoolean") in ("true", "1"),
        body_encoding=encoding,
    )


def _graph_data(store: ox.Store, test: ox.NamedNode | ox.BlankNode) -> tuple[GraphData, list[Path]]:
    named: GraphData = []
    default: list[Path] = []
    for holder in (test, _one(store, test, MF_ACTION)):
        if not isinstance(holder, ox.NamedNode | ox.BlankNode):
            continue
        for p in (UT_GRAPH_DATA, QT_GRAPH_DATA):
            for g in _objects(store, holder, p):
                if isinstance(g, ox.BlankNode):  # ut:graphData [ut:graph <file>; rdfs:label "graph IRI"]
                    file = _path_of(_one(store, g, UT_GRAPH) or g, "ut:graph")
                    label = _one(store, g, RDFS_LABEL)
                    iri = _text(label, "rdfs:label") if label is not None else file.resolve().as_uri()
                else:  # qt:graphData <file>: the graph is named by the file's IRI
                    file = _path_of(g, "graphData")
                    iri = _node(g, "graphData").value
                named.append((iri, file))
        for p in (UT_DATA, QT_DATA):
            default.extend(_path_of(d, "data") for d in _objects(store, holder, p))
    return sorted(named), sorted(default)  # a store keeps no triple order: sorted, for determinism


def load_manifest(path: str | Path) -> list[ProtocolTest]:
    """The manifest's ``mf:ProtocolTest`` entries, in ``mf:entries`` order."""
    path = Path(path).resolve()
    store = ox.Store()
    store.extend(ox.parse(path=path, format=ox.RdfFormat.TURTLE, base_iri=path.as_uri()))
    manifests = [q.subject for q in store.quads_for_pattern(None, RDF_TYPE, MF_MANIFEST)]
    if len(manifests) != 1:
        raise ValueError(f"{path}: expected one mf:Manifest, found {len(manifests)}")
    tests: list[ProtocolTest] = []
    for entry in _list(store, _one(store, _node(manifests[0], "manifest"), MF_ENTRIES)):
        node = _node(entry, "mf:entries item")
        types = _objects(store, node, RDF_TYPE)
        if MF_PROTOCOL_TEST not in types:
            continue
        action = _node(_one(store, node, MF_ACTION), "mf:action")
        requests = [_request(store, _node(r, "ht:Request")) for r in _list(store, _one(store, action, HT_REQUESTS))]
        name = _local_name(node.value) if isinstance(node, ox.NamedNode) else str(node)
        named, default = _graph_data(store, node)
        is_update = name.startswith(("update_", "bad_update")) or any(r.operation == "update" for r in requests)
        tests.append(
            ProtocolTest(
                name=name,
                title=_text(_one(store, node, MF_NAME), "mf:name"),
                kind="update" if is_update else "query",
                graph_data=named,
                default_data=default,
                requests=requests,
                iri=node.value if isinstance(node, ox.NamedNode) else "",
            )
        )
    return tests


# -- query or update -----------------------------------------------------------------------------------------------

_FORM_BODY = re.compile(r"[A-Za-z][A-Za-z-]*=")
_PROLOGUE = re.compile(r"\s*(?:#[^\n]*\n|BASE\s*<[^>]*>|PREFIX\s+[^:\s]*:\s*<[^>]*>)", re.IGNORECASE)
_QUERY_FORMS = {"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"}


def _body_text(request: ProtocolRequest) -> str:
    if request.body is None:
        return ""
    try:
        return request.body.decode(request.body_encoding or "utf-8", errors="replace").lstrip("\ufeff")
    except LookupError:
        return request.body.decode("utf-8", errors="replace")


def request_operation(request: ProtocolRequest) -> Operation:
    """Whether ``request`` is meant for the query or the update operation.

    In order: the media type (application/sparql-update, application/sparql-query); then the
    parameter names, of the query string and of the body when it is a form (declared
    application/x-www-form-urlencoded, or undeclared but shaped ``name=…``): ``update`` or
    ``using-(named-)graph-uri`` mean update, ``query`` or ``(default|named)-graph-uri`` mean
    query; then, for a bare SPARQL body (no or another media type), its first keyword after the
    prologue: SELECT/ASK/CONSTRUCT/DESCRIBE is a query, anything else an update. Otherwise query.
    """
    media_type = request.media_type
    if media_type == UPDATE_MEDIA_TYPE:
        return "update"
    if media_type == QUERY_MEDIA_TYPE:
        return "query"
    text = _body_text(request)
    form_body = media_type == FORM_MEDIA_TYPE or (
        request.body is not None and media_type is None and _FORM_BODY.match(text) is not None
    )
    names = {n for n, _ in parse_qsl(request.query_string, keep_blank_values=True)}
    if form_body:
        names |= {n for n, _ in parse_qsl(text, keep_blank_values=True)}
    if "update" in names:
        return "update"
    if "query" in names:
        return "query"
    if names & {"using-graph-uri", "using-named-graph-uri"}:
        return "update"
    if names & {"default-graph-uri", "named-graph-uri"}:
        return "query"
    if request.body is not None and not form_body:
        rest = text
        while (m := _PROLOGUE.match(rest)) is not None and m.end() > 0:
            rest = rest[m.end() :]
        keyword = re.match(r"\s*([A-Za-z]+)", rest)
        if keyword is not None and keyword.group(1).upper() not in _QUERY_FORMS:
            return "update"
    return "query"


def request_url(request: ProtocolRequest, *, query_url: str, update_url: str) -> str:
    """The URL to send ``request`` to: its path's ``/sparql/`` prefix replaced by the endpoint URL."""
    base = update_url if request.operation == "update" else query_url
    path = request.path_and_query
    if not path.startswith(PREFIX):
        raise ValueError(f"ht:absolutePath {path!r} does not start with {PREFIX!r}")
    rest = path[len(PREFIX) :]
    if not rest:
        return base
    if rest.startswith("?"):
        return base + ("&" + rest[1:] if "?" in base else rest)
    return base.rstrip("/") + "/" + rest


# -- checking responses ------------------------------------------------------------------------------------------------


def _snippet(response: httpx.Response) -> str:
    return response.content[:400].decode("utf-8", errors="replace")[:200]


def _check_tabular_csv(content: bytes) -> str | None:
    rows = list(csv.reader(io.StringIO(content.decode("utf-8"))))
    if not rows or not rows[0] or not all(rows[0]):
        return "CSV results without a header of variable names"
    if any(len(r) != len(rows[0]) for r in rows[1:] if r):
        return "CSV results with rows of another width than the header"
    return None


def _check_body(request: ProtocolRequest, response: httpx.Response) -> str | None:
    """Why the 2xx response's body does not match ``mf:expectedFormat``/``mf:expectedBoolean``, or None."""
    expected = request.expected_format
    if expected is None:
        return None
    content_type = response.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if not media_type:
        return f"expected {expected} results, got no Content-Type"
    try:
        if expected == "RDF":
            rdf_format = ox.RdfFormat.from_media_type(media_type)
            if rdf_format is None:
                return f"expected RDF, got Content-Type {content_type!r}"
            list(ox.parse(response.content, rdf_format, base_iri=str(response.url)))
            return None
        results_format = ox.QueryResultsFormat.from_media_type(media_type)
        if results_format is None:
            return f"expected {expected} SPARQL results, got Content-Type {content_type!r}"
        if results_format == ox.QueryResultsFormat.CSV:  # pyoxigraph does not parse CSV (lossy)
            if expected == "boolean":
                return "expected a boolean, got CSV results (CSV has no boolean form)"
            return _check_tabular_csv(response.content)
        results = ox.parse_query_results(response.content, results_format)
    except (SyntaxError, ValueError, UnicodeDecodeError) as e:
        return f"{content_type!r} body does not parse: {e}"
    if expected == "boolean":
        if not isinstance(results, ox.QueryBoolean):
            return f"expected a boolean result, got solutions ({content_type})"
        if request.expected_boolean is not None and bool(results) != request.expected_boolean:
            return f"expected {str(request.expected_boolean).lower()}, got {str(bool(results)).lower()}"
        return None
    if expected == "tabular":
        if not isinstance(results, ox.QuerySolutions):
            return f"expected solutions, got a boolean ({content_type})"
        try:
            list(results)
        except SyntaxError as e:
            return f"{content_type!r} body does not parse: {e}"
        return None
    return f"unknown mf:expectedFormat {expected!r}"


def _check(request: ProtocolRequest, response: httpx.Response) -> tuple[str | None, str | None]:
    """(failure, note) for one response."""
    status = response.status_code
    status_class = f"{status // 100}xx"
    if status_class not in request.expected_statuses:
        expected = "/".join(sorted(request.expected_statuses))
        return f"expected {expected}, got {status}: {_snippet(response)}", None
    if 300 <= status < 400:
        return None, f"{status} accepted (not followed; Location {response.headers.get('location')!r})"
    if 200 <= status < 300:
        return _check_body(request, response), None
    return None, None


# -- replaying ---------------------------------------------------------------------------------------------------------


def _header_list(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(headers.items()) if isinstance(headers, Mapping) else list(headers)


def replay(
    test: ProtocolTest,
    *,
    query_url: str,
    update_url: str,
    load: Loader | None = None,
    client: httpx.Client | None = None,
    extra_headers: Mapping[str, str] | Sequence[tuple[str, str]] = (),
) -> Outcome:
    """Run ``test``'s requests in order against the endpoint; the first failing request fails it.

    ``load(test.graph_data, test.default_data)`` is called first (None: the dataset is left as
    it is); its exceptions propagate (a harness fault, not a protocol failure). ``extra_headers``
    go on every request, after the manifest's. Transport errors fail the test.
    """
    if load is not None:
        load(test.graph_data, test.default_data)
    own_client = client is None
    http = client if client is not None else httpx.Client(timeout=60)
    notes: list[str] = []
    statuses: list[int] = []
    try:
        for i, request in enumerate(test.requests, 1):
            url = request_url(request, query_url=query_url, update_url=update_url)
            try:
                response = http.request(
                    request.method,
                    url,
                    content=request.body,
                    headers=[*request.headers, *_header_list(extra_headers)],
                    follow_redirects=False,
                )
            except httpx.HTTPError as e:
                return Outcome(False, f"request {i}: {request.method} {url}: {type(e).__name__}: {e}", statuses)
            statuses.append(response.status_code)
            failure, note = _check(request, response)
            if failure is not None:
                return Outcome(False, f"request {i}: {failure}", statuses)
            if note is not None:
                notes.append(f"request {i}: {note}")
    finally:
        if own_client:
            http.close()
    return Outcome(True, "; ".join(["ok", *notes]), statuses)


def _triples(path: Path) -> str:
    quads = ox.parse(path=path, format=ox.RdfFormat.N_TRIPLES, base_iri=path.resolve().as_uri())
    return "\n".join(f"  {q.subject} {q.predicate} {q.object} ." for q in quads)


def reset_and_load_via_update(
    update_url: str,
    client: httpx.Client,
    headers: Mapping[str, str] | Sequence[tuple[str, str]] = (),
) -> Loader:
    """A ``load`` for :func:`replay` that POSTs one application/sparql-update request to
    ``update_url``: ``DROP ALL``, then ``INSERT DATA`` of each default-graph file and of each
    (graph IRI, file) into ``GRAPH <IRI>``. A non-2xx answer raises RuntimeError."""

    def load(graph_data: GraphData, default_data: list[Path]) -> None:
        operations = ["DROP ALL"]
        operations += [f"INSERT DATA {{\n{_triples(p)}\n}}" for p in default_data]
        operations += [f"INSERT DATA {{ GRAPH <{g}> {{\n{_triples(p)}\n}} }}" for g, p in graph_data]
        response = client.post(
            update_url,
            content=" ;\n".join(operations).encode("utf-8"),
            headers=[("content-type", UPDATE_MEDIA_TYPE), *_header_list(headers)],
            follow_redirects=False,
        )
        if not 200 <= response.status_code < 300:
            raise RuntimeError(f"resetting the dataset at {update_url}: {response.status_code}: {_snippet(response)}")

    return load
