"""Named queries over verification results, checked against the export files themselves.

The store holds the three example benchmarks and runs plus a crafted run with what the examples
lack: null verify_results (failed early, rubric only), a question that is not stored, failures of
several groups, lower-is-better traits (from the run's rubric definition), an even number of
scores, a null token count, and answering models shared with the example runs (one model node
for several runs, which a careless query counts once per graph describing it). Every expected
value is computed here in plain Python from the JSON files, never read back from the store.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from karenina_rdf import KARENINA, Store, named_queries
from karenina_rdf.cli import app
from tests.conftest import EXAMPLES, load_json

JSON = dict[str, Any]
runner = CliRunner()

MOL, PHARMA = "Molecular biology examples", "Pharmacology examples"
TP53 = "urn:uuid:question-what-is-the-main-function-of-the-protein-encoded-b-8dac577c"
CFTR = "urn:uuid:question-what-kind-of-protein-does-the-cftr-gene-encode-45dce39e"
LOSARTAN = "urn:uuid:question-which-receptor-does-losartan-block-39636e14"
LAMIN = "urn:uuid:question-in-which-cellular-structure-is-lamin-a-mainly-loca-8a5d1bba"
NOT_STORED = "urn:uuid:question-nobody-stored"
CRAFTED = "crafted-2026-07"

GPT4O: JSON = {"interface": "langchain", "model_name": "gpt-4o", "tools": [], "config_id": None}
MISTRAL: JSON = {"interface": "openrouter", "model_name": "mistral-large", "tools": ["pubmed"], "config_id": "t"}
LLAMA: JSON = {"interface": "openrouter", "model_name": "llama-3.3-70b", "tools": [], "config_id": None}
GPT41: JSON = {"interface": "langchain", "model_name": "gpt-4.1", "tools": [], "config_id": None}
SONNET: JSON = {"interface": "langchain", "model_name": "claude-sonnet-4-5", "tools": [], "config_id": "judge"}

RESULTS_QUERIES = {
    "pass-rate-by-model",
    "pass-rate-by-judge",
    "pass-rate-by-benchmark",
    "pass-rate-by-keyword",
    "question-model-matrix",
    "questions-all-models-fail",
    "trait-aggregates-by-model",
    "trait-metrics-by-model",
    "token-usage",
    "failure-counts",
    "question-history",
    "run-comparison",
}


# -- the crafted run ---------------------------------------------------------------------------


def _failure(category: str, group: str) -> JSON:
    return {"category": category, "stage": "s", "reason": f"{category} failure", "details": None, "group": group}


def _usage(*stages: tuple[str, int | None, int | None]) -> JSON:
    out: JSON = {}
    for stage, i, o in stages:
        out[stage] = {"input_tokens": i, "output_tokens": o, "total_tokens": (i or 0) + (o or 0)}
    return out


def _row(
    qid: str,
    answering: JSON,
    judge: JSON,
    verdict: bool | None,
    *,
    replicate: int | None = 1,
    failure: JSON | None = None,
    performed: bool = True,
    llm: JSON | None = None,
    regex: JSON | None = None,
    metric: JSON | None = None,
    usage: JSON | None = None,
) -> JSON:
    rubric = None
    if llm or regex or metric:
        rubric = {
            "rubric_evaluation_performed": True,
            "llm_trait_scores": llm,
            "regex_trait_scores": regex,
            "metric_trait_scores": metric,
        }
    return {
        "metadata": {
            "question_id": qid,
            "template_id": "crafted",
            "failure": failure,
            "answering": answering,
            "parsing": judge,
            "replicate": replicate,
        },
        "template": {"template_verification_performed": performed, "verify_result": verdict, "usage_metadata": usage},
        "rubric": rubric,
        "deep_judgment": None,
        "deep_judgment_rubric": None,
    }


def crafted_export() -> JSON:
    rows = [
        _row(
            TP53,
            GPT4O,
            GPT41,
            True,
            llm={"completeness": 5, "verbosity": 3},
            regex={"no_hedging": True, "concise": True},
            # an agentic stage whose name sorts after "total": total must still come last
            usage=_usage(("answer_generation", 100, 20), ("parsing", 50, 5), ("web_search", 9, 1), ("total", 159, 26)),
        ),
        _row(  # failed before a verdict: no verify_result, no rubric
            TP53,
            GPT4O,
            GPT41,
            None,
            replicate=2,
            failure=_failure("timeout", "retry"),
            performed=False,
            usage=_usage(("answer_generation", 80, None), ("total", 80, None)),
        ),
        _row(
            TP53,
            GPT4O,
            SONNET,
            False,
            failure=_failure("content", "content"),
            llm={"completeness": 2, "verbosity": 4, "tone": 2},  # tone: stored nowhere, direction unknown
            regex={"concise": False},
            usage=_usage(("answer_generation", 90, 30), ("parsing", 40, 4), ("total", 130, 34)),
        ),
        _row(
            TP53,
            MISTRAL,
            GPT41,
            None,
            failure=_failure("abstention", "abstained"),
            llm={"verbosity": 1},
            regex={"concise": True},
        ),
        _row(
            CFTR,
            MISTRAL,
            GPT41,
            False,
            failure=_failure("content", "content"),
            llm={"verbosity": 2},
            regex={"concise": False},
            usage=_usage(("answer_generation", 70, 7), ("total", 70, 7)),
        ),
        # rubric only: no template verification, so no verdict and no failure either
        _row(CFTR, MISTRAL, SONNET, None, performed=False, llm={"verbosity": 2}, regex={"concise": True}),
        _row(CFTR, GPT4O, SONNET, False, failure=_failure("content", "content")),
        # a model without a verdict on a question every other model fails: not one of its models
        _row(CFTR, LLAMA, GPT41, None, failure=_failure("connection", "retry"), performed=False),
        _row(
            LOSARTAN,
            GPT4O,
            GPT41,
            True,
            llm={"names_target": True},  # a boolean trait, as the examples score it
            metric={"mechanism_recall": {"precision": 0.5, "recall": 1.0, "f1": None}},  # a null metric
        ),
        _row(LAMIN, MISTRAL, GPT41, None, failure=_failure("timeout", "retry"), performed=False),  # no verdict at all
        # a group that contradicts the taxonomy (Karenina recomputes it; a hand-edited file may not)
        _row(LOSARTAN, MISTRAL, SONNET, None, failure=_failure("rate_limit", "system"), performed=False),
        _row(TP53, MISTRAL, SONNET, None, failure=_failure("parsing", "system")),
        _row(NOT_STORED, GPT4O, GPT41, True),
    ]
    start = 1_783_000_000.0  # after the example runs: question-history lists it last
    return {
        "format_version": "2.2",
        "metadata": {
            "export_timestamp": "2026-07-01 10:00:00 UTC",
            "karenina_version": "0.9.0",
            "job_id": CRAFTED,
            "job_summary": {"total_questions": 4, "start_time": start, "end_time": start + 60.0, "is_complete": True},
        },
        "shared_data": {
            "rubric_definition": {
                "llm_traits": [
                    {"name": "verbosity", "kind": "score", "higher_is_better": False},
                    # the stored trait says higher is better, and the stored trait wins
                    {"name": "completeness", "kind": "score", "higher_is_better": False},
                ],
                "regex_traits": [{"name": "concise", "higher_is_better": False}],
            }
        },
        "results": rows,
    }


@pytest.fixture(scope="module")
def crafted_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("results") / "crafted.json"
    path.write_text(json.dumps(crafted_export(), indent=1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def store(crafted_path: Path) -> Iterator[Store]:
    s = Store.memory()
    report = s.import_paths([EXAMPLES])
    assert not report.errors and len(report.results) == 3
    s.import_results(crafted_path)
    yield s
    s.close()


# -- what the files say ------------------------------------------------------------------------


def label(identity: JSON) -> str:
    """Karenina's ModelIdentity.display_string (verification.md §10), written out again."""
    text = f"{identity['interface']}:{identity['model_name']}"
    if identity.get("config_id"):
        text += f" ({identity['config_id']})"
    if identity.get("tools"):
        text += " +[" + ", ".join(identity["tools"]) + "]"
    return text


