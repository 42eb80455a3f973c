"""Verification runs in the store: import (upsert by row identity, atomic per run), list, export.

A run lives in its own named graph ``{run}/graph/{generation}``, published through the catalog
(``{run} karenina:runGraph {graph}``) exactly as a benchmark is: an import maps the rows into a
fresh graph, then points the catalog at it in one update, so readers see the old run or the new
one. Re-importing rows of a run replaces the rows with the same identity and keeps the others:
the new generation is the new rows plus the old generation minus the rows they replace.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import pyoxigraph as ox
from pydantic import BaseModel, ConfigDict

from karenina_rdf._errors import CheckpointError, InvalidValueError, NotFoundError, Problem, StoreError
from karenina_rdf._progress import QUIET, Progress, Task, counted
from karenina_rdf.rdf import (
    KAR,
    MODELS_GRAPH,
    SCHEMA,
    VOCABULARY_GRAPH,
    node_index,
    segment,
    solutions,
    term_value,
)
from karenina_rdf.rdf import terms as t
from karenina_rdf.store import IMPORTED_AT, RUN_GRAPH, SOURCE, Sink

from ._export import ResultRebuilder, scored_names, write_csv, write_export
from ._map import A, Context, Facts, QuestionLink, ResultMapper
from ._model import (
    EARL,
    FAILURE_GROUPS,
    GROUP_LABELS,
    JOB_SUMMARY,
    PROV,
    RDFS,
    READABLE_VERSIONS,
    SKOS,
    Field,
    _fields,
)
from ._read import ExportReader
from ._summaries import write_summaries

if TYPE_CHECKING:
    from karenina_rdf.store import GraphStore

RUN_METADATA = _fields(
    "export_timestamp", "karenina_version", "job_id", "verification_config", ("job_summary", None, "summary")
)
SHARED_DATA = _fields("rubric_definition")
TOP_LEVEL = _fields(
    ("format_version", None, "skip"),
    ("metadata", None, "skip"),
    ("shared_data", None, "skip"),
    ("results", None, "skip"),
    "scenario_results",
)
_MAX_LISTED = 20
# The check an importer runs on a loaded, unpublished run (run IRI, its generation graph): the
# problems that refuse it and the warnings it is imported with (see karenina_rdf._importing).
RunCheck = Callable[[str, ox.NamedNode], tuple[list[Problem], list[Problem]]]


class ResultsImport(BaseModel):
    """What importing one results file did."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    iri: str
    run_name: str | None = None
    status: Literal["imported", "updated"]
    source: str | None
    format_version: str | None
    rows: int
    added: int
    replaced: int
    duplicates: int
    unmatched: int
    unmatched_ids: tuple[str, ...]
    template_mismatches: int
    migrated: int = 0
    warnings: tuple[str, ...] = ()
    benchmarks: tuple[str, ...]
    triples: int


class RunSummary(BaseModel):
    """One stored run, as ``karenina-rdf results runs`` lists it."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    iri: str
    name: str | None
    started: str | None
    ended: str | None
    results: int
    verified: int
    passed: int
    pass_rate: float | None
    failures: int
    answering_models: tuple[str, ...]
    parsing_models: tuple[str, ...]
    modes: tuple[str, ...]
    benchmarks: tuple[str, ...]
    source: str | None
    imported_at: str | None


def run_iri(base_iri: str, run_id: str) -> str:
    return f"{base_iri}runs/{segment(run_id)}"


def taxonomy_triples() -> Iterator[str]:
    """Karenina's failure taxonomy as a SKOS concept scheme (spec verification.md §8)."""
    scheme = KAR.failure.nt
    concept = t.iri(SKOS + "Concept")
    yield f"{scheme} {A} {t.iri(SKOS + 'ConceptScheme')} ."
    yield f"{scheme} {t.iri(SKOS + 'prefLabel')} {t.string('Karenina failure taxonomy')} ."
    for group, label in GROUP_LABELS.items():
        g = t.iri(KAR.failure_group(group))
        yield f"{g} {A} {concept} ."
        yield f"{g} {t.iri(SKOS + 'inScheme')} {scheme} ."
        yield f"{g} {t.iri(SKOS + 'topConceptOf')} {scheme} ."
        yield f"{g} {t.iri(SKOS + 'prefLabel')} {t.string(group)} ."
        yield f"{g} {t.iri(SKOS + 'definition')} {t.string(label)} ."
    for category, group in FAILURE_GROUPS.items():
        c = t.iri(KAR.failure_category(category))
        yield f"{c} {A} {concept} ."
        yield f"{c} {t.iri(SKOS + 'inScheme')} {scheme} ."
        yield f"{c} {t.iri(SKOS + 'broader')} {t.iri(KAR.failure_group(group))} ."
        yield f"{c} {t.iri(SKOS + 'prefLabel')} {t.string(category)} ."
        yield f"{c} {t.iri(SKOS + 'notation')} {t.string(category)} ."


