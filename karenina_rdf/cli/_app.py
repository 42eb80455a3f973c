"""The ``karenina-rdf`` command line (typer + rich).

Every error a user can cause ends as one readable line per problem on stderr and a non-zero
exit code, never a traceback: 1 for bad input or a failed lookup, 2 for usage errors.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pyoxigraph as ox
import typer
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from karenina_rdf._errors import CheckpointError, InvalidValueError, KareninaRDFError, QueryNotFoundError
from karenina_rdf.authoring._benchmark import Benchmark
from karenina_rdf.rdf._vocab import PREFIXES
from karenina_rdf.sparql._named import (
    GRAPH_FORMATS,
    RESULT_FORMATS,
    find_query,
    looks_like_reference,
    named_queries,
    serialize_results,
)
from karenina_rdf.store._remote import is_url
from karenina_rdf.store._store import BASE_IRI_ENV, STORE_ENV, Store, checkpoint_files, default_store_path

app = typer.Typer(
    name="karenina-rdf",
    help="Karenina LLM benchmarks as schema.org triples in an RDF graph store.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
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
        "--base-iri", envvar=BASE_IRI_ENV, help="Base IRI for minted node IRIs.", show_default="http://127.0.0.1:8000/"
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


@app.command("import")
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
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Import checkpoints (and results exports found beside them) into the store; a benchmark
    already stored is replaced, a run already stored is updated row by row."""

    def act(s: Store) -> int:
        report = s.import_paths(paths, validate=validate)
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


@app.command("list")
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


@app.command()
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
    _show_traits("global rubric", b.get_global_rubric() or [])
    table = Table("#", "id", "question", "finished", "template", "keywords")
    for n, q in enumerate(b, 1):
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
    q = b.get_question(question_id)
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


@app.command()
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
            find_query(text).bind(values)  # an unknown query or a bad parameter is a usage error

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


@app.command("queries")
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


@app.command()
def export(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id, IRI or unambiguous name.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Export a benchmark as a Karenina checkpoint (canonical JSON-LD that Karenina loads)."""

    def act(s: Store) -> None:
        if output is None:
            s.save(benchmark, sys.stdout)
            sys.stdout.write("\n")
        else:
            s.save(benchmark, output)
            err.print(f"wrote {escape(str(output))}")

    _run(store, base_iri, act)


@app.command()
def delete(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id, IRI or unambiguous name.")],
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Delete a benchmark from the store."""

    def act(s: Store) -> None:
        gone = s.delete(benchmark)
        out.print(f"deleted {escape(gone.name)} {escape(gone.version or '')} ({gone.questions} questions)")

    _run(store, base_iri, act)


@app.command()
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
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Validate checkpoint files, or stored benchmarks and runs, against shapes and checks (exit 1: not conforming)."""
    from karenina_rdf.results._read import looks_like_results
    from karenina_rdf.validation._validate import report_json, reports_turtle, validate_results_files, validate_store
    from karenina_rdf.validation._validate import validate as validate_file

    if fmt not in ("text", "json", "turtle") or engine not in ("auto", "fast", "pyshacl"):
        err.print("[red]error:[/red] --format is text, json or turtle; --engine is auto, fast or pyshacl")
        raise typer.Exit(2)
    if not targets and not stored:
        err.print("[red]error:[/red] name checkpoint files to validate, or use --stored")
        raise typer.Exit(2)

    def act(s: Store | None) -> list[Any]:
        if s is not None:
            refs: list[str | None] = list(targets) if targets else [None]
            return [r for ref in refs for r in validate_store(s, ref, engine=engine)]  # type: ignore[arg-type]
        files = list(checkpoint_files(targets or []))
        results = [f for f in files if looks_like_results(f)]
        checkpoints = [f for f in files if f not in results]
        reports = [validate_file(f, engine=engine, base_iri=base_iri) for f in checkpoints]  # type: ignore[arg-type]
        # A results export is validated as a run, with the checkpoints named beside it as its benchmarks.
        return reports + validate_results_files(results, checkpoints, engine=engine, base_iri=base_iri)  # type: ignore[arg-type]

    # A benchmark that is not there, a bad base IRI or nothing to validate are usage errors (2),
    # kept apart from "does not conform" (1).
    try:
        if stored:
            s = _open(store, base_iri)
            try:
                reports = act(s)
            finally:
                s.close()
        else:
            reports = act(None)
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


@app.command()
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
    max_running: Annotated[int, typer.Option(help="Queries evaluated at once; others wait.")] = 8,
) -> None:
    """Serve the store: SPARQL endpoint, linked data and web pages (docs/endpoint.md)."""
    from karenina_rdf.web._app import EndpointSettings
    from karenina_rdf.web._app import serve as run_server

    with _errors(usage=(InvalidValueError,)):
        settings = EndpointSettings(
            write_token=write_token or None,
            timeout=timeout,
            max_result_bytes=max_result_bytes,
            max_body_bytes=max_body_bytes,
            allow_service=tuple(allow_service or ()),
            cors_origins=tuple(cors_origin or ()),
            max_running=max_running,
        )
        s = _open(store, base_iri)
    try:
        mode = "read-write (write token set)" if settings.write_token else "read-only"
        err.print(f"serving {escape(s.location)} on http://{host}:{port}/ ({mode}); SPARQL at /sparql")
        run_server(s, settings, host=host, port=port)
    finally:
        s.close()


def main() -> None:
    app()


# Last, because these commands use this module's helpers.
from ._results import results_app  # noqa: E402
from ._verify import rescore, templates_app, verify  # noqa: E402

app.add_typer(results_app, name="results")
app.command("verify")(verify)
app.command("rescore")(rescore)
app.add_typer(templates_app, name="templates")