def names(identity: JSON) -> set[str]:
    """What a model parameter may say: the label, the model name or the canonical key."""
    key = f"{identity['interface']}:{identity['model_name']}"
    if identity.get("config_id"):
        key += f":{identity['config_id']}"
    key += ":" + "|".join(sorted(identity.get("tools") or []))
    return {label(identity), identity["model_name"], key}


def _hib(trait: JSON) -> bool | None:
    for p in trait.get("additionalProperty", []):
        if p.get("name") == "higher_is_better":
            value = p.get("value")  # a metric trait's may be absent: direction unknown
            return value if isinstance(value, bool) else None
    return None


@dataclass
class Question:
    benchmark: str
    text: str
    keywords: list[str]
    traits: dict[str, bool | None]  # question-specific trait → higher_is_better
    global_traits: dict[str, bool | None]


@dataclass
class Result:
    run: str
    start: float
    qid: str
    model: str
    model_names: set[str]
    judge: str
    judge_names: set[str]
    replicate: int | None
    verdict: bool | None
    outcome: str
    failure: JSON | None
    row: JSON
    directions: dict[str, bool | None]  # the run's rubric definition


def _questions() -> dict[str, Question]:
    out: dict[str, Question] = {}
    for path in sorted(EXAMPLES.glob("*.jsonld")):
        doc = load_json(path)
        globals_ = {r["name"]: _hib(r) for r in doc.get("rating", [])}
        for element in doc["dataFeedElement"]:
            item = element["item"]
            out.setdefault(
                element["@id"],
                Question(
                    doc["name"],
                    item["text"],
                    list(item.get("keywords") or []),
                    {r["name"]: _hib(r) for r in item.get("rating", [])},
                    globals_,
                ),
            )
    return out


