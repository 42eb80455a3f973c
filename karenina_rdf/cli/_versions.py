"""The version commands: ``versions`` (list, drop) and ``diff`` (docs/publishing.md § Versions)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from karenina_rdf._errors import InvalidValueError
from karenina_rdf._store import Store

from ._common import BaseOpt, StoreOpt, _run, out

commands = typer.Typer()

FormatOpt = Annotated[str, typer.Option("--format", help="text or json.")]


def _check_format(fmt: str) -> None:
    if fmt not in ("text", "json"):
        raise InvalidValueError(f"--format {fmt!r}: give text or json")


@commands.command()
def versions(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id, IRI or unambiguous name.")],
    drop: Annotated[
        list[str] | None,
        typer.Option("--drop", help="Drop this kept version (number or unique label); repeatable."),
    ] = None,
    fmt: FormatOpt = "text",
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """List a benchmark's versions (a re-import keeps the replaced one), oldest first, or drop some."""

    def act(s: Store) -> None:
        _check_format(fmt)
        for ref in drop or []:
            gone = s.drop_version(benchmark, ref)
            if fmt == "text":
                out.print(f"dropped version {gone.number} ({escape(gone.label)}, {gone.questions} questions)")
        listed = s.versions(benchmark)
        if fmt == "json":
            print(json.dumps([v.model_dump() for v in listed], indent=2, ensure_ascii=False))
            return
        table = Table("version", "label", "date", "source", "content hash", "questions", "revises")
        for v in listed:
            table.add_row(
                f"{v.number}{' (latest)' if v.latest else ''}",
                escape(v.label),
                escape(v.date or ""),
                escape(v.source or ""),
                escape(v.content_hash or "(edited)"),
                str(v.questions),
                "" if v.revision_of is None else str(v.revision_of),
            )
        out.print(table)

    _run(store, base_iri, act)


@commands.command()
def diff(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id, IRI or unambiguous name.")],
    old: Annotated[str | None, typer.Argument(help="The older version (default: the one before NEW).")] = None,
    new: Annotated[str | None, typer.Argument(help="The newer version (default: the latest).")] = None,
    fmt: FormatOpt = "text",
    store: StoreOpt = None,
    base_iri: BaseOpt = None,
) -> None:
    """Questions added, removed and changed between two versions (default: previous → latest),
    and which parts of a changed one: text, answer, template, rubric, metadata."""

    def act(s: Store) -> None:
        _check_format(fmt)
        d = s.diff(benchmark, old, new)
        if fmt == "json":
            print(json.dumps(d.model_dump(), indent=2, ensure_ascii=False))
            return
        out.print(
            f"version {d.old} → {d.new}: {len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed"
        )
        if d.benchmark_parts:
            out.print(f"benchmark: {escape(', '.join(d.benchmark_parts))} changed")
        for qid in d.added:
            out.print(f"[green]+[/green] {escape(qid)}")
        for qid in d.removed:
            out.print(f"[red]-[/red] {escape(qid)}")
        for c in d.changed:
            out.print(f"[yellow]~[/yellow] {escape(c.id)}: {escape(', '.join(c.parts))}")

    _run(store, base_iri, act)
