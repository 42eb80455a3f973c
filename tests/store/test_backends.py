"""The same store API and CLI on every backend: embedded (on disk), Oxigraph server, Virtuoso.

Each test gets an empty store from the ``backend`` fixture (conftest.py): a folder, or a real
server started on 127.0.0.1 for the session (tests/helpers/servers.py) and emptied after the test.
"""

from __future__ import annotations

import math
import re
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from karenina_rdf import Benchmark, CheckpointError, Store, StoreError
from karenina_rdf.cli import app
from tests.conftest import EXAMPLES, load_json
from tests.helpers.violations import violation_after_loading
from tests.sparql.test_queries import CASES, _variant_doc

runner = CliRunner()
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.jsonld"))
Backend = tuple[str, Store]


def _generations(s: Store) -> set[str]:
    """Every generation graph of the store's benchmarks, live or not."""
    rows = s.oxigraph.query(
        f"SELECT DISTINCT ?g WHERE {{ GRAPH ?g {{ ?s ?p ?o }} FILTER(STRSTARTS(STR(?g), {ox.Literal(s.base_iri)})) }}"
    )
    return {r["g"].value for r in rows}


def test_import_list_and_export_round_trip(backend: Backend, tmp_path: Path) -> None:
    _, s = backend
    report = s.import_paths([EXAMPLES])
    assert report.ok and [r.status for r in report.imported] == ["imported"] * 3, report.errors
    assert [(b.name, b.questions) for b in s.benchmarks()] == [
        ("Bioinformatics methods examples", 4),
        ("Molecular biology examples", 5),
        ("Pharmacology examples", 4),
    ]
    for path, summary in zip(EXAMPLE_FILES, s.benchmarks(), strict=True):
        out = tmp_path / path.name
        s.save(summary.benchmark_id, out)
        assert out.read_bytes() == path.read_bytes(), path.name  # Karenina's canonical form, byte for byte
    # One generation per benchmark and one per run (examples/results/ is imported after them).
    assert [r.status for r in report.results] == ["imported"] * 3
    assert len(_generations(s)) == 3 + 3


def test_reimport_is_unchanged_or_replaces_atomically(backend: Backend) -> None:
    _, s = backend
    path = EXAMPLES / "pharmacology.jsonld"
    first = s.import_checkpoint(path)
    assert s.import_checkpoint(path).status == "unchanged"
    before = set(_generations(s))
    doc = load_json(path)
    doc["dataFeedElement"][0]["item"]["text"] += " (revised)"
    assert s.import_checkpoint(doc).status == "replaced"
    # The replaced generation is kept as a version: in the version archive on an embedded store,
    # on the server itself (hidden from queries, which name the live graphs) on a remote one.
    kept = {v.graph for v in s.versions(first.iri) if not v.latest}
    assert kept == before
    (live,) = set(_generations(s)) - kept
    assert live not in before
    (row,) = list(s.query("search", phrase="(revised)"))
    assert row["benchmark"].value == first.name
    # Without keeping a version, the generation replaced is gone.
    doc["dataFeedElement"][0]["item"]["text"] += " again"
    assert s.import_checkpoint(doc, keep_version=False).status == "replaced"
    assert {v.graph for v in s.versions(first.iri) if not v.latest} == kept
    assert live not in set(_generations(s)) and len(set(_generations(s)) - kept) == 1