def _outcome(row: JSON) -> str:
    """The EARL outcome as docs/data-model.md §9 defines it."""
    template = row.get("template") or {}
    if template.get("verify_result") is True:
        return "passed"
    if template.get("verify_result") is False:
        return "failed"
    if row["metadata"].get("failure"):
        return "cantTell"
    return "cantTell" if template.get("template_verification_performed") else "inapplicable"


def _directions(export: JSON) -> dict[str, bool | None]:
    out: dict[str, bool | None] = {}
    for kind, traits in export["shared_data"]["rubric_definition"].items():
        for t in traits:
            out[t["name"]] = t.get("higher_is_better", None if kind.startswith("metric") else True)
    return out


def _results(crafted: Path) -> list[Result]:
    out = []
    for path in [*sorted((EXAMPLES / "results").glob("*.json")), crafted]:
        export = load_json(path)
        run = export["metadata"]["job_id"]
        start = export["metadata"]["job_summary"]["start_time"]
        for row in export["results"]:
            meta = row["metadata"]
            verdict = (row.get("template") or {}).get("verify_result")
            out.append(
                Result(
                    run,
                    start,
                    meta["question_id"],
                    label(meta["answering"]),
                    names(meta["answering"]),
                    label(meta["parsing"]),
                    names(meta["parsing"]),
                    meta.get("replicate"),
                    verdict if isinstance(verdict, bool) else None,
                    _outcome(row),
                    meta.get("failure"),
                    row,
                    _directions(export),
                )
            )
    return out


@dataclass
class Data:
    results: list[Result]
    questions: dict[str, Question]


@pytest.fixture(scope="module")
def data(crafted_path: Path) -> Data:
    return Data(_results(crafted_path), _questions())


def _num(x: float) -> float:
    return round(float(x), 9)


def _pass(group: list[Result]) -> tuple[Any, ...]:
    verdicts = [r.verdict for r in group if r.verdict is not None]
    rate = _num(sum(verdicts) / len(verdicts)) if verdicts else None
    return (len(group), len(verdicts), sum(verdicts), rate)


def grouped(results: Iterable[Result], keys: Callable[[Result], Iterable[tuple[Any, ...]]]) -> dict[Any, list[Result]]:
    out: dict[Any, list[Result]] = defaultdict(list)
    for r in results:
        for k in keys(r):
            out[k].append(r)
    return out


# -- the expected answers, one function per query ----------------------------------------------


def _where(d: Data, p: JSON) -> list[Result]:
    """The results the optional parameters run, benchmark, model and judge keep."""
    out = []
    for r in d.results:
        q = d.questions.get(r.qid)
        if "run" in p and r.run != p["run"]:
            continue
        if "benchmark" in p and (q is None or q.benchmark != p["benchmark"]):
            continue
        if "model" in p and p["model"] not in r.model_names:
            continue
        if "judge" in p and p["judge"] not in r.judge_names:
            continue
        out.append(r)
    return out


