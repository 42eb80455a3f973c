"""Synthetic Karenina results exports (format 2.2) for a checkpoint: deterministic, full rows.

Each row holds every field of Karenina's ``VerificationResult`` in declaration order, as
Karenina's streaming writer lays them out (verification.md §10-11), and exercises every
structure the RDF model has nodes for: failures of each group, token usage per stage, per-field
results and scores, rubric scores of each kind (LLM boolean/score/literal, regex, callable,
metric with confusion lists), provenance, deep judgment.

    python benchmarks/generate_results.py CHECKPOINT OUT.json [--models 3] [--judges 1]
        [--replicates 1] [--seed 0] [--rows N] [--job-id ID]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from karenina_rdf.rdf._ids import template_id
from karenina_rdf.results._export import write_export
from karenina_rdf.results._model import DEEP_JUDGMENT, FAILURE_GROUPS, METADATA, ROOT, RUBRIC, TEMPLATE, canonical_key

JSON = dict[str, Any]
MODELS = [
    {"interface": "langchain", "model_name": "gpt-4o", "tools": [], "config_id": None},
    {"interface": "langchain", "model_name": "claude-haiku-4-5", "tools": [], "config_id": None},
    {"interface": "openrouter", "model_name": "llama-3.3-70b", "tools": [], "config_id": None},
    {"interface": "langchain", "model_name": "gpt-4o-mini", "tools": ["pubmed"], "config_id": "with-tools"},
]
JUDGES = [
    {"interface": "langchain", "model_name": "gpt-4.1", "tools": [], "config_id": None},
    {"interface": "langchain", "model_name": "claude-sonnet-4-5", "tools": [], "config_id": "judge"},
]
_FAILURES = ["timeout", "rate_limit", "parsing", "abstention", "content", "unexpected_error"]


def _fresh(fields: Any) -> JSON:
    return {f.name: json.loads(json.dumps(f.default)) for f in fields}


def questions_of(checkpoint: JSON) -> list[JSON]:
    """(id, text, template id, question trait names) of each finished question of a checkpoint."""
    out = []
    for item in checkpoint.get("dataFeedElement", []):
        q = item["item"]
        props = {p.get("name"): p.get("value") for p in q.get("additionalProperty", [])}
        code = (q.get("hasPart") or {}).get("text", "") if isinstance(q.get("hasPart"), dict) else ""
        out.append(
            {
                "id": item.get("@id"),
                "text": q["text"],
                "raw_answer": (q.get("acceptedAnswer") or {}).get("text"),
                "keywords": q.get("keywords"),
                "template_id": template_id(code),
                "traits": [_trait_spec(r) for r in q.get("rating", []) if "name" in r],
                "finished": props.get("finished", True),
            }
        )
    return out


def global_traits(checkpoint: JSON) -> list[JSON]:
    return [_trait_spec(r) for r in checkpoint.get("rating", []) if "name" in r]


def rubric_definition(checkpoint: JSON) -> JSON | None:
    """The global rubric as Karenina's exporter dumps it (``exclude_unset``): traits by kind."""
    out: dict[str, list[JSON]] = {}
    for rating in checkpoint.get("rating", []):
        if "name" not in rating:
            continue
        spec = _trait_spec(rating)
        entry: JSON = {"name": spec["name"], "description": rating.get("description", "")}
        if spec["kind"] == "llm":
            entry["kind"] = spec["llm_kind"]
            if spec["llm_kind"] == "score":
                entry["min_score"], entry["max_score"] = spec["range"]
        entry["higher_is_better"] = spec["higher_is_better"]
        out.setdefault(spec["kind"] + "_traits", []).append(entry)
    return out or None


