"""The catalog: the one graph that says which generation graph is live for each benchmark and
each run, what is known of it (source, content hash, import time, size), the store's base IRI,
and which graphs are being loaded or dropped.

Every write that makes something visible or invisible goes through here, as one SPARQL update
on ``urn:karenina-rdf:catalog``: a reader sees the old generation or the new one, never half of
either. The other rooms (results, validation, pages, linked data) read and publish through this
API rather than writing catalog triples of their own.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable

import pyoxigraph as ox

from karenina_rdf.rdf import CATALOG_GRAPH, KAR, named, term_value

# The catalog's predicates (docs/data-model.md §2).
GRAPH = KAR.graph  # benchmark → its live generation graph
RUN_GRAPH = KAR.runGraph  # run → its live generation graph
CONTENT_HASH = KAR.contentHash
SOURCE = KAR.importedFrom
IMPORTED_AT = KAR.importedAt
FILE_HASH = KAR.sourceSha256
TRIPLE_COUNT = KAR.tripleCount
STORE_NODE = "urn:karenina-rdf:store"
BASE = KAR.baseIri
PENDING = KAR.pendingGraph  # on the store node: a graph being loaded or dropped
# A benchmark's recorded validation (validation._recorded): the digest of the findings file that
# holds its last full validation, and the nonce of a validation under way. Both go with every
# in-place edit (forget_hashes), so a record never outlives the triples it was made from.
VALIDATED = KAR.validatedFindings
VALIDATING = KAR.validationNonce


class Catalog:
    """The catalog graph of one store (a pyoxigraph store, or a server answering its calls)."""

    def __init__(self, ox_store: ox.Store) -> None:
        self._ox = ox_store

    def _live(self, predicate: str) -> dict[str, ox.NamedNode]:
        return {
            term_value(q.subject): named(q.object)
            for q in self._ox.quads_for_pattern(None, ox.NamedNode(predicate), None, CATALOG_GRAPH)
        }

    def benchmarks(self) -> dict[str, ox.NamedNode]:
        """Live benchmarks: IRI → generation graph."""
        return self._live(GRAPH)

    def runs(self) -> dict[str, ox.NamedNode]:
        """Live verification runs: IRI → generation graph."""
        return self._live(RUN_GRAPH)

    def value(self, subject: str, predicate: str) -> str | None:
        """One catalog fact about ``subject`` (``SOURCE``, ``IMPORTED_AT``, ``TRIPLE_COUNT`` …)."""
        for q in self._ox.quads_for_pattern(ox.NamedNode(subject), ox.NamedNode(predicate), None, CATALOG_GRAPH):
            return term_value(q.object)
        return None

    def facts(self, subject: str) -> dict[str, str]:
        """Everything the catalog says of ``subject``: predicate IRI → value."""
        return {
            q.predicate.value: term_value(q.object)
            for q in self._ox.quads_for_pattern(ox.NamedNode(subject), None, None, CATALOG_GRAPH)
        }

    def base_iri(self) -> str | None:
        return self.value(STORE_NODE, BASE)

    def set_base_iri(self, base: str) -> None:
        self._ox.update(f"INSERT DATA {{ GRAPH {CATALOG_GRAPH} {{ <{STORE_NODE}> <{BASE}> {json.dumps(base)} }} }}")

    # -- graphs being loaded or dropped ----------------------------------------------------
    def pending(self) -> list[ox.NamedNode]:
        """Graphs marked as being loaded or dropped: no query sees them; the next cleanup drops them."""
        marker = (ox.NamedNode(STORE_NODE), ox.NamedNode(PENDING))
        return [named(q.object) for q in self._ox.quads_for_pattern(*marker, None, CATALOG_GRAPH)]

    def mark_pending(self, graph: ox.NamedNode, on: bool) -> None:
        fact = f"GRAPH {CATALOG_GRAPH} {{ <{STORE_NODE}> <{PENDING}> {graph} }}"
        self._ox.update(f"INSERT DATA {{ {fact} }}" if on else f"DELETE DATA {{ {fact} }}")

    # -- publishing ------------------------------------------------------------------------
    def publish(
        self,
        subject: str,
        link: str,
        graph: ox.NamedNode,
        *,
        source: str | None,
        triples: int | None = None,
        extra: Iterable[tuple[str, str]] = (),
        before: str | None = None,
    ) -> None:
        """Make ``graph`` the live generation of ``subject`` (``link``: ``GRAPH`` for a benchmark,
        ``RUN_GRAPH`` for a run), stamped with the time, its source and size: everything the
        catalog said of ``subject`` is replaced in one update. ``extra``: more facts (predicate
        IRI, object as an N-Triples term); ``before``: an update run first in the same request
        (the shared graphs a run needs)."""
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        facts = [(link, str(graph)), (IMPORTED_AT, json.dumps(now)), *extra]
        if triples is not None:
            facts.append((TRIPLE_COUNT, str(triples)))
        if source is not None:
            facts.append((SOURCE, json.dumps(source, ensure_ascii=False)))
        body = " . ".join(f"<{subject}> <{p}> {o}" for p, o in facts)
        parts = [before] if before else []
        parts.append(f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{subject}> ?p ?o }} }}")
        parts.append(f"INSERT DATA {{ GRAPH {CATALOG_GRAPH} {{ {body} }} }}")
        self._ox.update(" ;\n".join(parts))

    def unpublish(self, subject: str) -> None:
        """Forget ``subject``: its generation graph is no longer live (the caller drops it)."""
        self._ox.update(f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{subject}> ?p ?o }} }}")

    def forget_hashes(self, subject: str) -> None:
        """Forget the content hashes of a benchmark changed in place (re-import then replaces it)
        and its recorded validation (the next one validates it all again)."""
        self._ox.update(self.forget_update(subject))

    @staticmethod
    def forget_update(subject: str) -> str:
        """The SPARQL update of :meth:`forget_hashes`, to run in the same request as an edit."""
        return " ;\n".join(
            f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{subject}> <{p}> ?h }} }}"
            for p in (CONTENT_HASH, FILE_HASH, VALIDATED, VALIDATING)
        )

    # -- recorded validations --------------------------------------------------------------
    def start_validation(self, subject: str, nonce: str) -> None:
        """Mark a full validation of ``subject`` as under way: an edit made meanwhile removes the
        mark, and :meth:`finish_validation` then records nothing."""
        fact = f"GRAPH {CATALOG_GRAPH} {{ <{subject}> <{VALIDATING}> {json.dumps(nonce)} }}"
        self._ox.update(
            f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{subject}> <{VALIDATING}> ?n }} }} ;\n"
            f"DELETE WHERE {{ GRAPH {CATALOG_GRAPH} {{ <{subject}> <{VALIDATED}> ?d }} }} ;\n"
            f"INSERT DATA {{ {fact} }}"
        )

    def finish_validation(self, subject: str, nonce: str, digest: str) -> None:
        """Record ``digest`` as ``subject``'s validation if the mark of :meth:`start_validation`
        is still there (no edit since), in one conditional update."""
        mark = f"<{subject}> <{VALIDATING}> {json.dumps(nonce)}"
        self._ox.update(
            f"DELETE {{ GRAPH {CATALOG_GRAPH} {{ {mark} }} }}\n"
            f"INSERT {{ GRAPH {CATALOG_GRAPH} {{ <{subject}> <{VALIDATED}> {json.dumps(digest)} }} }}\n"
            f"WHERE {{ GRAPH {CATALOG_GRAPH} {{ {mark} }} }}"
        )