def exp_pass_by_model(d: Data, p: JSON) -> dict[Any, Any]:
    return {k: _pass(g) for k, g in grouped(_where(d, p), lambda r: [(r.model,)]).items()}


def exp_pass_by_judge(d: Data, p: JSON) -> dict[Any, Any]:
    return {k: _pass(g) for k, g in grouped(_where(d, p), lambda r: [(r.judge,)]).items()}


def exp_pass_by_benchmark(d: Data, p: JSON) -> dict[Any, Any]:
    stored = [r for r in _where(d, p) if r.qid in d.questions]
    return {k: _pass(g) for k, g in grouped(stored, lambda r: [(d.questions[r.qid].benchmark,)]).items()}


def exp_pass_by_keyword(d: Data, p: JSON) -> dict[Any, Any]:
    stored = [r for r in _where(d, p) if r.qid in d.questions]
    by = grouped(stored, lambda r: [(k,) for k in set(d.questions[r.qid].keywords)])
    return {k: _pass(g) for k, g in by.items()}


def exp_matrix(d: Data, p: JSON) -> dict[Any, Any]:
    by = grouped(_where(d, p), lambda r: [(r.qid, r.model)])
    return {k: (*_pass(g), d.questions[k[0]].text if k[0] in d.questions else None) for k, g in by.items()}


def exp_all_fail(d: Data, p: JSON) -> dict[Any, Any]:
    out = {}
    for (qid,), g in grouped(_where(d, p), lambda r: [(r.qid,)]).items():
        verdicts = [r.verdict for r in g if r.verdict is not None]
        if verdicts and not any(verdicts):
            q = d.questions.get(qid)
            models = {r.model for r in g if r.verdict is not None}
            out[(qid,)] = (len(models), len(verdicts), len(g), q.benchmark if q else None)
    return out


SCORE_DICTS = {"llm": "llm_trait_scores", "regex": "regex_trait_scores", "callable": "callable_trait_scores"}


def _scored(d: Data, r: Result, name: str) -> tuple[bool, bool | None]:
    """(a stored trait is scored, higher_is_better): question traits, then the benchmark's, then
    the run's rubric definition, as docs/data-model.md §9 says."""
    q = d.questions.get(r.qid)
    if q is not None:
        for traits in (q.traits, q.global_traits):
            if name in traits:
                return True, traits[name]
    return False, r.directions.get(name)


def _majority(values: list[float]) -> float:
    counts = Counter(values)
    top = max(counts.values())
    return min(v for v, c in counts.items() if c == top)


def exp_traits(d: Data, p: JSON) -> dict[Any, Any]:
    values: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    meta: dict[tuple[str, str, str], tuple[bool, bool | None]] = {}
    for r in _where(d, p):
        rubric = r.row.get("rubric") or {}
        for kind, key in SCORE_DICTS.items():
            for name, v in (rubric.get(key) or {}).items():
                if isinstance(v, (bool, int, float)):
                    values[(name, kind, r.model)].append(v)
                    meta[(name, kind, r.model)] = _scored(d, r, name)
    out = {}
    for k, vs in values.items():
        xs = [float(v) for v in vs]
        boolean = all(isinstance(v, bool) for v in vs)
        stored, hib = meta[k]
        mean = statistics.fmean(xs)
        majority: Any = _majority(xs)
        better = None if hib is None else mean if hib else (1 - mean if boolean else -mean)
        out[k] = (
            len(xs),
            _num(mean),
            _num(statistics.median(xs)),
            (majority == 1.0) if boolean else _num(majority),
            hib,
            None if better is None else _num(better),
            stored,
        )
    return out


def exp_metrics(d: Data, p: JSON) -> dict[Any, Any]:
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in _where(d, p):
        for name, metrics in ((r.row.get("rubric") or {}).get("metric_trait_scores") or {}).items():
            for metric, v in metrics.items():
                if isinstance(v, (int, float)):
                    values[(name, metric, r.model)].append(float(v))
    return {k: (len(v), _num(statistics.fmean(v)), _num(min(v)), _num(max(v))) for k, v in values.items()}


def exp_tokens(d: Data, p: JSON) -> dict[Any, Any]:
    sums: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in _where(d, p):
        for stage, counts in ((r.row.get("template") or {}).get("usage_metadata") or {}).items():
            s = sums[(r.run, r.model, stage)]
            s[0] += 1
            for i, key in enumerate(("input_tokens", "output_tokens", "total_tokens"), 1):
                s[i] += counts.get(key) or 0  # a null count adds nothing
    return {k: tuple(v) for k, v in sums.items()}


