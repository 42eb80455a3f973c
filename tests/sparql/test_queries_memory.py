"""Every named query gives the same rows on the embedded store (on disk, through ``Store.query``)
as its bound text on an in-memory pyoxigraph store holding the same quads: the baseline
benchmarks/bench_queries_memory.py times against (issue 20, point 1). A rewrite of a query for
speed, or anything the store adds to its data, must keep these answers identical."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from karenina_rdf import Benchmark, Store, named_queries
from karenina_rdf.rdf._vocab import PREFIXES
from karenina_rdf.sparql._named import find_query
from tests.conftest import CORPUS, EXAMPLES
from tests.sparql.test_queries import MOL, TP53, _variant_doc

SCENARIO = CORPUS / "generated__scenario.jsonld"
MB5, MB6 = "molecular-biology-2026-05", "molecular-biology-2026-06"
XSD_DOUBLE = "http://www.w3.org/2001/XMLSchema#double"
FIRST_RESULT = "first result's question"  # replaced by the id of a question that has results

# (query, parameters): every named query at least once, with and without its optional filters.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("benchmark-summary", {}),
    ("benchmark-summary", {"benchmark": "Variants"}),
    ("benchmarks-by-author", {"author": "examples"}),
    ("benchmarks-by-property", {"property": "domain"}),
    ("benchmarks-by-property", {"property": "domain", "value": "pharmacology"}),
    ("evaluation-modes", {}),
    ("evaluation-modes", {"benchmark": "Variants"}),
    ("failure-counts", {}),
    ("failure-counts", {"model": "gpt-4o"}),
    ("near-duplicates", {}),
    ("pass-rate-by-benchmark", {}),
    ("pass-rate-by-benchmark", {"run": MB5, "model": "gpt-4o"}),
    ("pass-rate-by-judge", {}),
    ("pass-rate-by-keyword", {}),
    ("pass-rate-by-keyword", {"run": MB6}),
    ("pass-rate-by-model", {}),
    ("pass-rate-by-model", {"run": MB6}),
    ("question-history", {"question_id": FIRST_RESULT}),
    ("question-model-matrix", {}),
    ("question-model-matrix", {"run": MB5}),
    ("questions-all-models-fail", {}),
    ("questions-by-keyword", {"keyword": "genomics"}),
    ("questions-by-keyword", {"keyword": "nsaids"}),
    ("questions-per-benchmark", {}),
    ("questions-without-template", {}),
    ("run-comparison", {"run_a": MB5, "run_b": MB6}),
    ("run-cost", {}),
    ("same-question", {}),
    ("scenario-turns", {}),
    ("search", {"phrase": "kinase"}),
    ("token-usage", {}),
    ("token-usage", {"model": "gpt-4o"}),
    ("trait-aggregates-by-model", {}),
    ("trait-aggregates-by-model", {"run": MB5}),
    ("trait-metrics-by-model", {}),
    ("traits-by-kind", {}),
    ("unfinished-questions", {}),
    ("unfinished-questions", {"benchmark": "Pharmacology examples"}),
]


def _stocked(folder: Path, changed: bool) -> Store:
    """The embedded store on disk with the examples, their runs, a variant benchmark and (when
    the corpus is there) a scenario; ``changed``: then edited through the authoring API, one
    benchmark deleted and a raw SPARQL update run, so that anything the store derives from its
    data (counts, indexes) is checked after each kind of write, not only after imports."""
    disk = Store(folder)
    disk.import_paths([EXAMPLES], validate=False)
    disk.import_checkpoint(_variant_doc(), validate=False)
    if SCENARIO.exists():
        disk.import_checkpoint(SCENARIO, validate=False)
    if changed:
        mol = Benchmark(disk, disk.resolve(MOL))
        added = mol.add_question("Which kinase does imatinib inhibit in CML?", "ABL1", finished=False)
        mol.update_question_metadata(added, question="Which tyrosine kinase does imatinib inhibit in CML?")
        mol.remove_question(TP53)
        disk.delete("Pharmacology examples")
        disk.update_graph(
            "PREFIX schema: <https://schema.org/> "
            'DELETE { GRAPH ?g { ?q schema:keywords "genomics" } } '
            'INSERT { GRAPH ?g { ?q schema:keywords "genomics-moved" } } '
            'WHERE { GRAPH ?g { ?q schema:keywords "genomics" ; schema:isPartOf ?b . ?b schema:name "Variants" } }'
        )
    return disk


@pytest.fixture(scope="module", params=["imported", "changed"])
def pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Store, ox.Store, bool]]:
    """The store on disk (after imports, or after edits too), an in-memory pyoxigraph store with
    the same quads, and whether it was changed."""
    changed = request.param == "changed"
    disk = _stocked(tmp_path_factory.mktemp("queries-memory") / "store", changed)
    memory = ox.Store()
    memory.bulk_extend(disk.oxigraph.quads_for_pattern(None, None, None, None))
    yield disk, memory, changed
    disk.close()


# GROUP_CONCAT columns (and their separators): SPARQL leaves the order of the parts to the
# engine, and the two stores walk their indexes in different orders, so the parts are compared
# as a sorted list.
CONCATENATED = {
    ("near-duplicates", "found"): " | ",
    ("same-question", "benchmarks"): " | ",
    ("scenario-turns", "next"): ", ",
}


def _table(name: str, results: Any) -> list[tuple[Any, ...]]:
    names = [v.value for v in results.variables]

    def cell(term: Any, column: str) -> Any:
        if term is None:
            return None
        if isinstance(term, ox.Literal) and term.datatype.value == XSD_DOUBLE:
            return round(float(term.value), 9)  # a sum of doubles in another order differs in the last bits
        sep = CONCATENATED.get((name, column))
        return sorted(term.value.split(sep)) if sep else str(term)

    return [tuple(cell(s[n], n) for n in names) for s in results]


def test_every_named_query_is_compared() -> None:
    assert {name for name, _ in CASES} == set(named_queries())


@pytest.mark.parametrize(("name", "params"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_same_rows_on_disk_and_in_memory(pair: tuple[Store, ox.Store, bool], name: str, params: dict[str, Any]) -> None:
    disk, memory, changed = pair
    if params.get("question_id") == FIRST_RESULT:
        first = next(iter(disk.query("SELECT ?id WHERE { ?r karenina:questionId ?id } ORDER BY ?id LIMIT 1")))
        params = {"question_id": first["id"].value}
    text = find_query(name).bind(params, search=disk.fulltext.scores)
    ours = _table(name, disk.query(name, **params))
    theirs = _table(name, memory.query(text, prefixes=dict(PREFIXES), **disk.dataset()))
    assert ours == theirs
    if name == "scenario-turns" and not SCENARIO.exists():
        return
    # a comparison of two empty tables proves little: each case is chosen to return rows
    if not changed:
        assert ours or name in {"near-duplicates", "questions-all-models-fail"}, f"{name} {params} returned no rows"


def test_the_changes_are_there(pair: tuple[Store, ox.Store, bool]) -> None:
    """The edits of the changed store took effect (else its comparison proves nothing new)."""
    disk, _, changed = pair
    benchmarks = {r["benchmark"].value for r in disk.query("questions-per-benchmark")}
    moved = [r["question_id"].value for r in disk.query("questions-by-keyword", keyword="genomics-moved")]
    texts = {r["text"].value for r in disk.query("unfinished-questions", benchmark=MOL)}
    assert ("Pharmacology examples" not in benchmarks) is changed
    assert bool(moved) is changed
    assert ("Which tyrosine kinase does imatinib inhibit in CML?" in texts) is changed
