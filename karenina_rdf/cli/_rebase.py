"""``karenina-rdf rebase``: change the base IRI a store mints under, moving every IRI it holds
(docs/publishing.md § Changing a store's base)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from karenina_rdf._errors import InvalidValueError, StoreError
from karenina_rdf.store import default_store_path, is_url

from ._common import StoreOpt, _errors, _open, out

commands = typer.Typer()


@commands.command()
def rebase(
    new_base: Annotated[
        str,
        typer.Argument(help="The new base: an absolute http(s) IRI ending in '/', e.g. https://bench.example.org/kb/."),
    ],
    store: StoreOpt = None,
) -> None:
    """Move every IRI under the store's base to NEW_BASE, in every graph, atomically; the store then mints under it."""
    # No --base-iri: the store is opened under the base it records, whatever the environment says.
    with _errors(usage=(InvalidValueError,)):
        location = store or str(default_store_path())
        if location != ":memory:" and not is_url(location) and not Path(location).is_dir():
            raise StoreError(f"no store at {location}")  # rather than create one only to rebase it
        s = _open(store, None)
        try:
            report = s.rebase(new_base)
            where = s.location
        finally:
            s.close()
    if report.old_base == report.new_base:
        out.print(f"the store at {escape(where)} mints under {escape(report.new_base)} already: nothing to do")
        return
    out.print(
        f"rebased the store at {escape(where)} from {escape(report.old_base)} to {escape(report.new_base)} "
        f"({report.quads:,} quads)"
    )
