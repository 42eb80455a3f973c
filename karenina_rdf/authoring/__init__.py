"""Karenina's authoring API over the graph: ``Benchmark`` (a live handle, every change one
SPARQL update) and the ``Question`` view."""

from ._benchmark import Benchmark, BenchmarkInfo, benchmark_info
from ._question import Answer, AnswerTemplate, Question

__all__ = ["Answer", "AnswerTemplate", "Benchmark", "BenchmarkInfo", "Question", "benchmark_info"]
