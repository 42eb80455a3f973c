"""Summaries of a run's results that the named queries read instead of every result (issue 20).

Beside the tallies (pass counts, ``_runs._tally_lines``), each run graph holds, under
``{run}/tallies/``, the partial aggregates of the results-side named queries: token usage and
cost per (answering model, usage model, stage) for ``token-usage`` and ``run-cost``, failures per
(answering model, category, file group) for ``failure-counts``, metric values per (answering
model, trait, metric) for ``trait-metrics-by-model`` and the distribution of trait scores per
(answering model, trait, kind, value) for ``trait-aggregates-by-model``. A query sums them again
per run, model or trait, so it reads a few nodes per run instead of joining every result.

Each summary is computed by SPARQL over the run's own graph with the same patterns the named query
had, so it holds exactly what the query summed; what lies outside the run graph (the run's
identifier, model labels, a stored trait's direction, the failure vocabulary) is still joined at
query time, so edits of benchmarks or models never leave a summary stale.

When they are written: a results import computes them on its unpublished generation, before the
catalog points at it (one publication: readers see the old run with its summaries or the new
one with its own); a live verification run drops them while it runs and writes them at its end.
A marker node (``karenina:RunSummaries``) says a run is summarised: the named queries aggregate
the raw results of every run without one (runs imported before summaries existed, a run still
going, a run whose summaries a raw SPARQL update dropped), so an answer is never wrong, only
slower. ``GraphStore.update_graph`` (a raw update can change any result) drops every run's
summaries before and after the update; ``Store.update_graph`` then recounts every run, tallies
included (``_recount``), and opening an on-disk store recounts the runs without a marker.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pyoxigraph as ox

from karenina_rdf.rdf import KAR, drop_summaries, sparql_prefixes

from ._map import A
from ._model import PROV

_PROLOGUE = sparql_prefixes()

# (class, query over one run graph, {variable: predicate}) — a query's GROUP BY variables are
# the summary's keys (omitted when unbound), its aggregates the values. RUN stands for the run IRI.
# Each pattern is a subquery of its own: Oxigraph then scans each predicate once and joins the
# scans by hashing, instead of one RocksDB seek per result and pattern (usage 2.2x, metric 2.6x,
# score 2.8x faster on a 10k-result run on disk; same rows, sums of doubles up to their last bits).
_SUMMARIES: tuple[tuple[str, str, dict[str, str]], ...] = (
    (
        KAR.UsageSummary,
        """SELECT ?m ?model ?stage (COUNT(?u) AS ?n) (SUM(COALESCE(?in, 0)) AS ?input)
          (SUM(COALESCE(?out, 0)) AS ?output) (SUM(COALESCE(?all, 0)) AS ?total)
          (COUNT(?cost) AS ?priced) (SUM(COALESCE(?cost, 0.0)) AS ?cost_usd)
        WHERE {
          { SELECT ?r WHERE { ?r a karenina:VerificationResult } }
          { SELECT ?r WHERE { ?r prov:wasGeneratedBy RUN } }
          { SELECT ?r ?u WHERE { ?r karenina:tokenUsage ?u } }
          { SELECT ?u ?stage WHERE { ?u karenina:stage ?stage } }
          OPTIONAL { SELECT ?r ?m WHERE { ?r earl:subject ?m } }
          OPTIONAL { SELECT ?u ?model WHERE { ?u karenina:model ?model } }
          OPTIONAL { SELECT ?u ?in WHERE { ?u karenina:inputTokens ?in FILTER(isNumeric(?in)) } }
          OPTIONAL { SELECT ?u ?out WHERE { ?u karenina:outputTokens ?out FILTER(isNumeric(?out)) } }
          OPTIONAL { SELECT ?u ?all WHERE { ?u karenina:totalTokens ?all FILTER(isNumeric(?all)) } }
          OPTIONAL { SELECT ?u ?cost WHERE { ?u karenina:costUsd ?cost } }
        }
        GROUP BY ?m ?model ?stage""",
        {
            "m": str(KAR.answeringModel),
            "model": str(KAR.summaryModel),
            "stage": str(KAR.summaryStage),
            "n": str(KAR.results),
            "input": str(KAR.inputTokenSum),
            "output": str(KAR.outputTokenSum),
            "total": str(KAR.totalTokenSum),
            "priced": str(KAR.priced),
            "cost_usd": str(KAR.costUsdSum),
        },
    ),
    (
        KAR.FailureSummary,
        """SELECT ?m ?c ?g (COUNT(?r) AS ?n)
        WHERE {
          ?r a karenina:VerificationResult ; prov:wasGeneratedBy RUN ; karenina:failure ?f .
          ?f karenina:failureCategory ?c .
          OPTIONAL { ?r earl:subject ?m }
          OPTIONAL { ?f karenina:failureGroup ?g }
        }
        GROUP BY ?m ?c ?g""",
        {
            "m": str(KAR.answeringModel),
            "c": str(KAR.summaryCategory),
            "g": str(KAR.summaryGroup),
            "n": str(KAR.results),
        },
    ),
    (
        KAR.MetricSummary,
        """SELECT ?m ?name ?trait ?metric (COUNT(?x) AS ?n) (SUM(?x) AS ?sum) (MIN(?x) AS ?min) (MAX(?x) AS ?max)
        WHERE {
          { SELECT ?r WHERE { ?r prov:wasGeneratedBy RUN } }
          { SELECT ?r ?m WHERE { ?r earl:subject ?m } }
          { SELECT ?r ?s WHERE { ?r karenina:rubric/karenina:traitScore ?s } }
          { SELECT ?s ?name WHERE { ?s karenina:traitName ?name } }
          { SELECT ?s ?mv WHERE { ?s karenina:metricValue ?mv } }
          { SELECT ?mv ?metric WHERE { ?mv schema:name ?metric } }
          { SELECT ?mv ?x WHERE { ?mv schema:value ?v FILTER(isNumeric(?v)) BIND(xsd:double(?v) AS ?x) } }
          OPTIONAL { SELECT ?s ?trait WHERE { ?s karenina:scoresTrait ?trait } }
        }
        GROUP BY ?m ?name ?trait ?metric""",
        {
            "m": str(KAR.answeringModel),
            "name": str(KAR.summaryTraitName),
            "trait": str(KAR.summaryTrait),
            "metric": str(KAR.summaryMetric),
            "n": str(KAR.scores),
            "sum": str(KAR.valueSum),
            "min": str(KAR.valueMin),
            "max": str(KAR.valueMax),
        },
    ),
    (
        KAR.ScoreSummary,
        """SELECT ?m ?name ?k ?trait ?shib ?x (COUNT(*) AS ?n) (MAX(?is_bool) AS ?bool)
        WHERE {
          { SELECT ?r WHERE { ?r prov:wasGeneratedBy RUN } }
          { SELECT ?r ?m WHERE { ?r earl:subject ?m } }
          { SELECT ?r ?s WHERE { ?r karenina:rubric/karenina:traitScore ?s } }
          { SELECT ?s ?name WHERE { ?s karenina:traitName ?name } }
          { SELECT ?s ?x ?is_bool WHERE { ?s schema:value ?v
              FILTER(isNumeric(?v) || DATATYPE(?v) = xsd:boolean)
              BIND(xsd:double(?v) AS ?x)
              BIND(IF(DATATYPE(?v) = xsd:boolean, 1, 0) AS ?is_bool) } }
          OPTIONAL { SELECT ?s ?k WHERE { ?s karenina:scoreKind ?k } }
          OPTIONAL { SELECT ?s ?trait WHERE { ?s karenina:scoresTrait ?trait } }
          OPTIONAL { SELECT ?s ?shib WHERE { ?s karenina:higherIsBetter ?shib } }
        }
        GROUP BY ?m ?name ?k ?trait ?shib ?x""",
        {
            "m": str(KAR.answeringModel),
            "name": str(KAR.summaryTraitName),
            "k": str(KAR.summaryKind),
            "trait": str(KAR.summaryTrait),
            "shib": str(KAR.summaryDirection),
            "x": str(KAR.summaryValue),
            "n": str(KAR.scores),
            "bool": str(KAR.isBoolean),
        },
    ),
)


def summary_lines(oxigraph: ox.Store, run: str, graph: ox.NamedNode) -> Iterator[str]:
    """The N-Triples of the run's summaries, computed from the results in ``graph``."""
    prefix = f"{run}/tallies/"
    yield f"<{prefix}summaries> {A} {KAR.RunSummaries.nt} .\n"
    yield f"<{prefix}summaries> <{PROV}wasGeneratedBy> <{run}> .\n"
    for cls, text, predicates in _SUMMARIES:
        kind = cls.rsplit(":", 1)[-1]  # the class's local name: karenina: is a URN
        sparql = _PROLOGUE + text.replace("RUN", f"<{run}>")
        for row in oxigraph.query(sparql, default_graph=graph):  # type: ignore[union-attr]
            values = [(predicates[v], row[v]) for v in predicates if row[v] is not None]
            key = json.dumps([[p, str(o)] for p, o in values])
            node = f"<{prefix}{kind}-{hashlib.sha256(key.encode()).hexdigest()[:16]}>"
            yield f"{node} {A} <{cls}> .\n"
            yield f"{node} <{PROV}wasGeneratedBy> <{run}> .\n"
            for pred, obj in values:
                yield f"{node} <{pred}> {obj} .\n"


def drop_update(graph: ox.NamedNode) -> str:
    """The SPARQL update removing the summary nodes from ``graph``."""
    return drop_summaries(str(graph))


def write_summaries(oxigraph: ox.Store, run: str, graph: ox.NamedNode) -> int:
    """Replace the run's summaries in ``graph`` by ones computed from its results now (one
    update: readers of a published graph see the old summaries or the new ones). Returns the
    number of triples written."""
    lines = list(summary_lines(oxigraph, run, graph))
    oxigraph.update(f"{drop_update(graph)} ;\nINSERT DATA {{ GRAPH {graph} {{\n{''.join(lines)}}} }}")
    return len(lines)


def summarised(oxigraph: ox.Store, run: str, graph: ox.NamedNode) -> bool:
    """Whether the run's graph holds its summaries (the marker)."""
    ask = f"ASK {{ GRAPH {graph} {{ <{run}/tallies/summaries> a {KAR.RunSummaries.nt} }} }}"
    return bool(oxigraph.query(ask))
