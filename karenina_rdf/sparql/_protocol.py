"""The SPARQL 1.1 Protocol, apart from any web framework: what a request asks (an operation and
its dataset), which format the client accepts, and running it under the endpoint's limits.

Failures are :class:`ProtocolError` with the HTTP status the protocol gives them: 400 for a
malformed request or query (with the parser's own message), 406 when no format the client
accepts fits the result, 415 for a body of an unknown media type, 503 past the time limit, 400
past the result-size limit (the query asks for more than the endpoint gives: add a LIMIT) and 403
for a ``SERVICE`` or ``LOAD`` to a host nobody allowed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any, Literal, TypeVar, cast
from urllib.parse import parse_qsl

import pyoxigraph as ox

from karenina_rdf.rdf import PREFIXES
from karenina_rdf.sparql._named import serialize_graph
from karenina_rdf.sparql._text import add_using, load_targets, names_dataset, service_targets, url_allowed

from ._isolation import block_network_here, unavailable
from ._pool import QueryFailed, QueryPool
from ._worker import RESULT_FORMATS, Refused, ResultSink

log = logging.getLogger("karenina_rdf.endpoint")


class ProtocolError(Exception):
    """A request the endpoint answers with ``status`` and ``message`` (plain text)."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, dict(headers or {})


# Media types by format name; the first is the one the response carries.
MEDIA_TYPES: dict[str, tuple[str, ...]] = {
    "json": ("application/sparql-results+json", "application/json"),
    "xml": ("application/sparql-results+xml", "application/xml", "text/xml"),
    "csv": ("text/csv",),
    "tsv": ("text/tab-separated-values",),
    "turtle": ("text/turtle", "application/x-turtle"),
    "ntriples": ("application/n-triples", "text/plain"),
    "jsonld": ("application/ld+json", "application/json"),
    "rdfxml": ("application/rdf+xml", "application/xml", "text/xml"),
    "html": ("text/html", "application/xhtml+xml"),
}
RESULTS = ("json", "xml", "csv", "tsv")  # SELECT and ASK, in order of preference
GRAPHS = ("turtle", "ntriples", "jsonld", "rdfxml")  # CONSTRUCT and DESCRIBE
SUFFIXES = {".ttl": "turtle", ".nt": "ntriples", ".jsonld": "jsonld", ".rdf": "rdfxml", ".html": "html"}


def content_type(fmt: str) -> str:
    media = MEDIA_TYPES[fmt][0]
    return f"{media}; charset=utf-8" if media.startswith("text/") else media


def _accepted(accept: str) -> list[tuple[str, float]]:
    out = []
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for p in params:
            if p.startswith("q="):
                try:
                    q = float(p[2:])
                except ValueError:
                    q = 0.0
        if media:
            out.append((media.lower(), q))
    return out


def negotiate(accept: str | None, offered: Sequence[str], fmt: str | None = None) -> str:
    """The format name to answer in: ``fmt`` (a name or media type, from a ``format``
    parameter) if given, else the best of ``offered`` by the ``Accept`` header (ties go to the
    earlier in ``offered``; no header or ``*/*`` gives the first). 406 if none fits."""
    if fmt:
        name = fmt.lower()
        for candidate in offered:
            if name == candidate or name in MEDIA_TYPES[candidate]:
                return candidate
        raise ProtocolError(406, f"format {fmt!r} does not fit this result; use one of {', '.join(offered)}")
    if not accept or not accept.strip():
        return offered[0]
    ranges = _accepted(accept)
    best, best_q = None, 0.0
    for candidate in offered:
        # The most specific range that matches decides (RFC 9110 §12.5.1): `json;q=0, */*`
        # refuses JSON. Aliases (application/json, text/xml …) count when named; a wildcard
        # stands for the format's own type only, so text/* means CSV or Turtle, not text/xml.
        primary = MEDIA_TYPES[candidate][0]
        specificity, q = -1, 0.0
        for pattern, weight in ranges:
            if pattern in MEDIA_TYPES[candidate]:
                rank = 2
            elif pattern == primary.split("/")[0] + "/*":
                rank = 1
            elif pattern == "*/*":
                rank = 0
            else:
                continue
            if rank > specificity or (rank == specificity and weight > q):
                specificity, q = rank, weight
        if q > best_q:
            best, best_q = candidate, q
    if best is None:
        raise ProtocolError(
            406,
            f"none of the accepted types ({accept}) fits this result; it can be "
            + ", ".join(MEDIA_TYPES[c][0] for c in offered),
        )
    return best


