"""``karenina-rdf publish``: benchmarks as a static linked-data site (docs/publishing.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from karenina_rdf._errors import InvalidValueError

from ._common import BaseOpt, StoreOpt, _errors, _open, err, out
from ._progress import ProgressOpt, QuietOpt, progress_bars

commands = typer.Typer()


@commands.command()
def publish(
    benchmarks: Annotated[
        list[str] | None, typer.Argument(help="Benchmarks (id, IRI or name); every stored one when none is named.")
    ] = None,
    base: Annotated[
        str, typer.Option("--base", help="The site's public address, under which every IRI is published.")
    ] = ...,  # type: ignore[assignment]
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write the site into (empty or new).")] = ...,  # type: ignore[assignment]
    sparql_endpoint: Annotated[
        str | None,
        typer.Option(help="SPARQL endpoint holding this data under --base: the site's query page sends queries there."),
    ] = None,
    runs: Annotated[bool, typer.Option(help="Publish the verification runs made on the benchmarks.")] = True,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Write benchmarks as a static site any static host serves: pages, RDF, VoID, DCAT, sitemap, dumps."""
    from karenina_rdf.web import publish as publish_site

    with _errors(usage=(InvalidValueError,)):
        s = _open(store, base_iri)
        try:
            with progress_bars(progress, quiet, "publish") as bars:
                report = publish_site(
                    s,
                    benchmarks or [],
                    base,
                    output,
                    sparql_endpoint=sparql_endpoint,
                    runs=runs,
                    note=lambda text: err.print(f"note: {escape(text)}"),
                    progress=bars,
                )
        finally:
            s.close()
    if report.moved:
        err.print(
            f"warning: {len(report.moved)} IRI(s) hold an id with '/' or dots only, which a static host cannot serve"
            f" at the IRI itself; their pages and files are published under the id kept encoded, e.g. "
            f"{escape(report.moved[0])}"
        )
    out.print(
        f"published {len(report.benchmarks)} benchmark(s), {len(report.runs)} run(s), {report.resources:,} resources "
        f"({report.pages:,} pages, {report.files:,} files, {report.bytes / 1e6:.1f} MB) to {escape(report.out)}"
    )