def _trait_spec(rating: JSON) -> JSON:
    """What a score for this trait looks like: its kind as Karenina decodes it (LLM boolean,
    score with its range, literal with its classes; regex, callable, metric)."""
    props = {p.get("name"): p.get("value") for p in rating.get("additionalProperty", []) if isinstance(p, dict)}
    kind = _trait_kind(rating)
    spec: JSON = {"name": rating["name"], "kind": kind, "higher_is_better": props.get("higher_is_better", True)}
    if kind == "llm":
        llm_kind = props.get("kind")
        best, worst = rating.get("bestRating"), rating.get("worstRating")
        if not isinstance(llm_kind, str):
            llm_kind = "boolean" if (best, worst) == (1, 0) else "score"
        spec["llm_kind"] = llm_kind
        low = props.get("min_score", worst if isinstance(worst, (int, float)) else 1)
        high = props.get("max_score", best if isinstance(best, (int, float)) else 5)
        spec["range"] = (int(low if low is not None else 1), int(high if high is not None else 5))
        classes = props.get("classes")
        if isinstance(classes, str):
            classes = json.loads(classes)
        spec["classes"] = list(classes) if isinstance(classes, dict) else ["poor", "fair", "good"]
    return spec


def _llm_score(rng: random.Random, spec: JSON) -> tuple[Any, str | None]:
    """(score, label) for an LLM trait: a boolean, an integer in range, or a class index."""
    if spec.get("llm_kind") == "boolean":
        return rng.random() < 0.7, None
    if spec.get("llm_kind") == "literal":
        label = rng.choice(spec["classes"])
        return spec["classes"].index(label), label
    low, high = spec.get("range", (1, 5))
    return rng.randint(low, high), None


def _trait_kind(rating: JSON) -> str:
    atype = str(rating.get("additionalType", ""))
    if "Regex" in atype:
        return "regex"
    if "Metric" in atype:
        return "metric"
    if "Callable" in atype:
        return "callable"
    return "llm"


