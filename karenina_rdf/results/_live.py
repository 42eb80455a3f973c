"""A verification run written while it runs: each result lands in the store when it completes.

An import (``_results_store``) builds a whole new generation of a run and publishes it at once;
a run being verified cannot wait for its end. So a live run publishes its generation graph at
the start (the run header says ``is_complete: false``) and then appends results to it: each
batch of completed results is one transactional load into that graph (on disk, a batch of
``BULK_LINES`` or more: one bulk load of the results' bodies, then one transactional load of
their types and positions, by which every reader finds results), followed by one update that
rewrites the run node (job summary, status) and the run's tallies. A reader sees whole
results only. A crash between the two leaves tallies that lag behind the results; opening the
run again (``--resume``) recounts them from the stored results.

Results are the records Karenina's pipeline writes, mapped by the same ``ResultMapper`` as
imported ones, so they export as Karenina results and show on the endpoint while the run goes.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from karenina_rdf._errors import VerificationError
from karenina_rdf.rdf import KAR, MODELS_GRAPH, SCHEMA, child_iri, solutions, term_value
from karenina_rdf.rdf import terms as t
from karenina_rdf.store import RUN_GRAPH

from ._map import A, Context, Facts, ResultMapper, result_iri
from ._model import PROV
from ._runs import (
    _FACT_PREDICATES,
    _header_lines,
    _Links,
    _old_facts,
    _shared_graphs,
    _tally_lines,
    resolve_run,
    run_header,
    run_iri,
    run_reader,
)
from ._summaries import drop_update, write_summaries

if TYPE_CHECKING:
    from karenina_rdf.store import GraphStore

REFRESH_SECONDS = 0.5
# A batch of at least this many lines goes through the bulk loader (an on-disk store): below it a
# transaction is cheaper than the bulk loader's fixed cost (SST files written and ingested).
BULK_LINES = 10_000
_XSD = "http://www.w3.org/2001/XMLSchema#"


@dataclass(frozen=True)
class RunProvenance:
    """How a run made here came about (PROV-O, docs/data-model.md §9): its configuration, the
    software that made it, and the generation of the benchmark it used."""

    configuration: dict[str, Any]
    versions: dict[str, str]  # distribution → version, of karenina-rdf and the libraries it ran with
    benchmark: str  # the benchmark's IRI
    benchmark_graph: str  # the generation graph the run read
    benchmark_version: str | None = None
    benchmark_modified: str | None = None
    run_name: str | None = None
    informed_by: str | None = None  # a rescore: the run whose answers it graded again

    def triples(self, iri: str) -> list[tuple[str, str, str]]:
        run, agent, usage = f"<{iri}>", f"<{iri}/agent>", f"<{iri}/usage/benchmark>"
        out = [
            (run, KAR.configuration.nt, t.json_literal(self.configuration)),
            (run, t.iri(PROV + "wasAssociatedWith"), agent),
            (agent, A, t.iri(PROV + "SoftwareAgent")),
            (agent, t.iri(SCHEMA + "name"), t.string("karenina-rdf")),
            (agent, KAR.versions.nt, t.json_literal(self.versions)),
            (run, t.iri(PROV + "qualifiedUsage"), usage),
            (usage, A, t.iri(PROV + "Usage")),
            (usage, t.iri(PROV + "entity"), f"<{self.benchmark_graph}>"),
            (usage, t.iri(PROV + "hadRole"), KAR.benchmarkGraph.nt),
            (f"<{self.benchmark_graph}>", t.iri(PROV + "specializationOf"), f"<{self.benchmark}>"),
        ]
        if self.benchmark_version:
            out.append((usage, t.iri(SCHEMA + "version"), t.string(self.benchmark_version)))
        if self.benchmark_modified:
            out.append((usage, t.iri(SCHEMA + "dateModified"), t.string(self.benchmark_modified)))
        if self.run_name:
            out.append((run, t.iri(SCHEMA + "name"), t.string(self.run_name)))
        if self.informed_by:
            out.append((run, t.iri(PROV + "wasInformedBy"), f"<{self.informed_by}>"))
        return out


def run_configuration(store: GraphStore, run: str) -> dict[str, Any] | None:
    """The configuration a run made by ``verify`` recorded (``karenina:configuration``), or None."""
    iri, graph = resolve_run(store, run)
    for q in store.oxigraph.quads_for_pattern(ox.NamedNode(iri), ox.NamedNode(KAR.configuration), None, graph):
        value = json.loads(term_value(q.object))
        if isinstance(value, dict):
            return value
    return None


def stored_header(store: GraphStore, run: str, graph: ox.NamedNode) -> dict[str, Any]:
    """A stored run's export members other than the rows (format, metadata, shared data)."""
    return run_header(run_reader(store, graph), graph, run)


