"""The benchmark commands: import, list, show, query, queries, export, delete, validate."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import pyoxigraph as ox
import typer
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from karenina_rdf._errors import InvalidValueError, KareninaRDFError, QueryNotFoundError
from karenina_rdf._importing import checkpoint_files
from karenina_rdf._progress import QUIET, QUIET_TASK, Progress
from karenina_rdf._store import Store
from karenina_rdf.authoring import Benchmark
from karenina_rdf.rdf import PREFIXES
from karenina_rdf.sparql import (
    GRAPH_FORMATS,
    RESULT_FORMATS,
    find_query,
    looks_like_reference,
    named_queries,
    serialize_results,
)

from ._common import BaseOpt, StoreOpt, _errors, _fail, _open, _run, err, out
from ._progress import ProgressOpt, QuietOpt, progress_bars

commands = typer.Typer()


@commands.command("import")
def import_(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Checkpoint files, Karenina results exports, or folders of them (benchmarks first)."),
    ],
    validate: Annotated[
        bool,
        typer.Option(
            "--validate/--no-validate",
            help="Check each benchmark against the shapes before storing it (the default): a violation "
            "refuses it, warnings are printed. --no-validate skips the check.",
        ),
    ] = True,
    keep_version: Annotated[
        bool,
        typer.Option(
            "--keep-version/--no-keep-version",
            help="Keep the generation a re-import replaces as a version (the default; see `versions`, "
            "`diff`); --no-keep-version drops it.",
        ),
    ] = True,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Import checkpoints (and results exports found beside them) into the store; a benchmark
    already stored is replaced (the replaced one kept as a version), a run already stored is
    updated row by row."""

    def act(s: Store) -> int:
        with progress_bars(progress, quiet, "import") as bars:
            report = s.import_paths(paths, validate=validate, keep_version=keep_version, progress=bars)
        for r in report.imported:
            out.print(
                f"[green]{r.status}[/green] {escape(r.name)} {escape(r.version or '')} "
                f"({r.questions} questions, {r.triples} triples) from {escape(r.source or '?')}"
            )
            if r.readiness is not None:
                out.print(f"  {escape(r.readiness.line())}")
            for w in r.warnings:
                err.print(f"[yellow]warning:[/yellow] {escape(w)}")
        from ._results import print_results_import

        for res in report.results:
            print_results_import(res)
        for line in report.errors:
            err.print(f"[red]error:[/red] {escape(line)}")
        return 0 if report.ok else 1

    code = _run(store, base_iri, act)
    raise typer.Exit(code)


@commands.command("list")
def list_(store: StoreOpt = None, base_iri: BaseOpt = None) -> None:
    """List the stored benchmarks: name, version, number of questions and traits, id."""

    def act(s: Store) -> None:
        table = Table("name", "version", "questions", "traits", "id")
        for b in s.benchmarks():
            table.add_row(
                escape(b.name), escape(b.version or ""), str(b.questions), str(b.traits), escape(b.benchmark_id)
            )
        out.print(table)

    _run(store, base_iri, act)