_IDENTIFIER = ox.NamedNode(SCHEMA + "identifier")
_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
_QUESTION = ox.NamedNode(SCHEMA + "Question")
_HAS_PART = ox.NamedNode(SCHEMA + "hasPart")
_IS_PART_OF = ox.NamedNode(SCHEMA + "isPartOf")
_TEMPLATE_ID = KAR.templateId.node


class _Links:
    """Finds the stored question (and template, and traits) a result's ``question_id`` names."""

    def __init__(self, store: GraphStore, benchmark: str | None, source: str) -> None:
        self.store, self.source = store, source
        live = store.catalog.benchmarks()
        if benchmark is not None:
            bench = store.resolve(benchmark)
            live = {bench: live[bench]}
        self.graphs = live
        # Filled question id by question id, from the store's indexes (a few seeks each): reading
        # every stored question up front cost minutes and a Python object per question on a store
        # of a million (docs/performance.md § One million questions), for a run naming a few.
        self.by_id: dict[str, list[QuestionLink]] = {}
        self.used: set[str] = set()
        self.unmatched: list[str] = []
        self._traits: dict[str, dict[str, tuple[str, bool | None]]] = {}
        self.shared: dict[str, bool | None] = {}
        self.position = ""

    def _find(self, qid: str) -> list[QuestionLink]:
        """The stored questions with this id in the live graphs: as the join ``?q a
        schema:Question ; schema:identifier ?id ; schema:isPartOf ?b . OPTIONAL { ?q
        schema:hasPart ?tpl . ?tpl karenina:templateId ?tid }`` would give them (a row per
        template part with an id, or one without)."""
        found = self.by_id.get(qid)
        if found is not None:
            return found
        ox_store, found = self.store.oxigraph, []
        for graph in self.graphs.values():
            for hit in ox_store.quads_for_pattern(None, _IDENTIFIER, ox.Literal(qid), graph):
                q = hit.subject
                if not isinstance(q, ox.NamedNode) or not any(ox_store.quads_for_pattern(q, _TYPE, _QUESTION, graph)):
                    continue
                parts: list[tuple[Any, Any]] = [
                    (part.object, tid.object)
                    for part in ox_store.quads_for_pattern(q, _HAS_PART, None, graph)
                    if isinstance(part.object, (ox.NamedNode, ox.BlankNode))
                    for tid in ox_store.quads_for_pattern(part.object, _TEMPLATE_ID, None, graph)
                ]
                for owner in ox_store.quads_for_pattern(q, _IS_PART_OF, None, graph):
                    for tpl, tid in parts or [(None, None)]:
                        found.append(
                            QuestionLink(
                                benchmark=term_value(owner.object),
                                question=q.value,
                                template=term_value(tpl) if tpl is not None else None,
                                template_id=term_value(tid) if tid is not None else None,
                            )
                        )
        self.by_id[qid] = found
        return found

    def lookup(self, qid: str) -> QuestionLink | None:
        links = self._find(qid)
        if not links:
            if len(self.unmatched) < _MAX_LISTED and qid not in self.unmatched:
                self.unmatched.append(qid)
            return None
        if len({link.benchmark for link in links}) > 1:
            names = ", ".join(sorted(self.store.summary(link.benchmark).benchmark_id for link in links))
            raise CheckpointError(
                [
                    Problem(
                        f"question id {qid!r} is in {len(links)} stored benchmarks ({names}); "
                        "say which with --benchmark",
                        self.source,
                        self.position + "/metadata/question_id",
                        qid,
                    )
                ]
            )
        self.used.add(links[0].benchmark)
        return links[0]

    def _owner_traits(self, owner: str, graph: ox.NamedNode) -> dict[str, tuple[str, bool | None]]:
        if owner not in self._traits:
            found: dict[str, tuple[str, bool | None]] = {}
            ox_store = self.store.oxigraph
            for q in ox_store.quads_for_pattern(
                ox.NamedNode(owner), ox.NamedNode(SCHEMA + "contentRating"), None, graph
            ):
                trait = q.object
                if not isinstance(trait, ox.NamedNode):
                    continue
                name: str | None = None
                hib: bool | None = None
                for tq in ox_store.quads_for_pattern(trait, None, None, graph):
                    if tq.predicate.value == SCHEMA + "name":
                        name = term_value(tq.object)
                    elif tq.predicate.value == KAR.higherIsBetter:
                        hib = term_value(tq.object) == "true"
                if name is not None and name not in found:
                    found[name] = (trait.value, hib)
            self._traits[owner] = found
        return self._traits[owner]

    def traits(self, link: QuestionLink | None, name: str, provenance: str | None) -> tuple[str | None, bool | None]:
        """The trait a score is for (question traits first unless it says ``global``), and if it
        is not stored, whether higher is better according to the run's rubric definition."""
        names = [name] if "." not in name else [name, name.split(".", 1)[0]]
        if link is not None:
            graph = self.graphs[link.benchmark]
            owners = [link.question, link.benchmark]
            if provenance == "global":
                owners.reverse()
            for owner in owners:
                found = self._owner_traits(owner, graph)
                for n in names:
                    if n in found:
                        return found[n][0], None
        for n in names:
            if n in self.shared:
                return None, self.shared[n]
        return None, None


