"""Progress bars of the long commands: on a terminal (or with --progress) each phase shows its
count reaching its total; piped, with --quiet or --no-progress nothing of it reaches stderr, and
stdout is the same in every case.

One table of commands drives every test. The in-process tests force the bars with --progress
(a non-terminal then gets each bar's final state once); the slow ones run the command under a
pseudo-terminal, as a user sees it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from karenina_rdf.cli import app
from tests.conftest import ROOT

runner = CliRunner()
QUESTIONS, ROWS = 40, 60
NAME = f"Synthetic biomedical benchmark ({QUESTIONS} questions, seed 0)"
RUN = "synthetic-0"


@dataclass(frozen=True)
class Command:
    id: str
    args: tuple[str, ...]  # {bench} {results} {out} {store} are filled in
    store: str  # "fresh", "bench" (benchmark only) or "both" (benchmark and run)
    label: str  # the bars' first words
    # (phase, unit, total or None when the test cannot know it): each must end at its total.
    phases: tuple[tuple[str, str, int | None], ...]
    json_stdout: bool = False  # stdout is JSON (it must still parse)


COMMANDS = [
    Command(
        "import",
        ("import", "{bench}"),
        "fresh",
        "import",
        (("mapping", "questions", QUESTIONS), ("loading", "triples", None), ("validating", "steps", 3)),
    ),
    Command(
        "import-folder",
        ("import", "{folder}"),
        "fresh",
        "import",
        (("files", "files", 2), ("mapping", "results", ROWS), ("reading", "bytes", None)),
    ),
    Command(
        "results-import",
        ("results", "import", "{results}"),
        "bench",
        "results import",
        (("reading", "bytes", None), ("mapping", "results", ROWS), ("loading", "triples", None)),
    ),
    Command("export", ("export", NAME, "-o", "{out}"), "bench", "export", (("writing", "questions", QUESTIONS),)),
    Command(
        "export-stdout", ("export", NAME), "bench", "export", (("writing", "questions", QUESTIONS),), json_stdout=True
    ),
    Command(
        "results-export",
        ("results", "export", RUN, "-o", "{out}"),
        "both",
        "results export",
        (("writing", "results", ROWS),),
    ),
    Command(
        "results-export-stdout",
        ("results", "export", RUN),
        "both",
        "results export",
        (("writing", "results", ROWS),),
        json_stdout=True,
    ),
    Command(
        "results-export-csv",
        ("results", "export", RUN, "--format", "csv", "-o", "{out}"),
        "both",
        "results export",
        (("writing", "results", ROWS),),
    ),
    Command(
        "results-export-db",
        ("results", "export", RUN, "--format", "karenina-db", "-o", "{out}.db"),
        "both",
        "results export",
        (("writing", "results", ROWS),),
    ),
    Command(
        "validate-file",
        ("validate", "{bench}"),
        "fresh",
        "validate",
        (("mapping", "questions", QUESTIONS), ("loading", "triples", None), ("checking", "graphs", 1)),
    ),
    Command(
        "validate-json",
        ("validate", "{bench}", "--format", "json"),
        "fresh",
        "validate",
        (("mapping", "questions", QUESTIONS),),
        json_stdout=True,
    ),
    Command(
        "validate-stored",
        ("validate", "--stored"),
        "both",
        "validate",
        (("validating", "benchmarks and runs", 2),),
    ),
    Command("delete", ("delete", NAME), "both", "delete", (("removing", "triples", None),)),
    Command("results-delete", ("results", "delete", RUN), "both", "results delete", (("removing", "triples", None),)),
    Command(
        "publish",
        ("publish", "--base", "https://example.org/site/", "-o", "{out}"),
        "bench",
        "publish",
        (("copying", "benchmarks", 1), ("writing", "resources", None)),
    ),
]
IDS = [c.id for c in COMMANDS]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A generated benchmark and a results export of it, and two stores: the benchmark only,
    and the benchmark with the run."""
    root = tmp_path_factory.mktemp("progress")
    folder = root / "folder"
    folder.mkdir()
    bench, results = folder / "bench.jsonld", folder / "results.json"
    gen = ROOT / "benchmarks"
    subprocess.run([sys.executable, gen / "generate.py", str(QUESTIONS), bench], check=True, capture_output=True)
    subprocess.run(
        [sys.executable, gen / "generate_results.py", bench, results, "--rows", str(ROWS)],
        check=True,
        capture_output=True,
    )
    stores = {"store-bench": root / "store-bench", "store-both": root / "store-both"}
    for args in (
        ["import", str(bench), "--store", str(stores["store-bench"])],
        ["import", str(folder), "--store", str(stores["store-both"])],
    ):
        r = runner.invoke(app, [*args, "--no-progress"])
        assert r.exit_code == 0, r.output
    return {"bench": bench, "results": results, "folder": folder, **stores}