def test_a_refused_import_leaves_the_store_as_it_was(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    _, s = backend
    s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    before = (s.benchmarks(), _generations(s))
    doc = load_json(EXAMPLES / "molecular-biology.jsonld")
    violation_after_loading(monkeypatch)  # refused once its triples are in their generation graph
    with pytest.raises(CheckpointError) as info:
        s.import_checkpoint(doc)
    assert info.value.problems[0].pointer == "/dataFeedElement/0/item/hasPart"
    assert (s.benchmarks(), _generations(s)) == before


_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"
_FLOAT = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def _cell(term: Any) -> str | None:
    # Virtuoso returns a computed boolean (BIND(true AS ?x)) as the integer 1 or 0 (docs/remote.md).
    if term is None:
        return None
    if isinstance(term, ox.Literal) and term.datatype.value == _BOOLEAN:
        return {"true": "1", "false": "0"}.get(term.value, term.value)
    return str(term.value)


def _doubles_close(a: Counter[tuple[str | None, ...]], b: Counter[tuple[str | None, ...]]) -> bool:
    """Rows equal but for doubles, which agree to 1 part in 10^4: Virtuoso writes a double with
    fewer digits than pyoxigraph (a bm25 score 1.82949 for 1.8294889371738021)."""

    def split(row: tuple[str | None, ...]) -> tuple[tuple[str | None, ...], tuple[float, ...]]:
        text = tuple(c if c is None or not _FLOAT.fullmatch(c) else "<double>" for c in row)
        return text, tuple(float(c) for c in row if c is not None and _FLOAT.fullmatch(c))

    left = sorted(split(r) for r in a.elements())
    right = sorted(split(r) for r in b.elements())
    return len(left) == len(right) and all(
        lt == rt and all(math.isclose(x, y, rel_tol=1e-4) for x, y in zip(lf, rf, strict=True))
        for (lt, lf), (rt, rf) in zip(left, right, strict=True)
    )


def _normalised(result: Any) -> Counter[tuple[str | None, ...]]:
    # GROUP_CONCAT lists come in any order: compare their members.
    names = [v.value for v in result.variables]
    out: Counter[tuple[str | None, ...]] = Counter()
    for r in result:
        cells = [_cell(r[n]) for n in names]
        out[tuple(" | ".join(sorted(c.split(" | "))) if c and " | " in c else c for c in cells)] += 1
    return out


@pytest.fixture(scope="module")
def reference() -> Iterator[Store]:
    s = Store.memory()
    s.import_paths([EXAMPLES])
    s.import_checkpoint(_variant_doc(), validate=False)
    yield s
    s.close()


def test_named_queries_give_the_same_rows_everywhere(backend: Backend, reference: Store) -> None:
    _, s = backend
    s.import_paths([EXAMPLES])
    s.import_checkpoint(_variant_doc(), validate=False)  # blank, missing and default templates
    for name, params, _, _ in CASES:
        got, want = _normalised(s.query(name, **params)), _normalised(reference.query(name, **params))
        assert got == want or _doubles_close(got, want), name


def test_readiness_is_the_same_everywhere(backend: Backend) -> None:
    _, s = backend
    result = s.import_checkpoint(_variant_doc())  # validating: a blank template is a warning only
    assert result.readiness is not None
    assert result.readiness.ready == {"template_only": 1, "template_and_rubric": 1, "rubric_only": 3}
    assert result.readiness.without_template == ("urn:uuid:variant-1", "urn:uuid:variant-2")


@pytest.mark.parametrize("value", ['x" } DROP ALL #', "x' } ; CLEAR ALL ; #"])
def test_a_hostile_parameter_is_a_value(backend: Backend, value: str) -> None:
    _, s = backend
    s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    (row,) = list(s.query("SELECT ?v WHERE { }", v=value))
    assert row["v"] == ox.Literal(value)  # the very string came back from the server: data, not SPARQL


def test_delete(backend: Backend) -> None:
    _, s = backend
    r = s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    s.delete(r.benchmark_id)
    assert s.benchmarks() == [] and _generations(s) == set()


def test_authoring_changes_land_in_the_store(backend: Backend) -> None:
    _, s = backend
    r = s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    bench = Benchmark(s, r.iri)
    qid = bench.add_question("Which enzyme does clopidogrel's active metabolite block?", "P2Y12 (a receptor)")
    assert qid in bench.get_question_ids()
    (row,) = list(s.query("search", phrase="clopidogrel"))
    assert row["question_id"].value == qid
    exported = load_json_text(s, r.benchmark_id)
    assert any(i["item"]["text"].startswith("Which enzyme does clopidogrel") for i in exported["dataFeedElement"])


def test_validate_stored(backend: Backend) -> None:
    from karenina_rdf import validate_store

    _, s = backend
    s.import_paths([EXAMPLES])
    reports = validate_store(s)
    assert len([r for r in reports if r.run is None]) == 3 and len([r for r in reports if r.run]) == 3
    assert all(r.conforms and not r.findings for r in reports), [f for r in reports for f in r.findings]


@pytest.mark.slow  # every command on every backend, each importing the examples (tests/cli: the embedded CLI)
@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["import", str(EXAMPLES)], "imported Pharmacology examples"),
        (["list"], "Molecular biology examples"),
        (["show", "Pharmacology examples"], "losartan"),
        (["query", "questions-by-keyword", "--param", "keyword=nsaids", "--format", "csv"], "aspirin"),
        (["export", "Pharmacology examples"], '"@type": "DataFeed"'),
        (["validate", "--stored"], "conforms"),
        (["delete", "Pharmacology examples"], "deleted"),
        (["list"], "Bioinformatics"),
    ],
)
def test_cli_commands(backend: Backend, args: list[str], expect: str) -> None:
    location, s = backend
    if args[0] != "import":
        s.import_paths([EXAMPLES])
    if s.remote is None:
        s.close()  # one process may hold an on-disk store open at a time
    result = runner.invoke(app, [*args, "--store", location])
    assert result.exit_code == 0, result.output
    assert expect in result.output