def exp_compare(d: Data, p: JSON) -> dict[Any, Any]:
    by = grouped(
        (r for r in d.results if r.verdict is not None and r.run in (p["run_a"], p["run_b"])),
        lambda r: [(r.qid, r.model)],
    )
    out = {}
    for k, g in by.items():
        a = [r.verdict is True for r in g if r.run == p["run_a"]]
        b = [r.verdict is True for r in g if r.run == p["run_b"]]
        if a and b:
            ra, rb = sum(a) / len(a), sum(b) / len(b)
            out[k] = (_num(ra), _num(rb), "regression" if rb < ra else "improvement" if rb > ra else "same")
    return out


# verification.md §8: a failure's group follows from its category, whatever the file says
TAXONOMY = {
    "content": "content",
    **dict.fromkeys(("recursion_limit", "trace_validation", "deep_judgment", "deep_judgment_rubric"), "autofail"),
    **dict.fromkeys(("timeout", "connection", "rate_limit", "server_error"), "retry"),
    **dict.fromkeys(("abstention", "sufficiency"), "abstained"),
    **dict.fromkeys(("template_validation", "parsing", "unexpected_error"), "system"),
}


def exp_failures(d: Data, p: JSON) -> dict[Any, Any]:
    counts = Counter(
        (r.run, TAXONOMY[r.failure["category"]], r.failure["category"]) for r in _where(d, p) if r.failure is not None
    )
    return {k: (n,) for k, n in counts.items()}


def exp_history(d: Data, p: JSON) -> list[tuple[Any, ...]]:
    rows = [r for r in d.results if r.qid == p["question_id"]]
    rows.sort(key=lambda r: (r.start, r.run, r.model, r.judge, -1 if r.replicate is None else r.replicate))
    return [
        (
            r.run,
            r.model,
            r.judge,
            r.replicate,
            r.verdict,
            r.outcome,
            r.failure["category"] if r.failure else None,
        )
        for r in rows
    ]


# -- reading the query's answer ----------------------------------------------------------------


def rows(store: Store, name: str, **params: Any) -> list[dict[str, str | None]]:
    result = store.query(name, **params)
    cols = [v.value for v in result.variables]
    return [{c: (r[c].value if r[c] is not None else None) for c in cols} for r in result]


def _value(text: str | None) -> Any:
    """A bound value as the expected values are written: numbers rounded, booleans as bool."""
    if text is None or text in ("true", "false"):
        return None if text is None else text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return _num(float(text))
    except ValueError:
        return text


# query → (key columns, value columns, expected answer)
SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...], Callable[[Data, JSON], dict[Any, Any]]]] = {
    "pass-rate-by-model": (("answering_model",), ("results", "verified", "passed", "pass_rate"), exp_pass_by_model),
    "pass-rate-by-judge": (("judge",), ("results", "verified", "passed", "pass_rate"), exp_pass_by_judge),
    "pass-rate-by-benchmark": (("benchmark",), ("results", "verified", "passed", "pass_rate"), exp_pass_by_benchmark),
    "pass-rate-by-keyword": (("keyword",), ("results", "verified", "passed", "pass_rate"), exp_pass_by_keyword),
    "question-model-matrix": (
        ("question_id", "answering_model"),
        ("results", "verified", "passed", "pass_rate", "question"),
        exp_matrix,
    ),
    "questions-all-models-fail": (("question_id",), ("models", "verified", "results", "benchmark"), exp_all_fail),
    "trait-aggregates-by-model": (
        ("trait_name", "score_kind", "answering_model"),
        ("scores", "mean", "median", "majority", "higher_is_better", "better_mean", "trait"),
        exp_traits,
    ),
    "trait-metrics-by-model": (
        ("trait_name", "metric", "answering_model"),
        ("scores", "mean", "min", "max"),
        exp_metrics,
    ),
    "token-usage": (
        ("run", "answering_model", "stage"),
        ("results", "input_tokens", "output_tokens", "total_tokens"),
        exp_tokens,
    ),
    "failure-counts": (("run", "failure_group", "category"), ("failures",), exp_failures),
    "run-comparison": (("question_id", "answering_model"), ("rate_a", "rate_b", "change"), exp_compare),
}

