"""The ``karenina-rdf`` command line (typer + rich): the app, put together from one module per
command group.

Every error a user can cause ends as one readable line per problem on stderr and a non-zero
exit code, never a traceback: 1 for bad input or a failed lookup, 2 for usage errors
(``_common``).
"""

from __future__ import annotations

import typer

from . import _benchmarks, _publish, _rebase, _serve, _versions
from ._results import results_app
from ._verify import rescore, templates_app, verify

app = typer.Typer(
    name="karenina-rdf",
    help="Karenina LLM benchmarks as schema.org triples in an RDF graph store.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# In the order `--help` lists them.
verification = typer.Typer()
verification.command("verify")(verify)
verification.command("rescore")(rescore)
app.add_typer(_benchmarks.commands)
app.add_typer(_versions.commands)
app.add_typer(_serve.commands)
app.add_typer(_publish.commands)
app.add_typer(_rebase.commands)
app.add_typer(verification)
app.add_typer(results_app, name="results")
app.add_typer(templates_app, name="templates")


def main() -> None:
    app()