def _row(
    rng: random.Random,
    q: JSON,
    answering: JSON,
    parsing: JSON,
    replicate: int | None,
    skill: float,
    gtraits: list[JSON],
    run_name: str | None,
    n: int,
    light: bool = False,
) -> JSON:
    meta = _fresh(METADATA)
    tpl = _fresh(TEMPLATE)
    stamp = f"2026-05-{1 + n % 28:02d} {n % 24:02d}:{n % 60:02d}:{(n * 7) % 60:02d}"
    meta.update(
        question_id=q["id"],
        template_id=q["template_id"],
        question_text=q["text"],
        raw_answer=q["raw_answer"],
        keywords=q["keywords"],
        answering=json.loads(json.dumps(answering)),  # a copy: callers may edit rows
        parsing=json.loads(json.dumps(parsing)),
        execution_time=round(rng.uniform(0.5, 30.0), 3),
        timestamp=stamp,
        run_name=run_name,
        replicate=replicate,
        evaluation_mode="template_and_rubric",
    )
    identity = {
        "answering": canonical_key(answering),
        "parsing": canonical_key(parsing),
        "question_id": q["id"],
        "replicate": replicate,
        "scenario_id": None,
        "scenario_node": None,
        "scenario_turn": None,
        "timestamp": stamp,
    }
    meta["result_id"] = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    failed = rng.random() < 0.04
    tpl["raw_llm_response"] = f"Answer {n}: " + rng.choice(["yes", "no", "BRCA1", "kinase", "unclear"])
    if light:  # template_only, nothing but the verdict: the smallest row Karenina writes
        meta["evaluation_mode"] = "template_only"
        tpl["template_verification_performed"] = True
        tpl["verify_result"] = rng.random() < skill
        return {
            "metadata": meta,
            "template": tpl,
            "rubric": None,
            "deep_judgment": None,
            "deep_judgment_rubric": None,
            **_fresh(ROOT),
        }
    usage = {}
    for stage in ("answer_generation", "parsing", "rubric_evaluation"):
        i, o = rng.randint(200, 2000), rng.randint(20, 400)
        usage[stage] = {
            "input_tokens": i,
            "output_tokens": o,
            "total_tokens": i + o,
            "model": answering["model_name"] if stage == "answer_generation" else parsing["model_name"],
            "input_token_details": {},
            "output_token_details": {},
        }
    usage["total"] = {
        "input_tokens": sum(u["input_tokens"] for u in usage.values()),
        "output_tokens": sum(u["output_tokens"] for u in usage.values()),
        "total_tokens": sum(u["total_tokens"] for u in usage.values()),
    }
    tpl["usage_metadata"] = usage
    rubric = None
    if failed:
        category = rng.choice(_FAILURES)
        meta["failure"] = {
            "category": category,
            "stage": "generate_answer" if FAILURE_GROUPS[category] == "retry" else "parse_template",
            "reason": f"{category} in task {n}",
            "details": {"error_message": category} if category != "content" else None,
            "group": FAILURE_GROUPS[category],
        }
        if category == "content":
            tpl["template_verification_performed"] = True
            tpl["verify_result"] = False
    else:
        ok = rng.random() < skill
        tpl["template_verification_performed"] = True
        tpl["verify_result"] = ok
        tpl["parsed_gt_response"] = {"answer": q["raw_answer"]}
        tpl["parsed_llm_response"] = {"answer": tpl["raw_llm_response"]}
        tpl["field_results"] = {"answer": ok, "evidence": rng.random() < 0.7}
        tpl["field_scores"] = {"answer": 1.0 if ok else 0.0, "evidence": round(rng.random(), 3)}
        if not ok:
            meta["failure"] = {
                "category": "content",
                "stage": "verify_template",
                "reason": "verify() returned False",
                "details": None,
                "group": "content",
            }
        rubric = _fresh(RUBRIC)
        rubric["rubric_evaluation_performed"] = True
        rubric["rubric_evaluation_strategy"] = "batch"
        provenance = {}
        for t in gtraits:
            provenance[t["name"]] = "global"
            kind = t["kind"]
            if kind == "llm":
                score, label = _llm_score(rng, t)
                rubric["llm_trait_scores"] = (rubric["llm_trait_scores"] or {}) | {t["name"]: score}
                if label is not None:
                    rubric["llm_trait_labels"] = (rubric["llm_trait_labels"] or {}) | {t["name"]: label}
            elif kind == "regex":
                rubric["regex_trait_scores"] = (rubric["regex_trait_scores"] or {}) | {t["name"]: rng.random() < 0.8}
            elif kind == "callable":
                rubric["callable_trait_scores"] = (rubric["callable_trait_scores"] or {}) | {
                    t["name"]: rng.random() < 0.5
                }
            elif kind == "metric":
                tp = [f"item {k}" for k in range(rng.randint(0, 4))]
                fp = [f"wrong {k}" for k in range(rng.randint(0, 2))]
                fn = [f"missed {k}" for k in range(rng.randint(0, 2))]
                p = len(tp) / (len(tp) + len(fp)) if tp or fp else 0.0
                r = len(tp) / (len(tp) + len(fn)) if tp or fn else 0.0
                f1 = 2 * p * r / (p + r) if p + r else 0.0
                rubric["metric_trait_scores"] = (rubric["metric_trait_scores"] or {}) | {
                    t["name"]: {"precision": p, "recall": r, "f1": f1}
                }
                rubric["metric_trait_confusion_lists"] = (rubric["metric_trait_confusion_lists"] or {}) | {
                    t["name"]: {"tp": tp, "fn": fn, "fp": fp, "tn": []}
                }
        for spec in q["traits"]:
            name = spec["name"]
            provenance[name] = "question_specific"
            if spec["kind"] == "regex":
                rubric["regex_trait_scores"] = (rubric["regex_trait_scores"] or {}) | {name: rng.random() < 0.8}
                continue
            score, label = _llm_score(rng, spec)
            rubric["llm_trait_scores"] = (rubric["llm_trait_scores"] or {}) | {name: score}
            if label is not None:
                rubric["llm_trait_labels"] = (rubric["llm_trait_labels"] or {}) | {name: label}
        rubric["trait_provenance"] = provenance or None
    row: JSON = {
        "metadata": meta,
        "template": tpl,
        "rubric": rubric,
        "deep_judgment": None,
        "deep_judgment_rubric": None,
    }
    if n % 50 == 7:
        dj = _fresh(DEEP_JUDGMENT)
        dj.update(
            deep_judgment_mode="full",
            deep_judgment_performed=True,
            extracted_excerpts={"answer": [{"text": "BRCA1", "confidence": "high", "similarity_score": 0.93}]},
            deep_judgment_stages_completed=["excerpts", "reasoning", "parameters"],
            deep_judgment_model_calls=3,
        )
        row["deep_judgment"] = dj
    row.update(_fresh(ROOT))
    return row