GPT4O_LABEL, MISTRAL_LABEL = label(GPT4O), label(MISTRAL)

# (query, parameters): every query without parameters, then each parameter alone and combined
CASES: list[tuple[str, JSON]] = [
    ("pass-rate-by-model", {}),
    ("pass-rate-by-model", {"run": CRAFTED}),
    ("pass-rate-by-model", {"run": "pharmacology-2026-05"}),
    ("pass-rate-by-model", {"benchmark": MOL}),
    ("pass-rate-by-model", {"judge": "claude-sonnet-4-5"}),
    ("pass-rate-by-model", {"judge": label(SONNET), "run": CRAFTED, "benchmark": MOL}),
    ("pass-rate-by-model", {"run": "no-such-run"}),
    ("pass-rate-by-model", {"run": CRAFTED, "benchmark": PHARMA}),
    ("pass-rate-by-judge", {}),
    ("pass-rate-by-judge", {"run": CRAFTED}),
    ("pass-rate-by-judge", {"model": "openrouter:mistral-large:t:pubmed"}),
    ("pass-rate-by-judge", {"benchmark": PHARMA, "model": GPT4O_LABEL}),
    ("pass-rate-by-benchmark", {}),
    ("pass-rate-by-benchmark", {"run": CRAFTED}),
    ("pass-rate-by-benchmark", {"model": MISTRAL_LABEL}),
    ("pass-rate-by-benchmark", {"model": "mistral-large", "run": CRAFTED}),
    ("pass-rate-by-benchmark", {"judge": label(SONNET)}),
    ("pass-rate-by-benchmark", {"judge": "gpt-4.1", "run": "molecular-biology-2026-06"}),
    ("pass-rate-by-keyword", {}),
    ("pass-rate-by-keyword", {"run": CRAFTED}),
    ("pass-rate-by-keyword", {"benchmark": PHARMA}),
    ("pass-rate-by-keyword", {"model": "mistral-large"}),
    ("question-model-matrix", {}),
    ("question-model-matrix", {"run": CRAFTED}),
    ("question-model-matrix", {"benchmark": PHARMA, "run": "pharmacology-2026-05"}),
    ("question-model-matrix", {"benchmark": MOL}),
    ("questions-all-models-fail", {}),
    ("questions-all-models-fail", {"run": CRAFTED}),
    ("questions-all-models-fail", {"run": "molecular-biology-2026-06"}),
    ("trait-aggregates-by-model", {}),
    ("trait-aggregates-by-model", {"run": CRAFTED}),
    ("trait-aggregates-by-model", {"run": "molecular-biology-2026-05"}),
    ("trait-aggregates-by-model", {"model": "gpt-4o", "run": "pharmacology-2026-05"}),
    ("trait-metrics-by-model", {}),
    ("trait-metrics-by-model", {"run": "pharmacology-2026-05"}),
    ("trait-metrics-by-model", {"run": "pharmacology-2026-05", "model": "claude-haiku-4-5"}),
    ("token-usage", {}),
    ("token-usage", {"run": CRAFTED}),
    ("token-usage", {"model": MISTRAL_LABEL}),
    ("failure-counts", {}),
    ("failure-counts", {"run": CRAFTED}),
    ("failure-counts", {"model": "mistral-large"}),
    ("failure-counts", {"model": "gpt-4o", "run": "pharmacology-2026-05"}),
    ("run-comparison", {"run_a": "molecular-biology-2026-05", "run_b": "molecular-biology-2026-06"}),
    ("run-comparison", {"run_a": "molecular-biology-2026-06", "run_b": CRAFTED}),
]


def _ids(cases: list[tuple[str, JSON]]) -> list[str]:
    return [f"{q}-{'-'.join(f'{k}={v}' for k, v in p.items()) or 'all'}" for q, p in cases]


@pytest.mark.parametrize(("name", "params"), CASES, ids=_ids(CASES))
def test_query_matches_the_files(store: Store, data: Data, name: str, params: JSON) -> None:
    check(store, data, name, params)


def check(store: Store, data: Data, name: str, params: JSON) -> None:
    keys, values, expected = SHAPES[name]
    got: dict[Any, Any] = {}
    for row in rows(store, name, **params):
        key = tuple(row[k] for k in keys)
        assert key not in got, f"{name}: row {key} twice"
        got[key] = tuple(
            (row[v] is not None) if v == "trait" else _value(row[v]) if v not in ("question", "benchmark") else row[v]
            for v in values
        )
    assert _strict(got) == _strict(expected(data, params))


