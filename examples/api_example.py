"""A short tour of the karenina-rdf Python API over the example benchmarks.

Run from the project root:  python examples/api_example.py
It uses a throwaway in-memory store, so it leaves nothing behind.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from karenina_rdf import Benchmark, RubricTrait, Store

HERE = Path(__file__).parent

store = Store.memory()
report = store.import_paths([HERE])  # every *.jsonld in this folder
for r in report.imported:
    print(f"imported {r.name}: {r.questions} questions")

# The Karenina authoring API, writing straight into the graph.
bench = Benchmark(store, "Pharmacology examples")
qid = bench.add_question(
    "Which enzyme does metformin activate indirectly?",
    "AMP-activated protein kinase (AMPK)",
    author={"name": "Example Author"},
    custom_metadata={"difficulty": "medium"},
)
bench.add_question_rubric_trait(qid, RubricTrait.regex("names_ampk", r"\bAMPK\b", "Names AMPK"))
print(qid, "has template:", bench.has_template(qid))
print("medium questions:", [q["id"] for q in bench.filter_by_metadata("custom_metadata.difficulty", "medium")])

# SPARQL across every benchmark: the same question (same MD5 of its text) in several benchmarks.
rows = store.query("""
    SELECT ?text (COUNT(DISTINCT ?b) AS ?benchmarks) WHERE {
      ?q a schema:Question ; schema:text ?text ; karenina:textMd5 ?md5 ; schema:isPartOf ?b .
      ?other karenina:textMd5 ?md5 ; schema:isPartOf ?b2 . FILTER(?b != ?b2)
    } GROUP BY ?text
""")
for row in rows:
    print(f"shared: {row['text'].value!r} in {row['benchmarks'].value} benchmarks")

# Back to a checkpoint that Karenina's Benchmark.load() reads.
with tempfile.TemporaryDirectory() as tmp:
    path = bench.save(Path(tmp) / "pharmacology.jsonld")
    print("saved", path.name, path.stat().st_size, "bytes")