class LiveRun:
    """A run in the store that grows result by result. Not thread-safe: one writer thread."""

    def __init__(
        self,
        store: GraphStore,
        run_id: str,
        *,
        benchmark: str,
        header: dict[str, Any],
        provenance: RunProvenance | None = None,
        resume: bool = False,
    ) -> None:
        """``header``: the export members (format_version, metadata, shared_data) as Karenina
        writes them; ``provenance``: how the run was made. A run id already stored needs
        ``resume``."""
        self.store, self.run_id, self.header = store, run_id, header
        self.iri = run_iri(store.base_iri, run_id)
        self.extra = provenance.triples(self.iri) if provenance is not None else []
        self.links = _Links(store, benchmark, f"run {run_id}")
        self.facts: dict[str, Facts] = {}
        self.positions: dict[str, int] = {}
        old = store.catalog.runs().get(self.iri)
        if old is not None and not resume:
            raise VerificationError(
                f"run {run_id!r} is already stored: continue it with --resume {run_id}, or choose another --run id"
            )
        if old is None and resume:
            raise VerificationError(f"no stored run {run_id!r} to resume")
        self.graph = old if old is not None else ox.NamedNode(f"{self.iri}/graph/{uuid.uuid4().hex[:16]}")
        self.mapper = ResultMapper(Context(store.base_iri, self.iri, self.links.lookup, self.links.traits))
        if store.path is not None and store.remote is None:  # embedded on disk: big batches are bulk-loaded
            self.mapper.commit_lines = []
        if old is not None:
            self._read_stored()
        self.next_position = max(self.positions.values(), default=-1) + 1
        self._publish(new=old is None)

    # -- what is stored ------------------------------------------------------------------
    def _read_stored(self) -> None:
        query = f"SELECT ?r ?p ?o WHERE {{ ?r a {KAR.VerificationResult.nt} ; ?p ?o }}"
        preds: dict[str, dict[str, Any]] = {}
        for row in solutions(self.store.oxigraph.query(query, default_graph=self.graph)):
            r, p = term_value(row["r"]), term_value(row["p"])
            if p == KAR.position:
                self.positions[r] = int(term_value(row["o"]))
            elif p in _FACT_PREDICATES:
                preds.setdefault(r, {})[p] = row["o"]
        for r in self.positions:
            self.facts[r] = _old_facts(preds.get(r, {}))
        self._drop_uncommitted()

    def _drop_uncommitted(self) -> None:
        """Remove the bodies of results whose batch never became visible (the process ended
        between a bulk load and the transaction that follows it): resuming runs them again, and
        their new triples must not meet the old ones."""
        g = self.graph
        prefix = f"{self.iri}/results/"
        query = (
            f"SELECT DISTINCT ?r WHERE {{ ?r <{PROV}wasGeneratedBy> <{self.iri}> "
            f"FILTER NOT EXISTS {{ ?r a {KAR.VerificationResult.nt} }} }}"
        )
        orphans = {
            v[len(prefix) :]
            for row in solutions(self.store.oxigraph.query(query, default_graph=g))
            if (v := term_value(row["r"])).startswith(prefix)
        }
        if not orphans:
            return
        doomed = []
        for q in self.store.oxigraph.quads_for_pattern(None, None, None, g):
            s = str(q.subject)[1:-1]  # the subject's IRI (results have no blank nodes)
            if s.startswith(prefix) and s[len(prefix) :].split("/", 1)[0] in orphans:
                doomed.append(f"{q.subject} {q.predicate} {q.object} .")
        for i in range(0, len(doomed), 10_000):
            body = "\n".join(doomed[i : i + 10_000])
            self.store.oxigraph.update(f"DELETE DATA {{ GRAPH {g} {{ {body} }} }}")

    def stored_keys(self) -> set[str]:
        """Row keys (``_results_map.row_key``) of the results already stored."""
        return {r.rsplit("/", 1)[1] for r in self.positions}

    # -- writing -------------------------------------------------------------------------
    def add(self, results: list[dict[str, Any]], costs: list[dict[str, float | None]] | None = None) -> list[int]:
        """Store ``results`` (one load; a big batch on disk: a bulk load, then one transactional
        load of their types and positions), then the run node and tallies (one update). ``costs``:
        per result, USD per usage stage (``karenina:costUsd`` on its usage node; not part of
        Karenina's record, so exports leave it out). Returns the indices of the results stored
        now (one already stored is left out)."""
        # A result already stored is not stored twice: Ctrl-C can come after a batch was
        # written and before the caller knew, and the caller then stores what it holds again.
        keep = [i for i, r in enumerate(results) if result_iri(self.iri, r["metadata"]) not in self.positions]
        if len(keep) < len(results):
            results = [results[i] for i in keep]
            costs = [costs[i] for i in keep] if costs is not None else None
        if not results:
            return keep
        t0 = time.perf_counter()
        mapper = self.mapper
        ends = []  # where each result's lines end
        heads = []  # and its commit lines (types, position), when kept apart
        for i, result in enumerate(results):
            r = mapper.map(result, self.next_position)
            self.positions[r] = self.next_position
            self.next_position += 1
            self.facts[r] = mapper.facts
            if costs is not None:
                self._cost_lines(r, result, costs[i])
            ends.append(len(mapper.lines))
            heads.append(len(mapper.commit_lines or ()))
        lines, commit = mapper.lines[:], (mapper.commit_lines or [])[:]
        mapper.lines.clear()
        if mapper.commit_lines is not None:
            mapper.commit_lines.clear()
        ox_store = self.store.oxigraph
        if mapper.model_lines:  # a model seen for the first time: its node before its results
            models = "".join(mapper.model_lines).encode("utf-8")
            mapper.model_lines.clear()
            ox_store.load(models, format=ox.RdfFormat.N_TRIPLES, to_graph=MODELS_GRAPH)
        if commit and len(lines) >= BULK_LINES:
            # A big batch on disk: the bodies through the bulk loader (a quarter of a
            # transaction's CPU per triple, docs/performance.md § Every stage on), then the
            # results' types and positions in one transaction. Readers, exports and --resume
            # find results by those, so a result shows whole or not at all; a body left without
            # them (a crash between the two) is removed when the run is resumed.
            ox_store.bulk_load("".join(lines).encode("utf-8"), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph)
            ox_store.load("".join(commit).encode("utf-8"), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph)
        else:
            remote = self.store.remote
            # A server without the Graph Store Protocol gets INSERT DATA in batches of at most
            # 1,000 triples: one result per load keeps each result in one update, so --resume
            # never meets half a result.
            cuts = range(len(ends)) if remote is not None and remote.gsp_url is None else [len(ends) - 1]
            start = head = 0
            for i in cuts:
                chunk = "".join(lines[start : ends[i]]) + "".join(commit[head : heads[i]])
                ox_store.load(chunk.encode("utf-8"), format=ox.RdfFormat.N_TRIPLES, to_graph=self.graph)
                start, head = ends[i], heads[i]
        # The run node and tallies are rewritten at most every REFRESH_SECONDS: rewriting them
        # per result cost more than the result itself (docs/performance.md § Verification).
        if time.monotonic() - self._refreshed >= REFRESH_SECONDS:
            self._refresh()
        self.write_seconds += time.perf_counter() - t0
        return keep

    def _cost_lines(self, r: str, result: dict[str, Any], costs: dict[str, float | None]) -> None:
        usage = (result.get("template") or {}).get("usage_metadata")
        if not isinstance(usage, dict):
            return
        taken: set[str] = set()
        for stage in usage:
            node = child_iri(r, "usage", stage, taken)  # the mapper names usage nodes the same way
            cost = costs.get(stage)
            if cost is not None:
                self.mapper._add(f"<{node}>", KAR.costUsd.nt, t.typed(f"{cost:.10f}", _XSD + "decimal"))

    def finish(self, summary: dict[str, Any], status: str) -> None:
        """The run's end: the final job summary and status (completed, interrupted, failed)."""
        metadata = self.header.setdefault("metadata", {})
        metadata["job_summary"] = summary
        self.status = status
        self._refresh()

    # -- the run node and tallies --------------------------------------------------------
    status = "running"
    _refreshed = 0.0
    write_seconds = 0.0  # mapping and writing results, for the speed benchmark's breakdown

    def _run_lines(self) -> str:
        mapper = self.mapper
        _header_lines(mapper, self.iri, self.run_id, self.header, self.links)
        run = f"<{self.iri}>"
        mapper._add(run, KAR.runStatus.nt, t.string(self.status))
        for bench in sorted({f[2] for f in self.facts.values() if f[2] is not None} | self.links.used):
            mapper._add(run, t.iri(PROV + "used"), f"<{bench}>")
        for s, p, o in self.extra:
            mapper._add(s, p, o)
        _tally_lines(mapper._add, self.iri, self.facts.values())
        text = "".join(mapper.lines)
        mapper.lines.clear()
        return text

    def _refresh(self) -> None:
        g = self.graph
        run = f"<{self.iri}>"
        self._refreshed = time.monotonic()
        self.store.oxigraph.update(
            f"DELETE WHERE {{ GRAPH {g} {{ {run} ?p ?o }} }} ;\n"
            f"DELETE {{ GRAPH {g} {{ ?t ?p ?o }} }} WHERE {{ GRAPH {g} {{ ?t a {KAR.Tally.nt} ; ?p ?o }} }} ;\n"
            # A run that goes on adds results its summaries would not count: they are dropped
            # (the named queries then read its results) and written again at its end.
            f"{drop_update(g)} ;\n"
            f"INSERT DATA {{ GRAPH {g} {{ {self._run_lines()} }} }}"
        )
        if self.status != "running":
            write_summaries(self.store.oxigraph, self.iri, g)

    def _publish(self, new: bool) -> None:
        self.store.oxigraph.update(_shared_graphs(""))  # the failure taxonomy results point to
        self._refresh()
        if not new:
            return
        self.store.catalog.publish(self.iri, RUN_GRAPH, self.graph, source="karenina-rdf verify")
