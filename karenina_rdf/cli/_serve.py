"""``karenina-rdf serve``: the SPARQL endpoint, linked data and pages over HTTP."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from karenina_rdf._errors import InvalidValueError

from ._common import BaseOpt, StoreOpt, _errors, _open, err

commands = typer.Typer()


@commands.command()
def serve(
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    write_token: Annotated[
        str | None,
        typer.Option(
            envvar="KARENINA_RDF_WRITE_TOKEN",
            help="Allow SPARQL Update, imports and deletes to requests that send 'Authorization: Bearer TOKEN'. "
            "Without it the endpoint is read-only.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Time limit of one query, in seconds.")] = 30.0,
    max_result_bytes: Annotated[int, typer.Option(help="Largest query result served, in bytes.")] = 50_000_000,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body accepted, in bytes.")] = 10_000_000,
    allow_service: Annotated[
        list[str] | None,
        typer.Option(help="IRI prefix that SERVICE (and LOAD) may reach; repeat it; '*' allows any. Default: none."),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="Origin allowed to call the endpoint from a browser (CORS); repeat it; '*' allows any."),
    ] = None,
    max_running: Annotated[
        int,
        typer.Option(
            help="Queries evaluated at once; others wait. On a store on disk: queries that may run longer than "
            "1 s at once (two more workers keep answering short queries); past that, a long query is stopped "
            "with a 503."
        ),
    ] = 8,
    max_query_memory: Annotated[
        int,
        typer.Option(
            help="Memory one query may use, in MiB (its worker process's resident size; store on disk); past it "
            "the query is stopped with a 503. 0: no limit."
        ),
    ] = 1024,
    query_processes: Annotated[
        bool,
        typer.Option(
            help="Run the queries of a store on disk in worker processes, stopped at the time and memory limits. "
            "Without: on the server's threads, which cannot stop a query that sorts or aggregates."
        ),
    ] = True,
) -> None:
    """Serve the store: SPARQL endpoint, linked data and web pages (docs/endpoint.md)."""
    from karenina_rdf.web import EndpointSettings
    from karenina_rdf.web import serve as run_server

    with _errors(usage=(InvalidValueError,)):
        settings = EndpointSettings(
            write_token=write_token or None,
            timeout=timeout,
            max_result_bytes=max_result_bytes,
            max_body_bytes=max_body_bytes,
            allow_service=tuple(allow_service or ()),
            cors_origins=tuple(cors_origin or ()),
            max_running=max_running,
            max_query_memory=max_query_memory,
            query_processes=query_processes,
        )
        s = _open(store, base_iri)
    try:
        mode = "read-write (write token set)" if settings.write_token else "read-only"
        err.print(f"serving {escape(s.location)} on http://{host}:{port}/ ({mode}); SPARQL at /sparql")
        run_server(s, settings, host=host, port=port)
    finally:
        s.close()
