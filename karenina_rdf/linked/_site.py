"""Linked data over the store: which stored resource a request path names, what describes it,
and the two documents that describe the whole service (SPARQL service description and VoID).

An IRI minted by the store (docs/data-model.md §3) is ``{base}benchmarks/{seg(id)}/…``; the
server answers for the part of it after the base IRI's path, so a store minted under
``https://bench.example.org/kb/`` can be served behind a proxy that forwards ``/kb/…``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pyoxigraph as ox

from karenina_rdf._store import Store
from karenina_rdf.rdf import CATALOG_GRAPH, KAR, MODELS_GRAPH, SCHEMA, SUMMARY_CLASSES, solutions, term_value
from karenina_rdf.sparql import GRAPHS, MEDIA_TYPES, RESULTS, SUFFIXES
from karenina_rdf.store import TRIPLE_COUNT

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
SD = "http://www.w3.org/ns/sparql-service-description#"
VOID = "http://rdfs.org/ns/void#"
DCT = "http://purl.org/dc/terms/"
FORMATS = "http://www.w3.org/ns/formats/"
_FORMAT_IRIS = {
    "json": "SPARQL_Results_JSON",
    "xml": "SPARQL_Results_XML",
    "csv": "SPARQL_Results_CSV",
    "tsv": "SPARQL_Results_TSV",
    "turtle": "Turtle",
    "ntriples": "N-Triples",
    "jsonld": "JSON-LD",
    "rdfxml": "RDF_XML",
}
# Characters seg() (docs/data-model.md §3) leaves as they are: a client that percent-encodes
# them still names the same resource.
_RAW = set("-_~:!$'()*+,;=@.") | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_ANY = "urn:karenina-rdf:any"  # a predicate no triple has: (<_ANY>|!<_ANY>) is "any predicate"


def normalise_path(raw: str) -> str:
    """A request path in the form the store mints: needless escapes decoded, hex upper-case."""

    def fix(m: re.Match[str]) -> str:
        ch = chr(int(m.group(1), 16))
        return ch if ch in _RAW else "%" + m.group(1).upper()

    def segment(seg: str) -> str:
        decoded = _PCT.sub(fix, seg)
        stem = next((decoded[: -len(x)] for x in SUFFIXES if decoded.endswith(x)), decoded)
        if stem and set(stem) == {"."}:
            # The ids "." and ".." are minted encoded (a client would resolve them away).
            return "%2E" * len(stem) + decoded[len(stem) :]
        return decoded

    return "/".join(segment(seg) for seg in raw.split("/"))


@dataclass(frozen=True)
class Located:
    iri: str  # the resource
    owner: str  # the benchmark or run IRI it belongs to; a model is its own owner
    graph: ox.NamedNode  # the owner's live graph (a model: the models graph, or a run graph with a copy)
    fmt: str | None  # a format named by a file suffix, or None
    # What the owner is: "benchmark", "run" or "model"; "version": a version of a benchmark
    # ({B}/v/{n}, described by its catalog node).
    kind: str = "benchmark"
    # "checkpoint" ({B}/checkpoint.jsonld), "results.json" / "results.csv" (a run),
    # "version/checkpoint.jsonld" / "version/diff.json" (a version's checkpoint, its changes).
    download: str | None = None
    whole_graph: bool = False  # the live generation graph's own IRI: its content
    graphs: tuple[ox.NamedNode, ...] = ()  # the graphs a model's description reads (empty: ``graph``)

    @property
    def is_owner(self) -> bool:
        """The benchmark, run or model itself (not a node under it, nor its graph)."""
        return self.iri == self.owner and not self.whole_graph


# A version of a benchmark under its IRI, and what it offers besides its description.
_VERSION = re.compile(r"/v/([1-9][0-9]*)(/checkpoint\.jsonld|/diff\.json)?")
# The downloads a run offers besides its RDF: its rows as Karenina writes them (format 2.2, or CSV).
RUN_DOWNLOADS = {"/results.json": "results.json", "/results.csv": "results.csv"}


class Site:
    """The store as a linked-data site under its base IRI."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.base = store.base_iri
        self.base_path = urlsplit(self.base).path or "/"

    def iri_for_path(self, raw_path: str) -> str | None:
        """The IRI a request path names under the base, or None when it is outside or is no IRI
        at all (a broken percent escape, a character IRIs do not allow): nothing this store
        mints, so nothing to look up."""
        path = normalise_path(raw_path)
        if not path.startswith(self.base_path):
            return None
        iri = self.base + path[len(self.base_path) :]
        try:
            ox.NamedNode(iri)
        except ValueError:
            return None
        return iri

    def path_for(self, iri: str) -> str:
        """The local path of a minted IRI (for links that stay on this server)."""
        return self.base_path + iri[len(self.base) :] if iri.startswith(self.base) else iri

    def locate(self, iri: str) -> Located | None:
        """The stored resource ``iri`` names: a benchmark or a node of one, a verification run or
        a node of one (results and their parts), a model, or one of their live graphs; with the
        format a suffix asks for."""
        live = self.store.catalog.benchmarks()
        runs = self.store.catalog.runs() if iri.startswith(self.base + "runs/") else {}
        for name, fmt in [(iri, None), *((iri[: -len(s)], f) for s, f in SUFFIXES.items() if iri.endswith(s))]:
            found = self._in_benchmark(name, fmt, live) or self._in_run(name, fmt, runs) or self._model(name, fmt)
            if found is not None:
                return found
        return None

    def _in_benchmark(self, name: str, fmt: str | None, live: dict[str, ox.NamedNode]) -> Located | None:
        bench = self._owner_of(name, live)
        if bench is None:
            return None
        graph = live[bench]
        if name == bench + "/checkpoint.jsonld" and fmt is None:
            return Located(name, bench, graph, "checkpoint", download="checkpoint")
        version = _VERSION.fullmatch(name, len(bench))
        if version is not None:
            return self._version(name, bench, graph, fmt, version)
        if name == graph.value:
            return Located(name, bench, graph, fmt, whole_graph=True)
        if name == bench or self._exists(name, graph):
            return Located(name, bench, graph, fmt)
        return None

    def _version(self, name: str, bench: str, graph: ox.NamedNode, fmt: str | None, m: re.Match[str]) -> Located | None:
        """A version of a benchmark (``{B}/v/{n}``, described by its node in the catalog), its
        checkpoint (``/checkpoint.jsonld``) or its changes since the version before (``/diff.json``)."""
        node = name[: m.start(2)] if m.group(2) else name
        listed = {v.iri: v for v in self.store.versions(bench)}
        v = listed.get(node)
        if v is None:
            return None
        where = Located(node, bench, graph, fmt, kind="version", graphs=(CATALOG_GRAPH,))
        if m.group(2) is None:
            return where
        if fmt is not None or (
            m.group(2) == "/diff.json" and v.revision_of is None and v.number == min(x.number for x in listed.values())
        ):
            return None
        return Located(name, bench, graph, None, kind="version", download="version" + m.group(2), graphs=where.graphs)

    def _in_run(self, name: str, fmt: str | None, runs: dict[str, ox.NamedNode]) -> Located | None:
        run = self._owner_of(name, runs)
        if run is None:
            return None
        graph = runs[run]
        download = RUN_DOWNLOADS.get(name[len(run) :])
        if download is not None and fmt is None:
            return Located(name, run, graph, None, kind="run", download=download)
        if name == graph.value:
            return Located(name, run, graph, fmt, kind="run", whole_graph=True)
        if name == run or self._exists(name, graph):
            return Located(name, run, graph, fmt, kind="run")
        return None

    def _model(self, name: str, fmt: str | None) -> Located | None:
        """A model node lives in the models graph, written once for every run that names it
        (docs/data-model.md §9); a run imported before that graph existed holds a copy in its own
        graph, which describes it too."""
        if not name.startswith(self.base + "models/"):
            return None
        runs = {g.value: g for g in self.store.catalog.runs().values()}
        found = self.store.oxigraph.quads_for_pattern(ox.NamedNode(name), ox.NamedNode(RDF_TYPE), None, None)
        held = {term_value(q.graph_name) for q in found if not isinstance(q.graph_name, ox.DefaultGraph)}
        graphs = [MODELS_GRAPH] if MODELS_GRAPH.value in held else []
        graphs += [runs[g] for g in sorted(held & runs.keys())]
        if not graphs:
            return None
        return Located(name, name, graphs[0], fmt, kind="model", graphs=tuple(graphs))

    @staticmethod
    def _owner_of(iri: str, owners: dict[str, ox.NamedNode]) -> str | None:
        best = None
        for owner in owners:
            if (iri == owner or iri.startswith(owner + "/")) and (best is None or len(owner) > len(best)):
                best = owner
        return best

    def _exists(self, iri: str, graph: ox.NamedNode) -> bool:
        ox_store = self.store.oxigraph
        return any(True for _ in ox_store.quads_for_pattern(ox.NamedNode(iri), None, None, graph))

    def describe(self, where: Located) -> list[ox.Triple]:
        """The triples about a resource (see :meth:`describe_query`)."""
        sparql, dataset = self.describe_query(where)
        triples = self.store.oxigraph.query(sparql, **dataset)
        assert isinstance(triples, ox.QueryTriples)  # a CONSTRUCT
        return list(triples)

    def describe_query(self, where: Located) -> tuple[str, dict[str, Any]]:
        """What describes a resource, as a CONSTRUCT query and its dataset (the endpoint runs it
        within its time and size limits):

        * a node of a benchmark: its triples (a benchmark adds its catalog entry);
        * a node of a run: its triples and those of the nodes under its IRI that it links to, so
          a result gives its whole record (outcome, failure, usage, fields, rubric, scores); a
          run gives its import records and its tallies (counts by model, judge and benchmark),
          but not its results: a run can hold a million, and its graph IRI gives them all;
        * a model: its triples (in the models graph);
        * a live graph's IRI: the graph's content.
        """
        graphs: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph] = list(where.graphs or (where.graph,))
        if where.whole_graph:
            return "CONSTRUCT WHERE { ?s ?p ?o }", {"default_graph": graphs}
        if where.is_owner and where.kind in ("benchmark", "run"):
            graphs.append(CATALOG_GRAPH)
        node = ox.NamedNode(where.iri)
        if where.kind == "version":
            # Where a kept version's triples are stored is the store's business (a graph of its
            # version archive, which nothing serves): its checkpoint is the download.
            hide = f"FILTER(?p != {KAR.versionGraph.nt})"
            return f"CONSTRUCT {{ {node} ?p ?o }} WHERE {{ {node} ?p ?o {hide} }}", {"default_graph": graphs}
        if where.kind != "run":
            return f"CONSTRUCT {{ {node} ?p ?o }} WHERE {{ {node} ?p ?o }}", {"default_graph": graphs}
        # Any predicate, followed from the node: the path stays small (a result reaches its
        # parts, its run and the run's import records), and the filter keeps what lies under the
        # node's IRI.
        under = ox.Literal(where.iri + "/")
        reached = f"{node} (<{_ANY}>|!<{_ANY}>)* ?s FILTER(?s = {node} || STRSTARTS(STR(?s), {under}))"
        if where.is_owner:
            # A run's tallies and summaries link to it, not it to them; they are few (a handful
            # per model, stage, trait and value), found by their type.
            types = " ".join(c.nt for c in (KAR.Tally, *SUMMARY_CLASSES))
            reached = f"{{ {reached} }} UNION {{ VALUES ?tallied {{ {types} }} ?s a ?tallied }}"
        return f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {reached} ?s ?p ?o }}", {"default_graph": graphs}

    def types(self, where: Located) -> set[str]:
        ox_store = self.store.oxigraph
        found = ox_store.quads_for_pattern(ox.NamedNode(where.iri), ox.NamedNode(RDF_TYPE), None, where.graph)
        return {term_value(q.object) for q in found}

    # -- service-wide documents ------------------------------------------------------------
    def service_description(self, endpoint: str, *, writable: bool, federated: bool, void_url: str) -> list[ox.Triple]:
        """SPARQL 1.1 Service Description of the endpoint at ``endpoint``."""
        svc, dataset = ox.BlankNode("service"), ox.BlankNode("dataset")
        t = _Triples()
        t.add(svc, RDF_TYPE, ox.NamedNode(SD + "Service"))
        t.add(svc, SD + "endpoint", ox.NamedNode(endpoint))
        t.add(svc, SD + "supportedLanguage", ox.NamedNode(SD + "SPARQL11Query"))
        if writable:
            t.add(svc, SD + "supportedLanguage", ox.NamedNode(SD + "SPARQL11Update"))
        for fmt in (*RESULTS, *GRAPHS):
            t.add(svc, SD + "resultFormat", ox.NamedNode(FORMATS + _FORMAT_IRIS[fmt]))
        t.add(svc, SD + "feature", ox.NamedNode(SD + "UnionDefaultGraph"))
        if federated:
            t.add(svc, SD + "feature", ox.NamedNode(SD + "BasicFederatedQuery"))
        t.add(svc, SD + "defaultDataset", dataset)
        t.add(dataset, RDF_TYPE, ox.NamedNode(SD + "Dataset"))
        t.add(dataset, VOID + "sparqlEndpoint", ox.NamedNode(endpoint))
        t.add(dataset, RDF_TYPE, ox.NamedNode(VOID + "Dataset"))
        t.add(dataset, DCT + "description", ox.Literal(f"VoID description: {void_url}"))
        default = ox.BlankNode("default")
        t.add(dataset, SD + "defaultGraph", default)
        t.add(default, RDF_TYPE, ox.NamedNode(SD + "Graph"))
        total = 0
        for bench, graph in sorted(self.store.catalog.benchmarks().items()):
            count = self._triple_count(bench)
            total += count
            named, desc = ox.BlankNode(), ox.BlankNode()
            t.add(dataset, SD + "namedGraph", named)
            t.add(named, RDF_TYPE, ox.NamedNode(SD + "NamedGraph"))
            t.add(named, SD + "name", graph)
            t.add(named, SD + "graph", desc)
            t.add(desc, RDF_TYPE, ox.NamedNode(SD + "Graph"))
            t.add(desc, VOID + "triples", ox.Literal(count))
            t.add(desc, DCT + "source", ox.NamedNode(bench))
        t.add(default, VOID + "triples", ox.Literal(total))
        return t.triples

    def _triple_count(self, bench: str) -> int:
        value = self.store.catalog.value(bench, TRIPLE_COUNT)
        try:
            return int(value) if value is not None else 0
        except ValueError:  # an update may have written anything there
            return 0

    def void(self, *, endpoint: str | None, void_url: str, server: str) -> list[ox.Triple]:
        """A VoID description: the store as a dataset, each benchmark a subset with its counts,
        SPARQL endpoint (None: a published site without one), data dumps and class partitions."""
        root = ox.NamedNode(void_url + "#dataset")
        t = _Triples()
        t.add(root, RDF_TYPE, ox.NamedNode(VOID + "Dataset"))
        t.add(root, DCT + "title", ox.Literal("karenina-rdf benchmarks"))
        if endpoint is not None:
            t.add(root, VOID + "sparqlEndpoint", ox.NamedNode(endpoint))
        t.add(root, VOID + "uriSpace", ox.Literal(self.base + "benchmarks/"))
        for vocab in (SCHEMA, KAR.base):
            t.add(root, VOID + "vocabulary", ox.NamedNode(vocab))
        total = 0
        classes = self._class_counts()
        for bench, graph in sorted(self.store.catalog.benchmarks().items()):
            node = ox.NamedNode(bench)
            count = self._triple_count(bench)
            total += count
            t.add(root, VOID + "subset", node)
            t.add(node, RDF_TYPE, ox.NamedNode(VOID + "Dataset"))
            found = self.store.oxigraph.quads_for_pattern(node, ox.NamedNode(SCHEMA + "name"), None, graph)
            name = next((term_value(q.object) for q in found), None)
            if name is not None:
                t.add(node, DCT + "title", ox.Literal(name))
            t.add(node, VOID + "triples", ox.Literal(count))
            if endpoint is not None:
                t.add(node, VOID + "sparqlEndpoint", ox.NamedNode(endpoint))
            t.add(node, VOID + "dataDump", ox.NamedNode(server + self.path_for(graph.value) + ".nt"))
            t.add(node, VOID + "dataDump", ox.NamedNode(server + self.path_for(bench) + "/checkpoint.jsonld"))
            t.add(node, VOID + "rootResource", node)
            entities = 0
            for cls, n in sorted(classes.get(graph.value, {}).items()):
                part = ox.BlankNode()
                t.add(node, VOID + "classPartition", part)
                t.add(part, VOID + "class", ox.NamedNode(cls))
                t.add(part, VOID + "entities", ox.Literal(n))
                entities += n
            t.add(node, VOID + "entities", ox.Literal(entities))
        t.add(root, VOID + "triples", ox.Literal(total))
        return t.triples

    def _class_counts(self) -> dict[str, dict[str, int]]:
        graphs: list[ox.NamedNode | ox.BlankNode] = list(self.store.catalog.benchmarks().values())
        if not graphs:
            return {}
        rows = self.store.oxigraph.query(
            "SELECT ?g ?c (COUNT(?s) AS ?n) WHERE { GRAPH ?g { ?s a ?c } } GROUP BY ?g ?c",
            named_graphs=graphs,
        )
        out: dict[str, dict[str, int]] = {}
        for row in solutions(rows):
            out.setdefault(term_value(row["g"]), {})[term_value(row["c"])] = int(term_value(row["n"]))
        return out


class _Triples:
    def __init__(self) -> None:
        self.triples: list[ox.Triple] = []

    def add(self, s: ox.NamedNode | ox.BlankNode, p: str, o: ox.NamedNode | ox.BlankNode | ox.Literal) -> None:
        self.triples.append(ox.Triple(s, ox.NamedNode(p), o))


def alternates(path: str, formats: Iterable[str] = ("html", *GRAPHS)) -> str:
    """A ``Link`` header value naming each format's URL (the path plus its suffix)."""
    by_format = {f: s for s, f in SUFFIXES.items()}
    return ", ".join(f'<{path}{by_format[f]}>; rel="alternate"; type="{MEDIA_TYPES[f][0]}"' for f in formats)
