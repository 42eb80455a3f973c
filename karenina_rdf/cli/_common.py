"""What every command shares: the consoles, the ``--store``/``--base-iri`` options, opening a
store, and turning errors into one line each with the exit code (1 for bad input or a failed
lookup, 2 for usage errors), never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from karenina_rdf._errors import CheckpointError, KareninaRDFError
from karenina_rdf._store import Store
from karenina_rdf.store import BASE_IRI_ENV, STORE_ENV, default_store_path, is_url

# Piped output is read by programs and tests: give tables room instead of wrapping at 80 columns.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 240)
err = Console(stderr=True, soft_wrap=True, width=None if sys.stderr.isatty() else 240)
T = TypeVar("T")

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        "-s",
        envvar=STORE_ENV,
        help="Store folder (':memory:' for a throwaway store), or a SPARQL server's URL: "
        "http://host:7878 (Oxigraph server), http://host:8890/sparql (Virtuoso).",
        show_default=".karenina-rdf",
    ),
]
BaseOpt = Annotated[
    str | None,
    typer.Option(
        "--base-iri",
        envvar=BASE_IRI_ENV,
        help="Base IRI a new store mints node IRIs under (recorded in the store; the default is for local use "
        "only). An existing store refuses another: change it with `karenina-rdf rebase`.",
        show_default="http://127.0.0.1:8000/",
    ),
]


def _open(store: str | None, base_iri: str | None) -> Store:
    if store == ":memory:":
        return Store(None, base_iri=base_iri)
    location = store or str(default_store_path())
    # A URL is a SPARQL server (Oxigraph server: http://host:7878, Virtuoso: http://host:8890/sparql).
    return Store(location if is_url(location) else Path(location), base_iri=base_iri)


def _fail(lines: list[str], code: int = 1) -> typer.Exit:
    for line in lines:
        err.print(f"[red]error:[/red] {escape(line)}")
    return typer.Exit(code)


@contextmanager
def _errors(usage: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Errors as one line each, no traceback: exit 2 for the ``usage`` kinds, 1 otherwise.

    The exit is raised after the ``except`` block, so the error (and, through its traceback,
    any query results still holding the store open) is not kept alive as its context."""
    lines: list[str] = []
    code = 1
    try:
        yield
    except usage as exc:
        lines, code = [str(exc)], 2
    except CheckpointError as exc:
        lines = [str(p) for p in exc.problems]
    except BrokenPipeError:
        raise  # the reader went away (`| head`): click exits quietly with status 1
    except UnicodeDecodeError as exc:
        lines = [f"not UTF-8 text: {exc}"]
    except (KareninaRDFError, SyntaxError, OSError) as exc:
        lines = [str(exc)]
    if lines:
        raise _fail(lines, code)


def _run(store: str | None, base_iri: str | None, action: Callable[[Store], T]) -> T:
    with _errors():
        s = _open(store, base_iri)
        try:
            return action(s)
        finally:
            s.close()
