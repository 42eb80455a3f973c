"""Changing a store's base IRI (``GraphStore.rebase``, ``karenina-rdf rebase``): every IRI under
the old base, wherever it stands (subject, predicate, object, a literal's datatype, a graph's
name), becomes the same IRI under the new base, in every graph.

Literals are text and stay as they are: a question may quote a URL, and a shadowed item's JSON is
the checkpoint's own (Karenina's ids, never the store's IRIs). The one literal that names the base
is the catalog's ``karenina:baseIri``, set to the new base in the same commit. Recorded
validations (``validation._recorded``) are forgotten: they are named by the old generation
graphs and quote old IRIs, and the next ``validate --stored`` makes them again.

This module holds the pieces that know the rewriting: the N-Quads line rewriter used on the
embedded store (which rewrites a dump of the store and loads it back, see ``GraphStore.rebase``)
and the one SPARQL update used on a server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO
from urllib.parse import urlsplit

import pyoxigraph as ox

from karenina_rdf._errors import InvalidValueError
from karenina_rdf.rdf import CATALOG_GRAPH, MODELS_GRAPH, VOCABULARY_GRAPH

from ._catalog import BASE, STORE_NODE, VALIDATED, VALIDATING


def check_new_base(base: str) -> str:
    """``base`` if it is an absolute http(s) IRI ending in ``/`` (the form a public address takes
    and that ``publish`` needs), else a one-line error."""
    example = "e.g. https://bench.example.org/kb/"
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidValueError(f"new base {base!r}: give an absolute http(s) IRI ending in '/', {example}")
    if parts.query or parts.fragment or not base.endswith("/"):
        raise InvalidValueError(f"new base {base!r}: it must end in '/' (no query, no fragment), {example}")
    try:
        ox.NamedNode(base + "benchmarks/x")
    except ValueError as exc:
        raise InvalidValueError(f"new base {base!r} is not a valid IRI: {exc}") from None
    return base


def whole_lines(fh: IO[bytes], size: int) -> Iterator[bytes]:
    """``fh`` in blocks of about ``size`` bytes cut after a line break (the last block is what
    follows the last one), so a line-based rewrite never sees half a statement."""
    rest = b""
    while block := fh.read(size):
        block = rest + block
        cut = block.rfind(b"\n") + 1
        yield block[:cut]
        rest = block[cut:]
    yield rest


class Rewriter:
    """Rewrites IRIs under ``old`` to ``new`` in N-Triples/N-Quads text as pyoxigraph writes it:
    one statement a line, a literal (at most one, the object) between its first and last ``"``
    (an IRI cannot hold a ``"``, and one inside the literal is escaped ``\\"``), so ``<old`` is
    replaced everywhere on the line but there."""

    def __init__(self, old: str, new: str) -> None:
        self.old = b"<" + old.encode("utf-8")
        self.new = b"<" + new.encode("utf-8")
        self.old_iri, self.new_iri = old, new

    def block(self, data: bytes) -> bytes:
        """``data`` (whole lines) rewritten."""
        if self.old not in data:
            return data
        lines = data.split(b"\n")
        for i, line in enumerate(lines):
            if self.old not in line:
                continue
            if b'"' in line:
                start, end = line.index(b'"'), line.rindex(b'"') + 1
                lines[i] = self._outside(line[:start]) + line[start:end] + self._outside(line[end:])
            else:
                lines[i] = self._outside(line)
        return b"\n".join(lines)

    def _outside(self, part: bytes) -> bytes:
        return part.replace(self.old, self.new)

    def term(self, term: ox.NamedNode) -> ox.NamedNode:
        if term.value.startswith(self.old_iri):
            return ox.NamedNode(self.new_iri + term.value[len(self.old_iri) :])
        return term

    def catalog_quads(self, store: ox.Store) -> list[ox.Quad]:
        """The catalog graph rebased: IRIs rewritten, the base fact set to the new base, and the
        recorded validations forgotten (see the module's doc)."""
        out = []
        dropped = {BASE, VALIDATED, VALIDATING}
        for q in store.quads_for_pattern(None, None, None, CATALOG_GRAPH):
            if q.predicate.value in dropped:
                continue
            s = self.term(q.subject) if isinstance(q.subject, ox.NamedNode) else q.subject
            o = self.term(q.object) if isinstance(q.object, ox.NamedNode) else q.object
            out.append(ox.Quad(s, self.term(q.predicate), o, CATALOG_GRAPH))
        out.append(ox.Quad(ox.NamedNode(STORE_NODE), ox.NamedNode(BASE), ox.Literal(self.new_iri), CATALOG_GRAPH))
        return out


def rebase_update(old: str, new: str) -> str:
    """The one SPARQL update that rebases a store on a server: every quad of the store's graphs
    (the catalog, vocabulary and models graphs, and every graph named under ``old``: the
    benchmarks' and runs' generations, and whatever else the store keeps there) that names an
    IRI under ``old`` is replaced by its rewritten form, and the base fact set; then the recorded
    validations are forgotten. Other graphs on the server are not touched."""
    o, n = ox.Literal(old), ox.Literal(new)

    def moved(var: str) -> str:
        return f"IRI(CONCAT({n}, STRAFTER(STR({var}), {o})))"

    def iri(var: str) -> str:
        return f"IF(isIRI({var}) && STRSTARTS(STR({var}), {o}), {moved(var)}, {var})"

    datatype = f"STRDT(STR(?o), IRI(CONCAT({n}, STRAFTER(STR(DATATYPE(?o)), {o}))))"
    obj = f"IF(isLiteral(?o) && STRSTARTS(STR(DATATYPE(?o)), {o}), {datatype}, {iri('?o')})"
    ours = f"?g IN ({CATALOG_GRAPH}, {VOCABULARY_GRAPH}, {MODELS_GRAPH}) || STRSTARTS(STR(?g), {o})"
    changed = " || ".join(f"!sameTerm(?{v}, ?{v}2)" for v in "gspo")
    base_fact = f"<{STORE_NODE}> <{BASE}>"
    forget = " ;\n".join(
        f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ ?b <{p}> ?v }} }}" for p in (BASE, VALIDATED, VALIDATING)
    )
    return (
        f"DELETE {{ GRAPH ?g {{ ?s ?p ?o }} }}\n"
        f"INSERT {{ GRAPH ?g2 {{ ?s2 ?p2 ?o2 }} }}\n"
        f"WHERE {{\n  GRAPH ?g {{ ?s ?p ?o }}\n  FILTER({ours})\n"
        f"  BIND({iri('?g')} AS ?g2)\n  BIND({iri('?s')} AS ?s2)\n  BIND({iri('?p')} AS ?p2)\n"
        f"  BIND({obj} AS ?o2)\n  FILTER({changed})\n}} ;\n"
        f"{forget} ;\n"
        f"INSERT DATA {{ GRAPH {CATALOG_GRAPH} {{ {base_fact} {n} }} }}"
    )
