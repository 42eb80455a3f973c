"""The HTTP endpoint: SPARQL 1.1 Protocol at ``/sparql``, named queries at ``/queries/{name}``,
VoID at ``/.well-known/void``, every minted IRI dereferenceable, and the HTML pages.

Read-only unless started with a write token; every write (SPARQL Update, import, delete) checks
it. Queries run under the limits of :class:`EndpointSettings`: on a store on disk in worker
processes that read snapshots of it (``sparql._pool``; a write publishes a new snapshot before it
answers), elsewhere on worker threads (pyoxigraph releases the GIL while it evaluates). Errors
are plain-text messages with the protocol's status; an unexpected one is logged and answered
with a 500 that shows no trace.
"""

from __future__ import annotations

import contextlib
import io
import logging
import secrets
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import pyoxigraph as ox
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from karenina_rdf._errors import (
    CheckpointError,
    InvalidValueError,
    KareninaRDFError,
    NotFoundError,
    StoreError,
    validation_message,
)
from karenina_rdf._store import Store
from karenina_rdf.checkpoint import read_json
from karenina_rdf.linked import Located, Site, alternates
from karenina_rdf.rdf import PREFIXES
from karenina_rdf.sparql import (
    GRAPHS,
    Limits,
    Operation,
    ProtocolError,
    QueryPool,
    Runner,
    content_type,
    dataset_clauses,
    named_queries,
    negotiate,
    parse_request,
    serialize_graph,
)
from karenina_rdf.web.pages import Pages

log = logging.getLogger("karenina_rdf.endpoint")
T = TypeVar("T")
STATIC = Path(__file__).parent / "static"


class EndpointSettings(BaseModel):
    """What ``karenina-rdf serve`` takes besides the store (docs/endpoint.md)."""

    model_config = ConfigDict(frozen=True)

    write_token: str | None = None  # None: read-only
    timeout: float = 30.0  # seconds per query
    max_result_bytes: int = 50_000_000
    max_body_bytes: int = 10_000_000
    allow_service: tuple[str, ...] = ()  # IRI prefixes SERVICE / LOAD may reach; "*" for any
    cors_origins: tuple[str, ...] = ()  # "*" for any
    max_running: int = 8  # queries evaluated at once; on disk: queries that may run past 1 s at once
    # An on-disk store's queries run in worker processes (killed past the time or memory limit);
    # False: on threads of the server, which cannot stop them (in-memory and remote stores always).
    query_processes: bool = True
    max_query_memory: int = 1024  # MiB resident per query worker process; 0: no limit

    if not TYPE_CHECKING:  # type checkers keep pydantic's typed constructor

        def __init__(self, **data: Any) -> None:
            # Settings come from a user (``serve``'s options): one readable error of the tree.
            try:
                super().__init__(**data)
            except ValidationError as exc:
                raise InvalidValueError(f"endpoint settings: {validation_message(exc)}") from exc

    @field_validator("max_query_memory")
    @classmethod
    def _memory_not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError("max_query_memory is in MiB, 0 for no limit; it cannot be negative")
        return value

    @field_validator("write_token")
    @classmethod
    def _token_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("a write token must not be empty (None makes the endpoint read-only)")
        return value