def _shared_directions(header: dict[str, Any]) -> dict[str, bool | None]:
    rubric = (header.get("shared_data") or {}).get("rubric_definition")
    out: dict[str, bool | None] = {}
    if isinstance(rubric, dict):
        for key, traits in rubric.items():
            if not isinstance(traits, list):
                continue
            for trait in traits:
                if isinstance(trait, dict) and isinstance(trait.get("name"), str):
                    hib = trait.get("higher_is_better", None if key.startswith("metric") else True)
                    out[trait["name"]] = hib if isinstance(hib, bool) else None
    return out


def _epoch(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return dt.datetime.fromtimestamp(value, dt.UTC).isoformat().replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _header_lines(mapper: ResultMapper, run: str, run_id: str, header: dict[str, Any], links: _Links) -> None:
    r = f"<{run}>"
    add = mapper._add
    add(r, A, KAR.VerificationRun.nt)
    add(r, A, t.iri(PROV + "Activity"))
    add(r, t.iri(SCHEMA + "identifier"), t.string(run_id))
    if "format_version" in header:
        add(
            r,
            KAR.formatVersion.nt,
            t.json_literal(None) if header["format_version"] is None else t.value(header["format_version"]),
        )

    def special(node: str, f: Field, v: Any) -> None:
        if f.store == "summary":
            if isinstance(v, dict):
                mapper._part(node, "job_summary", v, JOB_SUMMARY, special)
                started, ended = _epoch(v.get("start_time")), _epoch(v.get("end_time"))
                dt_type = "http://www.w3.org/2001/XMLSchema#dateTime"
                if started:
                    add(node, t.iri(PROV + "startedAtTime"), t.typed(started, dt_type))
                if ended:
                    add(node, t.iri(PROV + "endedAtTime"), t.typed(ended, dt_type))
            elif v is not None:
                add(node, KAR.jobSummaryVerbatim.nt, t.json_literal(v))
            else:
                add(node, KAR.jobSummaryNull.nt, t.boolean(True))

    meta = header.get("metadata")
    if isinstance(meta, dict):
        mapper._part(r, "run_metadata", meta, RUN_METADATA, special)
    elif "metadata" in header:
        add(r, KAR.runMetadataVerbatim.nt, t.json_literal(meta))
    shared = header.get("shared_data")
    if isinstance(shared, dict):
        mapper._part(r, "shared_data", shared, SHARED_DATA, special)
    elif "shared_data" in header:
        add(r, KAR.sharedDataVerbatim.nt, t.json_literal(shared))
    mapper._part(r, "export", header, TOP_LEVEL, lambda *_: None)


def _runs_prefix(store: GraphStore) -> str:
    return store.base_iri + "runs/"


def resolve_run(store: GraphStore, ref: str) -> tuple[str, ox.NamedNode]:
    """A stored run by IRI, id or name (Karenina finds runs by their name: a database's runs
    are named by the user, their ids are UUIDs)."""
    runs = store.catalog.runs()
    for candidate in (ref, run_iri(store.base_iri, ref)):
        if candidate in runs:
            return candidate, runs[candidate]
    named = [
        run
        for run, graph in runs.items()
        if any(
            isinstance(q.object, ox.Literal) and q.object.value == ref
            for q in store.oxigraph.quads_for_pattern(ox.NamedNode(run), ox.NamedNode(SCHEMA + "name"), None, graph)
        )
    ]
    if len(named) == 1:
        return named[0], runs[named[0]]
    prefix = len(_runs_prefix(store))
    if named:
        ids = ", ".join(sorted(repr(r[prefix:]) for r in named))
        raise NotFoundError(f"{len(named)} verification runs are named {ref!r}: give one of their ids ({ids})")
    known = ", ".join(sorted(repr(r[prefix:]) for r in runs)) or "none"
    raise NotFoundError(f"no verification run {ref!r} (stored: {known})")


def file_sha256(path: Path, label: str) -> str:
    """The SHA-256 of a results file (it names the import record), read in blocks."""
    sha = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                sha.update(block)
    except OSError as exc:
        raise CheckpointError([Problem(f"cannot read the file: {exc.strerror or exc}", label)]) from None
    return sha.hexdigest()


def _default_run_id(header: dict[str, Any], file_hash: str | None) -> str:
    meta = header.get("metadata")
    job = meta.get("job_id") if isinstance(meta, dict) else None
    if isinstance(job, str) and job.strip():
        return job
    return "import-" + (file_hash or uuid.uuid4().hex)[:16]


def _check_version(header: dict[str, Any], source: str) -> str | None:
    version = header.get("format_version")
    if version is None:
        if "format_version" in header or "metadata" not in header:
            raise CheckpointError(
                [Problem("not a Karenina results export: no format_version", source, "/format_version")]
            )
        return None
    if version not in READABLE_VERSIONS:
        raise CheckpointError(
            [
                Problem(
                    f"format_version {version!r} is not one Karenina reads ({', '.join(READABLE_VERSIONS)})",
                    source,
                    "/format_version",
                )
            ]
        )
    return str(version)


def import_results(
    store: GraphStore,
    source: str | Path,
    *,
    benchmark: str | None = None,
    run_id: str | None = None,
    label: str | None = None,
    check: RunCheck | None = None,
    progress: Progress | None = None,
) -> ResultsImport:
    """Import a Karenina results export (format 2.0-2.2) into the run it belongs to.

    Atomic per run; rows are read one at a time. Rows whose identity is already stored in the
    run replace those rows; rows whose question is not stored are kept (and counted); a question
    id held by several stored benchmarks needs ``benchmark``. ``check`` runs on the loaded,
    unpublished run: its violations refuse the run, its warnings are reported. ``progress`` is
    told of the file's bytes read (the one total known before the rows are), the results mapped
    and the triples loaded.
    """
    path = Path(source)
    label = label or str(source)
    file_hash = file_sha256(path, label)
    reader = ExportReader(path, label)
    # The one total known before the rows are read: the file's size.
    reading = progress.start("reading", path.stat().st_size, "bytes") if progress is not None else None
    try:
        rows = reader.rows()
        first = next(rows, None)
        header = reader.header
        if "metadata" not in header and first is not None:
            # Not Karenina's layout (header after the rows): read the header in a first pass.
            pre = ExportReader(path, label)
            try:
                header = {k: v for k, v in pre.read_header().items()}
            finally:
                pre.close()
        version = _check_version(header, label)
        rid = run_id or _default_run_id(header, file_hash)
        stream = _chain([first] if first is not None else [], rows)
        if reading is not None:
            stream = _reading(stream, reader, reading)

        def complete_header() -> dict[str, Any]:
            # Members after the rows (scenario_results) are known once the rows are read.
            return {**reader.header, **header} if "metadata" in header else reader.header

        return _Import(store, rid, label, file_hash, benchmark, check=check, progress=progress).execute(
            header, stream, complete_header, version
        )
    finally:
        reader.close()


class _Import:
    def __init__(
        self,
        store: GraphStore,
        rid: str,
        label: str,
        file_hash: str,
        benchmark: str | None,
        name: str | None = None,
        check: RunCheck | None = None,
        progress: Progress | None = None,
        rows_total: int | None = None,
    ) -> None:
        self.store, self.rid, self.label, self.file_hash, self.name = store, rid, label, file_hash, name
        self.check = check
        # Told of the results mapped (``rows_total`` of them, if known) and the triples loaded.
        self.progress, self.rows_total = progress or QUIET, rows_total
        self.warnings: tuple[str, ...] = ()
        self.iri = run_iri(store.base_iri, rid)
        self.links = _Links(store, benchmark, label)
        self.old_graph = store.catalog.runs().get(self.iri)

    def _old_rows(self) -> tuple[dict[str, int], int]:
        """The stored rows' places, and the first free one after them."""
        if self.old_graph is None:
            return {}, 0
        q = f"""SELECT ?r ?p WHERE {{ ?r a {KAR.VerificationResult.nt} ; {KAR.position.nt} ?p }}"""
        places = {
            term_value(row["r"]): int(term_value(row["p"]))
            for row in solutions(self.store.oxigraph.query(q, default_graph=self.old_graph))
        }
        return places, max(places.values(), default=-1) + 1

    def execute(
        self,
        header: dict[str, Any],
        rows: Iterator[tuple[str, int, Any]],
        complete_header: Callable[[], dict[str, Any]],
        version: str | None,
    ) -> ResultsImport:
        """Map ``rows`` ((array key, index, row) triples; the key and index make the JSON
        pointer of errors) into a new generation of the run and publish it. ``header`` is the
        export's other members as known before the rows, ``complete_header()`` after them."""
        store = self.store
        old_keys, offset = self._old_rows()
        self.links.shared = _shared_directions(header)
        ctx = Context(store.base_iri, self.iri, self.links.lookup, self.links.traits, positions=old_keys)
        mapper = ResultMapper(ctx)
        seen: dict[str, int] = {}
        facts: dict[str, Facts] = {}
        last_of: dict[str, Any] = {}
        count = triples = 0
        mapping = self.progress.start("mapping", self.rows_total, "results")
        loading = self.progress.start("loading", None, "triples")
        # Result imports reach millions of triples: one bulk load (see store._loading).
        with store.generation(self.iri, one_bulk_load=True) as gen:
            graph, sink = gen.graph, gen.sink
            sink.on_load = loading.advance
            for key, index, row in rows:
                pointer = f"/{key}/{index}"
                self.links.position = pointer
                try:
                    r = mapper.map(row, offset + index)
                except CheckpointError:
                    raise
                except ValueError as exc:
                    raise CheckpointError([Problem(str(exc), self.label, pointer)]) from None
                count += 1
                facts[r] = mapper.facts  # a repeated identity: the last row counts
                if r in seen:
                    last_of[r] = row  # mapped again at the first row's place, below
                else:
                    seen[r] = index
                triples += len(mapper.lines)
                try:
                    sink.write("".join(mapper.lines))
                except UnicodeEncodeError:
                    raise CheckpointError(
                        [Problem("a string holds an unpaired UTF-16 surrogate: not text", self.label, pointer)]
                    ) from None
                except (OSError, SyntaxError, ValueError) as exc:
                    raise StoreError(f"loading results of {self.label} failed, store unchanged: {exc}") from None
                mapper.lines.clear()
                mapping.advance()
            mapping.done()
            _header_lines(mapper, self.iri, self.rid, complete_header(), self.links)
            if self.name is not None:  # a database run's run_name; exports name no run
                mapper._add(f"<{self.iri}>", t.iri(SCHEMA + "name"), t.string(self.name))
            self._import_record(mapper, version, count)
            replaced = old_keys.keys() & seen.keys()
            if self.old_graph is not None:
                triples += self._copy_old(sink, mapper, replaced, facts)
            # Benchmarks of every row the new generation holds, kept rows included.
            for bench in sorted({f[2] for f in facts.values() if f[2] is not None}):
                mapper._add(f"<{self.iri}>", t.iri(PROV + "used"), f"<{bench}>")
            _tally_lines(mapper._add, self.iri, facts.values())
            del facts
            triples += len(mapper.lines)
            sink.write("".join(mapper.lines))
            mapper.lines.clear()
            loading.set_total(sink.lines)
            try:
                sink.finish()
            except (OSError, SyntaxError, ValueError) as exc:
                raise StoreError(f"loading results of {self.label} failed, store unchanged: {exc}") from None
            loading.done()
            self._fix_duplicates(graph, mapper, {r: (seen[r], row) for r, row in last_of.items()}, offset)
            # From the generation as loaded (duplicates fixed), before it is published: the
            # summaries appear with the rows they summarise (results._summaries).
            write_summaries(store.oxigraph, self.iri, graph)
            if self.check is not None:
                self._validate(graph, "".join(mapper.model_lines))
            self._publish(graph, triples, "".join(mapper.model_lines))
        if self.old_graph is not None:
            store.retire(self.old_graph)
        return ResultsImport(
            run_id=self.rid,
            iri=self.iri,
            run_name=self.name,
            status="updated" if self.old_graph is not None else "imported",
            source=self.label,
            format_version=version,
            rows=count,
            added=len(seen.keys() - old_keys.keys()),
            replaced=len(replaced),
            duplicates=count - len(seen),
            unmatched=mapper.unmatched,
            unmatched_ids=tuple(self.links.unmatched),
            template_mismatches=mapper.template_mismatch,
            migrated=mapper.migrated,
            warnings=self.warnings,
            benchmarks=tuple(sorted(self.links.used)),
            triples=triples,
        )

    def _validate(self, graph: ox.NamedNode, models: str) -> None:
        """The check on the loaded, unpublished generation: a Violation refuses the run (nothing
        published), warnings are reported. The shared vocabulary and models graphs are written
        first; both are idempotent and name no run."""
        assert self.check is not None
        self.store.oxigraph.update(_shared_graphs(models))
        violations, warnings = self.check(self.iri, graph)
        if violations:
            raise CheckpointError([replace(p, file=self.label) for p in violations])
        self.warnings = tuple(str(replace(p, file=self.label)) for p in warnings)

    def _import_record(self, mapper: ResultMapper, version: str | None, count: int) -> None:
        node = f"<{self.iri}/imports/{self.file_hash[:16]}>"
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        add = mapper._add
        add(f"<{self.iri}>", KAR.term("import").nt, node)
        add(node, A, KAR.ResultsImport.nt)
        add(node, t.iri(SCHEMA + "name"), t.string(self.label))
        add(node, KAR.sourceSha256.nt, t.string(self.file_hash))
        add(node, KAR.importedAt.nt, t.string(now))
        add(node, KAR.resultCount.nt, t.integer(count))
        if version is not None:
            add(node, KAR.formatVersion.nt, t.string(version))

    def _copy_old(self, chunks: Sink, mapper: ResultMapper, replaced: set[str], facts: dict[str, Facts]) -> int:
        """The old generation's triples minus the run header, its tallies and summaries (both under
        ``{run}/tallies/``: computed again over the new generation) and the replaced rows; the
        facts of the rows kept go into ``facts`` for the new tallies."""
        assert self.old_graph is not None
        run = self.iri
        results = run + "/results/"
        imports = run + "/imports/"
        tallies = run + "/tallies/"
        this_import = f"{imports}{self.file_hash[:16]}"
        kept: dict[str, dict[str, Any]] = {}
        n = 0
        lines: list[str] = []
        for s, p, o, _ in self.store.oxigraph.quads_for_pattern(None, None, None, self.old_graph):
            sv = s.value
            if sv == run:
                if p.value == KAR.term("import") and o.value != this_import:
                    lines.append(f"{s} {p} {o} .\n")
                continue
            if sv.startswith(results):
                tail = sv[len(results) :]
                key = results + tail.split("/", 1)[0]
                if key in replaced:
                    continue
                if "/" not in tail and p.value in _FACT_PREDICATES:
                    kept.setdefault(sv, {})[p.value] = o
            elif sv.startswith(this_import) or sv.startswith(tallies):
                continue
            lines.append(f"{s} {p} {o} .\n")
            if len(lines) >= 4096:
                chunks.write("".join(lines))
                n += len(lines)
                lines.clear()
        chunks.write("".join(lines))
        for r, preds in kept.items():
            facts[r] = _old_facts(preds)
        return n + len(lines)

    def _fix_duplicates(self, graph: ox.NamedNode, mapper: ResultMapper, last_of: dict[str, Any], offset: int) -> None:
        """A row identity repeated in one file: the last row wins, as in Karenina's upsert."""
        ox_store = self.store.oxigraph
        for r, (index, row) in last_of.items():
            index_nodes = node_index(ox_store, graph, [r])
            quads = [
                ox.Quad(q.subject, q.predicate, q.object, graph)
                for s in index_nodes
                for q in ox_store.quads_for_pattern(ox.NamedNode(s), None, None, graph)
            ]
            mapper.lines.clear()
            counts = (mapper.unmatched, mapper.migrated, mapper.template_mismatch)
            mapper.map(row, offset + index)
            mapper.unmatched, mapper.migrated, mapper.template_mismatch = counts  # counted once already
            body = "".join(mapper.lines)
            mapper.lines.clear()
            deletions = "\n".join(f"{q.subject} {q.predicate} {q.object} ." for q in quads)
            ox_store.update(
                f"DELETE DATA {{ GRAPH {graph} {{ {deletions} }} }} ;\nINSERT DATA {{ GRAPH {graph} {{ {body} }} }}"
            )

    def _publish(self, graph: ox.NamedNode, triples: int, models: str) -> None:
        # The shared graphs again even after _validate wrote them: publishing is one update that
        # must leave them complete whether or not the run was validated (the inserts are idempotent).
        self.store.catalog.publish(
            self.iri, RUN_GRAPH, graph, source=self.label, triples=triples, before=_shared_graphs(models)
        )


def _shared_graphs(models: str) -> str:
    """The update writing what runs share: the failure taxonomy and the run's model nodes."""
    taxonomy = "\n".join(taxonomy_triples())
    return (
        f"INSERT DATA {{ GRAPH {VOCABULARY_GRAPH} {{ {taxonomy} }} }} ;\n"
        f"INSERT DATA {{ GRAPH {MODELS_GRAPH} {{ {models} }} }}"
    )


_FACT_PREDICATES = frozenset({EARL + "subject", EARL + "assertedBy", EARL + "test", KAR.verifyResult, KAR.failure})


def _old_facts(preds: dict[str, Any]) -> Facts:
    def iri(p: str) -> str | None:
        o = preds.get(p)
        return o.value if isinstance(o, ox.NamedNode) else None

    question = iri(EARL + "test")
    verdict = preds.get(KAR.verifyResult)
    boolean = None
    if isinstance(verdict, ox.Literal) and verdict.datatype.value.endswith("#boolean"):
        boolean = verdict.value in ("true", "1")
    return (
        iri(EARL + "subject"),
        iri(EARL + "assertedBy"),
        question.split("/questions/", 1)[0] if question else None,
        boolean,
        KAR.failure in preds,
    )


def _tally_lines(add: Callable[[str, str, str], None], run: str, facts: Iterable[Facts]) -> None:
    """Counts per (answering model, judge, benchmark): results, verified (non-null
    verify_result), passed, failures. Pass rates are sums of these, so "pass rate per model over
    a million results" reads a few nodes per run instead of joining every result
    (docs/performance.md § Results)."""
    counts: dict[tuple[str | None, str | None, str | None], list[int]] = {}
    for answering, parsing, bench, verdict, failed in facts:
        c = counts.setdefault((answering, parsing, bench), [0, 0, 0, 0])
        c[0] += 1
        if verdict is not None:
            c[1] += 1
            c[2] += verdict
        c[3] += failed
    for (answering, parsing, bench), (n, verified, passed, failures) in sorted(counts.items(), key=str):
        h = hashlib.sha256(json.dumps([answering, parsing, bench]).encode()).hexdigest()[:16]
        node = f"<{run}/tallies/{h}>"
        add(node, A, KAR.Tally.nt)
        add(node, t.iri(PROV + "wasGeneratedBy"), f"<{run}>")
        for pred, iri in ((KAR.answeringModel, answering), (KAR.parsingModel, parsing), (KAR.benchmark, bench)):
            if iri is not None:
                add(node, pred.nt, f"<{iri}>")
        for pred, value in ((KAR.results, n), (KAR.verified, verified), (KAR.passed, passed), (KAR.failures, failures)):
            add(node, pred.nt, t.integer(value))


def _reading(
    rows: Iterator[tuple[str, int, Any]], reader: ExportReader, reading: Task
) -> Iterator[tuple[str, int, Any]]:
    """``rows``, telling ``reading`` how far into the file they are (checked every few rows)."""
    told = 0
    for n, row in enumerate(rows):
        yield row
        if n % 64 == 0:
            at = reader.bytes_read()
            reading.advance(at - told)
            told = at
    reading.advance(reader.bytes_read() - told)
    reading.done()


def _chain(first: list[Any], rest: Iterator[Any]) -> Iterator[Any]:
    yield from first
    yield from rest


def delete_run(store: GraphStore, ref: str, progress: Progress | None = None) -> str:
    run, graph = resolve_run(store, ref)
    store.retire(graph, unpublish=run, progress=progress)
    return run


def run_reader(store: GraphStore, graph: ox.NamedNode) -> ox.Store:
    """Where to read a run from: the store, or for a server an in-memory copy of the run's
    graph with the models it names (see ``GraphStore.reader``)."""
    source = store.reader(graph)
    if source is not store.oxigraph:  # a server's run, copied: the models it names come too
        source.load(
            store.oxigraph.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=MODELS_GRAPH),
            format=ox.RdfFormat.N_TRIPLES,
            to_graph=MODELS_GRAPH,
        )
    return source


