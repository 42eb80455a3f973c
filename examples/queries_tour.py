"""Three questions about the example benchmarks, answered with named queries and SPARQL.

Run it from the project root (it uses a throwaway in-memory store):

    python examples/queries_tour.py

Each step prints what it asks, the answer, and the one call that gives it; the same queries run
from the command line (`karenina-rdf query NAME --param …`) and on a SPARQL server.
"""

from __future__ import annotations

from pathlib import Path

from karenina_rdf import Store

EXAMPLES = Path(__file__).resolve().parent
store = Store.memory()
store.import_paths([EXAMPLES])


def cells(result: object, *names: str) -> list[tuple[str, ...]]:
    return [tuple("" if row[n] is None else row[n].value for n in names) for row in result]  # type: ignore[attr-defined]


# 1. Which genomics questions are there, across all benchmarks?
print("1. Questions tagged 'genomics', in any benchmark")
print('   store.query("questions-by-keyword", keyword="genomics")')
for benchmark, text in cells(store.query("questions-by-keyword", keyword="genomics"), "benchmark", "text"):
    print(f"   - {benchmark}: {text}")

# 2. Which questions appear in more than one benchmark (same Karenina id or same text)?
print("\n2. Questions shared between benchmarks")
print('   store.query("same-question")')
for match, question, benchmarks in cells(store.query("same-question"), "match", "question", "benchmarks"):
    print(f"   - {match}: {question!r} in {' and '.join(sorted(benchmarks.split(' | ')))}")

# 3. How far along is each benchmark, and which questions hold verification up?
print("\n3. Progress per benchmark, and the unfinished questions (Karenina verifies finished ones only)")
print('   store.query("benchmark-summary"); store.query("unfinished-questions")')
for name, total, finished in cells(store.query("benchmark-summary"), "name", "questions", "finished"):
    print(f"   - {name}: {finished} of {total} finished")
for name, text in cells(store.query("unfinished-questions"), "benchmark_name", "text"):
    print(f"     unfinished in {name}: {text}")

# Plain SPARQL works the same way; parameters are bound as RDF terms, never pasted into the text.
print("\nAnd plain SPARQL with a bound parameter: the rubric traits of kind 'score'")
rows = store.query(
    "SELECT ?benchmark ?trait WHERE { ?owner schema:contentRating ?t . ?t karenina:traitKind ?kind ; "
    "schema:name ?trait . { ?owner schema:name ?benchmark } UNION { ?owner schema:isPartOf/schema:name ?benchmark } } "
    "ORDER BY ?benchmark ?trait",
    kind="score",
)
for benchmark, trait in cells(rows, "benchmark", "trait"):
    print(f"   - {benchmark}: {trait}")
