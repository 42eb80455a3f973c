"""Reading and rewriting the nodes of one benchmark graph.

A benchmark's nodes form a tree of minted IRIs (docs/data-model.md): every child IRI starts
with its owner's IRI and ``/``. Reads walk that tree with pattern lookups instead of SPARQL,
and writes replace a subtree by a diff applied in one SPARQL update, so a change is atomic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyoxigraph as ox

from . import _terms as t
from ._vocab import KAR, SCHEMA

Index = dict[str, dict[str, list[Any]]]
QuadTerms = tuple[ox.NamedNode, ox.NamedNode, Any]

DATA_FEED_ELEMENT = SCHEMA + "dataFeedElement"


def node_index(
    store: ox.Store,
    graph: ox.NamedNode,
    roots: Sequence[str],
    skip: Sequence[str] = (),
) -> Index:
    """Subject → predicate → objects for ``roots`` and every node they own.

    ``skip`` lists IRI prefixes not to descend into (the benchmark header skips its items).
    """
    index: Index = {}
    todo = list(roots)
    skipped = tuple(skip)
    named_node = ox.NamedNode
    while todo:
        s = todo.pop()
        if s in index:
            continue
        prefix = s + "/"
        preds: dict[str, list[Any]] = {}
        # The hot loop of every export: unpack quads once, no per-quad generator or isinstance.
        for _, p, o, _ in store.quads_for_pattern(named_node(s), None, None, graph):
            objects = preds.get(p.value)
            if objects is None:
                preds[p.value] = [o]
            else:
                objects.append(o)
            if type(o) is named_node:
                v = o.value
                if v.startswith(prefix) and not (skipped and v.startswith(skipped)):
                    todo.append(v)
        index[s] = preds
    return index


def index_triples(index: Index, skip_predicates: Iterable[str] = ()) -> set[QuadTerms]:
    skipped = set(skip_predicates)
    return {
        (ox.NamedNode(s), ox.NamedNode(p), o)
        for s, preds in index.items()
        for p, objects in preds.items()
        if p not in skipped
        for o in objects
    }


def parse_triples(triples: Iterable[t.Triple], skip_predicates: Iterable[str] = ()) -> set[QuadTerms]:
    skipped = {t.iri(p) for p in skip_predicates}
    return {(ox.NamedNode(s[1:-1]), ox.NamedNode(p[1:-1]), t.to_term(o)) for s, p, o in triples if p not in skipped}


def diff_update(graph: ox.NamedNode, old: set[QuadTerms], new: set[QuadTerms]) -> str | None:
    """One SPARQL update turning ``old`` into ``new`` in ``graph`` (None when they are equal)."""
    removed, added = old - new, new - old
    if not removed and not added:
        return None
    parts = []
    if removed:
        body = "\n".join(f"{s} {p} {o} ." for s, p, o in removed)
        parts.append(f"DELETE DATA {{ GRAPH {graph} {{\n{body}\n}} }}")
    if added:
        body = "\n".join(f"{s} {p} {o} ." for s, p, o in added)
        parts.append(f"INSERT DATA {{ GRAPH {graph} {{\n{body}\n}} }}")
    return " ;\n".join(parts)


def count_items(store: ox.Store, graph: ox.NamedNode, bench: str) -> int:
    """How many questions (DataFeedItems) the benchmark has."""
    # Counted by the engine, which scans its index without decoding a term; iterating the quads
    # decoded every item IRI into Python (45 s of CPU for `karenina-rdf list` on a store of a
    # million questions: docs/performance.md § One million questions).
    rows = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ <{bench}> <{DATA_FEED_ELEMENT}> ?i }}", default_graph=graph)
    return int(next(solutions(rows))["n"].value)


def ordered_items(store: ox.Store, graph: ox.NamedNode, bench: str) -> list[str]:
    """The benchmark's DataFeedItem IRIs in checkpoint order."""
    rows = solutions(
        store.query(
            f"SELECT ?i ?pos WHERE {{ <{bench}> <{DATA_FEED_ELEMENT}> ?i . OPTIONAL {{ ?i {KAR.position.nt} ?pos }} }}",
            default_graph=graph,
        )
    )
    pairs = [(int(r["pos"].value) if r["pos"] is not None else 0, r["i"].value) for r in rows]
    pairs.sort()
    return [i for _, i in pairs]


def shadowed_items(store: ox.Store, graph: ox.NamedNode, bench: str) -> list[tuple[int, str, str, str]]:
    """(position, node IRI, question id, item JSON text) of the items a later item with the same
    question id shadows (checkpoint._map ``shadowed``), in checkpoint order."""
    rows = solutions(
        store.query(
            f"SELECT ?s ?pos ?id ?json WHERE {{ <{bench}> {KAR.shadowedItem.nt} ?s . "
            f"?s {KAR.position.nt} ?pos ; <{SCHEMA}identifier> ?id ; {KAR.itemJson.nt} ?json }}",
            default_graph=graph,
        )
    )
    return sorted((int(r["pos"].value), r["s"].value, r["id"].value, r["json"].value) for r in rows)


def term_value(term: object) -> str:
    """The IRI or lexical form of a term (quad positions are typed as unions in pyoxigraph)."""
    if isinstance(term, (ox.NamedNode, ox.BlankNode, ox.Literal)):
        return term.value
    raise TypeError(f"unexpected RDF term {term!r}")


def named(term: object) -> ox.NamedNode:
    if isinstance(term, ox.NamedNode):
        return term
    raise TypeError(f"expected an IRI, got {term!r}")


def solutions(result: object) -> ox.QuerySolutions:
    if isinstance(result, ox.QuerySolutions):
        return result
    raise TypeError("expected a SELECT query")
