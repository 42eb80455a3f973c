"""A run's tallies and summaries computed again from the results its graph holds now.

Both are derived from the results (``_runs._tally_lines`` at import, ``_summaries``), and both are
written by the code that writes results. A raw SPARQL update (``Store.update_graph``, the
endpoint's update operation, ``karenina-rdf update``) can change any result without that code:
the pass rates would keep reading the old tallies (wrong answers), and the named queries would
aggregate the results themselves for want of summaries (right answers, slower). So after a raw
update every run is recounted here: its tallies and summaries replaced in one update, which
readers see whole. The marker (``karenina:RunSummaries``) is written with them: a run without it
either predates summaries, is being verified, or was being recounted when the process died, and
opening the store recounts it (:func:`recount_runs` with ``only_unmarked``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from karenina_rdf.rdf import KAR, solutions, term_value

from ._runs import _FACT_PREDICATES, _old_facts, _tally_lines
from ._summaries import drop_update, summarised, summary_lines

if TYPE_CHECKING:
    from karenina_rdf.store import GraphStore


def _facts(oxigraph: ox.Store, graph: ox.NamedNode) -> list[Any]:
    """The facts each tally counts, per stored result, read from the graph (as a re-import reads
    the rows it keeps)."""
    values = " ".join(f"<{p}>" for p in sorted(_FACT_PREDICATES))
    # OPTIONAL: a result with none of them is still one result (of no model, judge or benchmark).
    query = (
        f"SELECT ?r ?p ?o WHERE {{ ?r a {KAR.VerificationResult.nt} OPTIONAL {{ VALUES ?p {{ {values} }} ?r ?p ?o }} }}"
    )
    preds: dict[str, dict[str, Any]] = {}
    for row in solutions(oxigraph.query(query, default_graph=graph)):
        found = preds.setdefault(term_value(row["r"]), {})
        if row["p"] is not None:
            found[term_value(row["p"])] = row["o"]
    return [_old_facts(p) for p in preds.values()]


def recount_run(oxigraph: ox.Store, run: str, graph: ox.NamedNode) -> None:
    """Replace the run's tallies and summaries (and write its marker) with ones computed from the
    results in ``graph`` now, in one update."""
    tallies: list[str] = []
    _tally_lines(lambda s, p, o: tallies.append(f"{s} {p} {o} .\n"), run, _facts(oxigraph, graph))
    lines = "".join(tallies) + "".join(summary_lines(oxigraph, run, graph))
    g = str(graph)
    oxigraph.update(
        f"DELETE {{ GRAPH {g} {{ ?t ?p ?o }} }} WHERE {{ GRAPH {g} {{ ?t a {KAR.Tally.nt} ; ?p ?o }} }} ;\n"
        f"{drop_update(graph)} ;\nINSERT DATA {{ GRAPH {g} {{\n{lines}}} }}"
    )


def recount_runs(store: GraphStore, *, only_unmarked: bool = False) -> list[str]:
    """Recount every stored run, or with ``only_unmarked`` those without the marker. Returns the
    IRIs of the runs recounted, sorted."""
    done = []
    for run, graph in sorted(store.catalog.runs().items()):
        if only_unmarked and summarised(store.oxigraph, run, graph):
            continue
        recount_run(store.oxigraph, run, graph)
        done.append(run)
    return done


def summarise_runs(store: GraphStore) -> list[str]:
    """Write the tallies and summaries of every stored run that has no marker (imported before
    summaries existed, a live run that died, a raw update that died before its recount). Returns
    the IRIs of the runs summarised."""
    return recount_runs(store, only_unmarked=True)