def _strict(answer: dict[Any, Any]) -> dict[Any, Any]:
    """Values tagged with their kind, so that true is not 1 (Python says True == 1)."""

    def tag(v: Any) -> Any:
        return ("bool", v) if isinstance(v, bool) else ("number", float(v)) if isinstance(v, (int, float)) else v

    return {k: tuple(tag(v) for v in vs) for k, vs in answer.items()}


@pytest.mark.parametrize("name", [*sorted(SHAPES), "question-history"])
def test_a_model_described_in_two_graphs_counts_once(data: Data, name: str) -> None:
    """The union default graph yields a triple once per graph that holds it: copies of the model
    nodes in a second graph (a hand-loaded graph, a store from before the shared models graph)
    must not multiply the results they join."""
    s = Store.memory()
    try:
        s.import_paths([EXAMPLES])
        model = ox.NamedNode(KARENINA + "Model")
        copies = ox.NamedNode("urn:test:model-copies")
        for m in [q.subject for q in s.oxigraph.quads_for_pattern(None, None, model, None)]:
            for q in list(s.oxigraph.quads_for_pattern(m, None, None, None)):
                s.oxigraph.add(ox.Quad(q.subject, q.predicate, q.object, copies))
        examples_only = Data([r for r in data.results if r.run != CRAFTED], data.questions)
        if name == "question-history":
            got = rows(s, name, question_id=TP53)
            assert history(got) == exp_history(examples_only, {"question_id": TP53})
            return
        params = {"run_a": "molecular-biology-2026-05", "run_b": "molecular-biology-2026-06"}
        check(s, examples_only, name, params if name == "run-comparison" else {})
    finally:
        s.close()


def test_the_cases_cover_what_is_tricky(data: Data) -> None:
    """The crafted data is worth something only if it holds the cases it is for."""
    crafted = [r for r in data.results if r.run == CRAFTED]
    assert any(r.verdict is None and r.outcome == "cantTell" for r in crafted)  # null verdict, failed early
    assert any(r.verdict is None and r.outcome == "inapplicable" for r in crafted)  # rubric only
    assert any(r.qid not in data.questions for r in crafted)
    groups = {TAXONOMY[r.failure["category"]] for r in crafted if r.failure}
    assert groups >= {"content", "retry", "abstained", "system"}
    assert any(r.failure and TAXONOMY[r.failure["category"]] != r.failure["group"] for r in crafted)
    traits = exp_traits(data, {"run": CRAFTED})
    assert traits[("verbosity", "llm", GPT4O_LABEL)][:3] == (2, 3.5, 3.5)  # an even count
    assert traits[("verbosity", "llm", MISTRAL_LABEL)][4:6] == (False, _num(-5 / 3))  # lower is better
    assert traits[("concise", "regex", MISTRAL_LABEL)][3:6] == (True, False, _num(1 - 2 / 3))
    assert traits[("concise", "regex", GPT4O_LABEL)][3] is False  # a tie: the smaller value
    assert traits[("tone", "llm", GPT4O_LABEL)][4:] == (None, None, False)  # direction unknown, not stored
    assert traits[("completeness", "llm", GPT4O_LABEL)][4] is True
    assert exp_all_fail(data, {"run": CRAFTED}) and not exp_all_fail(data, {})
    assert all(r.verdict is None for r in crafted if r.qid == LAMIN)  # verified by no model: not "all fail"
    by_model = exp_pass_by_model(data, {})
    assert by_model[(GPT4O_LABEL,)][0] > by_model[(GPT4O_LABEL,)][1]  # results without a verdict
    runs_of_gpt4o = {r.run for r in data.results if r.model == GPT4O_LABEL}
    assert len(runs_of_gpt4o) == 4  # one model node shared by four runs
    assert {len({r.judge for r in data.results if r.run == run}) for run in (CRAFTED, "pharmacology-2026-05")} == {2}
    assert any(r.replicate == 2 for r in crafted)


