"""The curated public API: changing it is a decision, so this test must be edited with it."""

from __future__ import annotations

from pathlib import Path

import karenina_rdf

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
        "CheckpointError",
        "DuplicateQuestionError",
        "EndpointSettings",
        "ImportReport",
        "ImportResult",
        "InvalidValueError",
        "KareninaRDFError",
        "NamedQuery",
        "named_queries",
        "NotFoundError",
        "QueryNotFoundError",
        "QueryParam",
        "Problem",
        "Question",
        "QuestionNotFoundError",
        "ResultsImport",
        "RubricTrait",
        "RunSummary",
        "Store",
        "StoreError",
        "__version__",
        "create_app",
        "generate_question_id",
        "map_checkpoint",
        "question_md5_id",
        "read_file",
        "template_id",
    ]
)


def test_all_is_sorted_and_exact() -> None:
    assert karenina_rdf.__all__ == sorted(karenina_rdf.__all__)
    assert karenina_rdf.__all__ == EXPECTED


def test_every_name_exists_and_private_modules_stay_private() -> None:
    for name in karenina_rdf.__all__:
        assert hasattr(karenina_rdf, name), name
    for name, obj in vars(karenina_rdf).items():
        if hasattr(obj, "__module__") and isinstance(obj, type) and name in karenina_rdf.__all__:
            # defined in a private module (a name with a leading underscore on its path), so the
            # public name is the only way in
            parts = obj.__module__.split(".")
            assert parts[0] == "karenina_rdf" and any(p.startswith("_") for p in parts[1:]), name


def test_errors_form_one_tree() -> None:
    for name in karenina_rdf.__all__:
        obj = getattr(karenina_rdf, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, karenina_rdf.KareninaRDFError), name


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