def run_header(source: ox.Store, graph: ox.NamedNode, run: str) -> dict[str, Any]:
    """The export's members other than the rows, rebuilt from the run node."""
    from ._export import _one, _reorder

    preds = node_index(source, graph, [run], skip=(run + "/",)).get(run, {})
    header: dict[str, Any] = {"format_version": "2.2"}
    verbatim = preds.get(KAR.runMetadataVerbatim)
    if verbatim:
        header["metadata"] = t.to_python(verbatim[0])
    else:
        meta: dict[str, Any] = {}
        for f in RUN_METADATA:
            if f.store == "summary":
                if _one(preds, KAR.jobSummaryNull):
                    meta[f.name] = None
                elif KAR.jobSummaryVerbatim in preds:
                    meta[f.name] = _one(preds, KAR.jobSummaryVerbatim)
                else:
                    meta[f.name] = _reorder(
                        {g.name: _one(preds, g.predicate, g.default) for g in JOB_SUMMARY}, preds, "job_summary"
                    )
            else:
                meta[f.name] = _one(preds, f.predicate, f.default)
        header["metadata"] = _reorder(meta, preds, "run_metadata")
    verbatim = preds.get(KAR.sharedDataVerbatim)
    if verbatim:
        header["shared_data"] = t.to_python(verbatim[0])
    else:
        header["shared_data"] = _reorder(
            {f.name: _one(preds, f.predicate, f.default) for f in SHARED_DATA}, preds, "shared_data"
        )
    header["results"] = None
    scenario = _one(preds, KAR.scenarioResults)
    if scenario is not None:
        header["scenario_results"] = scenario
    return _reorder(header, preds, "export")


