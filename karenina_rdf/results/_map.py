"""One Karenina verification result → N-Triples lines (the model: docs/data-model.md §8).

Each row becomes a ``karenina:VerificationResult`` that is also an EARL assertion: the answering
model is the subject under test, the question the test, the judge the assertor, and the outcome
an ``earl:TestResult``. Fields at their fresh value cost no triple (see _results_model); other
scalars are typed literals on the node of their part; the structured fields get child nodes
under the result's IRI, so a result and everything it owns share one IRI prefix.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from karenina_rdf.rdf import KAR, RDF, SCHEMA, camel, child_iri, segment
from karenina_rdf.rdf import terms as t

from ._legacy import is_legacy, migrate
from ._model import (
    CONFUSION_BUCKETS,
    EARL,
    FAILURE_FIELDS,
    MODEL_IDENTITY,
    PARTS,
    PROV,
    RDFS,
    RESULT_KEYS,
    ROOT,
    SCORE_DICTS,
    USAGE_KEYS,
    Field,
    canonical_key,
    display_string,
)

A = t.iri(RDF + "type")


@functools.lru_cache(maxsize=1024)
def _pred(name: str) -> str:
    """The predicate of a Karenina field name (``<karenina:{camelName}>``), checked once per name."""
    return KAR.term(camel(name)).nt


_NULL = t.json_literal(None)


_POSITION = KAR.position.nt
_ASSERTION = t.iri(EARL + "Assertion")
_GENERATED_BY = t.iri(PROV + "wasGeneratedBy")
_VALUE = t.iri(SCHEMA + "value")
_NAME = t.iri(SCHEMA + "name")
# A part that is not an object is kept whole; the parts with a node of their own are linked to it
# (rubric → a RubricEvaluation, deep judgment → a DeepJudgment).
_VERBATIM = {part: KAR.term(camel(part) + "Verbatim").nt for part, _, _ in PARTS if part != "metadata"}
_PART_NODES = {
    part: (KAR.term(camel(part)).nt, (KAR.RubricEvaluation if part == "rubric" else KAR.DeepJudgment).nt)
    for part, _, suffix in PARTS
    if suffix
}
_USAGE = {key: KAR.term(camel(key)).nt for key in USAGE_KEYS}
_BUCKETS = {bucket: (KAR.term(bucket).nt, KAR.term(bucket + "Count").nt) for bucket in CONFUSION_BUCKETS}


def result_iri(run: str, meta: dict[str, Any]) -> str:
    """The IRI of a run's result row: ``{run}/results/{row_key}``."""
    return f"{run}/results/{row_key(meta)}"


def row_key(meta: dict[str, Any]) -> str:
    """Karenina's row identity (run name, question, template, answerer, judge, replicate; scenario
    coordinates for scenario rows) as 16 hex characters: the last segment of a result's IRI."""
    parts = [
        meta.get("question_id"),
        meta.get("template_id"),
        canonical_key(meta.get("answering")),
        canonical_key(meta.get("parsing")),
        meta.get("replicate"),
        meta.get("run_name"),
        meta.get("scenario_id"),
        meta.get("scenario_node"),
        meta.get("scenario_turn"),
    ]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=True).encode()).hexdigest()[:16]


def model_iri(base_iri: str, identity: dict[str, Any]) -> str:
    """``{base}models/{interface}/{model_name}``, plus a hash segment when the identity has a
    config id or tools (or an empty part). Karenina's canonical key is not used: it joins the
    parts with ":", which model names contain (``ollama:llama3:8b:`` is both llama3 with config
    8b and llama3:8b), so two models would share one node."""
    interface, name = identity.get("interface"), identity.get("model_name")
    tools = identity.get("tools") or []
    plain = bool(interface) and bool(name) and isinstance(interface, str) and isinstance(name, str)
    path = f"{base_iri}models/{segment(str(interface or '_'))}/{segment(str(name or '_'))}"
    if plain and identity.get("config_id") is None and not tools:
        return path
    parts = [interface, name, identity.get("config_id"), sorted(str(t) for t in tools)]
    return f"{path}/{hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]}"