# -- failures of the server itself (no backend parameter: these need no real server) -------------


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP port that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/sparql"
    stop.set()
    thread.join()
    for c in held:
        c.close()
    sock.close()


def test_a_server_that_does_not_answer_times_out_cleanly(silent_server: str) -> None:
    with pytest.raises(StoreError, match=r"did not answer a query within 0\.5 s"):
        Store.connect(silent_server, timeout=0.5)


def test_an_unreachable_server_is_a_store_error() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreError, match="cannot reach the SPARQL server"):
        Store(f"http://127.0.0.1:{port}")


def test_cli_reports_an_unreachable_server_in_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = runner.invoke(app, ["list", "--store", f"http://127.0.0.1:{port}"])
    assert result.exit_code == 1 and "cannot reach the SPARQL server" in result.stderr
    assert "Traceback" not in result.output


def test_remote_endpoints_from_a_url() -> None:
    from karenina_rdf.store._remote import RemoteStore

    ox_server = RemoteStore.from_url("http://127.0.0.1:7878")
    virtuoso = RemoteStore.from_url("http://127.0.0.1:8890/sparql")
    assert (ox_server.query_url, ox_server.update_url, ox_server.gsp_url) == (
        "http://127.0.0.1:7878/query",
        "http://127.0.0.1:7878/update",
        "http://127.0.0.1:7878/store",
    )
    assert (virtuoso.query_url, virtuoso.update_url, virtuoso.gsp_url) == (
        "http://127.0.0.1:8890/sparql",
        "http://127.0.0.1:8890/sparql",
        None,
    )


def load_json_text(s: Store, ref: str) -> Any:
    import io
    import json

    buffer = io.StringIO()
    s.save(ref, buffer)
    return json.loads(buffer.getvalue())


def test_leftovers_of_an_interrupted_import_are_removed(backend: Backend) -> None:
    location, s = backend
    r = s.import_checkpoint(EXAMPLES / "pharmacology.jsonld")
    # What a client killed mid-import leaves: a marked, unpublished generation graph.
    leftover = ox.NamedNode(r.iri + "/graph/00000000000000bb")
    s.oxigraph.add(ox.Quad(ox.NamedNode(r.iri + "/x"), ox.NamedNode("urn:p"), ox.Literal("x"), leftover))
    s.catalog.mark_pending(leftover, True)
    assert len(_generations(s)) == 2
    if s.remote is None:
        s.close()  # embedded: the next open cleans up (one process holds the store)
        with Store(location) as reopened:
            assert len(_generations(reopened)) == 1 and [b.questions for b in reopened.benchmarks()] == [4]
    else:
        assert len(_generations(Store(location))) == 2  # a server: opening never drops others' imports
        s.remove_orphans()
        assert len(_generations(s)) == 1 and [b.questions for b in s.benchmarks()] == [4]