def ordered_results(source: ox.Store, graph: ox.NamedNode) -> list[str]:
    q = f"SELECT ?r ?p WHERE {{ ?r a {KAR.VerificationResult.nt} ; {KAR.position.nt} ?p }}"
    rows = [
        (int(term_value(row["p"])), term_value(row["r"])) for row in solutions(source.query(q, default_graph=graph))
    ]
    return [r for _, r in sorted(rows)]


def export_run(
    store: GraphStore,
    ref: str,
    out: str | Path | IO[str],
    fmt: str = "karenina-json",
    progress: Progress | None = None,
) -> int:
    """Write a run as a Karenina results export (``karenina-json``, format 2.2) or as CSV;
    ``progress`` is told of the results written."""
    if fmt not in ("karenina-json", "csv"):
        raise InvalidValueError(f"unknown results format {fmt!r}: karenina-json, csv or karenina-db")
    run, graph = resolve_run(store, ref)
    source = run_reader(store, graph)
    header = run_header(source, graph, run)
    rebuild = ResultRebuilder(source, graph)
    iris = ordered_results(source, graph)
    writing = (progress or QUIET).start("writing", len(iris), "results")

    def write(fh: IO[str]) -> int:
        if fmt == "csv":
            rubric = (header.get("shared_data") or {}).get("rubric_definition")
            names = (
                [
                    tr["name"]
                    for traits in (rubric or {}).values()
                    if isinstance(traits, list)
                    for tr in traits
                    if isinstance(tr, dict) and isinstance(tr.get("name"), str)
                ]
                if isinstance(rubric, dict)
                else []
            )
            return write_csv(fh, header, counted(map(rebuild.row, iris), writing), names, scored_names(source, graph))
        return write_export(fh, header, counted(map(rebuild.row, iris), writing))

    if not isinstance(out, (str, Path)):
        return write(out)
    target = Path(out)
    tmp = target.with_name(f".{target.name}.partial")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            n = write(fh)
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return n