@dataclass
class Operation:
    """One protocol request: a query or an update, with the dataset the request names."""

    kind: Literal["query", "update"]
    text: str
    default_graphs: list[str] = field(default_factory=list)
    named_graphs: list[str] = field(default_factory=list)
    params: dict[str, list[str]] = field(default_factory=dict)  # every parameter, for `format`
    base: str | None = None  # resolves relative IRIs: the endpoint's URL (§2.1.4 lets it be)

    def param(self, name: str) -> str | None:
        values = self.params.get(name)
        return values[0] if values else None


def _multi(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in pairs:
        out.setdefault(key, []).append(value)
    return out


def _text(body: bytes, what: str) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(400, f"the {what} is not UTF-8 (byte {exc.start})") from None


def parse_request(method: str, query_string: str, content_type: str | None, body: bytes) -> Operation | None:
    """The operation a request carries, or None when it carries none (then the endpoint
    describes itself). Follows SPARQL 1.1 Protocol §2.1-2.2: query by GET, by form POST or
    by ``application/sparql-query`` POST; update by form POST or ``application/sparql-update``."""
    try:
        url_params = _multi(parse_qsl(query_string, keep_blank_values=True, strict_parsing=False, errors="strict"))
    except UnicodeDecodeError:
        raise ProtocolError(400, "the query string is not UTF-8") from None
    media = (content_type or "").split(";")[0].strip().lower()
    params = dict(url_params)
    if method == "GET" or method == "HEAD":
        if "update" in params:
            raise ProtocolError(400, "an update must be sent with POST, not GET (SPARQL 1.1 Protocol §2.2)")
        if "query" not in params:
            return None
        kind: Literal["query", "update"] = "query"
    elif method == "POST":
        if media == "application/x-www-form-urlencoded":
            form = _multi(parse_qsl(_text(body, "form body"), keep_blank_values=True))
            for key, values in form.items():
                params.setdefault(key, []).extend(values)
            if "query" in form and "update" in form:
                raise ProtocolError(400, "a request carries a query or an update, not both")
            if "query" not in form and "update" not in form:
                raise ProtocolError(400, "the form has neither a 'query' nor an 'update' field")
            kind = "query" if "query" in form else "update"
        elif media in ("application/sparql-query", "application/sparql-update"):
            kind = "query" if media == "application/sparql-query" else "update"
            if kind in params:
                raise ProtocolError(400, f"the {kind} is in the body; the URL must not carry a '{kind}' too")
            params[kind] = [_text(body, kind)]
        elif not media:
            raise ProtocolError(
                400,
                "a POST needs a Content-Type: application/x-www-form-urlencoded, "
                "application/sparql-query or application/sparql-update",
            )
        else:
            raise ProtocolError(
                415,
                f"cannot read a body of type {media!r}: send application/x-www-form-urlencoded, "
                "application/sparql-query or application/sparql-update",
            )
    else:
        raise ProtocolError(405, f"{method} is not a SPARQL protocol method (GET or POST)", {"Allow": "GET, POST"})
    texts = params.get(kind, [])
    if len(texts) != 1:
        raise ProtocolError(400, f"a request carries exactly one '{kind}', this one has {len(texts)}")
    if kind == "query":
        default, named = params.get("default-graph-uri", []), params.get("named-graph-uri", [])
    else:
        default, named = params.get("using-graph-uri", []), params.get("using-named-graph-uri", [])
    for iri in (*default, *named):
        try:
            ox.NamedNode(iri)
        except ValueError as exc:
            raise ProtocolError(400, f"{iri!r} is not a graph IRI: {exc}") from None
    return Operation(kind, texts[0], list(default), list(named), params)


def timed_out(timeout: float) -> ProtocolError:
    return ProtocolError(503, f"the query ran longer than the endpoint's time limit of {timeout:g} s")


T = TypeVar("T")
_warned = False


def _warn_once() -> None:
    global _warned
    _warned = True
    log.warning(
        "queries are kept off the network by a scan of their text only: %s", unavailable() or "the filter is off"
    )


@dataclass
class Limits:
    timeout: float = 30.0
    max_result_bytes: int = 50_000_000
    allow_service: tuple[str, ...] = ()  # IRI prefixes SERVICE may call; "*" for any
    max_running: int = 8  # queries evaluated at once; more wait their turn (within the time limit)
    # Evaluate on threads that cannot open a network connection (_isolation). Off for a store on
    # a SPARQL server, whose client needs the network on the same threads.
    isolate: bool = True


class Runner:
    """Runs operations on a pyoxigraph store (or a RemoteStore) within :class:`Limits`.

    With a :class:`~karenina_rdf.sparql._pool.QueryPool` (a store on disk), a query that does not
    federate runs in one of its worker processes, which is killed at the time or memory limit.
    Without one, on threads, as follows.

    ``run_query`` is blocking and meant for a worker thread: pyoxigraph releases the GIL while it
    evaluates, so queries on other threads (and the event loop) go on meanwhile. A query is
    evaluated lazily while it is serialized, and the serializer checks the deadline at every
    write, so a query that streams its solutions stops at the deadline. One that must finish a
    sort or an aggregate first cannot be interrupted inside pyoxigraph (it has no cancellation):
    the client gets its 503 at the deadline all the same (the endpoint stops waiting), and the
    evaluation keeps its slot until it returns, so at most ``max_running`` run at once.
    """

    def __init__(self, limits: Limits, pool: QueryPool | None = None) -> None:
        self.limits = limits
        # Worker processes for the queries (an on-disk store): then a query past its time or
        # memory limit is killed with its process. Without one, queries run on threads here.
        self.pool = pool
        # The dataset of a query that names none (on threads; a pool has the one it published).
        self.default_dataset: Callable[[], Mapping[str, Any]] = dict
        self._slots = threading.BoundedSemaphore(limits.max_running)
        # Threads for what an operator allowed to reach the network (--allow-service): the
        # others are filtered for good once they have evaluated a client's query.
        self._federated: ThreadPoolExecutor | None = None
        self._federated_lock = threading.Lock()
        # The full-text functions a query calls (karenina:textScore …), brought in step first:
        # pyoxigraph custom functions on threads, and where the index is for a worker process.
        self.text_functions: Callable[[str], dict[Any, Any] | None] = lambda text: None
        self.text_index: Callable[[str], Mapping[str, Any] | None] = lambda text: None
        # Whether preparing ``text`` for a worker may block (``text_index`` brings the index in
        # step): then it goes by a thread, not run_query_async.
        self.needs_thread: Callable[[str], bool] = lambda text: False

    def federates(self, text: str) -> bool:
        """Whether ``text`` names SERVICE or LOAD targets, all allowed (``check_services`` has
        refused the others): then it runs where the network is reachable."""
        if not self.limits.allow_service:
            return False
        return any(True for _ in service_targets(text, PREFIXES)) or any(True for _ in load_targets(text, PREFIXES))

    def on_its_thread(self, text: str, job: Callable[[], T]) -> T:
        """Run ``job`` (the evaluation of ``text``) where it may run: on this thread after taking
        its network away, or, for an allowed federated operation, on a thread that keeps it."""
        if not self.limits.isolate:
            return job()
        if self.federates(text):
            with self._federated_lock:
                if self._federated is None:
                    self._federated = ThreadPoolExecutor(
                        max_workers=self.limits.max_running, thread_name_prefix="karenina-rdf-federated"
                    )
            return self._federated.submit(job).result()
        if not block_network_here() and not _warned:
            _warn_once()
        return job()

    def check_services(self, text: str) -> None:
        allowed = self.limits.allow_service
        if "*" in allowed:
            return
        for target in service_targets(text, PREFIXES):
            if target is None:
                raise ProtocolError(
                    403, "SERVICE with an endpoint this server cannot resolve (a variable …) is not allowed here"
                )
            if not url_allowed(target, allowed):
                raise ProtocolError(
                    403, f"SERVICE <{target}> is not allowed on this endpoint (start it with --allow-service)"
                )
        for target in load_targets(text, PREFIXES):
            if not url_allowed(target, allowed):
                raise ProtocolError(
                    403, f"LOAD <{target}> is not allowed on this endpoint (start it with --allow-service)"
                )

    def run_query(
        self,
        store: Any,
        op: Operation,
        dataset: Callable[[], Mapping[str, Any]] | None,
        accept: str | None,
        fmt: str | None,
        started: float,
    ) -> tuple[bytes, str]:
        """Evaluate and serialize; returns the body and its format name. ``dataset`` None: the
        store's default dataset (``default_dataset``, or the one the pool published)."""
        if self.pool is not None and not self.federates(op.text):
            return self._in_worker(self.pool, op, dataset, accept, fmt, started)
        return self.on_its_thread(op.text, partial(self._run_query, store, op, dataset, accept, fmt, started))

    def _run_query(
        self,
        store: Any,
        op: Operation,
        dataset: Callable[[], Mapping[str, Any]] | None,
        accept: str | None,
        fmt: str | None,
        started: float,
    ) -> tuple[bytes, str]:
        limits = self.limits
        deadline = started + limits.timeout
        if not self._slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise timed_out(limits.timeout)
        results: Any = None
        try:
            if op.default_graphs or op.named_graphs:
                # The protocol's dataset replaces the query's FROM / FROM NAMED (§2.1.4).
                kwargs: dict[str, Any] = {
                    "default_graph": [ox.NamedNode(g) for g in op.default_graphs],
                    "named_graphs": [ox.NamedNode(g) for g in op.named_graphs],
                }
            else:
                # Asked for now, with the slot held: a write that began while this query waited
                # is then seen as in progress (Endpoint.dataset).
                kwargs = dict((dataset or self.default_dataset)())
            try:
                functions = self.text_functions(op.text)
                if functions:
                    kwargs["custom_functions"] = functions
                results = store.query(op.text, base_iri=op.base, prefixes=dict(PREFIXES), **kwargs)
            except SyntaxError as exc:
                raise ProtocolError(400, f"SPARQL syntax error: {exc}") from None
            except (OSError, RuntimeError) as exc:
                log.warning("query failed: %s", exc)
                raise ProtocolError(502, "the query failed (a SERVICE call or the store failed)") from None
            offered = GRAPHS if isinstance(results, ox.QueryTriples) else RESULTS
            name = negotiate(accept, offered, fmt)
            sink = ResultSink(limits.max_result_bytes, deadline, limits.timeout)
            try:
                if isinstance(results, ox.QueryTriples):
                    serialize_graph(results, name, cast(IO[bytes], sink), prefixes=PREFIXES)
                else:
                    results.serialize(cast(IO[bytes], sink), RESULT_FORMATS[name])
            except Refused as refused:  # past the result size or the time limit
                raise ProtocolError(refused.status, refused.message) from None
            except (OSError, RuntimeError) as exc:
                # A SERVICE reply or a store's own error may carry what the client must not see.
                log.warning("query failed while it ran: %s", exc)
                raise ProtocolError(502, "the query failed while it ran (a SERVICE call or the store failed)") from None
            if time.monotonic() > deadline:
                raise timed_out(limits.timeout)
            return b"".join(sink.parts), name
        finally:
            # pyoxigraph's result objects must die on the thread that made them; an exception's
            # traceback would otherwise carry this frame (and them) to the event loop's thread.
            results = None
            self._slots.release()

    def _in_worker(
        self,
        pool: QueryPool,
        op: Operation,
        dataset: Callable[[], Mapping[str, Any]] | None,
        accept: str | None,
        fmt: str | None,
        started: float,
    ) -> tuple[bytes, str]:
        """The query in one of the pool's worker processes. Negotiation is done here for both
        kinds of result (the worker picks the one that fits, or answers its 406)."""
        try:
            return pool.run(
                **self._worker_request(op, dataset, accept, fmt, started),
                text_index=self.text_index(op.text),
            )
        except QueryFailed as exc:
            raise ProtocolError(exc.status, exc.message) from None

    def _worker_request(
        self,
        op: Operation,
        dataset: Callable[[], Mapping[str, Any]] | None,
        accept: str | None,
        fmt: str | None,
        started: float,
    ) -> dict[str, Any]:
        def format_for(offered: Sequence[str]) -> str | tuple[int, str]:
            try:
                return negotiate(accept, offered, fmt)
            except ProtocolError as exc:
                return (exc.status, exc.message)

        kwargs: Mapping[str, Any] | None = None
        if op.default_graphs or op.named_graphs:
            kwargs = {
                "default_graph": [ox.NamedNode(g) for g in op.default_graphs],
                "named_graphs": [ox.NamedNode(g) for g in op.named_graphs],
            }
        elif dataset is not None:
            kwargs = dataset()
        limits = self.limits
        return {
            "text": op.text,
            "base": op.base,
            "prefixes": PREFIXES,
            "dataset": kwargs,
            "results_format": format_for(RESULTS),
            "graphs_format": format_for(GRAPHS),
            "max_bytes": limits.max_result_bytes,
            "deadline": started + limits.timeout,
            "timeout": limits.timeout,
        }

    async def run_query_async(
        self,
        op: Operation,
        dataset: Callable[[], Mapping[str, Any]] | None,
        accept: str | None,
        fmt: str | None,
        started: float,
    ) -> tuple[bytes, str] | None:
        """``run_query`` on the running event loop, for what needs no thread: a query for the
        pool's workers that calls no full-text function (those bring the index in step first),
        with an idle worker at hand. None when it needs the thread (nothing was run): then call
        ``run_query`` on one. ``dataset`` must not block (it is called here)."""
        if self.pool is None or self.needs_thread(op.text) or self.federates(op.text):
            return None
        try:
            return await self.pool.run_async(**self._worker_request(op, dataset, accept, fmt, started))
        except QueryFailed as exc:
            raise ProtocolError(exc.status, exc.message) from None

    def prepare_update(self, op: Operation) -> str:
        """The update text to run, with the protocol's dataset as USING clauses."""
        if op.default_graphs or op.named_graphs:
            if names_dataset(op.text):
                raise ProtocolError(
                    400,
                    "the update names its dataset (USING or WITH) and so does the request "
                    "(using-graph-uri / using-named-graph-uri): use one of them",
                )
            return add_using(op.text, op.default_graphs, op.named_graphs)
        return op.text
