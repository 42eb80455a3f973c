"""Karenina's authoring API over the graph: ``Benchmark`` (a live handle, every change one
SPARQL update), the ``Question`` view and ``QuestionObject`` (Karenina's ``Question`` entity)."""

from ._benchmark import Benchmark, BenchmarkInfo, benchmark_info
from ._question import Answer, AnswerTemplate, Question, QuestionObject

__all__ = ["Answer", "AnswerTemplate", "Benchmark", "BenchmarkInfo", "Question", "QuestionObject", "benchmark_info"]