def _args(cmd: Command, data: dict[str, Path], work: Path) -> list[str]:
    """The command's arguments, on a copy of the store it needs (delete changes it)."""
    store = work / "store"
    if cmd.store != "fresh":
        shutil.copytree(data["store-" + cmd.store], store)
    fill = {"bench": data["bench"], "results": data["results"], "folder": data["folder"], "out": work / "out"}
    return [a.format(**fill) for a in cmd.args] + ["--store", str(store)]


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _final_counts(text: str, label: str, phase: str, unit: str) -> list[tuple[str, str]]:
    """Every drawn (done, total) of one phase, in order."""
    text = _ANSI.sub("", text)
    pattern = rf"{re.escape(label)} {re.escape(phase)}\s+\S*\s+(\S+(?: [kMG]?B)?)/(\S+(?: [kMG]?B)?) {re.escape(unit)}"
    if unit == "bytes":  # sizes: "412.4 kB/412.4 kB"
        pattern = rf"{re.escape(label)} {re.escape(phase)}\s+\S*\s+([\d.]+ [kMG]?B)/([\d.]+ [kMG]?B)"
    return re.findall(pattern, text)


def _check_phases(cmd: Command, text: str) -> None:
    for phase, unit, total in cmd.phases:
        drawn = _final_counts(text, cmd.label, phase, unit)
        assert drawn, f"{cmd.id}: no '{cmd.label} {phase}' bar in {text!r}"
        done, shown_total = drawn[-1]
        assert done == shown_total, f"{cmd.id}: {phase} ended at {done} of {shown_total}"
        assert shown_total != "?"
        if total is not None:
            assert shown_total == f"{total:,}", f"{cmd.id}: {phase} total {shown_total}, expected {total}"


def _invoke(cmd: Command, data: dict[str, Path], work: Path, *flags: str) -> tuple[str, str]:
    work.mkdir()
    r = runner.invoke(app, [*_args(cmd, data, work), *flags])
    assert r.exit_code in (0, 1), r.output  # validate exits 1 for a finding; nothing else fails
    return r.stdout, r.stderr


def _same_stdout(cmd: Command, a: str, b: str) -> None:
    if cmd.json_stdout:
        one, two = json.loads(a), json.loads(b)
        if cmd.id == "validate-json":
            assert one == two
        else:
            assert one.keys() == two.keys()
    else:
        # The paths differ from one copy of the store to the next.
        assert re.sub(r"/\S+/(store|out)\S*", "PATH", a) == re.sub(r"/\S+/(store|out)\S*", "PATH", b)


def _no_bars(cmd: Command, stdout: str, stderr: str) -> None:
    assert "━" not in stderr and " ETA " not in stderr, stderr
    assert not any(_final_counts(stderr, cmd.label, phase, unit) for phase, unit, _ in cmd.phases)
    if cmd.json_stdout:
        json.loads(stdout)


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_forced_bars_count_to_their_totals_and_piped_draws_nothing(
    cmd: Command, data: dict[str, Path], tmp_path: Path
) -> None:
    stdout, stderr = _invoke(cmd, data, tmp_path / "on", "--progress")
    _check_phases(cmd, stderr)
    # The default, with stderr not a terminal (CliRunner's): nothing drawn, the same stdout.
    piped_out, piped_err = _invoke(cmd, data, tmp_path / "piped")
    _no_bars(cmd, piped_out, piped_err)
    _same_stdout(cmd, stdout, piped_out)


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_quiet_draws_nothing(cmd: Command, data: dict[str, Path], tmp_path: Path) -> None:
    _no_bars(cmd, *_invoke(cmd, data, tmp_path / "run", "--quiet"))


@pytest.mark.parametrize("flags", [("--progress", "--quiet"), ("--progress", "--no-progress")])
def test_quiet_wins(flags: tuple[str, ...], data: dict[str, Path], tmp_path: Path) -> None:
    _, stderr = _invoke(COMMANDS[0], data, tmp_path / "run", *flags)
    assert "━" not in stderr and " ETA " not in stderr, stderr


def _under_a_terminal(args: list[str]) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal: (exit code, stdout, what the terminal got)."""
    import pty  # POSIX only, as the tests that use it

    main, child = pty.openpty()
    code = "import sys; from karenina_rdf.cli import main; sys.argv[0] = 'karenina-rdf'; main()"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    env.pop("FORCE_COLOR", None)
    # stdout to a file: a pipe would fill up (an export writes megabytes) while the terminal is read.
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(
            [sys.executable, "-c", code, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=child, env=env
        )
        os.close(child)
        got = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            got.append(chunk)
        p.wait()
        os.close(main)
        out.seek(0)
        stdout = out.read().decode("utf-8")
    return p.returncode, stdout, b"".join(got).decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")
@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_bars_on_a_terminal(cmd: Command, data: dict[str, Path], tmp_path: Path) -> None:
    tmp_path.joinpath("tty").mkdir()
    code, stdout, terminal = _under_a_terminal(_args(cmd, data, tmp_path / "tty"))
    assert code in (0, 1), terminal
    _check_phases(cmd, terminal)
    if cmd.json_stdout:
        json.loads(stdout)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")
@pytest.mark.parametrize("flag", ["--quiet", "--no-progress"])
def test_quiet_on_a_terminal(flag: str, data: dict[str, Path], tmp_path: Path) -> None:
    cmd = COMMANDS[0]
    code, stdout, terminal = _under_a_terminal([*_args(cmd, data, tmp_path), flag])
    assert code == 0, terminal
    assert "━" not in terminal and " ETA " not in terminal, terminal
    assert stdout.startswith("imported ")