class Endpoint:
    """What every route shares: the store, its site, the query runner and the write lock."""

    def __init__(self, store: Store, settings: EndpointSettings) -> None:
        self.store, self.settings = store, settings
        # Pages and linked data read the store on other threads while a write runs: a graph is
        # dropped quad by quad here, never by clearing and reloading the store (GraphStore).
        store.drop_by_rebuilding = False
        self.site = Site(store)
        # Queries on an on-disk store run in worker processes that read snapshots of it; an
        # in-memory store cannot be snapshotted and a SPARQL server bounds its own queries.
        self.pool: QueryPool | None = None
        # (Linux: the pool reads each worker's memory in /proc.)
        if settings.query_processes and store.path is not None and sys.platform.startswith("linux"):
            self.pool = self._new_pool()
        self.runner = Runner(
            Limits(
                settings.timeout,
                settings.max_result_bytes,
                settings.allow_service,
                settings.max_running,
                isolate=store.remote is None,
            ),
            self.pool,
        )
        self.runner.default_dataset = self.dataset
        self.runner.text_functions = self.store.text_functions
        self.runner.text_index = self.store.fulltext.worker_spec
        self.runner.needs_thread = self.store.fulltext.needs_index  # brought in step first
        self.threads = anyio.CapacityLimiter(64)
        self._write_lock = threading.Lock()
        self._state = threading.Lock()
        self._dataset: dict[str, Any] | None = None
        self._dataset_at = 0.0
        self._generation = 0  # bumped at the start and end of every write
        self._writing = 0
        self.bases: dict[tuple[Any, ...], str] = {}  # the endpoint's URL by request (_base_for)
        if self.pool is not None:
            self._start_pool()

    def _new_pool(self) -> QueryPool:
        return QueryPool(heavy_slots=self.settings.max_running, memory_limit=self.settings.max_query_memory << 20)

    def _start_pool(self) -> None:
        assert self.pool is not None
        with self._write_lock:
            self._publish()
        self.pool.start()

    def open(self) -> None:
        """At the app's start: a new pool if an earlier shutdown closed it (an app served twice)."""
        if self.pool is not None and self.pool.closed:
            self.pool = self.runner.pool = self._new_pool()
            self._start_pool()

    def _publish(self) -> None:
        """Give the query workers a snapshot of the store as it is now, with its dataset (the
        write lock held: no write between the two)."""
        assert self.pool is not None
        self.pool.publish(self.store.snapshot(), self.store.dataset())

    def republish(self) -> None:
        """A new snapshot of the store for the query workers (after a compaction: same data)."""
        if self.pool is not None:
            with self._write_lock:
                self._publish()

    def close(self) -> None:
        """Stop the query workers and delete the snapshots."""
        if self.pool is not None:
            self.pool.close()

    # -- the dataset a query sees ------------------------------------------------------------
    def dataset(self) -> dict[str, Any]:
        """``Store.dataset()``, remembered until the next write through this endpoint (a server
        store is asked again after 5 s: other clients may write to it). Blocking: call it on a
        worker thread."""
        with self._state:
            cached, generation, writing = self._dataset, self._generation, self._writing
            fresh = self.store.remote is None or time.monotonic() - self._dataset_at < 5
        if cached is not None and fresh and not writing:
            return cached
        value = self.store.dataset()
        with self._state:
            # Kept only if no write began or ended meanwhile: it could describe the store before it.
            if generation == self._generation and not self._writing:
                self._dataset, self._dataset_at = value, time.monotonic()
        return value

    def write(self, job: Callable[[], T]) -> T:
        """Run a write alone; queries ask the store for their dataset while it runs."""
        with self._write_lock:
            with self._state:
                self._writing += 1
                self._generation += 1
                self._dataset = None
            try:
                return job()
            finally:
                with self._state:
                    self._dataset = None
                    self._generation += 1
                    self._writing -= 1
                if self.pool is not None:
                    # Before the write's answer: the next query sees it (read-your-writes).
                    self._publish()

    def check_graphs(self, graphs: list[str]) -> None:
        """On a server store, a request may name only the live benchmarks and the catalog: the
        server may hold other applications' graphs. Blocking."""
        if self.store.remote is None or not graphs:
            return
        visible = {g.value for g in self.store.visible_graphs()}
        for graph in graphs:
            if graph not in visible:
                raise ProtocolError(403, f"<{graph}> is not a graph of this store")

    def check_write(self, request: Request) -> None:
        token = self.settings.write_token
        if token is None:
            raise ProtocolError(
                403, "this endpoint is read-only; start it with --write-token to allow updates and imports"
            )
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip().encode(), token.encode()):
            raise ProtocolError(
                401, "a write needs the header 'Authorization: Bearer <write token>'", {"WWW-Authenticate": "Bearer"}
            )

    async def in_thread(self, job: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(partial(_contained, job), limiter=self.threads)

    async def timed(self, job: Callable[[], T]) -> T:
        """``job`` on a worker thread; past the time limit the client gets its 503 while the
        thread finishes on its own (see :class:`~karenina_rdf.sparql._protocol.Runner`)."""
        with anyio.move_on_after(self.settings.timeout + 0.5) as scope:
            return await anyio.to_thread.run_sync(
                partial(_contained, job), abandon_on_cancel=True, limiter=self.threads
            )
        if scope.cancelled_caught:
            raise ProtocolError(
                503, f"the query ran longer than the endpoint's time limit of {self.settings.timeout:g} s"
            )
        raise AssertionError("unreachable")


def _contained(job: Callable[[], T]) -> T:
    """Run ``job``; if it fails, log an unexpected error here and strip the tracebacks before the
    exception leaves the thread: their frames hold pyoxigraph iterators, which must be dropped
    on the thread that made them."""
    try:
        return job()
    except BaseException as exc:
        if not isinstance(exc, ProtocolError | KareninaRDFError):
            log.error("unexpected error in a worker thread", exc_info=exc)
        seen: set[int] = set()
        e: BaseException | None = exc
        while e is not None and id(e) not in seen:
            seen.add(id(e))
            e.__traceback__ = None
            e = e.__cause__ or e.__context__
        raise exc from None


def _endpoint_of(request: Request) -> Endpoint:
    ep: Endpoint = request.app.state.endpoint
    return ep


def _server(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"


def _rdf(triples: list[ox.Triple], fmt: str, headers: dict[str, str] | None = None) -> Response:
    body = serialize_graph(triples, fmt, prefixes=PREFIXES) or b""
    return Response(body, media_type=content_type(fmt), headers=headers)


# -- /sparql ------------------------------------------------------------------------------
async def sparql(request: Request) -> Response:
    ep = _endpoint_of(request)
    started = time.monotonic()
    body = await request.body() if request.method == "POST" else b""
    op = parse_request(request.method, request.url.query, request.headers.get("content-type"), body)
    if op is None:
        return await service_description(request)
    ep.runner.check_services(op.text)
    op.base = _endpoint_url(request)
    if op.kind == "update":
        ep.check_write(request)
        return await _update(ep, op)
    return await _answer(ep, op, request.headers.get("accept"), op.param("format"), started)


async def _answer(ep: Endpoint, op: Operation, accept: str | None, fmt: str | None, started: float) -> Response:
    data, name = await _evaluate(ep, op, accept, fmt, started)
    return Response(data, media_type=content_type(name), headers={"Vary": "Accept"})


async def _evaluate(
    ep: Endpoint, op: Operation, accept: str | None, fmt: str | None, started: float
) -> tuple[bytes, str]:
    """The query's result and its format name: in a query worker watched from the event loop when
    one is idle (no thread hop: the worker process holds the limits), else on a thread."""

    def own_dataset() -> Callable[[], dict[str, Any]] | None:
        # A query's own FROM / FROM NAMED are its dataset when the request names none (§2.1.4);
        # None is the store's (the runner's default, or the one published with the snapshot).
        return (lambda: {}) if dataset_clauses(op.text, PREFIXES) is not None else None

    if ep.pool is not None:  # a store on disk: check_graphs has nothing to check
        done = await ep.runner.run_query_async(op, own_dataset(), accept, fmt, started)
        if done is not None:
            return done

    def job() -> tuple[bytes, str]:
        own = dataset_clauses(op.text, PREFIXES)
        ep.check_graphs([*op.default_graphs, *op.named_graphs, *(own[0] + own[1] if own else [])])
        return ep.runner.run_query(ep.store.oxigraph, op, own_dataset(), accept, fmt, started)

    return await ep.timed(job)


def _endpoint_url(request: Request) -> str:
    """This endpoint's URL (the base of relative IRIs); a Host header that makes no IRI is a 400."""
    url = str(request.url.replace(query="", fragment=""))
    try:
        ox.NamedNode(url)
    except ValueError:
        raise ProtocolError(400, "the request's Host header does not make a valid URL") from None
    return url


async def _update(ep: Endpoint, op: Operation) -> Response:
    # The prefixes queries have predeclared, declared for updates too (a later PREFIX of the
    # update itself redefines one, as SPARQL allows).
    # One line, so the parser's line numbers stay the client's.
    prologue = " ".join(f"PREFIX {name}: <{iri}>" for name, iri in PREFIXES.items()) + " "
    text = prologue + ep.runner.prepare_update(op)

    def job() -> None:
        try:
            ep.store.update_graph(text, base_iri=op.base)
        except SyntaxError as exc:
            raise ProtocolError(400, f"SPARQL syntax error: {exc}") from None
        except (OSError, RuntimeError) as exc:
            log.warning("update failed: %s", exc)
            raise ProtocolError(502, "the update failed (a LOAD or the store failed)") from None

    # A LOAD or SERVICE the operator did not allow cannot reach the network from there.
    await ep.in_thread(partial(ep.write, partial(ep.runner.on_its_thread, text, job)))
    return Response(status_code=204)


async def service_description(request: Request) -> Response:
    ep = _endpoint_of(request)
    # RDF unless the client prefers HTML (a browser): then the query page.
    fmt = negotiate(request.headers.get("accept"), (*GRAPHS, "html"), request.query_params.get("format"))
    if fmt == "html":
        pages: Pages = request.app.state.pages
        return await pages.query_page(request)
    job = partial(
        ep.site.service_description,
        _endpoint_url(request),
        writable=ep.settings.write_token is not None,
        federated=bool(ep.settings.allow_service),
        void_url=_server(request) + "/.well-known/void",
    )
    return _rdf(await ep.in_thread(job), fmt, {"Vary": "Accept"})


async def void(request: Request) -> Response:
    ep = _endpoint_of(request)
    fmt = negotiate(request.headers.get("accept"), GRAPHS, request.query_params.get("format"))
    server = _server(request)
    triples = await ep.in_thread(
        partial(ep.site.void, endpoint=server + "/sparql", void_url=server + "/.well-known/void", server=server)
    )
    return _rdf(triples, fmt, {"Vary": "Accept"})


# -- named queries --------------------------------------------------------------------------
async def queries_index(request: Request) -> Response:
    fmt = negotiate(request.headers.get("accept"), ("html", "json"), request.query_params.get("format"))
    if fmt == "html":
        pages: Pages = request.app.state.pages
        return await pages.queries_page(request)
    return JSONResponse([q.model_dump(mode="json", exclude={"path"}) for q in named_queries().values()])


async def run_named_query(request: Request) -> Response:
    ep = _endpoint_of(request)
    started = time.monotonic()
    name = request.path_params["name"]
    # Only the catalog: find_query would also read any .rq file by path from the server's disk.
    named = named_queries().get(name)
    if named is None:
        raise ProtocolError(404, f"no named query {name!r}; GET /queries lists them")
    # An empty field of an HTML form means "not given" (an optional parameter stays unbound).
    params = {k: v for k, v in request.query_params.items() if k != "format" and v != ""}
    try:
        # In a thread: a search parameter asks the full-text index (rebuilt first when out of step).
        text = await ep.in_thread(partial(named.bind, params, search=ep.store.fulltext.scores))
    except (InvalidValueError, ValueError) as exc:
        raise ProtocolError(400, str(exc)) from None
    op = Operation("query", text, base=_endpoint_url(request))
    return await _answer(ep, op, request.headers.get("accept"), request.query_params.get("format"), started)


# -- benchmarks: import and delete (with the write token) -------------------------------------
async def import_benchmark(request: Request) -> Response:
    ep = _endpoint_of(request)
    ep.check_write(request)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in ("application/json", "application/ld+json"):
        raise ProtocolError(415, "send the checkpoint as application/ld+json (or application/json)")
    body = await request.body()
    label = request.headers.get("x-file-name") or "request body"
    doc = read_json(body, label)
    if not isinstance(doc, dict):
        # import_checkpoint would take a string for a path on this server's disk.
        raise ProtocolError(400, f"{label}: a checkpoint is a JSON object, not {type(doc).__name__}")
    result = await ep.in_thread(partial(ep.write, partial(ep.store.import_checkpoint, doc, name=label)))
    status = 201 if result.status == "imported" else 200
    headers = {"Location": ep.site.path_for(result.iri)}
    return JSONResponse(result.model_dump(mode="json"), status_code=status, headers=headers)


# -- linked data ----------------------------------------------------------------------------
async def resource(request: Request) -> Response:
    ep = _endpoint_of(request)
    raw = request.scope.get("raw_path", b"").decode("latin-1") or request.url.path
    iri = ep.site.iri_for_path(raw)
    where = await ep.in_thread(partial(ep.site.locate, iri)) if iri is not None else None
    if where is None:
        raise ProtocolError(404, f"nothing is published at {raw}")
    if request.method == "DELETE":
        if not (where.kind == "benchmark" and where.is_owner) or where.fmt is not None:
            raise ProtocolError(405, "only a benchmark's own IRI can be deleted", {"Allow": "GET"})
        ep.check_write(request)
        summary = await ep.in_thread(partial(ep.write, partial(ep.store.delete, where.owner)))
        return JSONResponse(summary.model_dump(mode="json"))
    if where.download == "checkpoint":
        return await _checkpoint(ep, where)
    if where.download is not None and where.kind == "version":
        return await _version_download(ep, where)
    if where.download is not None:
        return await _run_export(ep, where)
    path = ep.site.path_for(where.iri)
    fmt = where.fmt or negotiate(request.headers.get("accept"), ("html", *GRAPHS), request.query_params.get("format"))
    headers = {"Link": alternates(path), "Vary": "Accept"}
    if where.kind == "benchmark" and where.is_owner:
        headers["Link"] += f', <{path}/checkpoint.jsonld>; rel="alternate"; type="application/ld+json"'
    if where.kind == "run" and where.is_owner:
        headers["Link"] += f', <{path}/results.json>; rel="alternate"; type="application/json"'
        headers["Link"] += f', <{path}/results.csv>; rel="alternate"; type="text/csv"'
    if fmt == "html":
        pages: Pages = request.app.state.pages
        response = await pages.resource_page(request, where)
        response.headers.update(headers)
        return response
    # Through the query runner: a whole graph is a large answer, under the same limits as any.
    sparql, dataset = ep.site.describe_query(where)
    data, name = await ep.timed(
        partial(
            ep.runner.run_query,
            ep.store.oxigraph,
            Operation("query", sparql),
            lambda: dataset,
            None,
            fmt,
            time.monotonic(),
        )
    )
    return Response(data, media_type=content_type(name), headers=headers)


async def _checkpoint(ep: Endpoint, where: Located) -> Response:
    def job() -> bytes:
        out = io.StringIO()
        ep.store.save(where.owner, out)
        return out.getvalue().encode("utf-8")

    data = await ep.in_thread(job)
    name = where.owner.rstrip("/").rsplit("/", 1)[-1] or "benchmark"
    headers = {"Content-Disposition": f'attachment; filename="{name[:80]}.jsonld"'}
    return Response(data, media_type="application/ld+json", headers=headers)


async def _version_download(ep: Endpoint, where: Located) -> Response:
    """A version's checkpoint, or its changes since the version before it (``karenina-rdf diff``
    as JSON)."""
    number = int(where.iri.rsplit("/v/", 1)[1].split("/")[0])
    if where.download == "version/diff.json":
        diff = await ep.in_thread(partial(ep.store.diff, where.owner, None, number))
        return JSONResponse(diff.model_dump(mode="json"))

    def job() -> bytes:
        out = io.StringIO()
        ep.store.save_version(where.owner, number, out)
        return out.getvalue().encode("utf-8")

    data = await ep.in_thread(job)
    name = where.owner.rstrip("/").rsplit("/", 1)[-1] or "benchmark"
    headers = {"Content-Disposition": f'attachment; filename="{name[:80]}-v{number}.jsonld"'}
    return Response(data, media_type="application/ld+json", headers=headers)


async def _run_export(ep: Endpoint, where: Located) -> Response:
    """A run as Karenina's results export (format 2.2) or its CSV, as ``karenina-rdf results
    export`` writes them."""
    csv = where.download == "results.csv"

    def job() -> bytes:
        out = io.StringIO()
        ep.store.export_results(where.owner, out, format="csv" if csv else "karenina-json")
        return out.getvalue().encode("utf-8")

    data = await ep.in_thread(job)
    name = (where.owner.rstrip("/").rsplit("/", 1)[-1] or "run")[:80]
    headers = {"Content-Disposition": f'attachment; filename="{name}.{"csv" if csv else "json"}"'}
    return Response(data, media_type="text/csv; charset=utf-8" if csv else "application/json", headers=headers)


# -- errors and limits ------------------------------------------------------------------------
_MAX_LINE = 500  # characters of one line of an error message: it may quote what a client sent


def _cut(line: str) -> str:
    return line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + f"… ({len(line):,} characters)"


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    # Line by line: a refused checkpoint lists every problem, one a line, and keeps them all.
    message = "\n".join(_cut(line) for line in message.split("\n"))
    return PlainTextResponse(message + "\n", status_code=status, headers=headers)


async def _on_protocol_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProtocolError)
    return _error(exc.status, exc.message, exc.headers)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 413:
        limit = _endpoint_of(request).settings.max_body_bytes
        return _error(413, _too_large(limit))
    return _error(exc.status_code, str(exc.detail), dict(exc.headers or {}))


async def _on_library_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, NotFoundError):
        return _error(404, str(exc))
    if isinstance(exc, CheckpointError | InvalidValueError):
        return _error(400, str(exc))
    if isinstance(exc, StoreError):
        # The message may name the SPARQL server and quote its reply: for the log only.
        log.error("store error on %s %s: %s", request.method, request.url.path, exc)
        remote = _endpoint_of(request).store.remote is not None
        return _error(502 if remote else 500, "the store failed (the server log has the details)")
    return _error(400, str(exc))


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return _error(500, "internal error (the server log has the details)")