@commands.command()
def show(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id, IRI or unambiguous name.")],
    question: Annotated[str | None, typer.Argument(help="A question id in that benchmark.")] = None,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Show a benchmark (its rubric and questions), or one question in full."""

    def act(s: Store) -> None:
        b = Benchmark(s, benchmark)
        if question is not None:
            _show_question(b, question)
        else:
            _show_benchmark(b)

    _run(store, base_iri, act)


def _show_benchmark(b: Benchmark) -> None:
    out.print(f"[bold]{escape(b.name)}[/bold] {escape(b.version)}")
    for label, value in (
        ("id", b.id),
        ("IRI", b.iri),
        ("description", b.description),
        ("creator", b.creator),
        ("created", b.created_at),
        ("modified", b.modified_at),
    ):
        out.print(f"  {label}: {escape(str(value))}")
    props = b.get_all_custom_properties()
    if props:
        out.print("  properties: " + escape(json.dumps(props, ensure_ascii=False)))
    rubric = b.get_global_rubric()
    _show_traits("global rubric", rubric.all_traits() if rubric else [])
    table = Table("#", "id", "question", "finished", "template", "keywords")
    for n, q in enumerate(b.question_views(), 1):
        text = q.question if len(q.question) <= 70 else q.question[:67] + "..."
        table.add_row(
            str(n),
            escape(q.id or ""),
            escape(text),
            "yes" if q.finished else "no",
            "yes" if q.has_template else "no",
            escape(", ".join(q.keywords or [])),
        )
    out.print(table)


def _show_traits(title: str, traits: list[Any]) -> None:
    if not traits:
        return
    table = Table("trait", "type", "kind", "description", title=title, title_justify="left")
    for t in traits:
        table.add_row(escape(t.name), t.trait_type, t.kind, escape(t.description or ""))
    out.print(table)


def _show_question(b: Benchmark, question_id: str) -> None:
    q = b.question_view(question_id)
    out.print(f"[bold]{escape(q.question)}[/bold]")
    fields = {
        "id": q.id,
        "IRI": q.iri,
        "MD5 id": q.md5_id,
        "answer": q.raw_answer,
        "finished": q.finished,
        "created": q.date_created,
        "modified": q.date_modified,
        "keywords": q.keywords,
        "author": q.author,
        "sources": q.sources,
        "custom metadata": q.custom_metadata,
        "few-shot examples": q.few_shot_examples,
        "answer notes": q.answer_notes,
        "workspace path": q.workspace_path,
        "template id": q.template_id,
    }
    for label, value in fields.items():
        if value is not None:
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            out.print(f"  {label}: {escape(str(shown))}")
    if q.has_template:
        out.print(Syntax(q.answer_template or "", "python", line_numbers=False))
    else:
        out.print("  template: none (Karenina's default template)")
    _show_traits("question rubric", q.question_rubric or [])


@commands.command()
def query(
    query: Annotated[
        str | None,
        typer.Argument(help="SPARQL text, the name of a named query (see `queries`) or a .rq file."),
    ] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", help="Read the query from a file.")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="NAME=VALUE for a query parameter (repeatable); bound as an RDF term."),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="SELECT/ASK: table, json, csv, tsv or xml. CONSTRUCT/DESCRIBE: turtle, ntriples, jsonld or rdfxml.",
        ),
    ] = "table",
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Run a SPARQL query or a named query over every stored benchmark and run (the prefixes schema:, karenina:,
    rdf:, xsd:, earl:, prov:, skos:, rdfs: are predeclared)."""
    if fmt not in ("table", *RESULT_FORMATS, *GRAPH_FORMATS):
        err.print(f"[red]error:[/red] unknown --format {fmt!r} (table, {', '.join([*RESULT_FORMATS, *GRAPH_FORMATS])})")
        raise typer.Exit(2)
    if (query is None) == (file is None):
        err.print("[red]error:[/red] give the query as an argument or with --file, not both")
        raise typer.Exit(2)
    values: dict[str, str] = {}
    for item in param or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            err.print(f"[red]error:[/red] --param {item!r}: write NAME=VALUE")
            raise typer.Exit(2)
        values[name.strip()] = value
    with _errors(usage=(QueryNotFoundError, InvalidValueError)):
        if file is not None:
            text = str(file) if file.suffix == ".rq" else file.read_text(encoding="utf-8")
        else:
            text = query or ""
        if values and not looks_like_reference(text):
            err.print("[red]error:[/red] --param needs a named query or a .rq file with '# param:' lines")
            raise typer.Exit(2)
        if looks_like_reference(text):
            # An unknown query or a bad parameter is a usage error (no search yet: no store open).
            find_query(text).bind(values, search=lambda _: {})

    def act(s: Store) -> None:
        results = s.query(text, values)
        graph = isinstance(results, ox.QueryTriples)
        if fmt != "table" and (fmt in GRAPH_FORMATS) != graph:
            del results  # an error's traceback would keep it, and with it the store, open
            kinds = ", ".join(GRAPH_FORMATS) if graph else "table, " + ", ".join(RESULT_FORMATS)
            what = "CONSTRUCT or DESCRIBE query gives a graph" if graph else "SELECT or ASK query gives results"
            raise _fail([f"a {what}: use one of {kinds}, not {fmt!r}"], 2)
        _print_results(results, fmt)

    _run(store, base_iri, act)


@commands.command("queries")
def queries_() -> None:
    """List the named queries (queries/*.rq) with their parameters."""
    table = Table("name", "title", "parameters")
    for name, q in named_queries().items():
        table.add_row(escape(name), escape(q.title), escape("; ".join(p.usage() for p in q.params) or "—"))
    out.print(table)


def _print_results(results: Any, fmt: str) -> None:
    if fmt == "table" and isinstance(results, ox.QueryTriples):
        fmt = "turtle"
    if fmt != "table":
        data = serialize_results(results, fmt, PREFIXES)
        sys.stdout.write(data.decode("utf-8"))
        if not data.endswith(b"\n"):
            sys.stdout.write("\n")
        return
    if isinstance(results, ox.QueryBoolean):
        out.print("true" if bool(results) else "false")
        return
    names = [v.value for v in results.variables]
    table = Table(*names)
    n = 0
    for row in results:
        table.add_row(*(escape(_cell(row[v])) for v in names))
        n += 1
    out.print(table)
    err.print(f"{n} row{'s' if n != 1 else ''}")


def _cell(term: Any) -> str:
    if term is None:
        return ""
    return str(term.value)


@commands.command()
def export(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id, IRI or unambiguous name.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    version: Annotated[
        str | None,
        typer.Option("--version", help="A kept version (number, 'previous' or a unique label; see `versions`)."),
    ] = None,
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Export a benchmark (its latest version, or --version) as a Karenina checkpoint
    (canonical JSON-LD that Karenina loads)."""

    def act(s: Store) -> None:
        target = sys.stdout if output is None else output
        with progress_bars(progress, quiet, "export") as bars:
            if version is None:
                s.save(benchmark, target, progress=bars)
            else:
                s.save_version(benchmark, version, target)
        if output is None:
            sys.stdout.write("\n")
        else:
            err.print(f"wrote {escape(str(output))}")

    _run(store, base_iri, act)


@commands.command()
def delete(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id, IRI or unambiguous name.")],
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Delete a benchmark from the store."""

    def act(s: Store) -> None:
        with progress_bars(progress, quiet, "delete") as bars:
            gone = s.delete(benchmark, progress=bars)
        out.print(f"deleted {escape(gone.name)} {escape(gone.version or '')} ({gone.questions} questions)")

    _run(store, base_iri, act)


@commands.command()
def validate(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            help="Checkpoint and results files or folders; with --stored, benchmark ids or names, or run ids."
        ),
    ] = None,
    stored: Annotated[
        bool,
        typer.Option(
            "--stored", help="Validate what is in the store: every benchmark and verification run, or TARGETS."
        ),
    ] = False,
    fmt: Annotated[str, typer.Option("--format", help="text, json or turtle (the sh:ValidationReport).")] = "text",
    engine: Annotated[str, typer.Option("--engine", help="auto, fast or pyshacl (the reference).")] = "auto",
    progress: ProgressOpt = None,
    quiet: QuietOpt = False,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Validate checkpoint files, or stored benchmarks and runs, against shapes and checks (exit 1: not conforming)."""
    from karenina_rdf._importing import validate_results_files
    from karenina_rdf.results import looks_like_results
    from karenina_rdf.validation import report_json, reports_turtle, validate_store
    from karenina_rdf.validation import validate as validate_file

    if fmt not in ("text", "json", "turtle") or engine not in ("auto", "fast", "pyshacl"):
        err.print("[red]error:[/red] --format is text, json or turtle; --engine is auto, fast or pyshacl")
        raise typer.Exit(2)
    if not targets and not stored:
        err.print("[red]error:[/red] name checkpoint files to validate, or use --stored")
        raise typer.Exit(2)

    def act(s: Store | None, bars: Progress | None) -> list[Any]:
        if s is not None:
            refs: list[str | None] = list(targets) if targets else [None]
            return [r for ref in refs for r in validate_store(s, ref, engine=engine, progress=bars)]  # type: ignore[arg-type]
        files = list(checkpoint_files(targets or []))
        results = [f for f in files if looks_like_results(f)]
        checkpoints = [f for f in files if f not in results]
        several = (bars or QUIET).start("files", len(files), "files") if len(files) > 1 else QUIET_TASK
        reports = []
        for f in checkpoints:
            reports.append(validate_file(f, engine=engine, base_iri=base_iri, progress=bars))  # type: ignore[arg-type]
            several.advance()
        # A results export is validated as a run, with the checkpoints named beside it as its benchmarks.
        reports += validate_results_files(results, checkpoints, engine=engine, base_iri=base_iri)  # type: ignore[arg-type]
        several.advance(len(results))
        several.done()
        return reports

    # A benchmark that is not there, a bad base IRI or nothing to validate are usage errors (2),
    # kept apart from "does not conform" (1).
    try:
        with progress_bars(progress, quiet, "validate") as bars:
            if stored:
                s = _open(store, base_iri)
                try:
                    reports = act(s, bars)
                finally:
                    s.close()
            else:
                reports = act(None, bars)
    except KareninaRDFError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if not reports:
        err.print(
            "[red]error:[/red] nothing to validate: "
            + ("the store is empty" if stored else "no checkpoint files found")
        )
        raise typer.Exit(2)
    if fmt == "json":
        sys.stdout.write(report_json(reports) + "\n")
    elif fmt == "turtle":
        sys.stdout.write(reports_turtle(reports))
    else:
        for r in reports:
            mark = "[green]conforms[/green]" if r.conforms else "[red]does not conform[/red]"
            label = f"run {r.run}" if r.run is not None else (r.benchmark if stored else r.source) or r.benchmark or "?"
            out.print(f"{escape(label)}: {mark} ({len(r.violations)} violations, {len(r.warnings)} warnings)")
            for f in r.findings:
                out.print("  " + escape(f.line(r.source)))
    raise typer.Exit(0 if all(r.conforms for r in reports) else 1)