def generate_rows(
    checkpoint: JSON,
    *,
    models: int = 3,
    judges: int = 1,
    replicates: int = 1,
    seed: int = 0,
    run_name: str | None = None,
    limit: int | None = None,
    skip: frozenset[str] = frozenset(),
    light: bool = False,
) -> Iterator[JSON]:
    """Rows of a run over the finished questions: questions × models × judges × replicates."""
    rng = random.Random(seed)
    qs = [q for q in questions_of(checkpoint) if q["finished"] is not False and q["id"] not in skip]
    gtraits = global_traits(checkpoint)
    skills = [0.55 + 0.35 * rng.random() for _ in range(models)]
    n = 0
    for q in qs:
        difficulty = rng.random() * 0.4
        for m in range(models):
            for judge in JUDGES[:judges]:
                for rep in range(1, replicates + 1):
                    if limit is not None and n >= limit:
                        return
                    yield _row(
                        rng,
                        q,
                        MODELS[m % len(MODELS)],
                        judge,
                        rep if replicates > 1 else None,
                        skills[m] - difficulty,
                        gtraits,
                        run_name,
                        n,
                        light,
                    )
                    n += 1


def header(checkpoint: JSON, *, models: int, judges: int, job_id: str, rows: int, seed: int) -> JSON:
    config = {
        "answering_models": [
            {"provider": "openai", "name": m["model_name"], "temperature": 0.1, "interface": m["interface"]}
            for m in MODELS[:models]
        ],
        "parsing_models": [
            {"provider": "openai", "name": j["model_name"], "temperature": 0.0, "interface": j["interface"]}
            for j in JUDGES[:judges]
        ],
    }
    start = 1_777_000_000.0 + seed * 86_400
    return {
        "format_version": "2.2",
        "metadata": {
            "export_timestamp": "2026-05-02 10:00:00 UTC",
            "karenina_version": "0.9.0",
            "job_id": job_id,
            "verification_config": config,
            "job_summary": {
                "total_questions": len(checkpoint.get("dataFeedElement", [])),
                "successful_count": rows,
                "failed_count": 0,
                "start_time": start,
                "end_time": start + 3600.5,
                "total_duration": 3600.5,
                "is_complete": True,
            },
        },
        "shared_data": {"rubric_definition": rubric_definition(checkpoint)},
    }


def write_results(
    checkpoint: JSON,
    path: str | Path,
    *,
    models: int = 3,
    judges: int = 1,
    replicates: int = 1,
    seed: int = 0,
    job_id: str | None = None,
    run_name: str | None = None,
    limit: int | None = None,
    skip: frozenset[str] = frozenset(),
) -> int:
    """Write the export in Karenina's byte layout; returns the number of rows."""
    rows = list(
        generate_rows(
            checkpoint,
            models=models,
            judges=judges,
            replicates=replicates,
            seed=seed,
            run_name=run_name,
            limit=limit,
            skip=skip,
        )
    )
    head = header(
        checkpoint, models=models, judges=judges, job_id=job_id or f"synthetic-{seed}", rows=len(rows), seed=seed
    )
    with open(path, "w", encoding="utf-8") as fh:
        return write_export(fh, head, iter(rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--judges", type=int, default=1)
    ap.add_argument("--replicates", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--job-id", default=None)
    ap.add_argument("--run-name", default=None)
    ap.add_argument(
        "--skip-questions-of",
        action="append",
        default=[],
        metavar="CHECKPOINT",
        help="leave out questions whose id is also in this checkpoint (keeps a run's question ids unambiguous)",
    )
    args = ap.parse_args(argv)
    checkpoint = json.loads(Path(args.checkpoint).read_text(encoding="utf-8"))
    skip = frozenset(
        q["id"] for other in args.skip_questions_of for q in questions_of(json.loads(Path(other).read_text("utf-8")))
    )
    n = write_results(
        checkpoint,
        args.out,
        models=args.models,
        judges=args.judges,
        replicates=args.replicates,
        seed=args.seed,
        job_id=args.job_id,
        run_name=args.run_name,
        limit=args.rows,
        skip=skip,
    )
    print(f"{n} rows → {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
