"""The command line: each command, its output and exit codes, and errors as one line each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from karenina_rdf.cli import app
from tests.conftest import EXAMPLES

runner = CliRunner()


@pytest.fixture
def store_dir(tmp_path: Path) -> str:
    path = str(tmp_path / "store")
    result = runner.invoke(app, ["import", str(EXAMPLES), "--store", path])
    assert result.exit_code == 0, result.output
    return path


def run(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_import_list_show(store_dir: str) -> None:
    code, out, _ = run("list", "--store", store_dir)
    assert code == 0
    for name in ("Molecular biology examples", "Pharmacology examples", "Bioinformatics methods examples"):
        assert name in out
    code, out, _ = run("show", "Pharmacology examples", "--store", store_dir)
    assert code == 0 and "names_target" in out and "imatinib" in out
    qid = "urn:uuid:question-what-is-the-primary-molecular-target-of-imatinib-af35ccf9"
    code, out, _ = run("show", "Pharmacology examples", qid, "--store", store_dir)
    assert code == 0 and "BCR-ABL" in out and "class Answer" in out


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "tsv"])
def test_query_formats(store_dir: str, fmt: str) -> None:
    q = "SELECT ?name WHERE { ?b a schema:DataFeed ; schema:name ?name } ORDER BY ?name"
    code, out, _ = run("query", q, "--format", fmt, "--store", store_dir)
    assert code == 0
    if fmt == "json":
        rows = json.loads(out)["results"]["bindings"]
        assert [r["name"]["value"] for r in rows] == [
            "Bioinformatics methods examples",
            "Molecular biology examples",
            "Pharmacology examples",
        ]
    else:
        assert "Pharmacology examples" in out


def test_query_from_file_and_ask(store_dir: str, tmp_path: Path) -> None:
    f = tmp_path / "q.rq"
    f.write_text("ASK { ?q a schema:Question ; karenina:finished false }", encoding="utf-8")
    code, out, _ = run("query", "--file", str(f), "--format", "json", "--store", store_dir)
    assert code == 0 and json.loads(out)["boolean"] is True


def test_export_and_delete(store_dir: str, tmp_path: Path) -> None:
    out_file = tmp_path / "p.jsonld"
    code, _, _ = run("export", "Pharmacology examples", "-o", str(out_file), "--store", store_dir)
    assert code == 0
    exported = json.loads(out_file.read_text(encoding="utf-8"))
    original = json.loads((EXAMPLES / "pharmacology.jsonld").read_text(encoding="utf-8"))
    assert exported == original
    code, out, _ = run("delete", "Pharmacology examples", "--store", store_dir)
    assert code == 0 and "deleted Pharmacology examples" in out
    code, out, _ = run("list", "--store", store_dir)
    assert "Pharmacology" not in out


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["show", "nope"], 1, "no benchmark with id, IRI or name 'nope'"),
        (["query", "SELECT nonsense"], 1, "error"),
        (["query", "SELECT * WHERE {}", "--format", "yaml"], 2, "unknown --format 'yaml'"),
        (["export", "nope"], 1, "no benchmark"),
        (["import", "/no/such/file.jsonld"], 1, "no such file or folder"),
    ],
)
def test_errors_are_one_line_no_traceback(store_dir: str, args: list[str], code: int, message: str) -> None:
    exit_code, _, err = run(*args, "--store", store_dir)
    assert exit_code == code
    assert message in err
    assert "Traceback" not in err


def test_bad_files_one_line_each_and_good_ones_imported(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonld").write_bytes((EXAMPLES / "pharmacology.jsonld").read_bytes())
    (tmp_path / "in" / "b.jsonld").write_bytes(b"\xff\xfe not utf-8")
    doc = json.loads((EXAMPLES / "molecular-biology.jsonld").read_text(encoding="utf-8"))
    doc["dataFeedElement"][0]["item"].pop("text")
    doc["dataFeedElement"][1]["item"].pop("acceptedAnswer")
    (tmp_path / "in" / "c.jsonld").write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = run("import", str(tmp_path / "in"), "--store", str(tmp_path / "s"))
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 3, err
    assert "b.jsonld:1: not UTF-8" in lines[0]
    assert "c.jsonld at /dataFeedElement/0/item" in lines[1] and "missing required field 'text'" in lines[1]
    assert "c.jsonld at /dataFeedElement/1/item" in lines[2] and "missing required field 'acceptedAnswer'" in lines[2]
    assert "imported Pharmacology examples" in out


@pytest.mark.slow  # runs the installed console script in subprocesses
def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed entry point, in a real process, with the store from the environment."""
    env = {"KARENINA_RDF_STORE": str(tmp_path / "s"), "PATH": str(Path(sys.executable).parent)}
    exe = str(Path(sys.executable).parent / "karenina-rdf")
    r = subprocess.run([exe, "import", str(EXAMPLES)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([exe, "show", "nope"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
