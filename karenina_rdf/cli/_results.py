"""``karenina-rdf results …``: import, list, compare and export verification runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from karenina_rdf._errors import InvalidValueError
from karenina_rdf._store import Store
from karenina_rdf.rdf import solutions, term_value
from karenina_rdf.results import ResultsImport, is_results_store, is_sqlite

from ._common import BaseOpt, StoreOpt, _run, err, out
from ._progress import ProgressOpt, QuietOpt, progress_bars

results_app = typer.Typer(
    help="Verification results: import Karenina results exports, list and compare runs, export them.",
    no_args_is_help=True,
)


def print_results_import(r: ResultsImport) -> None:
    out.print(
        f"[green]{r.status}[/green] run {escape(r.run_id)}: {r.rows} results "
        f"({r.added} new, {r.replaced} replaced, {r.triples} triples) from {escape(r.source or '?')}"
    )
    if r.duplicates:
        err.print(
            f"[yellow]warning:[/yellow] {r.duplicates} rows repeat an earlier row's identity; the last one is kept"
        )
    if r.unmatched:
        ids = ", ".join(r.unmatched_ids) + (" …" if r.unmatched > len(r.unmatched_ids) else "")
        err.print(
            f"[yellow]warning:[/yellow] {r.unmatched} results name a question that is not stored; "
            f"kept, not linked: {escape(ids)}"
        )
    for w in r.warnings:
        err.print(f"[yellow]warning:[/yellow] {escape(w)}")
    if r.template_mismatches:
        err.print(
            f"[yellow]warning:[/yellow] {r.template_mismatches} results were made with a template other than "
            "the stored one (template_id differs); not linked to the template"
        )


@results_app.command("import")
def import_(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Karenina results exports (format 2.0-2.2), ResultsStore files or results databases."),
    ],
    benchmark: Annotated[
        str | None,
        typer.Option(
            "--benchmark", "-b", help="The stored benchmark the results are for, when a question id is in several."
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            help="Run id to store an export's results under (default: its job_id); for a database or a "
            "ResultsStore file, the one run to import (by id or name).",
        ),
    ] = None,
    validate: Annotated[
        bool,
        typer.Option(
            "--validate/--no-validate",
            help="Check the run against the shapes before storing it (a violation refuses it); off by default: "
            "it costs about one more import. `karenina-rdf validate --stored` checks stored runs.",
        ),
    ] = False,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Import verification results; rows already stored in the run (same identity) are replaced."""

    def act(s: Store) -> None:
        for path in paths:
            with progress_bars(progress, quiet, "results import") as bars:
                if is_sqlite(path):
                    found = s.import_results_db(path, benchmark=benchmark, run=run, progress=bars)
                elif is_results_store(path):
                    found = s.import_results_store(path, benchmark=benchmark, run=run, validate=validate, progress=bars)
                else:
                    found = [s.import_results(path, benchmark=benchmark, run=run, validate=validate, progress=bars)]
            for result in found:
                print_results_import(result)

    _run(store, base_iri, act)


@results_app.command("runs")
def runs(store: StoreOpt = None, base_iri: BaseOpt = None) -> None:
    """List the stored runs: start, models, mode, results, pass rate (mean of non-null verify_result)."""

    def act(s: Store) -> None:
        table = Table("run", "started", "answering models", "judges", "mode", "results", "pass rate", "failures")
        for r in s.runs():
            rate = f"{r.pass_rate:.1%} ({r.passed}/{r.verified})" if r.pass_rate is not None else "–"
            table.add_row(
                escape(r.run_id),
                r.started or "",
                escape(", ".join(r.answering_models)),
                escape(", ".join(r.parsing_models)),
                escape(", ".join(r.modes)),
                str(r.results),
                rate,
                str(r.failures),
            )
        out.print(table)

    _run(store, base_iri, act)


@results_app.command("compare")
def compare(
    run_a: Annotated[str, typer.Argument(help="The earlier run's id.")],
    run_b: Annotated[str, typer.Argument(help="The later run's id.")],
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list the questions whose pass rate did not change.")
    ] = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Regressions and improvements per question and answering model between two runs."""

    def act(s: Store) -> None:
        for ref in (run_a, run_b):
            s.resolve_run(ref)  # a clear error for an unknown run, not an empty table
        table = Table("change", "question", "answering model", run_a, run_b)
        counts = {"regression": 0, "improvement": 0, "same": 0}
        for row in solutions(s.query("run-comparison", run_a=run_a, run_b=run_b)):
            change = term_value(row["change"])
            counts[change] = counts.get(change, 0) + 1
            if change == "same" and not show_all:
                continue
            colour = {"regression": "red", "improvement": "green"}.get(change, "white")
            table.add_row(
                f"[{colour}]{change}[/{colour}]",
                escape(term_value(row["question_id"])),
                escape(term_value(row["answering_model"])),
                f"{float(term_value(row['rate_a'])):.0%}",
                f"{float(term_value(row['rate_b'])):.0%}",
            )
        out.print(table)
        out.print(
            f"{counts['regression']} regressions, {counts['improvement']} improvements, "
            f"{counts['same']} unchanged (question × answering model pairs verified in both runs)"
        )

    _run(store, base_iri, act)


@results_app.command("export")
def export(
    run: Annotated[str, typer.Argument(help="Run id or IRI.")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="karenina-json (Karenina's results export, format 2.2), csv (Karenina's CSV) or karenina-db "
            "(adds the run to a Karenina results database, a SQLite file; needs --output).",
        ),
    ] = "karenina-json",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Export a run as a Karenina results export (Karenina loads it) or as CSV."""

    def act(s: Store) -> None:
        if fmt == "karenina-db" and output is None:
            raise InvalidValueError("--format karenina-db writes a database file: give it with --output")
        with progress_bars(progress, quiet, "results export") as bars:
            n = s.export_results(run, output if output is not None else sys.stdout, format=fmt, progress=bars)
        if output is not None:
            err.print(f"wrote {n} results to {escape(str(output))}")

    _run(store, base_iri, act)


@results_app.command("delete")
def delete(
    run: Annotated[str, typer.Argument(help="Run id or IRI.")],
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Delete a run and its results from the store."""

    def act(s: Store) -> None:
        with progress_bars(progress, quiet, "results delete") as bars:
            gone = s.delete_run(run, progress=bars)
        out.print(f"deleted {escape(gone)}")

    _run(store, base_iri, act)
