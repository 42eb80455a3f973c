"""Documentation that must not drift: the quick start, every CLI command, the examples script."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from karenina_rdf.cli import app
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_quick_start_is_one_block_of_two_commands() -> None:
    section = README.split("## Quick start", 1)[1]
    block = re.search(r"```\w*\n(.*?)```", section, re.S)
    assert block is not None
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 2
    assert "karenina-rdf import examples/" in lines[0]
    assert "pytest" in lines[1]


def test_ci_runs_the_readme_test_command() -> None:
    section = README.split("## Quick start", 1)[1]
    test_line = re.search(r"```\w*\n(.*?)```", section, re.S).group(1).strip().splitlines()[1]  # type: ignore[union-attr]
    assert test_line in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_cli_command_is_documented() -> None:
    # The command line as a user meets it (click's view of the typer app, group modules merged).
    import typer

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert commands, "no commands registered"
    groups = {name: c for name, c in commands.items() if hasattr(c, "commands")}
    assert sorted(groups) == ["results", "templates"]
    for name, command in commands.items():
        if name in groups:
            continue
        assert f"`karenina-rdf {name}" in README, f"README does not document `karenina-rdf {name}`"
        assert command.help, f"{name} has no help text"
    for group, sub in groups.items():
        assert sub.commands, f"no {group} commands"
        for name, command in sub.commands.items():
            assert f"`karenina-rdf {group} {name}" in README, f"README does not document `{group} {name}`"
            assert command.help, f"{group} {name} has no help text"


def test_docs_exist() -> None:
    for doc in ("docs/ARCHITECTURE.md", "docs/data-model.md", "docs/performance.md", "docs/verification.md"):
        assert (ROOT / doc).is_file(), doc


@pytest.mark.slow  # runs the example script in a subprocess
def test_api_example_runs() -> None:
    r = subprocess.run(
        [sys.executable, "examples/api_example.py"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "shared: 'What is the primary molecular target of imatinib?' in 2 benchmarks" in r.stdout


@pytest.mark.slow  # runs the example script in a subprocess
def test_queries_tour_runs() -> None:
    r = subprocess.run(
        [sys.executable, "examples/queries_tour.py"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "Molecular biology examples: 4 of 5 finished" in r.stdout
    assert "same text: 'What is the primary molecular target of imatinib?'" in r.stdout
    assert "Molecular biology examples: completeness" in r.stdout
