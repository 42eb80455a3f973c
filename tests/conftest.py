"""Shared fixtures. Tests that need ../shared (the Karenina corpus) skip when it is absent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Store

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus" / "karenina"
EXAMPLES = ROOT / "examples"

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason=f"the Karenina corpus is not at {CORPUS} (a fresh clone has no ../shared; CI provides it)",
)


# What Karenina itself does with each corpus file (INDEX.md): everything loads except these.
NOT_CHECKPOINTS = {
    "history__439a051e__example_benchmark.jsonld": "root @type must be 'DataFeed', got 'Dataset'",
    "tests__fixtures__export_format__results_export_empty.json": "verification results export",
    "tests__fixtures__export_format__results_export_full.json": "verification results export",
}
# Written by Karenina's own current writer in canonical form: export must equal them exactly.
CANONICAL = {
    "generated__all_features.jsonld",
    "generated__dynamic_rubric.jsonld",
    "generated__scenario.jsonld",
    "generated__resaved__history__e4d0b8fa__tests__fixtures__checkpoints__with_results.jsonld",
    "constructed__spec_worked_example.jsonld",
}


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*.json*")) if CORPUS.is_dir() else []


def corpus_params(loadable_only: bool = False) -> list[Any]:
    files = [p for p in corpus_files() if not (loadable_only and p.name in NOT_CHECKPOINTS)]
    if not files:
        return [pytest.param(None, marks=needs_corpus, id="no-corpus")]
    return [pytest.param(p, id=p.name) for p in files]


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def store() -> Iterator[Store]:
    s = Store.memory()
    yield s
    s.close()


@pytest.fixture(scope="module")
def examples() -> Iterator[Store]:
    """A memory store with the three example benchmarks, shared by one module's tests."""
    s = Store.memory()
    for path in sorted(EXAMPLES.glob("*.jsonld")):
        s.import_checkpoint(path)
    yield s
    s.close()


@pytest.fixture
def disk_store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "store")
    yield s
    s.close()


# -- SPARQL servers ------------------------------------------------------------------------------

# The server backends start a server process (once per session): marked slow, so that
# `-m "not slow"` keeps only the embedded store.
BACKENDS = [
    "embedded",
    pytest.param("oxigraph", marks=pytest.mark.slow),
    pytest.param("virtuoso", marks=pytest.mark.slow),
]


@pytest.fixture(scope="session")
def sparql_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The servers, started once per session on first use and stopped at the end."""
    from tests.helpers.servers import Server

    started: dict[str, Server] = {}
    yield {"started": started, "root": tmp_path_factory.mktemp("servers")}
    for server in started.values():
        server.stop()


def server_url(sparql_servers: dict[str, Any], name: str) -> str:
    from tests.helpers.servers import oxigraph_binary, start_oxigraph, start_virtuoso, virtuoso_binary

    started = sparql_servers["started"]
    if name not in started:
        if name == "oxigraph" and oxigraph_binary() is None:
            pytest.skip("`oxigraph` (pip package oxigraph) is not installed; .ci/run installs it")
        if name == "virtuoso" and virtuoso_binary() is None:
            pytest.skip("`virtuoso-t` (Debian virtuoso-opensource) is not installed; .ci/run installs it")
        folder = sparql_servers["root"] / name
        folder.mkdir()
        started[name] = (start_oxigraph if name == "oxigraph" else start_virtuoso)(folder)
    return str(started[name].url)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, sparql_servers: dict[str, Any]) -> Iterator[tuple[str, Store]]:
    """(location, an empty store) on each backend: embedded on disk, Oxigraph server, Virtuoso."""
    name = str(request.param)
    if name == "embedded":
        path = request.getfixturevalue("tmp_path") / "store"
        s = Store(path)
        yield str(path), s
        s.close()
        return
    url = server_url(sparql_servers, name)
    s = Store(url)
    try:
        yield url, s
    finally:
        _empty(s)
        s.close()


def _empty(s: Store) -> None:
    """Drop what the store made on a server that outlives the test: its graphs and the catalog."""
    from karenina_rdf.rdf._vocab import CATALOG_GRAPH, MODELS_GRAPH, VOCABULARY_GRAPH

    assert s.remote is not None
    for g in list(s.remote.named_graphs(s.base_iri)):
        s.remote.drop_graph(g)
    s.remote.drop_graph(CATALOG_GRAPH)
    s.remote.drop_graph(VOCABULARY_GRAPH)
    s.remote.drop_graph(MODELS_GRAPH)


# Test modules whose slow tests start boxed sandbox workers (bubblewrap). Where the host cannot
# box code the sandbox refuses to start, so they skip, saying why (CI installs bubblewrap).
_BOXED_MODULES = ("runner/sandbox/test_sandbox.py", "runner/test_pipeline.py", "cli/test_cli_verify.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    boxed = [
        item
        for item in items
        if item.get_closest_marker("slow") is not None
        and "unsafe" not in item.name
        and item.path.as_posix().endswith(_BOXED_MODULES)
    ]
    if not boxed:
        return
    from karenina_rdf.runner.sandbox._process import isolation_unavailable

    problem = isolation_unavailable()
    if problem is not None:
        for item in boxed:
            item.add_marker(pytest.mark.skip(reason=f"needs kernel isolation (bubblewrap): {problem}"))