def outcome(result: dict[str, Any]) -> str:
    """The EARL outcome of a result: passed/failed from ``verify_result``; cantTell when it failed
    before a verdict; inapplicable when no template was verified (rubric-only)."""
    template = result.get("template") or {}
    verdict = template.get("verify_result")
    if verdict is True:
        return "passed"
    if verdict is False:
        return "failed"
    if (result.get("metadata") or {}).get("failure"):
        return "cantTell"
    if not template.get("template_verification_performed"):
        return "inapplicable"
    return "cantTell"


Facts = tuple[str | None, str | None, str | None, bool | None, bool]


@dataclass
class QuestionLink:
    """A stored question a result's ``question_id`` names."""

    benchmark: str
    question: str
    template: str | None  # the template node, when its templateId is the result's template_id
    template_id: str | None


@dataclass
class Context:
    """What mapping a run's rows needs from outside the row."""

    base_iri: str
    run: str
    lookup: Callable[[str], QuestionLink | None]
    traits: Callable[[QuestionLink | None, str, str | None], tuple[str | None, bool | None]]
    emitted_models: set[str] = field(default_factory=set)
    positions: dict[str, int] = field(default_factory=dict)  # stored rows' places (upsert)


def _ordered_ok(keys: list[str], canonical: tuple[str, ...]) -> bool:
    order = {k: i for i, k in enumerate(canonical)}
    last = -1
    for k in keys:
        i = order.get(k)
        if i is None or i < last:
            return False
        last = i
    return True


_NAMES: dict[int, tuple[tuple[Field, ...], frozenset[str]]] = {}


def _names(fields: tuple[Field, ...]) -> frozenset[str]:
    # Keyed by identity (a list default makes the tables unhashable); the table is kept in the
    # entry, so an id reused by another tuple is noticed instead of answering for the old one.
    hit = _NAMES.get(id(fields))
    if hit is None or hit[0] is not fields:
        hit = _NAMES[id(fields)] = (fields, frozenset(f.name for f in fields))
    return hit[1]