# Sent with every HTML page. Scripts come from this server only (the pages' own files and the
# vendored YASGUI; inline JSON is data, not script). Styles may also be inline: YASGUI writes
# <style> elements and the pages size their bars with style attributes. YASGUI reads its prefix
# list from a data: URL. No page can be framed.
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS_ALWAYS = [(b"x-content-type-options", b"nosniff")]
_HEADERS_HTML = [
    (b"content-security-policy", PAGE_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


class SecurityHeaders:
    """ASGI middleware: ``nosniff`` on every response, the page policy on HTML ones. Pure ASGI
    (it edits the response's start message), so streamed results stay streamed."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                extra = list(_HEADERS_ALWAYS)
                content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if content_type.startswith(b"text/html"):
                    extra += _HEADERS_HTML
                headers += [(k, v) for k, v in extra if k not in names]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _too_large(limit: int) -> str:
    return f"the request body is larger than this endpoint's limit of {limit:,} bytes (serve --max-body-bytes)"


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 saying the limit,
    whether its length is declared (refused before it is read) or streamed (refused at the byte
    that crosses it). FastAPI's own ``max_body_size`` does the same but answers a declared length
    with a fixed "Content Too Large" that names no limit."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope.get("headers", []) if k == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _error(413, _too_large(self.limit))(scope, receive, send)
            return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise StarletteHTTPException(413)  # answered by _on_http_error, with the limit
            return message

        await self.app(scope, counted, send)


class _App(FastAPI):
    """FastAPI, with a query sent by ``GET``/``HEAD /sparql`` answered before its middleware and
    routing: the bulk of an endpoint's traffic, where they cost more than a cheap query itself
    (docs/performance.md, "Endpoint under load"). The same checks and answers as the route, which
    still takes every request this path declines (a service description, CORS, POST)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == "/sparql"
            and scope["method"] in ("GET", "HEAD")
            and await _sparql_get(self, scope, receive, send)
        ):
            return
        await super().__call__(scope, receive, send)


async def _sparql_get(app: FastAPI, scope: Any, receive: Any, send: Any) -> bool:
    """Answer a query by GET; False (nothing sent) for what the full route must answer."""
    ep: Endpoint = app.state.endpoint
    if ep.settings.cors_origins:
        return False  # CORSMiddleware's headers
    started = time.monotonic()
    host = accept = None
    for key, value in scope["headers"]:
        if key == b"content-length":
            # BodyLimit's answer to a declared body past the limit; a GET's body is never read.
            if value.isdigit() and int(value) > ep.settings.max_body_bytes:
                await _send_with_nosniff(_error(413, _too_large(ep.settings.max_body_bytes)), scope, receive, send)
                return True
        elif key == b"host" and host is None:  # the first, as Starlette reads them
            host = value
        elif key == b"accept" and accept is None:
            accept = value.decode("latin-1")
    try:
        query_string = scope["query_string"].decode()  # as Starlette reads it
    except UnicodeDecodeError:
        return False
    scope["app"] = app  # what Request(scope).app reads, for the error handlers
    response: Response
    try:
        op = parse_request(scope["method"], query_string, None, b"")
        if op is None:
            return False  # the service description (or the HTML query page)
        ep.runner.check_services(op.text)
        op.base = _base_for(ep, scope, host)
        data, name = await _evaluate(ep, op, accept, op.param("format"), started)
        response = Response(data, media_type=content_type(name), headers={"Vary": "Accept"})
    except ProtocolError as exc:
        response = _error(exc.status, exc.message, exc.headers)
    except KareninaRDFError as exc:
        response = await _on_library_error(Request(scope), exc)
    except Exception as exc:
        response = await _on_unexpected(Request(scope), exc)
    await _send_with_nosniff(response, scope, receive, send)
    return True


async def _send_with_nosniff(response: Response, scope: Any, receive: Any, send: Any) -> None:
    # What SecurityHeaders adds to a response that is not HTML.
    response.raw_headers.append(_HEADERS_ALWAYS[0])
    await response(scope, receive, send)


def _base_for(ep: Endpoint, scope: Any, host: bytes | None) -> str:
    """``_endpoint_url`` of the request, remembered per scheme, host and path (a few, unless
    clients send many Host headers: then it starts over)."""
    server = scope.get("server")
    key = (scope.get("scheme"), host, scope.get("root_path"), scope["path"], tuple(server) if server else None)
    base = ep.bases.get(key)
    if base is None:
        base = _endpoint_url(Request({**scope, "query_string": b""}))  # a 400 for a Host no IRI takes
        if len(ep.bases) >= 64:
            ep.bases.clear()
        ep.bases[key] = base
    return base


def create_app(store: Store, settings: EndpointSettings | None = None) -> FastAPI:
    """The endpoint over ``store`` as an ASGI app (``karenina-rdf serve`` runs it with uvicorn)."""
    settings = settings or EndpointSettings()
    endpoint = Endpoint(store, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        endpoint.open()
        try:
            yield
        finally:
            endpoint.close()  # the query workers and the snapshots

    app = _App(
        title="karenina-rdf",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.endpoint = endpoint
    app.state.pages = Pages(app.state.endpoint)
    routes: list[tuple[str, Callable[[Request], Awaitable[Response]], list[str]]] = [
        ("/sparql", sparql, ["GET", "HEAD", "POST"]),
        ("/.well-known/void", void, ["GET", "HEAD"]),
        ("/queries", queries_index, ["GET", "HEAD"]),
        ("/queries/{name}", run_named_query, ["GET", "HEAD"]),
        ("/benchmarks", import_benchmark, ["POST"]),
    ]
    for path, handler, methods in routes:
        app.add_api_route(path, handler, methods=methods, include_in_schema=False)
    app.state.pages.add_routes(app)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_api_route("/sparql/", lambda: RedirectResponse("/sparql", 308), methods=["GET"], include_in_schema=False)
    app.add_api_route("/{path:path}", resource, methods=["GET", "HEAD", "DELETE"], include_in_schema=False)
    app.add_exception_handler(ProtocolError, _on_protocol_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(KareninaRDFError, _on_library_error)
    app.add_exception_handler(Exception, _on_unexpected)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Accept", "Content-Type", "Authorization"],
        )
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)  # 413 past it, declared or streamed
    app.add_middleware(SecurityHeaders)  # last added, outermost: its headers go on every answer
    return app


def serve(store: Store, settings: EndpointSettings, *, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the endpoint with uvicorn until interrupted."""
    import uvicorn

    app = create_app(store, settings)
    if store.path is not None:
        # The importer's bulk loads leave the RocksDB files uncompacted, and scans on them run
        # 9-29 % slower (docs/performance.md, "Endpoint under load"); Oxigraph's server compacts
        # when it opens a store, so does this one, on the side while it already answers.
        threading.Thread(target=_compact, args=(app.state.endpoint,), name="compact", daemon=True).start()
    try:
        uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
    finally:
        app.state.endpoint.close()


def _compact(endpoint: Endpoint) -> None:
    store = endpoint.store
    started = time.monotonic()
    try:
        store.oxigraph.optimize()
    except Exception as exc:  # a faster store is a bonus; serving goes on without it
        log.warning("compacting the store failed: %s", exc)
        return
    log.info("store compacted in %.1f s", time.monotonic() - started)
    # The query workers read the snapshot made at start, before the compaction: give them one of
    # the compacted files (scans on uncompacted files are slower: docs/performance.md).
    endpoint.republish()
