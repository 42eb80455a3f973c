"""The endpoint's HTML pages: the benchmark index, a page per dereferenced IRI (benchmark,
question, or a table of any other resource's triples), the named queries and a SPARQL editor
(YASGUI, served from ``static/yasgui/``; nothing is loaded from another host).

Pages are Jinja2 templates (``templates/``, autoescaped) filled from :mod:`._page_data`, whose
store reads run on the endpoint's worker threads.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import unquote, urlencode

import pyoxigraph as ox
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from karenina_rdf._errors import InvalidValueError, NotFoundError
from karenina_rdf.linked import Located
from karenina_rdf.rdf import KAR, PREFIXES, SCHEMA, owning_question, sparql_prefixes, term_value, unsegment
from karenina_rdf.results import RDFS, resolve_run
from karenina_rdf.sparql import MEDIA_TYPES, SUFFIXES, named_queries
from karenina_rdf.store import BenchmarkVersion

from ._benchmarks import (
    PAGE_SIZE,
    BenchmarkHeader,
    QuestionTable,
    QuestionView,
    ScenarioView,
    benchmark_header,
    benchmark_rows,
    graph_sample,
    question_count,
    question_table,
    question_view,
    scenario_views,
)
from ._display import compact, editor_text, heatmap, highlighted, named_query_views, percent, term_view
from ._runs import (
    COMPARE_PAGE,
    OUTCOMES,
    RESULTS_PAGE,
    ResultRow,
    comparison,
    model_runs,
    question_results,
    result_table,
    result_view,
    run_rows,
    run_view,
)

if TYPE_CHECKING:
    from karenina_rdf.web import Endpoint

T = TypeVar("T")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}T")
TEMPLATES = Path(__file__).parent / "templates"
_MEMOS = 256  # run aggregates kept (a few small objects per run)
GRAPH_PAGE_TRIPLES = 1000  # a graph page shows this many triples; the downloads have them all
_FORMAT_LABELS = {"turtle": "Turtle", "ntriples": "N-Triples", "jsonld": "JSON-LD", "rdfxml": "RDF/XML", "html": "HTML"}
# Offered by the editor's prefix completion besides the store's own four.
_COMMON_PREFIXES = {
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "dcterms": "http://purl.org/dc/terms/",
    "sh": "http://www.w3.org/ns/shacl#",
    "void": "http://rdfs.org/ns/void#",
    "sd": "http://www.w3.org/ns/sparql-service-description#",
}
_DEFAULT_QUERY = (
    sparql_prefixes()
    + """
# Questions per benchmark. Edit the query and press the run button (or Ctrl+Enter);
# the named queries beside the editor load into it.
SELECT ?benchmark ?version ?questions WHERE {
  { SELECT ?b (COUNT(?q) AS ?questions) WHERE { ?q schema:isPartOf ?b } GROUP BY ?b }
  ?b schema:name ?benchmark .
  OPTIONAL { ?b schema:version ?version }
}
ORDER BY ?benchmark
"""
)


def _when(value: str | None) -> str:
    """A stored date string, easier to read. Karenina's dates are free text: only an ISO date's
    ``T`` and a UTC offset are touched."""
    if not value:
        return "—"
    if _ISO_DATE.match(value):
        value = value[:10] + " " + value[11:]
    return value.replace("+00:00", " UTC")


def _label(located: Located, triples: list[ox.Triple], owner_name: str) -> str:
    """What a generic resource page calls its resource: its name, else the start of its text,
    else the last segment of its IRI."""
    if located.whole_graph:
        return f"Graph of {owner_name}"
    by_predicate = {t.predicate.value: term_value(t.object) for t in reversed(triples)}
    name, text = by_predicate.get(SCHEMA + "name"), by_predicate.get(SCHEMA + "text")
    if name:
        return name
    if text:
        return text if len(text) <= 80 else text[:79] + "…"
    return unquote(located.iri.rstrip("/").rsplit("/", 1)[-1])


def _count_of(n: Any, noun: str) -> str:
    """``1,234 questions``, ``1 task``; a stored value that is not a count, as it is."""
    if not isinstance(n, int) or isinstance(n, bool):
        return f"{n} {noun}s"
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _duration(seconds: Any) -> str:
    """``3600.5`` → ``1 h 0 min 0.5 s``."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return "—" if seconds is None else str(seconds)
    minutes, secs = divmod(float(seconds), 60)
    hours, minutes = divmod(int(minutes), 60)
    text = f"{secs:.1f}".removesuffix(".0") + " s"
    if hours or minutes:
        text = f"{minutes} min {text}"
    return f"{hours} h {text}" if hours else text


