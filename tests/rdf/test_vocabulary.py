"""The closed karenina: vocabulary (karenina_rdf/rdf/_vocab.py ``KAR``): every term the package
spells, the shapes, the named queries and the docs use is in it, and nothing else builds one.

Attribute accesses are read from the source with ``ast``, so a misspelt ``KAR.grpah`` in a branch
no other test runs still fails here.
"""

from __future__ import annotations

import ast
import copy
import pickle
import re
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest

from karenina_rdf.rdf._namespace import ClosedNamespace, OpenFamily, Term, UnknownTermError
from karenina_rdf.rdf._vocab import (
    BENCHMARK_SETTINGS,
    DYNAMIC_TRAIT_CLASSES,
    KAR,
    KARENINA,
    QUESTION_SETTINGS,
    TRAIT_SETTINGS,
    TRAIT_TYPES,
    camel,
)
from karenina_rdf.results import _model as model
from karenina_rdf.results import _runs as runs
from tests.conftest import ROOT

PACKAGE = ROOT / "karenina_rdf"
SOURCES = sorted(PACKAGE.rglob("*.py"))
NAMESPACE_MODULES = {"rdf/_vocab.py", "rdf/_namespace.py"}
# Modules allowed to build karenina: IRIs by hand (None: anything). None now: keep it so.
PENDING: dict[str, set[str] | None] = {}
FAMILY_PREFIXES = tuple(family[len(KARENINA) :] for family in KAR.families.values())


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _is_kar(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "KAR"


def _spelled(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """(line, how, name) for each ``KAR.name``, ``KAR.term("name")`` and ``getattr(KAR, "name")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_kar(node.value):
            yield node.lineno, "attribute", node.attr
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func, last = node.func, node.args[-1]
        name = last.value if isinstance(last, ast.Constant) and isinstance(last.value, str) else None
        if name is not None and isinstance(func, ast.Attribute) and func.attr == "term" and _is_kar(func.value):
            yield node.lineno, "term", name
        if name is not None and isinstance(func, ast.Name) and func.id == "getattr" and _is_kar(node.args[0]):
            yield node.lineno, "attribute", name


def _resolves(how: str, name: str) -> bool:
    return name in KAR if how == "term" else hasattr(KAR, name)


# -- the namespace object ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["grpah", "Position", "positions", "custom", "failureCategories", "KARENINA"])
def test_an_unknown_attribute_raises(name: str) -> None:
    with pytest.raises(AttributeError, match="is not a term of the closed namespace"):
        getattr(KAR, name)
    with pytest.raises(UnknownTermError):
        KAR.term(name)
    with pytest.raises(LookupError):
        KAR.term(name)
    assert not hasattr(KAR, name) and name not in KAR


def test_a_near_miss_is_named() -> None:
    with pytest.raises(AttributeError, match="did you mean graph"):
        KAR.grpah  # noqa: B018


@pytest.mark.parametrize(
    ("term", "local"),
    [
        (KAR.graph, "graph"),
        (KAR.position, "position"),
        (KAR.VerificationResult, "VerificationResult"),
        (KAR.term("import"), "import"),
        (KAR.term(camel("few_shot_examples")), "fewShotExamples"),
    ],
)
def test_a_term_is_its_iri(term: Term, local: str) -> None:
    iri = KARENINA + local
    assert isinstance(term, str) and term == iri and hash(term) == hash(iri) and {iri: 1}[term] == 1
    assert f"<{term}>" == term.nt == f"<{iri}>" and type(term.nt) is str
    assert term.node == ox.NamedNode(iri) and term.local == local
    assert KAR.local_name(term) == local
    for again in (pickle.loads(pickle.dumps(term)), copy.deepcopy(term)):
        assert again == term and again.nt == term.nt and again.local == local


@pytest.mark.parametrize(
    ("family", "local", "iri"),
    [
        (KAR.custom_property, "difficulty", KARENINA + "custom_difficulty"),
        (KAR.failure_category, "content", KARENINA + "failure/content"),
        (KAR.failure_group, "retry", KARENINA + "failure-group/retry"),
    ],
)
def test_an_open_family_builds_from_data(family: OpenFamily, local: str, iri: str) -> None:
    assert family(local) == iri and type(family(local)) is str
    assert family.local(iri) == local and family.local(KAR.graph) is None


def test_the_namespace_is_closed() -> None:
    with pytest.raises(AttributeError, match="closed"):
        KAR.grpah = KAR.graph  # type: ignore[misc]
    assert KAR.base == KARENINA and len(KAR) == len(KAR.terms) and set(KAR) == {KARENINA + t for t in KAR.terms}
    assert KAR.local_name("https://schema.org/name") is None


@pytest.mark.parametrize(
    ("terms", "families", "error"),
    [
        (["graph", "two words"], {}, "not a term name"),
        (["9lives"], {}, "not a term name"),
        (["failure/"], {}, "not a term name"),
        (["term"], {}, "would hide"),
        (["base"], {}, "would hide"),
        (["graph"], {"graph": "graph/"}, "would hide"),
    ],
)
def test_a_namespace_refuses_bad_terms(terms: list[str], families: dict[str, str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        ClosedNamespace("urn:x:", terms, families)


# -- every spelling in the package ---------------------------------------------------------------
SPELLED = {_rel(p): list(_spelled(ast.parse(p.read_text(encoding="utf-8")))) for p in SOURCES}


@pytest.mark.parametrize("module", [m for m, found in SPELLED.items() if found])
def test_every_term_the_package_spells_is_in_the_vocabulary(module: str) -> None:
    unknown = [f"{line}: KAR {how} {name!r}" for line, how, name in SPELLED[module] if not _resolves(how, name)]
    assert not unknown, f"{module}:\n" + "\n".join(unknown)


def test_the_scan_sees_the_package() -> None:
    # A scan that found nothing (the object renamed, the files moved) would pass everything above.
    assert sum(len(found) for found in SPELLED.values()) > 150
    assert {"checkpoint/_map.py", "results/_map.py", "results/_export.py", "web/pages/_runs.py"} <= set(
        m for m, found in SPELLED.items() if found
    )


@pytest.mark.parametrize("bad", ["KAR.grpah", 'KAR.term("Positon")', 'getattr(KAR, "verifyResults")'])
def test_the_scan_catches_a_misspelling(bad: str) -> None:
    source = f"def rarely_run():\n    if False:\n        return {bad}\n"
    assert [name for _, how, name in _spelled(ast.parse(source)) if not _resolves(how, name)]


def _built_by_hand(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Places that build a karenina: IRI outside the namespace: ``KARENINA + …``, ``KAR.x + …``,
    ``f"{KARENINA}…"``, ``f"{KAR.base}…"``, a ``_k`` helper, the namespace IRI written out."""

    def base(node: ast.expr) -> bool:  # the namespace IRI itself
        return (isinstance(node, ast.Name) and node.id == "KARENINA") or (
            isinstance(node, ast.Attribute) and _is_kar(node.value) and node.attr == "base"
        )

    def term(node: ast.expr) -> bool:  # the namespace IRI or one of its terms
        return base(node) or (isinstance(node, ast.Attribute) and _is_kar(node.value))

    for node in ast.walk(tree):
        concatenated = (
            isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and (term(node.left) or term(node.right))
        )
        formatted = isinstance(node, ast.JoinedStr) and any(
            isinstance(v, ast.FormattedValue) and base(v.value) for v in node.values
        )
        written = isinstance(node, ast.Constant) and isinstance(node.value, str) and KARENINA in node.value
        if concatenated or formatted or written:
            yield getattr(node, "lineno", 0), ast.unparse(node)
        elif isinstance(node, ast.FunctionDef) and node.name == "_k":
            yield node.lineno, "def _k"


@pytest.mark.parametrize(
    "module", [m for m in map(_rel, SOURCES) if m not in NAMESPACE_MODULES and PENDING.get(m, set()) is not None]
)
def test_no_module_builds_a_term_by_hand(module: str) -> None:
    allowed = PENDING.get(module) or set()
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    found = [f"{module}:{line}: {text}" for line, text in _built_by_hand(tree) if text not in allowed]
    assert not found, "spell karenina: terms as KAR.name, KAR.term(name) or an open family:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "bad",
    ['KARENINA + "graph"', 'f"<{KARENINA}graph>"', 'KAR.failure + "/x"', 'f"{KAR.base}x"', '"urn:karenina:vocab:x"'],
)
def test_building_by_hand_is_caught(bad: str) -> None:
    assert list(_built_by_hand(ast.parse(bad)))


# -- every term the shapes, queries and docs use -------------------------------------------------
_CURIE = re.compile(r"(?<![\w:/.-])karenina:([A-Za-z_][\w-]*)")
_IRI = re.compile(r"urn:karenina:vocab:([\w./-]*)")
TEXTS = sorted(
    [
        *(ROOT / "shapes").glob("*.ttl"),
        *(ROOT / "queries").glob("*.rq"),
        *(ROOT / "docs").glob("*.md"),
        ROOT / "README.md",
        *SOURCES,  # SPARQL in the package: prefixed names in query text
    ]
)


def _known(local: str) -> bool:
    # A term, an IRI of an open family (karenina:custom_domain, …/failure/content), or the family
    # itself written as a prefix (`karenina:failure-group/{group}` in the docs).
    return local in KAR or local.startswith(FAMILY_PREFIXES) or local + "/" in FAMILY_PREFIXES


def _used(text: str) -> set[str]:
    return {m.group(1) for m in _CURIE.finditer(text)} | {m.group(1) for m in _IRI.finditer(text) if m.group(1)}


@pytest.mark.parametrize("path", TEXTS, ids=[p.relative_to(ROOT).as_posix() for p in TEXTS])
def test_every_term_in_shapes_queries_and_docs_is_in_the_vocabulary(path: Path) -> None:
    unknown = sorted(local for local in _used(path.read_text(encoding="utf-8")) if not _known(local))
    assert not unknown, f"{path.relative_to(ROOT)} uses karenina: terms the vocabulary lacks: {unknown}"


def test_the_shapes_and_queries_are_read() -> None:
    shapes = set().union(*(_used(p.read_text()) for p in (ROOT / "shapes").glob("*.ttl")))
    queries = set().union(*(_used(p.read_text()) for p in (ROOT / "queries").glob("*.rq")))
    assert {"VerificationResult", "position", "GlobalRegexTrait"} <= shapes and {"verifyResult", "Tally"} <= queries


@pytest.mark.parametrize(
    "text", ["?r karenina:verifyResults true", "<urn:karenina:vocab:Positon>", "karenina:failureGroups"]
)
def test_an_unknown_term_in_a_text_is_caught(text: str) -> None:
    assert [local for local in _used(text) if not _known(local)]


# -- names made at run time ----------------------------------------------------------------------
FIELD_TABLES = {
    name: getattr(module, name)
    for module, names in (
        (model, "METADATA TEMPLATE RUBRIC DEEP_JUDGMENT DEEP_JUDGMENT_RUBRIC ROOT JOB_SUMMARY MODEL_IDENTITY"),
        (model, "FAILURE_FIELDS"),
        (runs, "RUN_METADATA SHARED_DATA TOP_LEVEL"),
    )
    for name in names.split()
}
PARTS = [part for part, _, _ in model.PARTS] + ["result", "job_summary", "run_metadata", "shared_data", "export"]


@pytest.mark.parametrize(
    ("table", "locals_"),
    [
        ("QUESTION_SETTINGS", [camel(n) for n in QUESTION_SETTINGS]),
        ("TRAIT_SETTINGS", [camel(n) for n in TRAIT_SETTINGS]),
        ("BENCHMARK_SETTINGS", [camel(n) for n in BENCHMARK_SETTINGS]),
        ("TRAIT_TYPES", [*TRAIT_TYPES, *TRAIT_TYPES.values(), *DYNAMIC_TRAIT_CLASSES.values()]),
        ("USAGE_KEYS", [camel(k) for k in model.USAGE_KEYS]),
        ("CONFUSION_BUCKETS", [b + suffix for b in model.CONFUSION_BUCKETS for suffix in ("", "Count")]),
        ("SCORE_DICTS", [camel(k) for k in model.SCORE_DICTS.values()]),
        ("part extras", [camel(p) + suffix for p in PARTS for suffix in ("ExtraFields", "KeyOrder")]),
        ("part verbatim", [camel(p) + "Verbatim" for p, _, _ in model.PARTS if p != "metadata"]),
        ("part links", [camel(p) for p, _, suffix in model.PARTS if suffix]),
        ("model identities", [camel(f.name + "_identity") for f in model.METADATA if f.store == "model"]),
    ],
)
def test_every_name_a_table_makes_is_in_the_vocabulary(table: str, locals_: list[str]) -> None:
    assert [local for local in locals_ if local not in KAR] == []


@pytest.mark.parametrize("table", list(FIELD_TABLES))
def test_every_field_predicate_is_a_term(table: str) -> None:
    for f in FIELD_TABLES[table]:
        if f.predicate.startswith(KARENINA):
            assert f.predicate[len(KARENINA) :] in KAR, f.name
        else:  # a model, the job summary, a skipped field: no predicate; or a schema: one
            assert f.predicate == "" or f.predicate.startswith("https://schema.org/"), f.name
