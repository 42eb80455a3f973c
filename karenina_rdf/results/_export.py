"""A stored run back to Karenina's results export (format 2.2) and to CSV.

The inverse of _results_map: every field is rebuilt from the triples of its result, in
Karenina's declaration order, with the fresh value for each field that has no triple. The JSON
is written in Karenina's byte layout (spec verification.md §11.1): the header as compact JSON
without its closing brace, then one result per line.
"""

from __future__ import annotations

import csv
import json
import time
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
# Karenina's CSV exporter, ``karenina.benchmark.export_verification_results_csv`` (what
# ``karenina verify --output results.csv`` writes): these columns in this order, one
# ``rubric_<trait>`` column per global trait between the two, ``question_specific_rubrics``
# when a trait is not global. Each cell is built as that function builds it, from the result's
# parts; a missing part gives the value Karenina writes for it (False, 0 or blank).
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
)
# Karenina writes only these columns when a run has no results.
_CSV_EMPTY = (
    "question_id",
    "success",
    "error",
    "question_text",
    "raw_llm_response",
    "keywords",
    "export_timestamp",
    "karenina_version",
    "job_id",
)
# Deep-judgment fields Karenina writes as they are (the others go through its JSON helper); a
# missing part gives their defaults (False, 0, None).
_DJ_PLAIN = frozenset(
    {
        "deep_judgment_mode",
        "deep_judgment_performed",
        "deep_judgment_model_calls",
        "deep_judgment_excerpt_retry_count",
        "deep_judgment_search_enabled",
        "deep_judgment_rubric_performed",
        "total_deep_judgment_model_calls",
        "total_traits_evaluated",
        "total_excerpt_retries",
    }
)


def _js(value: Any) -> str:
    """Karenina's ``_safe_json_serialize``: "" for anything falsy (False, 0, {}, [] too)."""
    return json.dumps(value) if value else ""


def _float(value: Any) -> Any:
    # Karenina's model holds a float field as a float: an integer in the file prints as 1.0.
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def csv_row(
    row: dict[str, Any], header: dict[str, Any], global_traits: list[str], specific: list[str], stamp: str
) -> dict[str, Any]:
    meta = row.get("metadata") or {}
    tpl = row.get("template")
    rub = row.get("rubric")
    dj = row.get("deep_judgment")
    djr = row.get("deep_judgment_rubric")
    failure = meta.get("failure") if isinstance(meta.get("failure"), dict) else None
    run_meta = header.get("metadata") or {}
    t_ = tpl or {}
    out: dict[str, Any] = {
        "question_id": meta.get("question_id"),
        "success": failure is None,
        "error": failure.get("reason") if failure else "",
        "question_text": meta.get("question_text"),
        "keywords": _js(meta.get("keywords")),
        "answering_model": display_string(meta.get("answering")),
        "parsing_model": display_string(meta.get("parsing")),
        "replicate": meta.get("replicate") or "",
        "execution_time": _float(meta.get("execution_time")),
        "timestamp": meta.get("timestamp"),
        "run_name": meta.get("run_name") or "",
        "raw_llm_response": t_.get("raw_llm_response", "") if tpl is not None else "",
        "parsed_gt_response": _js(t_.get("parsed_gt_response")),
        "parsed_llm_response": _js(t_.get("parsed_llm_response")),
        "template_verification_performed": t_.get("template_verification_performed", False),
        "verify_result": _js(t_.get("verify_result")),
        "verify_granular_result": _js(t_.get("verify_granular_result")),
        "answering_system_prompt": meta.get("answering_system_prompt") or "",
        "parsing_system_prompt": meta.get("parsing_system_prompt") or "",
        "embedding_check_performed": t_.get("embedding_check_performed", False),
        "embedding_similarity_score": _float(t_.get("embedding_similarity_score")) or "",
        "embedding_override_applied": t_.get("embedding_override_applied", False),
        "embedding_model_used": t_.get("embedding_model_used") or "",
        "answering_mcp_servers": _js(t_.get("answering_mcp_servers")),
        "usage_metadata": _js(t_.get("usage_metadata")),
        "agent_metrics": _js(t_.get("agent_metrics")),
        "rubric_evaluation_performed": (rub or {}).get("rubric_evaluation_performed", False),
        "metric_trait_confusion_lists": _js((rub or {}).get("metric_trait_confusion_lists")),
        "metric_trait_metrics": _js(_metric_scores((rub or {}).get("metric_trait_scores"))),
        "export_timestamp": stamp,
        "karenina_version": run_meta.get("karenina_version"),
        "job_id": run_meta.get("job_id"),
    }
    for part, fields in ((dj, DEEP_JUDGMENT), (djr, DEEP_JUDGMENT_RUBRIC)):
        for f in fields:
            if part is None:
                out[f.name] = f.default if f.name in _DJ_PLAIN else ""
            elif f.name in _DJ_PLAIN:
                out[f.name] = part.get(f.name, f.default)
            else:
                out[f.name] = _js(part.get(f.name))
    merged: dict[str, Any] = {}
    if rub is not None:
        for kind in ("llm", "regex", "callable", "metric"):
            scores = rub.get(SCORE_DICTS[kind]) or {}
            merged.update(_metric_scores(scores) if kind == "metric" else scores)
    for name in global_traits:
        out["rubric_" + name] = str(merged.get(name, "")) if rub is not None else ""
    if specific:
        chosen = {n: merged[n] for n in specific if n in merged}
        out["question_specific_rubrics"] = _js(chosen) or "{}"
    return out


def _metric_scores(scores: Any) -> Any:
    """Metric values as Karenina's model holds them (floats)."""
    if not isinstance(scores, dict):
        return scores
    return {k: {m: _float(v) for m, v in ms.items()} if isinstance(ms, dict) else ms for k, ms in scores.items()}


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


def export_stamp() -> str:
    """The export time Karenina's CSV exporter writes in every row (the time of the export)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def _usable(name: str) -> bool:
    """Karenina's ``_validate_trait_name``: the exporter leaves out (with a warning) a trait whose
    name is empty, longer than 255 characters or holds a line break or NUL."""
    return bool(name) and len(name) <= 255 and not any(c in name for c in "\n\r\0")


def write_csv(
    fh: IO[str], header: dict[str, Any], rows: Iterable[dict[str, Any]], global_names: list[str], scored: set[str]
) -> int:
    """Karenina's CSV: one row per result; one ``rubric_<trait>`` column per trait of the run's
    global rubric that a result scores, the other scored traits in ``question_specific_rubrics``
    (as JSON). ``karenina_version`` is the run's (the Karenina that made the results), where
    Karenina's exporter writes its own."""
    seen = {n for n in scored if _usable(n)}
    known = {n for n in global_names if _usable(n)}
    global_traits = sorted(seen & known)
    specific = sorted(seen - known)
    stamp = export_stamp()
    it = iter(rows)
    first = next(it, None)
    # lineterminator: the csv module's default, "\r\n", as Karenina's DictWriter writes it.
    if first is None:
        csv.writer(fh).writerow(_CSV_EMPTY)
        return 0
    writer = csv.DictWriter(fh, fieldnames=csv_columns(global_traits, specific))
    writer.writeheader()
    n = 0
    for row in _chain_one(first, it):
        writer.writerow(csv_row(row, header, global_traits, specific, stamp))
        n += 1
    return n


def _chain_one(first: dict[str, Any], rest: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield first
    yield from rest