def _count(value: Any) -> int:
    return int(term_value(value)) if value is not None else 0


_COUNTS = f"""SELECT (SUM(?n) AS ?results) (SUM(?v) AS ?verified) (SUM(?p) AS ?passed) (SUM(?f) AS ?failures)
    WHERE {{ ?t a {KAR.Tally.nt} ; {KAR.results.nt} ?n ; {KAR.verified.nt} ?v ;
    {KAR.passed.nt} ?p ; {KAR.failures.nt} ?f }}"""


def run_summary(store: GraphStore, run: str, graph: ox.NamedNode) -> RunSummary:
    """Counts and models of one run (pass rate = mean of non-null verify_result, as Karenina's)."""
    ox_store = store.oxigraph
    row = next(solutions(ox_store.query(_COUNTS, default_graph=graph)))
    verified, passed = _count(row["verified"]), _count(row["passed"])

    def distinct(pattern: str) -> tuple[str, ...]:
        # Model nodes live in the shared models graph, shared by every run that names them.
        rs = ox_store.query(
            f"SELECT DISTINCT ?x WHERE {{ {pattern} }} ORDER BY ?x", default_graph=[graph, MODELS_GRAPH]
        )
        return tuple(term_value(r["x"]) for r in solutions(rs))

    preds = node_index(ox_store, graph, [run], skip=(run + "/",)).get(run, {})
    ids = preds.get(SCHEMA + "identifier")
    names = preds.get(SCHEMA + "name")
    started = preds.get(PROV + "startedAtTime")
    ended = preds.get(PROV + "endedAtTime")
    return RunSummary(
        run_id=ids[0].value if ids else run[len(_runs_prefix(store)) :],
        iri=run,
        name=names[0].value if names else None,
        started=started[0].value if started else None,
        ended=ended[0].value if ended else None,
        results=_count(row["results"]),
        verified=verified,
        passed=passed,
        pass_rate=passed / verified if verified else None,
        failures=_count(row["failures"]),
        answering_models=distinct(f"?t {KAR.answeringModel.nt} ?m . ?m <{RDFS}label> ?x"),
        parsing_models=distinct(f"?t {KAR.parsingModel.nt} ?m . ?m <{RDFS}label> ?x"),
        modes=distinct(f"?r {KAR.evaluationMode.nt} ?x"),
        benchmarks=distinct(f"<{run}> <{PROV}used> ?x"),
        source=store.catalog.value(run, SOURCE),
        imported_at=store.catalog.value(run, IMPORTED_AT),
    )


def list_runs(store: GraphStore) -> list[RunSummary]:
    """Every stored run, oldest first."""
    out = [run_summary(store, run, graph) for run, graph in store.catalog.runs().items()]
    return sorted(out, key=lambda s: (s.started or "", s.run_id))