class ResultMapper:
    """Maps rows of one run; ``lines`` collects the N-Triples of the row being mapped."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lines: list[str] = []
        self.model_lines: list[str] = []  # model nodes: for the shared models graph, not the run's
        # When a list: each result's types and position go here, apart from ``lines`` (a live
        # run bulk-loads the rest, then makes the results visible with these, in a transaction).
        self.commit_lines: list[str] | None = None
        self.unmatched = 0
        self.template_mismatch = 0
        self.migrated = 0
        # What the run's tallies need of the row just mapped: (answering model, judge, benchmark,
        # verify_result if a boolean, failed?).
        self.facts: Facts = (None, None, None, None, False)
        self._identities: dict[str, str] = {}
        self._field_nodes: dict[str, str] = {}  # field name → its node, shared by results and scores
        self._field_taken: set[str] = set()

    def _add(self, s: str, p: str, o: str) -> None:
        self.lines.append(f"{s} {p} {o} .\n")

    # -- parts -----------------------------------------------------------------------------
    def _part(self, node: str, part: str, obj: dict[str, Any], fields: tuple[Field, ...], special: Any) -> None:
        lines = self.lines
        value = t.value
        present = []
        for f in fields:
            name = f.name
            if name not in obj:
                continue
            present.append(name)
            v = obj[name]
            if f.store == "value":
                default = f.default
                if type(v) is not type(default) or v != default:  # is_default, inlined: the hot loop
                    lines.append(f"{node} <{f.predicate}> {_NULL if v is None else value(v)} .\n")
            else:
                special(node, f, v)
        if len(present) == len(obj) and all(a == b for a, b in zip(present, obj, strict=False)):
            return  # Karenina's keys in Karenina's order: nothing to note
        known = _names(fields)
        keys = list(obj)
        extras = {k: obj[k] for k in keys if k not in known}
        if extras:
            self._add(node, KAR.term(camel(part) + "ExtraFields").nt, t.json_literal(extras))
        if keys != present + list(extras):
            self._add(node, KAR.term(camel(part) + "KeyOrder").nt, t.json_literal(keys))

    def _verbatim(self, node: str, name: str, value: Any) -> None:
        self._add(node, _pred(name), t.json_literal(value))

    def map(self, row: Any, position: int) -> str:
        """The row's triples into ``lines``; returns the result IRI. Rows that are not objects
        or lack ``metadata.question_id`` raise ``ValueError`` with the reason."""
        if not isinstance(row, dict):
            raise ValueError("a result is a JSON object")
        legacy: dict[str, Any] = {}
        if is_legacy(row):
            row, legacy = migrate(row)
            self.migrated += 1
        meta = row.get("metadata")
        if not isinstance(meta, dict):
            raise ValueError("a result needs a 'metadata' object")
        qid = meta.get("question_id")
        if not isinstance(qid, str):
            raise ValueError("metadata.question_id must be a string")
        ctx = self.ctx
        self._field_nodes = {}
        self._field_taken = set()
        self._identities = {}
        r = f"<{result_iri(ctx.run, meta)}>"
        add = self._add
        head = self.lines if self.commit_lines is None else self.commit_lines
        head.append(f"{r} {A} {KAR.VerificationResult.nt} .\n")
        head.append(f"{r} {A} {_ASSERTION} .\n")
        add(r, _GENERATED_BY, f"<{ctx.run}>")
        # A row that replaces a stored one keeps its place, as Karenina's database upsert does.
        head.append(f"{r} {_POSITION} {t.integer(ctx.positions.get(r[1:-1], position))} .\n")
        link = ctx.lookup(qid)
        if link is None:
            self.unmatched += 1
        else:
            add(r, t.iri(EARL + "test"), f"<{link.question}>")
            tid = meta.get("template_id")
            if link.template is not None and tid == link.template_id:
                add(r, KAR.template.nt, f"<{link.template}>")
            elif tid not in (None, "no_template"):
                self.template_mismatch += 1
        if legacy:
            add(r, KAR.legacyFields.nt, t.json_literal(legacy))
        out = f"<{r[1:-1]}/outcome>"
        add(r, t.iri(EARL + "result"), out)
        add(out, A, t.iri(EARL + "TestResult"))
        add(out, t.iri(EARL + "outcome"), t.iri(EARL + outcome(row)))

        def special(node: str, f: Field, v: Any) -> None:
            if f.store != "scores":  # the score dicts: mapped together by _scores
                getattr(self, "_" + f.store)(node, f, v, link)

        for part, fields, suffix in PARTS:
            obj = row.get(part)
            if part == "metadata":
                self._part(r, part, meta, fields, special)
                continue
            if obj is None:
                if part == "template":  # null or (legacy rows) absent: Karenina reads both as None
                    add(r, KAR.templatePart.nt, t.boolean(False))
                continue
            if not isinstance(obj, dict):
                add(r, _VERBATIM[part], t.json_literal(obj))
                continue
            if suffix:
                node = f"<{r[1:-1]}{suffix}>"
                to_part, part_class = _PART_NODES[part]
                add(r, to_part, node)
                add(node, A, part_class)
            else:
                node = r
            if part == "rubric":
                self._scores(node, obj, link)
            self._part(node, part, obj, fields, special)
        root = {k: row[k] for k in row if k not in RESULT_KEYS[:5]}
        self._part(r, "result", root, ROOT, special)
        if list(row) != [k for k in RESULT_KEYS if k in row] + [k for k in row if k not in RESULT_KEYS]:
            add(r, KAR.rowKeyOrder.nt, t.json_literal(list(row)))
        template = row.get("template")
        verdict = template.get("verify_result") if isinstance(template, dict) else None
        self.facts = (
            self._identities.get("answering"),
            self._identities.get("parsing"),
            link.benchmark if link is not None else None,
            verdict if isinstance(verdict, bool) else None,
            bool(meta.get("failure")),
        )
        return r[1:-1]

    # -- structures ------------------------------------------------------------------------
    def _key(self, node: str, f: Field, v: Any, link: QuestionLink | None) -> None:
        if v is not None:
            self._add(node, f"<{f.predicate}>", t.value(v))

    def _model(self, node: str, f: Field, v: Any, link: QuestionLink | None) -> None:
        pred = t.iri(EARL + ("subject" if f.name == "answering" else "assertedBy"))
        keys = list(v) if isinstance(v, dict) else []
        if not isinstance(v, dict) or keys != [x.name for x in MODEL_IDENTITY] or not isinstance(v["tools"], list):
            self._verbatim(node, f.name + "_identity", v)  # not a ModelIdentity: kept as it came
            return
        m = model_iri(self.ctx.base_iri, v)
        self._identities[f.name] = m
        self._add(node, pred, f"<{m}>")
        if m in self.ctx.emitted_models:
            return
        self.ctx.emitted_models.add(m)
        mi = f"<{m}>"
        model = self.model_lines
        model.append(f"{mi} {A} {KAR.Model.nt} .\n")
        model.append(f"{mi} {A} {t.iri(PROV + 'SoftwareAgent')} .\n")
        model.append(f"{mi} {KAR.canonicalKey.nt} {t.string(canonical_key(v))} .\n")
        model.append(f"{mi} {t.iri(RDFS + 'label')} {t.string(display_string(v))} .\n")
        for x in MODEL_IDENTITY:
            value = v[x.name]
            if value is not None and not (x.name == "tools" and value == []):
                model.append(f"{mi} {_NAME if x.name == 'model_name' else f'<{x.predicate}>'} {t.value(value)} .\n")

    def _failure(self, node: str, f: Field, v: Any, link: QuestionLink | None) -> None:
        if v is None:
            return
        if (
            not isinstance(v, dict)
            or list(v) != [x.name for x in FAILURE_FIELDS]
            or not isinstance(v["category"], str)
            or not isinstance(v["group"], (str, type(None)))
        ):
            self._verbatim(node, "failure", v)
            return
        fn = f"<{node[1:-1]}/failure>"
        add = self._add
        add(node, KAR.failure.nt, fn)
        add(fn, A, KAR.Failure.nt)
        add(fn, KAR.failureCategory.nt, t.iri(KAR.failure_category(segment(v["category"]))))
        if v["group"] is not None:
            add(fn, KAR.failureGroup.nt, t.iri(KAR.failure_group(segment(v["group"]))))
        if v["stage"] is not None:
            add(fn, KAR.failureStage.nt, t.value(v["stage"]))
        if v["reason"] is not None:
            add(fn, t.iri(SCHEMA + "description"), t.value(v["reason"]))
        if v["details"] is not None:
            add(fn, KAR.failureDetails.nt, t.json_literal(v["details"]))

    def _usage(self, node: str, f: Field, v: Any, link: QuestionLink | None) -> None:
        if v is None:
            return
        ok = isinstance(v, dict) and all(isinstance(s, dict) and _ordered_ok(list(s), USAGE_KEYS) for s in v.values())
        if not ok or not v:
            self._verbatim(node, f.name, v)
            return
        taken: set[str] = set()
        for i, (stage, counts) in enumerate(v.items()):
            u = f"<{child_iri(node[1:-1], 'usage', stage, taken)}>"
            self._add(node, KAR.tokenUsage.nt, u)
            self._add(u, A, KAR.TokenUsage.nt)
            self._add(u, KAR.stage.nt, t.string(stage))
            self._add(u, _POSITION, t.integer(i))
            for key, value in counts.items():
                self._add(u, _USAGE[key], t.json_literal(None) if value is None else t.value(value))

    def _fields(self, node: str, f: Field, v: Any, link: QuestionLink | None) -> None:
        if v is None:
            return
        if not isinstance(v, dict) or not v:
            self._verbatim(node, f.name, v)
            return
        is_score = f.name == "field_scores"
        value_pred = (KAR.fieldScore if is_score else KAR.fieldResult).nt
        pos_pred = (KAR.scorePosition if is_score else KAR.resultPosition).nt
        for i, (name, value) in enumerate(v.items()):
            fi = self._field_nodes.get(name)
            if fi is None:
                # child_iri: names that encode alike ("" and "_") still get nodes of their own
                fi = self._field_nodes[name] = f"<{child_iri(node[1:-1], 'fields', name, self._field_taken)}>"
                self._add(node, KAR.fieldOutcome.nt, fi)
                self._add(fi, A, KAR.FieldOutcome.nt)
                self._add(fi, _NAME, t.string(name))
            self._add(fi, value_pred, t.json_literal(None) if value is None else t.value(value))
            self._add(fi, pos_pred, t.integer(i))

    def _scores(self, node: str, rubric: dict[str, Any], link: QuestionLink | None) -> None:
        """One TraitScore node per trait name (a second one if a name repeats across kinds),
        holding its value, label, provenance, metrics and confusion lists, each with its
        position in the dict it came from."""
        nodes: dict[tuple[str, str], str] = {}  # (name, kind) → node IRI
        taken: set[str] = set()
        by_name: dict[str, str] = {}
        add = self._add
        base = node[1:-1]

        def score_node(name: str, kind: str | None) -> str:
            if kind is not None and (name, kind) in nodes:
                return nodes[(name, kind)]
            if kind is None and name in by_name:
                return by_name[name]
            s = f"<{child_iri(base, 'scores', name, taken)}>"
            add(node, KAR.traitScore.nt, s)
            add(s, A, KAR.TraitScore.nt)
            add(s, KAR.traitName.nt, t.string(name))
            if kind is not None:
                nodes[(name, kind)] = s
            by_name.setdefault(name, s)
            trait, hib = self.ctx.traits(link, name, rubric_provenance(name))
            if trait is not None:
                add(s, KAR.scoresTrait.nt, f"<{trait}>")
            elif hib is not None:
                add(s, KAR.higherIsBetter.nt, t.boolean(hib))
            return s

        provenance = rubric.get("trait_provenance")

        def rubric_provenance(name: str) -> str | None:
            if isinstance(provenance, dict):
                p = provenance.get(name)
                return p if isinstance(p, str) else None
            return None

        empties = []
        for kind, key in SCORE_DICTS.items():
            d = rubric.get(key)
            if d is None:
                continue
            if not isinstance(d, dict) or (kind == "metric" and not all(isinstance(m, dict) for m in d.values())):
                self._verbatim(node, key, d)
                continue
            if not d:
                empties.append(key)
            for i, (name, value) in enumerate(d.items()):
                s = score_node(name, kind)
                add(s, KAR.scoreKind.nt, t.string(kind))
                add(s, _POSITION, t.integer(i))
                if kind == "metric":
                    metric_taken: set[str] = set()
                    for j, (metric, mv) in enumerate(value.items()):
                        m = f"<{child_iri(s[1:-1], 'metrics', metric, metric_taken)}>"
                        add(s, KAR.metricValue.nt, m)
                        add(m, _NAME, t.string(metric))
                        add(m, _VALUE, t.json_literal(None) if mv is None else t.value(mv))
                        add(m, _POSITION, t.integer(j))
                else:
                    add(s, _VALUE, t.json_literal(None) if value is None else t.value(value))
        extra_dicts: tuple[tuple[str, str | None, str | None, str], ...] = (
            ("llm_trait_labels", "llm", KAR.label.nt, KAR.labelPosition.nt),
            ("trait_provenance", None, KAR.provenance.nt, KAR.provenancePosition.nt),
            ("metric_trait_confusion_lists", "metric", None, KAR.confusionPosition.nt),
        )
        for key, owner_kind, value_pred, pos_pred in extra_dicts:
            d = rubric.get(key)
            if d is None:
                continue
            valid = isinstance(d, dict) and (
                value_pred is not None
                or all(
                    isinstance(c, dict)
                    and _ordered_ok(list(c), CONFUSION_BUCKETS)
                    and all(isinstance(b, list) for b in c.values())
                    for c in d.values()
                )
            )
            if not valid:
                self._verbatim(node, key, d)
                continue
            if not d:
                empties.append(key)
            for i, (name, value) in enumerate(d.items()):
                found = nodes.get((name, owner_kind)) if owner_kind is not None else by_name.get(name)
                s = found if found is not None else score_node(name, owner_kind)
                add(s, pos_pred, t.integer(i))
                if value_pred is not None:
                    add(s, value_pred, t.json_literal(None) if value is None else t.value(value))
                    continue
                for bucket, items in value.items():
                    items_pred, count_pred = _BUCKETS[bucket]
                    add(s, items_pred, t.json_literal(items))
                    add(s, count_pred, t.integer(len(items)))
        if empties:
            add(node, KAR.emptyDicts.nt, t.json_literal(empties))
