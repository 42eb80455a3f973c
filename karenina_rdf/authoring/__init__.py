"""Karenina's authoring API over the graph: ``Benchmark`` (a live handle, every change one
SPARQL update), the ``Question`` view, ``QuestionObject`` (Karenina's ``Question`` entity) and,
for scenario benchmarks, the ``ScenarioDefinition`` value ``get_scenario`` returns."""

from ._benchmark import Benchmark, BenchmarkInfo, benchmark_info
from ._question import Answer, AnswerTemplate, Question, QuestionObject
from ._scenarios import ScenarioDefinition, ScenarioEdge, ScenarioNode, ScenarioOutcomeCriterion

__all__ = [
    "Answer",
    "AnswerTemplate",
    "Benchmark",
    "BenchmarkInfo",
    "Question",
    "QuestionObject",
    "ScenarioDefinition",
    "ScenarioEdge",
    "ScenarioNode",
    "ScenarioOutcomeCriterion",
    "benchmark_info",
]