def test_pass_rates_come_best_first(store: Store) -> None:
    rates = [float(r["pass_rate"] or -1) for r in rows(store, "pass-rate-by-model")]
    assert rates == sorted(rates, reverse=True) and len(set(rates)) > 1
    got = rows(store, "pass-rate-by-model", run=CRAFTED, benchmark=PHARMA)
    # no verified result: no rate, listed last
    assert [(r["answering_model"], r["pass_rate"]) for r in got] == [(GPT4O_LABEL, "1"), (MISTRAL_LABEL, None)]


def test_token_usage_lists_total_last(store: Store) -> None:
    stages = [r["stage"] for r in rows(store, "token-usage", run=CRAFTED, model="gpt-4o")]
    assert stages == ["answer_generation", "parsing", "web_search", "total"]


def test_failure_groups_have_their_definition(store: Store) -> None:
    got = {r["failure_group"]: r["group_definition"] for r in rows(store, "failure-counts", run=CRAFTED)}
    assert got["retry"] == "a transient error outlived its retries"
    assert got["content"] == "the answer was judged wrong"


def history(got: list[dict[str, str | None]]) -> list[tuple[Any, ...]]:
    return [
        (
            r["run"],
            r["answering_model"],
            r["judge"],
            None if r["replicate"] is None else int(r["replicate"]),
            None if r["verify_result"] is None else r["verify_result"] == "true",
            r["outcome"],
            r["failure"],
        )
        for r in got
    ]


@pytest.mark.parametrize("qid", [TP53, CFTR, NOT_STORED, "urn:uuid:never-asked"])
def test_question_history(store: Store, data: Data, qid: str) -> None:
    got = rows(store, "question-history", question_id=qid)
    assert history(got) == exp_history(data, {"question_id": qid})
    starts = {r.run: r.start for r in data.results}
    assert all(r["started"] is not None for r in got)
    runs = [str(r["run"]) for r in got]
    assert [starts[run] for run in runs] == sorted(starts[run] for run in runs)


def test_every_results_query_has_a_case() -> None:
    assert set(named_queries()) >= RESULTS_QUERIES
    assert {c[0] for c in CASES} | {"question-history"} == RESULTS_QUERIES
    assert {c[0] for c in CLI_CASES} == RESULTS_QUERIES


def test_question_history_needs_its_question(cli_store: str) -> None:
    result = runner.invoke(app, ["query", "question-history", "--store", cli_store])
    assert result.exit_code == 2 and "needs the parameter 'question_id'" in result.stderr


# -- the same answers through the CLI ----------------------------------------------------------


@pytest.fixture(scope="module")
def cli_store(tmp_path_factory: pytest.TempPathFactory, crafted_path: Path) -> str:
    path = str(tmp_path_factory.mktemp("cli") / "store")
    assert runner.invoke(app, ["import", str(EXAMPLES), "--store", path]).exit_code == 0
    result = runner.invoke(app, ["results", "import", str(crafted_path), "--store", path])
    assert result.exit_code == 0, result.output
    return path


CLI_CASES: list[tuple[str, JSON]] = [
    ("pass-rate-by-model", {"run": CRAFTED, "judge": "gpt-4.1"}),
    ("pass-rate-by-judge", {}),
    ("pass-rate-by-benchmark", {"model": "gpt-4o"}),
    ("pass-rate-by-keyword", {"benchmark": MOL}),
    ("question-model-matrix", {"run": CRAFTED}),
    ("questions-all-models-fail", {"run": CRAFTED}),
    ("trait-aggregates-by-model", {"run": CRAFTED}),
    ("trait-metrics-by-model", {}),
    ("token-usage", {"run": CRAFTED}),
    ("failure-counts", {}),
    ("question-history", {"question_id": CFTR}),
    ("run-comparison", {"run_a": "molecular-biology-2026-05", "run_b": CRAFTED}),
]


@pytest.mark.parametrize(("name", "params"), CLI_CASES, ids=_ids(CLI_CASES))
def test_cli_gives_the_same_answer(cli_store: str, store: Store, name: str, params: JSON) -> None:
    args = ["query", name, "--format", "json", "--store", cli_store]
    for k, v in params.items():
        args += ["--param", f"{k}={v}"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    bindings = json.loads(result.stdout)["results"]["bindings"]
    # values compared as numbers: a sum of doubles may differ in its last bit between two stores
    got = [{k: _value(v["value"]) for k, v in b.items()} for b in bindings]
    want = [{k: _value(v) for k, v in r.items() if v is not None} for r in rows(store, name, **params)]
    assert got == want and got
