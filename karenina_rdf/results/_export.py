"""A stored run back to Karenina's results export (format 2.2) and to CSV.

The inverse of _results_map: every field is rebuilt from the triples of its result, in
Karenina's declaration order, with the fresh value for each field that has no triple. The JSON
is written in Karenina's byte layout (spec verification.md §11.1): the header as compact JSON
without its closing brace, then one result per line.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from copy import deepcopy
from typing import IO, Any

import pyoxigraph as ox

from karenina_rdf.rdf import KAR, MODELS_GRAPH, SCHEMA, Index, camel, node_index, solutions, unsegment
from karenina_rdf.rdf import terms as t

from ._model import (
    CONFUSION_BUCKETS,
    DEEP_JUDGMENT,
    DEEP_JUDGMENT_RUBRIC,
    EARL,
    FAILURE_FIELDS,
    FORMAT_VERSION,
    PARTS,
    ROOT,
    SCORE_DICTS,
    USAGE_KEYS,
    Field,
    display_string,
)

# The predicates of a part kept whole (never the metadata: the mapper refuses a row without it),
# of the link to a part's node, and of a usage stage's counts.
_VERBATIM = {part: KAR.term(camel(part) + "Verbatim") for part, _, _ in PARTS if part != "metadata"}
_PART_LINKS = {part: KAR.term(camel(part)) for part, _, suffix in PARTS if suffix}
_USAGE = {key: KAR.term(camel(key)) for key in USAGE_KEYS}


def _one(preds: dict[str, list[Any]], pred: str, default: Any = None) -> Any:
    objects = preds.get(pred)
    if not objects:
        return deepcopy(default)
    return t.to_python(objects[0])


def _reorder(obj: dict[str, Any], preds: dict[str, list[Any]], part: str) -> dict[str, Any]:
    extras = _one(preds, KAR.term(camel(part) + "ExtraFields"))
    if extras:
        obj.update(extras)
    order = _one(preds, KAR.term(camel(part) + "KeyOrder"))
    if order:
        obj = {**{k: obj[k] for k in order if k in obj}, **{k: v for k, v in obj.items() if k not in order}}
    return obj


class ResultRebuilder:
    """Rebuilds result rows from one run graph (model nodes are shared, so they are cached)."""

    def __init__(self, source: ox.Store, graph: ox.NamedNode) -> None:
        self.source, self.graph = source, graph
        self._models: dict[str, dict[str, Any]] = {}

    def _model(self, iri: str) -> dict[str, Any]:
        if iri not in self._models:
            preds = node_index(self.source, MODELS_GRAPH, [iri]).get(iri, {})
            self._models[iri] = {
                "interface": _one(preds, KAR.interface),
                "model_name": _one(preds, SCHEMA + "name"),
                "tools": _one(preds, KAR.tools, []),
                "config_id": _one(preds, KAR.configId),
            }
        return deepcopy(self._models[iri])

    def row(self, r: str) -> dict[str, Any]:
        index = node_index(self.source, self.graph, [r])
        return self._row(index, r)

    def _part(self, index: Index, node: str, part: str, fields: Iterable[Field]) -> dict[str, Any]:
        preds = index.get(node, {})
        out: dict[str, Any] = {}
        for f in fields:
            if f.store in ("value", "key"):
                out[f.name] = _one(preds, f.predicate, f.default)
            elif f.store == "model":
                ref = preds.get(EARL + ("subject" if f.name == "answering" else "assertedBy"))
                if ref:
                    out[f.name] = self._model(ref[0].value)
                else:
                    out[f.name] = _one(preds, KAR.term(camel(f.name + "_identity")))
            elif f.store == "failure":
                out[f.name] = self._failure(index, preds)
            elif f.store == "usage":
                out[f.name] = self._usage(index, preds, f)
            elif f.store == "fields":
                out[f.name] = self._fields(index, preds, f)
            elif f.store == "scores":
                out[f.name] = None  # filled by _scores
        return out

    def _row(self, index: Index, r: str) -> dict[str, Any]:
        preds = index[r]
        row: dict[str, Any] = {}
        for part, fields, suffix in PARTS:
            verbatim = preds.get(_VERBATIM[part]) if part in _VERBATIM else None
            if verbatim:
                row[part] = t.to_python(verbatim[0])
                continue
            if part == "template" and _one(preds, KAR.templatePart) is False:
                row[part] = None
                continue
            if suffix:
                link = preds.get(_PART_LINKS[part])
                if not link:
                    row[part] = None
                    continue
                node = link[0].value
            else:
                node = r
            obj = self._part(index, node, part, fields)
            if part == "rubric":
                self._scores(index, node, obj)
            row[part] = _reorder(obj, index.get(node, {}), part)
        for f in ROOT:
            row[f.name] = _one(preds, f.predicate, f.default)
        row = _reorder(row, preds, "result")
        order = _one(preds, KAR.rowKeyOrder)
        if order:
            row = {**{k: row[k] for k in order if k in row}, **{k: v for k, v in row.items() if k not in order}}
        return row

    def _failure(self, index: Index, preds: dict[str, list[Any]]) -> Any:
        verbatim = preds.get(KAR.failure)
        if not verbatim:
            return None
        if isinstance(verbatim[0], ox.Literal):
            return t.to_python(verbatim[0])
        fp = index.get(verbatim[0].value, {})
        category = fp[KAR.failureCategory][0].value
        group = fp.get(KAR.failureGroup)
        values = {
            "category": unsegment(category[len(KAR.failure_category) :]),
            "stage": _one(fp, KAR.failureStage),
            "reason": _one(fp, SCHEMA + "description"),
            "details": _one(fp, KAR.failureDetails),
            "group": unsegment(group[0].value[len(KAR.failure_group) :]) if group else None,
        }
        return {f.name: values[f.name] for f in FAILURE_FIELDS}

    def _usage(self, index: Index, preds: dict[str, list[Any]], f: Field) -> Any:
        nodes = preds.get(KAR.tokenUsage)
        if not nodes:
            return _one(preds, f.predicate)
        stages = []
        for n in nodes:
            up = index.get(n.value, {})
            counts = {k: _one(up, p) for k, p in _USAGE.items() if p in up}
            stages.append((_one(up, KAR.position), _one(up, KAR.stage), counts))
        return {stage: counts for _, stage, counts in sorted(stages, key=lambda s: s[0])}

    def _fields(self, index: Index, preds: dict[str, list[Any]], f: Field) -> Any:
        is_score = f.name == "field_scores"
        value_pred = KAR.fieldScore if is_score else KAR.fieldResult
        pos_pred = KAR.scorePosition if is_score else KAR.resultPosition
        members = []
        for n in preds.get(KAR.fieldOutcome, ()):
            fp = index.get(n.value, {})
            if pos_pred in fp:
                members.append((_one(fp, pos_pred), _one(fp, SCHEMA + "name"), _one(fp, value_pred)))
        if not members:
            return _one(preds, f.predicate)
        return {name: value for _, name, value in sorted(members, key=lambda m: m[0])}

    def _scores(self, index: Index, node: str, obj: dict[str, Any]) -> None:
        preds = index.get(node, {})
        empties = set(_one(preds, KAR.emptyDicts, []))
        scores = [(n.value, index.get(n.value, {})) for n in preds.get(KAR.traitScore, ())]

        def collect(key: str, pos_pred: str, want: Any, value: Any) -> None:
            verbatim = preds.get(KAR.term(camel(key)))
            if verbatim:
                obj[key] = t.to_python(verbatim[0])
                return
            members = [
                (_one(sp, pos_pred), _one(sp, KAR.traitName), value(s, sp))
                for s, sp in scores
                if pos_pred in sp and want(sp)
            ]
            if members:
                obj[key] = {name: v for _, name, v in sorted(members, key=lambda m: m[0])}
            else:
                obj[key] = {} if key in empties else None

        for kind, key in SCORE_DICTS.items():
            collect(
                key,
                KAR.position,
                lambda sp, kind=kind: _one(sp, KAR.scoreKind) == kind,
                (lambda s, sp: self._metrics(index, sp))
                if kind == "metric"
                else (lambda s, sp: _one(sp, SCHEMA + "value")),
            )
        collect("llm_trait_labels", KAR.labelPosition, lambda sp: True, lambda s, sp: _one(sp, KAR.label))
        collect("trait_provenance", KAR.provenancePosition, lambda sp: True, lambda s, sp: _one(sp, KAR.provenance))
        collect(
            "metric_trait_confusion_lists",
            KAR.confusionPosition,
            lambda sp: True,
            lambda s, sp: {b: _one(sp, KAR.term(b)) for b in CONFUSION_BUCKETS if KAR.term(b) in sp},
        )

    @staticmethod
    def _metrics(index: Index, sp: dict[str, list[Any]]) -> dict[str, Any]:
        ms = []
        for m in sp.get(KAR.metricValue, ()):
            mp = index.get(m.value, {})
            ms.append((_one(mp, KAR.position), _one(mp, SCHEMA + "name"), _one(mp, SCHEMA + "value")))
        return {name: v for _, name, v in sorted(ms, key=lambda m: m[0])}


def write_export(fh: IO[str], header: dict[str, Any], rows: Iterator[dict[str, Any]]) -> int:
    """Karenina's byte layout: header without its closing brace, ``,"results":[`` and a newline,
    one compact row per line joined by ``,\\n``, ``\\n]``, the members after the rows, ``}\\n``."""
    before = {k: v for k, v in header.items() if k not in ("results", "scenario_results")}
    before = {"format_version": FORMAT_VERSION, **before}
    after = {k: header[k] for k in ("scenario_results",) if header.get(k) is not None}
    fh.write(json.dumps(before, ensure_ascii=False)[:-1])
    fh.write(',"results":[\n')
    n = 0
    for row in rows:
        if n:
            fh.write(",\n")
        fh.write(json.dumps(row, ensure_ascii=False))
        n += 1
    fh.write("\n]")
    for key, value in after.items():
        fh.write(f",{json.dumps(key)}:{json.dumps(value, ensure_ascii=False)}")
    fh.write("}\n")
    return n


# -- CSV (spec verification.md §11.2) -------------------------------------------------------
_CSV_HEAD = (
    "question_id",
    "success",
    "error",
    "question_text",
    "raw_llm_response",
    "parsed_gt_response",
    "parsed_llm_response",
    "template_verification_performed",
    "verify_result",
    "verify_granular_result",
    "rubric_evaluation_performed",
    "keywords",
)
_CSV_TAIL = (
    "answering_model",
    "parsing_model",
    "replicate",
    "execution_time",
    "timestamp",
    "answering_system_prompt",
    "parsing_system_prompt",
    "run_name",
    "export_timestamp",
    "karenina_version",
    "job_id",
    "embedding_check_performed",
    "embedding_similarity_score",
    "embedding_override_applied",
    "embedding_model_used",
    "answering_mcp_servers",
    *(f.name for f in DEEP_JUDGMENT),
    *(f.name for f in DEEP_JUDGMENT_RUBRIC),
    "metric_trait_confusion_lists",
    "metric_trait_metrics",
    "usage_metadata",
    "agent_metrics",
    "failure_category",
    "failure_group",
    "failure_stage",
    "failure_reason",
    "failure_details_json",
    "caveats",
)


def _js(value: Any) -> str:
    return json.dumps(value) if value else ""


def _cell(value: Any) -> Any:
    return "" if value is None else value


def csv_row(
    row: dict[str, Any], header: dict[str, Any], global_traits: list[str], specific: list[str]
) -> dict[str, Any]:
    meta = row.get("metadata") or {}
    tpl = row.get("template") or {}
    rub = row.get("rubric") or {}
    dj = row.get("deep_judgment") or {}
    djr = row.get("deep_judgment_rubric") or {}
    failure = meta.get("failure") if isinstance(meta.get("failure"), dict) else None
    run_meta = header.get("metadata") or {}
    out: dict[str, Any] = {
        "question_id": meta.get("question_id"),
        "success": failure is None,
        "error": (failure or {}).get("reason") or "",
        "question_text": _cell(meta.get("question_text")),
        "raw_llm_response": tpl.get("raw_llm_response", ""),
        "parsed_gt_response": _js(tpl.get("parsed_gt_response")),
        "parsed_llm_response": _js(tpl.get("parsed_llm_response")),
        "template_verification_performed": tpl.get("template_verification_performed", False),
        "verify_result": _js(tpl.get("verify_result")) if tpl.get("verify_result") is not None else "",
        "verify_granular_result": _js(tpl.get("verify_granular_result")),
        "rubric_evaluation_performed": rub.get("rubric_evaluation_performed", False),
        "keywords": _js(meta.get("keywords")),
        "answering_model": display_string(meta.get("answering")),
        "parsing_model": display_string(meta.get("parsing")),
        "replicate": meta.get("replicate") or "",
        "execution_time": _cell(meta.get("execution_time")),
        "timestamp": _cell(meta.get("timestamp")),
        "answering_system_prompt": meta.get("answering_system_prompt") or "",
        "parsing_system_prompt": meta.get("parsing_system_prompt") or "",
        "run_name": meta.get("run_name") or "",
        "export_timestamp": _cell(run_meta.get("export_timestamp")),
        "karenina_version": _cell(run_meta.get("karenina_version")),
        "job_id": _cell(run_meta.get("job_id")),
        "metric_trait_confusion_lists": _js(rub.get("metric_trait_confusion_lists")),
        "metric_trait_metrics": _js(rub.get("metric_trait_scores")),
        "failure_category": (failure or {}).get("category") or "",
        "failure_group": (failure or {}).get("group") or "",
        "failure_stage": (failure or {}).get("stage") or "",
        "failure_reason": (failure or {}).get("reason") or "",
        "failure_details_json": _js((failure or {}).get("details")),
        "caveats": ",".join(str(c) for c in meta.get("caveats") or ()),
    }
    for key in (
        "embedding_check_performed",
        "embedding_similarity_score",
        "embedding_override_applied",
        "embedding_model_used",
    ):
        out[key] = _cell(tpl.get(key))
    for key in ("answering_mcp_servers", "usage_metadata", "agent_metrics"):
        out[key] = _js(tpl.get(key))
    for part, fields in ((dj, DEEP_JUDGMENT), (djr, DEEP_JUDGMENT_RUBRIC)):
        for f in fields:
            value = part.get(f.name)
            out[f.name] = _js(value) if isinstance(value, (dict, list)) else _cell(value)
    merged: dict[str, Any] = {}
    for kind in ("llm", "regex", "callable", "metric"):
        merged.update(rub.get(SCORE_DICTS[kind]) or {})
    for name in global_traits:
        out["rubric_" + name] = str(merged[name]) if name in merged else ""
    if specific:
        out["question_specific_rubrics"] = json.dumps({n: merged[n] for n in specific if n in merged})
    return out


def csv_columns(global_traits: list[str], specific: list[str]) -> list[str]:
    cols = [*_CSV_HEAD, *("rubric_" + n for n in global_traits)]
    if specific:
        cols.append("question_specific_rubrics")
    return [*cols, *_CSV_TAIL]


def scored_names(source: ox.Store, graph: ox.NamedNode) -> set[str]:
    """Every trait name a run scores with an LLM, regex, callable or metric trait (Karenina's CSV
    columns), read from the graph so the rows can be streamed after the header is written."""
    kinds = ", ".join(f'"{k}"' for k in ("llm", "regex", "callable", "metric"))
    q = f"""SELECT DISTINCT ?n WHERE {{ ?s {KAR.scoreKind.nt} ?k ; {KAR.traitName.nt} ?n FILTER(?k IN ({kinds})) }}"""
    names = {t.to_python(s["n"]) for s in solutions(source.query(q, default_graph=graph))}
    verbatim = ", ".join(KAR.term(camel(SCORE_DICTS[k])).nt for k in ("llm", "regex", "callable", "metric"))
    found = source.query(f"SELECT ?v WHERE {{ ?r ?p ?v FILTER(?p IN ({verbatim})) }}", default_graph=graph)
    for s in solutions(found):
        value = t.to_python(s["v"])
        if isinstance(value, dict):
            names.update(str(n) for n in value)
    return names


def write_csv(
    fh: IO[str], header: dict[str, Any], rows: Iterable[dict[str, Any]], global_names: list[str], scored: set[str]
) -> int:
    """One row per result; one ``rubric_<trait>`` column per global trait (the run's rubric
    definition decides which are global), the other traits in ``question_specific_rubrics``."""
    seen = {n for n in scored if n and "\n" not in n and "\r" not in n}  # names Karenina's CSV skips
    known = set(global_names)
    global_traits = sorted(seen & known)
    specific = sorted(seen - known)
    writer = csv.DictWriter(fh, fieldnames=csv_columns(global_traits, specific))
    writer.writeheader()
    n = 0
    for row in rows:
        writer.writerow(csv_row(row, header, global_traits, specific))
        n += 1
    return n