def _json_value(value: Any) -> str | None:
    return None if value is None else json.dumps(value, indent=2, ensure_ascii=False)


def _rubric_traits(definition: Any) -> list[dict[str, Any]]:
    """The traits of a run's ``shared_data.rubric_definition`` ({"llm_traits": [...], ...})."""
    out: list[dict[str, Any]] = []
    if isinstance(definition, dict):
        for group, traits in definition.items():
            for t in traits if isinstance(traits, list) else []:
                if isinstance(t, dict):
                    out.append({"group": group, **t})
    return out


def _page_number(request: Request) -> int:
    try:
        return int(request.query_params.get("page", "1"))
    except ValueError:
        return 1


class Pages:
    """The HTML side of :class:`~karenina_rdf.web._app.Endpoint`."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.site = endpoint.site
        self.env = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["local"] = self.site.path_for
        self.env.filters["compact"] = compact
        self.env.filters["json"] = lambda v: json.dumps(v, ensure_ascii=False)
        self.env.filters["when"] = _when
        self.env.filters["percent"] = percent
        self.env.filters["duration"] = _duration
        self.env.filters["count_of"] = _count_of
        self.env.filters["pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False)
        self.env.globals["outcomes"] = OUTCOMES
        self.env.globals["formats"] = self.formats
        # Set by ``publish``: pages for a static site (no search or filter forms, which need this
        # server; the query page on the endpoint named, if any).
        self._published: dict[str, str | None] | None = None
        self.env.globals["published"] = None
        self._memos: dict[tuple[str, str], tuple[int, float, Any]] = {}
        self._memo_lock = threading.Lock()

    def add_routes(self, app: FastAPI) -> None:
        routes: list[tuple[str, Callable[[Request], Any]]] = [
            ("/", self.index),
            ("/query", self.query_page),
            ("/query/{name}", self.named_query_page),
            ("/runs", self.runs_page),
            ("/compare", self.compare_page),
        ]
        for path, handler in routes:
            app.add_api_route(path, handler, methods=["GET", "HEAD"], include_in_schema=False)

    def publishing(self, sparql_endpoint: str | None) -> None:
        """Render pages for ``publish``'s static site, whose query page (if any) sends queries to
        ``sparql_endpoint``."""
        self.env.globals["published"] = self._published = {"sparql": sparql_endpoint}

    # -- helpers ---------------------------------------------------------------------------
    def _memo(self, name: str, graph: ox.NamedNode, job: Callable[[], T]) -> T:
        """``job()``, remembered per run graph until the next write through this endpoint. A run
        graph is named per generation (an import makes a new one), so only an update in place
        changes what it holds, and every write bumps the endpoint's generation. A SPARQL server
        store may be written by others: there a value lives 5 s, as the dataset does. Blocking."""
        ep = self.endpoint
        key, now = (name, graph.value), time.monotonic()
        stamp = ep._generation  # bumped at the start and the end of every write (Endpoint.write)
        with self._memo_lock:
            hit = self._memos.get(key)
            if hit is not None and hit[0] == stamp and (ep.store.remote is None or now - hit[1] < 5):
                return cast(T, hit[2])
        value = job()
        with self._memo_lock:
            self._memos[key] = (stamp, now, value)
            while len(self._memos) > _MEMOS:
                self._memos.pop(next(iter(self._memos)))
        return value

    async def _run(self, job: Callable[[], T]) -> T:
        return await self.endpoint.in_thread(job)

    def _render(self, page: str, /, status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("alternates", [])
        html = self.env.get_template(page).render(**context)
        return HTMLResponse(html, status_code=status)

    @staticmethod
    def formats(path: str) -> list[dict[str, str]]:
        """The URLs of a resource's formats (its path plus a suffix), HTML first."""
        by_format = {f: s for s, f in SUFFIXES.items()}
        order = ("html", "turtle", "ntriples", "jsonld", "rdfxml")
        return [
            {"type": MEDIA_TYPES[f][0], "href": path + by_format[f], "label": _FORMAT_LABELS[f], "format": f}
            for f in order
        ]

    # -- index -----------------------------------------------------------------------------
    async def index(self, request: Request) -> Response:
        ep = self.endpoint
        rows, runs = await self._run(lambda: (benchmark_rows(ep.store, ep.dataset()), len(ep.store.catalog.runs())))
        void = [{"type": "text/turtle", "href": "/.well-known/void", "label": "VoID (Turtle)", "format": "turtle"}]
        return self._render("index.html", nav="benchmarks", title="Benchmarks", rows=rows, runs=runs, alternates=void)

    # -- resources -------------------------------------------------------------------------
    async def resource_page(self, request: Request, located: Located) -> Response:
        types = await self._run(partial(self.site.types, located))
        if located.kind == "model":
            return await self._model_page(located, types)
        if located.kind == "version":
            return await self._version_page(located)
        if located.kind == "run" and not located.whole_graph:
            if located.is_owner:
                return await self._run_page(request, located)
            if KAR.VerificationResult in types:
                page = await self._result_page(located)
                if page is not None:
                    return page
        if located.kind == "benchmark" and not located.whole_graph:
            if located.is_owner and SCHEMA + "DataFeed" in types:
                return await self._benchmark_page(request, located)
            if SCHEMA + "Question" in types:
                page = await self._question_page(located)
                if page is not None:
                    return page
        return await self._resource_page(located, types)

    async def _benchmark_page(self, request: Request, located: Located) -> Response:
        store, bench, graph = self.endpoint.store, located.owner, located.graph
        needle = request.query_params.get("q", "").strip()
        page = _page_number(request)

        def job() -> tuple[BenchmarkHeader, QuestionTable, list[ScenarioView], list[BenchmarkVersion]]:
            table = question_table(store, bench, graph, page, needle)
            count = question_count(store, bench, graph) if needle else table.total
            header = benchmark_header(store, bench, graph, count)
            return header, table, scenario_views(store, bench, graph), store.versions(bench)

        header, table, scenarios, versions = await self._run(job)
        path = self.site.path_for(bench)

        def page_url(n: int) -> str:
            params = {"page": str(n)} | ({"q": needle} if needle else {})
            return f"{path}?{urlencode(params)}"

        graph_path = self.site.path_for(graph.value)
        downloads = [
            {
                "label": "Karenina checkpoint (JSON-LD)",
                "href": path + "/checkpoint.jsonld",
                "type": "application/ld+json",
            },
            {"label": "Benchmark graph (Turtle)", "href": graph_path + ".ttl", "type": "text/turtle"},
            {"label": "Benchmark graph (N-Triples)", "href": graph_path + ".nt", "type": "application/n-triples"},
        ]
        alternates = [*self.formats(path)[1:], {"type": "application/ld+json", "href": downloads[0]["href"]}]
        if self._published is not None:
            # ``publish`` writes the benchmark's Croissant description beside its page (web/_croissant.py).
            downloads += [
                {"label": "Croissant (ML dataset)", "href": path + "/croissant.json", "type": "application/ld+json"},
                {
                    "label": "Croissant Tasks (evaluations)",
                    "href": path + "/croissant-tasks.jsonld",
                    "type": "application/ld+json",
                },
            ]
        return self._render(
            "benchmark.html",
            nav="benchmarks",
            title=header.info.name,
            header=header,
            table=table,
            scenarios=scenarios,
            path=path,
            graph_path=graph_path,
            page_url=page_url,
            page_size=PAGE_SIZE,
            downloads=downloads,
            alternates=alternates,
            versions=versions,
        )

    async def _version_page(self, located: Located) -> Response:
        """A version of a benchmark (``{B}/v/{n}``): what the catalog says of it, its checkpoint,
        and its changes since the version before it."""
        store, site = self.endpoint.store, self.site

        def job() -> tuple[list[ox.Triple], str, list[BenchmarkVersion]]:
            return site.describe(located), self._owner_name(located), store.versions(located.owner)

        triples, owner_name, versions = await self._run(job)
        at = next(i for i, v in enumerate(versions) if v.iri == located.iri)
        v = versions[at]
        path = site.path_for(v.iri)
        rows = [
            {
                "predicate": term_view(t.predicate, site, located.owner),
                "object": term_view(t.object, site, located.owner),
            }
            for t in triples
        ]
        rows.sort(key=lambda r: (r["predicate"].text != "rdf:type", r["predicate"].text))
        downloads = [
            {
                "label": "Karenina checkpoint (JSON-LD)",
                "href": path + "/checkpoint.jsonld",
                "type": "application/ld+json",
            }
        ]
        if at > 0:
            downloads.append(
                {
                    "label": "Changes since the version before (JSON)",
                    "href": path + "/diff.json",
                    "type": "application/json",
                }
            )
        return self._render(
            "version.html",
            nav="benchmarks",
            title=f"{owner_name}, version {v.number}",
            v=v,
            previous=versions[at - 1] if at > 0 else None,
            next=versions[at + 1] if at + 1 < len(versions) else None,
            rows=rows,
            crumbs=[("Benchmarks", "/"), (owner_name, site.path_for(located.owner))],
            owner_name=owner_name,
            owner_path=site.path_for(located.owner),
            path=path,
            downloads=downloads,
            alternates=self.formats(path)[1:],
        )

    async def _question_page(self, located: Located) -> Response | None:
        ep = self.endpoint

        def job() -> tuple[QuestionView | None, list[ResultRow], bool]:
            view = question_view(ep.store, located.owner, located.graph, located.iri, ep.dataset())
            if view is None:
                return None, [], False
            return view, *question_results(ep.store, located.iri)

        view, results, more = await self._run(job)
        if view is None:
            return None
        q = view.question
        template = q.template
        code = highlighted(template.code, "python") if template else None
        path = self.site.path_for(located.iri)
        return self._render(
            "question.html",
            nav="benchmarks",
            title=q.question,
            view=view,
            q=q,
            template=template,
            code=code,
            path=path,
            bench_path=self.site.path_for(located.owner),
            results=results,
            more_results=more,
            alternates=self.formats(path)[1:],
        )

    async def _resource_page(self, located: Located, types: set[str]) -> Response:
        store, site, owner = self.endpoint.store, self.site, located.owner

        def text_of(iri: str) -> str | None:
            found = store.oxigraph.quads_for_pattern(
                ox.NamedNode(iri), ox.NamedNode(SCHEMA + "text"), None, located.graph
            )
            return next((term_value(q.object) for q in found), None)

        def job() -> tuple[list[ox.Triple], str, tuple[str, str] | None]:
            if located.whole_graph:
                triples = list(graph_sample(store, located.graph, GRAPH_PAGE_TRIPLES + 1))
            else:
                triples = site.describe(located)
                if located.kind == "run":
                    # The description of a run's node holds its parts too; the page lists its own.
                    triples = [t for t in triples if t.subject == ox.NamedNode(located.iri)]
            item_of = None
            if SCHEMA + "DataFeedItem" in types:
                question = next((term_value(t.object) for t in triples if t.predicate.value == SCHEMA + "item"), None)
                if question is not None:
                    item_of = (site.path_for(question), text_of(question) or question)
            return triples, self._owner_name(located), item_of

        triples, owner_name, item_of = await self._run(job)
        more = len(triples) > GRAPH_PAGE_TRIPLES
        triples = triples[:GRAPH_PAGE_TRIPLES]
        rows = [
            {
                "subject": term_view(t.subject, site, owner),
                "predicate": term_view(t.predicate, site, owner),
                "object": term_view(t.object, site, owner),
            }
            for t in triples
        ]
        if not located.whole_graph:
            rows.sort(key=lambda r: (r["predicate"].text != "rdf:type", r["predicate"].text))
        code = None
        if SCHEMA + "SoftwareSourceCode" in types:
            text = next((term_value(t.object) for t in triples if t.predicate.value == SCHEMA + "text"), None)
            code = highlighted(text, "python") if text is not None else None
        path = site.path_for(located.iri)
        label = _label(located, triples, owner_name)
        return self._render(
            "resource.html",
            nav="runs" if located.kind == "run" else "benchmarks",
            title=label,
            label=label,
            located=located,
            types=sorted(compact(t) for t in types),
            rows=rows,
            more=more,
            code=code,
            item_of=item_of,
            crumbs=self._crumbs(located, owner_name),
            owner_name=owner_name,
            owner_path=site.path_for(owner),
            path=path,
            alternates=self.formats(path)[1:],
        )

    def _owner_name(self, located: Located) -> str:
        """What the pages call the benchmark or run a resource belongs to. Blocking."""
        if located.kind == "run":
            return "Run " + unsegment(located.owner.rsplit("/", 1)[-1])
        names = self.endpoint.store.oxigraph.quads_for_pattern(
            ox.NamedNode(located.owner), ox.NamedNode(SCHEMA + "name"), None, located.graph
        )
        return next((term_value(q.object) for q in names), located.owner)

    def _crumbs(self, located: Located, owner_name: str) -> list[tuple[str, str]]:
        """(label, link) of the pages above a resource's page."""
        site = self.site
        if located.kind == "run":
            crumbs = [("Runs", "/runs"), (owner_name, site.path_for(located.owner))]
            results = located.owner + "/results/"
            if located.iri.startswith(results):
                key = located.iri[len(results) :].split("/", 1)[0]
                if results + key != located.iri:
                    crumbs.append((f"Result {key}", site.path_for(results + key)))
            return crumbs
        crumbs = [("Benchmarks", "/"), (owner_name, site.path_for(located.owner))]
        owner = owning_question(located.owner, located.iri)
        if owner and owner[1] != located.iri:
            short = owner[0] if len(owner[0]) <= 48 else owner[0][:47] + "…"
            crumbs.append((f"Question {short}", site.path_for(owner[1])))
        return crumbs

    # -- verification runs -------------------------------------------------------------------
    async def runs_page(self, request: Request) -> Response:
        store = self.endpoint.store
        rows = await self._run(lambda: run_rows(store, self._memo))
        return self._render("runs.html", nav="runs", title="Verification runs", rows=rows)

    async def _run_page(self, request: Request, located: Located) -> Response:
        store, run, graph = self.endpoint.store, located.owner, located.graph
        page = _page_number(request)
        selected = {k: request.query_params.get(k, "") for k in ("model", "judge", "outcome")}
        if selected["outcome"] not in ("", *OUTCOMES):
            selected["outcome"] = ""
        view, table = await self._run(
            lambda: (run_view(store, run, graph, self._memo), result_table(store, graph, page, selected, self._memo))
        )
        path = self.site.path_for(run)

        def page_url(n: int) -> str:
            params = {"page": str(n)} | {k: v for k, v in selected.items() if v}
            return f"{path}?{urlencode(params)}"

        graph_path = self.site.path_for(view.graph)
        downloads = [
            {"label": "Karenina results export (JSON)", "href": path + "/results.json", "type": "application/json"},
            {"label": "Karenina results (CSV)", "href": path + "/results.csv", "type": "text/csv"},
            {"label": "Run graph (Turtle)", "href": graph_path + ".ttl", "type": "text/turtle"},
            {"label": "Run graph (N-Triples)", "href": graph_path + ".nt", "type": "application/n-triples"},
        ]
        return self._render(
            "run.html",
            nav="runs",
            title=f"Run {view.row.run_id}",
            view=view,
            row=view.row,
            groups=view.groups,
            table=table,
            selected=selected,
            page_url=page_url,
            page_size=RESULTS_PAGE,
            path=path,
            graph_path=graph_path,
            downloads=downloads,
            config=_json_value(view.facts.get("verificationConfig")),
            rubric=_rubric_traits(view.facts.get("rubricDefinition")),
            alternates=[*self.formats(path)[1:], *downloads[:2]],
        )

    async def compare_page(self, request: Request) -> Response:
        """Questions × answering models of one run or several (``?run=ID&run=ID``), as a heatmap."""
        store = self.endpoint.store
        wanted = request.query_params.getlist("run")
        sort = request.query_params.get("sort", "question")
        sort = sort if sort in ("question", "pass-rate") else "question"
        page = _page_number(request)

        def job() -> tuple[Any, list[Any]]:
            every = run_rows(store, self._memo)
            chosen = [resolve_run(store, ref) for ref in dict.fromkeys(wanted)]
            if not chosen and every:
                chosen = [resolve_run(store, every[0].iri)]  # the latest run
            return comparison(store, chosen, page, sort, self._memo), every

        result, every = await self._run(job)
        chosen_ids = [r.run_id for r in result.runs]

        def page_url(n: int) -> str:
            return "/compare?" + urlencode([("run", r) for r in chosen_ids] + [("sort", sort), ("page", str(n))])

        return self._render(
            "compare.html",
            nav="runs",
            title="Answering models compared",
            comparison=result,
            map=heatmap(result, self.site),
            page_size=COMPARE_PAGE,
            every=every,
            chosen=set(chosen_ids),
            page_url=page_url,
        )

    async def _result_page(self, located: Located) -> Response | None:
        store = self.endpoint.store
        view = await self._run(lambda: result_view(store, located.owner, located.graph, located.iri))
        if view is None:
            return None
        path = self.site.path_for(located.iri)
        title = view.row.text or view.row.question_id or "Result"
        return self._render(
            "result.html",
            nav="runs",
            title=title,
            heading=title,
            view=view,
            row=view.row,
            path=path,
            run_path=self.site.path_for(located.owner),
            alternates=self.formats(path)[1:],
        )

    async def _model_page(self, located: Located, types: set[str]) -> Response:
        store = self.endpoint.store

        def job() -> tuple[dict[str, str], list[Any]]:
            own = {t.predicate.value: term_value(t.object) for t in self.site.describe(located)}
            return own, model_runs(store, located.iri, self._memo)

        own, runs = await self._run(job)
        label = own.get(RDFS + "label") or located.iri.rsplit("/", 1)[-1]
        facts = {compact(p): v for p, v in sorted(own.items()) if p != RDFS + "label" and not p.endswith("#type")}
        path = self.site.path_for(located.iri)
        return self._render(
            "model.html",
            nav="runs",
            title=label,
            label=label,
            located=located,
            types=sorted(compact(t) for t in types),
            facts=facts,
            runs=runs,
            path=path,
            alternates=self.formats(path)[1:],
        )

    # -- SPARQL ----------------------------------------------------------------------------
    async def query_page(self, request: Request) -> Response:
        return self._query_page()

    async def named_query_page(self, request: Request) -> Response:
        """The editor with a named query in it, its parameters bound from the URL."""
        name = request.path_params["name"]
        named = named_queries().get(name)
        if named is None:
            raise NotFoundError(f"no named query {name!r}; the named queries are listed at /queries")
        values = {k: v for k, v in request.query_params.items() if k != "format" and v != ""}
        try:
            text = editor_text(named, values)
            error = None
        except InvalidValueError as exc:
            text, error = editor_text(named), str(exc)
        return self._query_page(initial={"text": text, "title": named.title}, error=error)

    def _query_page(self, initial: Mapping[str, str] | None = None, error: str | None = None) -> HTMLResponse:
        queries = named_query_views()
        published = self._published
        endpoint = (published["sparql"] or "/sparql") if published else "/sparql"
        config = {
            "endpoint": endpoint,
            "prefixes": dict(PREFIXES),
            "completionPrefixes": {**_COMMON_PREFIXES, **PREFIXES},
            "defaultQuery": _DEFAULT_QUERY,
            "initial": initial,
            "queries": {q["name"]: {"title": q["title"], "text": q["text"]} for q in queries},
        }
        service = [{"type": "text/turtle", "href": "/sparql?format=turtle", "label": "Service description"}]
        if published:
            service = []
        return self._render(
            "query.html",
            status=400 if error else 200,
            nav="sparql",
            title="SPARQL",
            config=config,
            queries=queries,
            endpoint=endpoint,
            error=error,
            alternates=service,
        )

    async def queries_page(self, request: Request) -> Response:
        queries = named_query_views()
        for q in queries:
            q["html"] = highlighted(q["sparql"], "sparql")
        return self._render("queries.html", nav="queries", title="Named queries", queries=queries)
