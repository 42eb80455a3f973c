"""The house rules, computed from the source: rooms whose arrows point one way, no import cycle
(imports inside functions count), no room reaching into another's private modules or names, and
a sandbox worker that needs nothing but its own folder.

The import graph is read with ``ast`` (nothing is imported), so a lazy import that closes a
cycle fails here as surely as a top-level one. Each checker is also run on a small made-up
package, so a rule that could never fail would be noticed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = "karenina_rdf"

# The rooms, bottom first: a room may import only from rooms before it (and from itself). The
# modules at the top of the package are rooms of their own: ``_errors`` under everything, the
# import pipeline (``_importing``) and the public ``Store`` (``_store``) above storage, results
# and validation; the package itself (its __init__, the public API) above all.
ROOMS = (
    "karenina_rdf._errors",
    "karenina_rdf._progress",  # the progress protocol the library layers report through
    "karenina_rdf.rdf",
    "karenina_rdf.checkpoint",
    "karenina_rdf.sparql",
    "karenina_rdf.store",
    "karenina_rdf.results",
    "karenina_rdf.validation",
    "karenina_rdf._importing",
    "karenina_rdf._store",
    "karenina_rdf.authoring",
    "karenina_rdf.linked",
    "karenina_rdf.runner.worker",
    "karenina_rdf.runner.providers",
    "karenina_rdf.runner.rubric",
    "karenina_rdf.runner.sandbox",
    "karenina_rdf.runner",
    "karenina_rdf.web.pages",
    "karenina_rdf.web",
    "karenina_rdf.cli",
    "karenina_rdf",
)
# Modules left at the top of the package: the public API, the error tree, the import pipeline.
MAX_TOP_LEVEL_MODULES = 12


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module
    names: tuple[str | None, ...]  # names imported from it (None: the module itself)
    line: int
    lazy: bool  # inside a function


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` file of the package."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def package_of(name: str, mods: dict[str, Path]) -> str:
    return name if mods[name].name == "__init__.py" else name.rpartition(".")[0]


def import_edges(mods: dict[str, Path]) -> list[Edge]:
    """Every import of one module of the package by another (TYPE_CHECKING blocks skipped)."""
    edges = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = package_of(name, mods)

        def walk(node: ast.AST, lazy: bool, name: str = name, own: str = own) -> Iterable[Edge]:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue  # never runs: type annotations only
                inside = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                if isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        parts = own.split(".")[: len(own.split(".")) - child.level + 1]
                        base = ".".join([*parts, base] if base else parts)
                    by_target: dict[str, list[str | None]] = {}
                    for alias in child.names:
                        sub = f"{base}.{alias.name}"
                        if sub in mods:
                            by_target.setdefault(sub, []).append(None)
                        elif base in mods:
                            by_target.setdefault(base, []).append(alias.name)
                    for target, names in by_target.items():
                        if target != name:
                            yield Edge(name, target, tuple(names), child.lineno, inside)
                elif isinstance(child, ast.Import):
                    for alias in child.names:
                        if alias.name in mods and alias.name != name:
                            yield Edge(name, alias.name, (None,), child.lineno, inside)
                yield from walk(child, inside)

        edges.extend(walk(tree, False))
    return edges


def cycles(mods: Iterable[str], edges: Iterable[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for e in edges:
        graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def private_reaches(mods: dict[str, Path], edges: Iterable[Edge], root_package: str) -> list[str]:
    """Imports of another room's private module or of any private name from another room. The
    modules at the top of the package (``_errors``, ``_importing``, ``_store``) are rooms of
    their own and are imported by module: only their private names are off limits."""
    out = []
    for e in edges:
        here, there = package_of(e.source, mods), package_of(e.target, mods)
        if here == there:
            continue
        leaf = e.target.rpartition(".")[2]
        private_module = leaf.startswith("_") and mods[e.target].name != "__init__.py" and there != root_package
        private_names = [n for n in e.names if n is not None and n.startswith("_")]
        module_itself = None in e.names and leaf.startswith("_") and there != root_package
        if private_module or private_names or module_itself:
            what = ", ".join(n or f"module {leaf}" for n in e.names)
            out.append(f"{e.source}:{e.line} imports {what} from {e.target}")
    return out


def room_of(name: str, rooms: tuple[str, ...]) -> str:
    """The most specific room holding ``name``."""
    return max((r for r in rooms if name == r or name.startswith(r + ".")), key=len)


def upward(edges: Iterable[Edge], rooms: tuple[str, ...]) -> list[str]:
    rank = {r: i for i, r in enumerate(rooms)}
    out = []
    for e in edges:
        a, b = room_of(e.source, rooms), room_of(e.target, rooms)
        if a != b and rank[b] > rank[a]:
            out.append(f"{e.source}:{e.line} ({a}) imports {e.target} ({b}), a room above it")
    return out


# -- the rules on the package ---------------------------------------------------------------
MODS = modules(ROOT, PACKAGE)
EDGES = import_edges(MODS)


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    assert cycles(MODS, EDGES) == []


def test_every_room_imports_only_rooms_below_it() -> None:
    assert upward(EDGES, ROOMS) == []


def test_no_room_reaches_into_another_rooms_private_parts() -> None:
    assert private_reaches(MODS, EDGES, PACKAGE) == []


def test_every_module_belongs_to_a_listed_room() -> None:
    for name in MODS:
        assert room_of(name, ROOMS), name


def test_few_modules_at_the_top() -> None:
    top = [m for m, path in MODS.items() if path.parent == ROOT / PACKAGE]
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_the_sandbox_worker_needs_only_its_own_folder() -> None:
    # The sandbox starts the worker with runner/worker/ alone as a package of its own: an import
    # of anything else of karenina_rdf would fail there (or, worse, widen what runs inside).
    worker = "karenina_rdf.runner.worker"
    for path in (ROOT / "karenina_rdf" / "runner" / "worker").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level > 0 or not (node.module or "").startswith(PACKAGE), f"{path.name}:{node.lineno}"
                assert node.level <= 1, f"{path.name}:{node.lineno} leaves {worker}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith(PACKAGE) for a in node.names), f"{path.name}:{node.lineno}"


def test_package_data_and_packages_are_found_by_pyproject() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "find" in config["tool"]["setuptools"]["packages"]  # no hand-kept list of packages


# -- the checkers can fail ------------------------------------------------------------------
def _toy(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        path = tmp_path / "toy" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return modules(tmp_path, "toy")


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"__init__.py": "", "a.py": "from . import b\n", "b.py": "def f():\n    from . import a\n"},
            [["toy.a", "toy.b"]],
            id="closed by a lazy import",
        ),
        pytest.param(
            {
                "__init__.py": "",
                "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n",
                "b.py": "from . import a\n",
            },
            [],
            id="TYPE_CHECKING does not count",
        ),
        pytest.param(
            {
                "__init__.py": "",
                "p/__init__.py": "from ._x import y\n",
                "p/_x.py": "from ..q import z\ny = 1\n",
                "q/__init__.py": "from ..p import y\nz = 2\n",
            },
            [["toy.p", "toy.p._x", "toy.q"]],
            id="through package inits",
        ),
    ],
)
def test_cycle_checker(tmp_path: Path, files: dict[str, str], expected: list[list[str]]) -> None:
    mods = _toy(tmp_path, files)
    assert cycles(mods, import_edges(mods)) == expected


@pytest.mark.parametrize(
    ("importer", "expected"),
    [
        ("from ..p._x import y\n", ["toy.r.a:1 imports y from toy.p._x"]),
        ("from ..p import _x\n", ["toy.r.a:1 imports module _x from toy.p._x"]),
        ("from ..p import _hidden\n", ["toy.r.a:1 imports _hidden from toy.p"]),
        ("from ..p import y\n", []),
        ("from . import _b\n", []),
        ("from .._errors import E\n", []),
        ("from .._errors import _E\n", ["toy.r.a:1 imports _E from toy._errors"]),
    ],
)
def test_private_reach_checker(tmp_path: Path, importer: str, expected: list[str]) -> None:
    mods = _toy(
        tmp_path,
        {
            "__init__.py": "",
            "_errors.py": "class E(Exception): ...\nclass _E(E): ...\n",
            "r/__init__.py": "",
            "r/a.py": importer,
            "r/_b.py": "",
            "p/__init__.py": "from ._x import y\n_hidden = 0\n",
            "p/_x.py": "y = 1\n",
        },
    )
    assert private_reaches(mods, import_edges(mods), "toy") == expected


def test_upward_checker(tmp_path: Path) -> None:
    mods = _toy(
        tmp_path, {"__init__.py": "", "low/__init__.py": "from ..high import x\n", "high/__init__.py": "x = 1\n"}
    )
    assert upward(import_edges(mods), ("toy.low", "toy.high", "toy")) == [
        "toy.low:1 (toy.low) imports toy.high (toy.high), a room above it"
    ]
