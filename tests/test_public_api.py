"""The curated public API: changing it is a decision, so this test must be edited with it."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

import karenina_rdf
from karenina_rdf import _errors, runner

EXPECTED = sorted(
    [
        "CANONICAL_CONTEXT",
        "KARENINA",
        "SCHEMA",
        "AmbiguousBenchmarkError",
        "BenchmarkReport",
        "Finding",
        "validate",
        "validate_store",
        "Answer",
        "AnswerTemplate",
        "BenchmarkInfo",
        "Benchmark",
        "BenchmarkNotFoundError",
        "BenchmarkSummary",
        "BenchmarkDiff",
        "BenchmarkVersion",
        "CheckpointError",
        "DuplicateQuestionError",
        "DynamicRubric",
        "Rubric",
        "EndpointSettings",
        "FeatureUnavailableError",
        "ImportReport",
        "ImportResult",
        "InvalidTypeError",
        "InvalidValueError",
        "KareninaRDFError",
        "NamedQuery",
        "named_queries",
        "NotFoundError",
        "QueryNotFoundError",
        "QueryParam",
        "Problem",
        "Progress",
        "ProviderError",
        "Question",
        "QuestionNotFoundError",
        "ResultsImport",
        "RubricTrait",
        "RunSummary",
        "ScenarioNotFoundError",
        "Store",
        "StoreError",
        "VerificationError",
        "__version__",
        "create_app",
        "generate_question_id",
        "map_checkpoint",
        "question_md5_id",
        "read_checkpoint",
        "template_id",
    ]
)


# The runner's own API (karenina_rdf.runner), guarded the same way.
RUNNER_EXPECTED = sorted(
    [
        "ChatRequest",
        "ChatResponse",
        "DeepJudgmentConfig",
        "DeepJudgmentRubricCustomConfig",
        "DeepJudgmentTraitConfig",
        "EmbeddingCheckConfig",
        "FewShotConfig",
        "FunctionProvider",
        "GeneratedTemplate",
        "Limits",
        "Message",
        "ModelSpec",
        "PromptConfig",
        "Provider",
        "QuestionFewShotConfig",
        "RubricDeepJudgmentConfig",
        "RunOptions",
        "RunReport",
        "Sandbox",
        "SandboxOutcome",
        "Scheduling",
        "Usage",
        "generate_templates",
        "load_preset",
        "rescore",
        "run_verification",
        "verify",
    ]
)


@pytest.mark.parametrize(("module", "expected"), [(karenina_rdf, EXPECTED), (runner, RUNNER_EXPECTED)])
def test_all_is_sorted_and_exact(module: ModuleType, expected: list[str]) -> None:
    assert module.__all__ == sorted(module.__all__)
    assert module.__all__ == expected


@pytest.mark.parametrize("module", [karenina_rdf, runner])
def test_every_name_exists_and_private_modules_stay_private(module: ModuleType) -> None:
    for name in module.__all__:
        assert hasattr(module, name), name
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, type):
            # defined in a private module (a name with a leading underscore on its path), so the
            # public name is the only way in
            parts = obj.__module__.split(".")
            assert parts[0] == "karenina_rdf" and any(p.startswith("_") for p in parts[1:]), name


def test_errors_form_one_tree() -> None:
    for name in karenina_rdf.__all__:
        obj = getattr(karenina_rdf, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, karenina_rdf.KareninaRDFError), name


def _drawn_tree() -> dict[str, tuple[str | None, set[str]]]:
    """The tree drawn in _errors' docstring: name -> (parent in the tree, builtin bases named in
    parentheses)."""
    block = (_errors.__doc__ or "").split("::", 1)[1].strip("\n").split("\n\n", 1)[0]
    drawn: dict[str, tuple[str | None, set[str]]] = {}
    open_at: list[tuple[int, str]] = []  # (column, name) of the ancestors of the current line
    for line in block.splitlines():
        m = re.match(r"^\s*(?:[│ ]*[├└]── )?([A-Z]\w+)(?: \(([\w, ]+)\))?", line)
        if m is None:
            continue  # a description going on over a second line
        column = m.start(1)
        while open_at and open_at[-1][0] >= column:
            open_at.pop()
        builtins = {b.strip() for b in m.group(2).split(",")} if m.group(2) else set()
        drawn[m.group(1)] = (open_at[-1][1] if open_at else None, builtins)
        open_at.append((column, m.group(1)))
    return drawn


def test_the_drawn_tree_is_the_class_tree() -> None:
    drawn = _drawn_tree()
    root = karenina_rdf.KareninaRDFError
    defined = {n for n, c in vars(_errors).items() if isinstance(c, type) and issubclass(c, root)}
    assert set(drawn) == defined
    assert drawn.pop("KareninaRDFError") == (None, set())
    for name, (parent, builtins) in drawn.items():
        cls = getattr(_errors, name)
        assert [b.__name__ for b in cls.__bases__ if issubclass(b, root)] == [parent], name
        assert {b.__name__ for b in cls.__bases__ if not issubclass(b, root)} == builtins, name
        assert name in karenina_rdf.__all__, name  # every error of the tree can be caught by name


def test_shapes_ship_inside_the_package() -> None:
    # A wheel carries karenina_rdf/validation/shapes/*.ttl (package data through the symlink to
    # shapes/).
    import tomllib

    import karenina_rdf

    root = Path(__file__).resolve().parents[1]
    packaged = Path(karenina_rdf.__file__).parent / "validation" / "shapes"
    assert packaged.resolve() == (root / "shapes").resolve()
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "shapes/*.ttl" in config["tool"]["setuptools"]["package-data"]["karenina_rdf.validation"]
