"""A SPARQL 1.1 server as the store's backend (Oxigraph server, Virtuoso, …), over HTTP.

:class:`RemoteStore` offers the part of ``pyoxigraph.Store``'s API that :class:`~karenina_rdf.Store`
and the validators use (query, update, pattern lookups, loading N-Triples into a graph, dumping
a graph), so the same code runs on an embedded store and on a server:

* queries go through the SPARQL 1.1 Protocol (form-encoded POST: Virtuoso hangs on direct
  ``application/sparql-query`` bodies), with ``default-graph-uri``/``named-graph-uri`` for the
  dataset; results are parsed by pyoxigraph into the same objects an embedded store returns.
  A query is first parsed locally (against an empty in-memory store), so a syntax error reads
  the same everywhere and the query form decides which result format to ask for.
* loading uses the Graph Store Protocol when the server has one (a POST of N-Triples per
  chunk), otherwise ``INSERT DATA`` in batches; an import stays atomic as on disk: it loads a
  fresh graph, then one small update points the catalog at it.
* every request has a time limit; a server that does not answer, or answers an error, raises
  :class:`~karenina_rdf.StoreError` naming the server and what it said.

Endpoints: ``http://host:7878`` (an Oxigraph server) means ``/query``, ``/update`` and
``/store``; a URL ending in ``/sparql`` (Virtuoso, and most others) is both the query and the
update endpoint, without a Graph Store Protocol endpoint. :meth:`RemoteStore.from_url` decides.
That includes ``karenina-rdf serve``'s own ``/sparql``: with its write token (``token``, or
``$KARENINA_RDF_STORE_TOKEN`` for a URL given to :class:`~karenina_rdf.Store`) another process
writes into the store the endpoint serves, as ``verify`` does to show a run while it runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pyoxigraph as ox

from karenina_rdf._errors import StoreError

DEFAULT_TIMEOUT = 300.0  # seconds for one request; a 100k-question graph takes a while to load
# One INSERT DATA, when there is no Graph Store Protocol: at most this many triples and bytes
# (Virtuoso's SPARQL compiler runs out of memory on 5,000 triples of template text).
_INSERT_BATCH = 1_000
_INSERT_BYTES = 256 * 1024
_NT = "application/n-triples"
_JSON = "application/sparql-results+json"


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


class RemoteStore:
    """The pyoxigraph ``Store`` calls karenina-rdf makes, answered by a SPARQL 1.1 server."""

    def __init__(
        self,
        query_url: str,
        update_url: str | None = None,
        gsp_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        auth: tuple[str, str] | None = None,
        token: str | None = None,
    ) -> None:
        self.query_url = query_url
        self.update_url = update_url or query_url
        self.gsp_url = gsp_url
        self.timeout = timeout
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=10.0), auth=auth, headers=headers)

    @classmethod
    def from_url(cls, url: str, *, timeout: float = DEFAULT_TIMEOUT, token: str | None = None) -> RemoteStore:
        base = url.rstrip("/")
        if base.endswith("/sparql") or base.endswith("/query"):
            update = base if base.endswith("/sparql") else base[: -len("/query")] + "/update"
            return cls(base, update, timeout=timeout, token=token)
        return cls(f"{base}/query", f"{base}/update", f"{base}/store", timeout=timeout, token=token)

    def __repr__(self) -> str:
        return f"RemoteStore({self.query_url!r})"

    # -- HTTP ------------------------------------------------------------------------------
    def _post(self, url: str, what: str, **kwargs: Any) -> httpx.Response:
        return self._request("POST", url, what, **kwargs)

    def _request(self, method: str, url: str, what: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, url, **kwargs)
        except httpx.TimeoutException:
            raise StoreError(f"the SPARQL server at {url} did not answer {what} within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach the SPARQL server at {url} ({what}): {exc}") from None
        if response.status_code >= 300:  # a redirect is not followed: an update must not vanish
            body = response.text.strip().replace("\n", " ")[:500]
            raise StoreError(f"the SPARQL server at {url} refused {what}: HTTP {response.status_code}: {body}")
        return response

    def _unreadable(self, expected: str, exc: Exception) -> StoreError:
        """A reply that is not what was asked for (an HTML error page sent with status 200, a
        proxy's login page): the server's fault, not the query's."""
        return StoreError(
            f"the SPARQL server at {self.query_url} answered a query with something that is not {expected}: {exc}"
        )

    # -- queries ---------------------------------------------------------------------------
    def query(
        self,
        query: str,
        *,
        prefixes: Mapping[str, str] | None = None,
        default_graph: Any = None,
        named_graphs: Iterable[Any] | None = None,
        use_default_graph_as_union: bool = False,
        base_iri: str | None = None,
    ) -> Any:
        text = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in (prefixes or {}).items()) + query
        if base_iri:
            text = f"BASE <{base_iri}>\n{text}"  # the server resolves relative IRIs as we parse them
        form = _form(text, base_iri)
        graphs = default_graph if isinstance(default_graph, list) else [default_graph]
        params: dict[str, str | list[str]] = {"query": text}
        if not use_default_graph_as_union:
            params["default-graph-uri"] = [g.value for g in graphs if isinstance(g, ox.NamedNode)]
        params["named-graph-uri"] = [g.value for g in named_graphs or () if isinstance(g, ox.NamedNode)]
        if form == "graph":
            data = self._post(self.query_url, "a query", data=params, headers={"Accept": _NT}).content
            try:
                return _as_query_triples(data)
            except (SyntaxError, ValueError) as exc:
                raise self._unreadable("N-Triples", exc) from None
        data = self._post(self.query_url, "a query", data=params, headers={"Accept": _JSON}).content
        try:
            # Only the start is read here; a row that breaks the format later raises pyoxigraph's
            # SyntaxError while the results are read.
            results = ox.parse_query_results(data, format=ox.QueryResultsFormat.JSON)
        except (SyntaxError, ValueError) as exc:
            raise self._unreadable("SPARQL results JSON", exc) from None
        if form == "boolean" and isinstance(results, ox.QuerySolutions):
            # Virtuoso answers ASK with a one-column table (__ASK_RETVAL 1, or no row for false).
            answer = any(all(t is None or t.value not in ("0", "false") for t in row) for row in results)
            return _boolean(answer)
        return results

    def quads_for_pattern(self, subject: Any, predicate: Any, obj: Any, graph_name: Any = None) -> list[ox.Quad]:
        s, p, o = (str(t) if t is not None else v for t, v in ((subject, "?s"), (predicate, "?p"), (obj, "?o")))
        if isinstance(graph_name, ox.NamedNode):
            where, g = f"GRAPH {graph_name} {{ {s} {p} {o} }}", None
        else:
            where, g = f"GRAPH ?g {{ {s} {p} {o} }}", "?g"
        names = [v for v in (s, p, o, g) if v is not None and v.startswith("?")]
        if o == "?o":
            names.append("(STR(?o) AS ?lexical)")  # see _exact
        rows = self.query(f"SELECT {' '.join(names) or '*'} WHERE {{ {where} }}")
        out = []
        for row in rows:
            ts, tp, to = (row[v[1:]] if v.startswith("?") else t for v, t in ((s, subject), (p, predicate), (o, obj)))
            if o == "?o":
                to = _exact(to, row["lexical"])
            out.append(ox.Quad(ts, tp, to, graph_name if g is None else row["g"]))
        return out

    def named_graphs(self, prefix: str = "") -> Iterator[ox.NamedNode]:
        """The non-empty named graphs whose IRI starts with ``prefix``. This reads every quad
        (``GRAPH ?g {}`` would not, but Virtuoso answers it with nothing): the store calls it
        only for maintenance, never on open."""
        q = f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ ?s ?p ?o }} FILTER(STRSTARTS(STR(?g), {ox.Literal(prefix)})) }}"
        yield from (row["g"] for row in self.query(q))

    def contains_named_graph(self, graph: ox.NamedNode) -> bool:
        return bool(self.query(f"ASK {{ GRAPH {graph} {{ ?s ?p ?o }} }}"))

    def __len__(self) -> int:
        rows = list(self.query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"))
        return int(rows[0]["n"].value)

    def dump(self, *, format: ox.RdfFormat, from_graph: ox.NamedNode) -> bytes:
        """One graph as N-Triples, in one request: a Graph Store Protocol GET, or a CONSTRUCT."""
        if format != ox.RdfFormat.N_TRIPLES:
            raise StoreError("a remote store dumps N-Triples only")
        what = f"graph {from_graph.value}"
        if self.gsp_url is not None:
            params = {"graph": from_graph.value}
            return self._request("GET", self.gsp_url, what, params=params, headers={"Accept": _NT}).content
        # Not a CONSTRUCT: Virtuoso (the server without GSP here) writes doubles in it with six
        # significant digits; STR() gives the stored lexical form (see _exact).
        rows = self.query(f"SELECT ?s ?p ?o (STR(?o) AS ?lexical) WHERE {{ GRAPH {from_graph} {{ ?s ?p ?o }} }}")
        lines = [f"{r['s']} {r['p']} {_exact(r['o'], r['lexical'])} .\n" for r in rows]
        return "".join(lines).encode("utf-8")

    # -- writes ----------------------------------------------------------------------------
    def update(self, update: str, base_iri: str | None = None, *, timeout: float | None = None) -> None:
        """Run a SPARQL update; ``timeout``: this request's time limit, when it is known to take
        longer than most (a rebase rewrites every quad in one request)."""
        # The protocol has no base parameter; a BASE before the update's own prologue resolves
        # its relative IRIs (the update's own BASE, if any, comes later and wins).
        text = f"BASE <{base_iri}>\n{update}" if base_iri else update
        if timeout is None:
            self._post(self.update_url, "an update", data={"update": text})
            return
        limit = httpx.Timeout(timeout, connect=10.0)
        try:
            self._post(self.update_url, "an update", data={"update": text}, timeout=limit)
        except StoreError as exc:
            # _request names the client's usual limit; say which one ran out.
            raise StoreError(str(exc).replace(f"within {self.timeout:g} s", f"within {timeout:g} s")) from None

    def add(self, quad: ox.Quad) -> None:
        self.update(f"INSERT DATA {{ GRAPH {quad.graph_name} {{ {quad.subject} {quad.predicate} {quad.object} }} }}")

    def drop_graph(self, graph: ox.NamedNode) -> None:
        self.update(f"DROP SILENT GRAPH {graph}")

    def load(
        self,
        input: bytes | str | None = None,  # pyoxigraph's parameter names
        *,
        format: ox.RdfFormat,
        to_graph: ox.NamedNode,
        path: str | None = None,
        lenient: bool = False,
    ) -> None:
        if format != ox.RdfFormat.N_TRIPLES:
            raise StoreError("a remote store loads N-Triples only")
        data = Path(path).read_bytes() if path is not None else (input.encode() if isinstance(input, str) else input)
        self._load_ntriples(data or b"", to_graph)

    bulk_load = load

    def _load_ntriples(self, data: bytes, graph: ox.NamedNode) -> None:
        if self.gsp_url is not None:
            self._post(
                self.gsp_url,
                f"{len(data):,} bytes for graph {graph.value}",
                params={"graph": graph.value},
                content=data,
                headers={"Content-Type": _NT},
            )
            return
        batch: list[str] = []
        size = 0
        for line in data.decode("utf-8").splitlines():
            batch.append(line)
            size += len(line)
            if len(batch) >= _INSERT_BATCH or size >= _INSERT_BYTES:
                self.update(f"INSERT DATA {{ GRAPH {graph} {{\n{chr(10).join(batch)}\n}} }}")
                batch, size = [], 0
        if batch:
            self.update(f"INSERT DATA {{ GRAPH {graph} {{\n{chr(10).join(batch)}\n}} }}")

    def close(self) -> None:
        self._http.close()


def _form(query: str, base_iri: str | None) -> str:
    """ "graph", "boolean" or "solutions": the query parsed (not run) by pyoxigraph, which also
    raises its SyntaxError here. The result object is dropped before this returns: it may not
    leave the thread that made it, and an error's traceback would carry it."""
    result = ox.Store().query(query, base_iri=base_iri)
    if isinstance(result, ox.QueryTriples):
        return "graph"
    return "boolean" if isinstance(result, ox.QueryBoolean) else "solutions"


_EMPTY = ox.Store()


_FLOATS = frozenset({"http://www.w3.org/2001/XMLSchema#double", "http://www.w3.org/2001/XMLSchema#float"})


def _exact(term: Any, lexical: Any) -> Any:
    """A double as stored: Virtuoso keeps full precision but serialises doubles in results with
    six significant digits (1777950400.5 → "1.77795e+09"), while ``STR()`` returns them whole."""
    if isinstance(term, ox.Literal) and term.datatype.value in _FLOATS and isinstance(lexical, ox.Literal):
        return ox.Literal(lexical.value, datatype=term.datatype)
    return term


def _boolean(value: bool) -> Any:
    """pyoxigraph's ``QueryBoolean`` for ``value`` (it has no public constructor)."""
    return _EMPTY.query("ASK { }" if value else "ASK { FILTER(false) }")


def _as_query_triples(ntriples: bytes) -> Any:
    """N-Triples as pyoxigraph's ``QueryTriples`` (what an embedded CONSTRUCT returns)."""
    scratch = ox.Store()
    scratch.load(ntriples, format=ox.RdfFormat.N_TRIPLES)
    return scratch.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
