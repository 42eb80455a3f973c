"""Answers made elsewhere: a JSONL file of recorded answers (``verify --answers``), or the
answers a stored run already holds (``rescore``). Either way the judges grade them without any
answering model being called.

``answers.jsonl``: one JSON object per line::

    {"question_id": "urn:uuid:question-…", "response": "…", "answering_model": "manual:my-model", "replicate": 2}

``answering_model`` (``interface:model_name``, default ``manual:recorded``) and ``replicate``
(default: none, Karenina's single-replicate ``null``) are optional.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from karenina_rdf._errors import CheckpointError, Problem, VerificationError
from karenina_rdf.results import canonical_key

if TYPE_CHECKING:
    from karenina_rdf._store import Store

AnswerKey = tuple[str, str, int | None]
DEFAULT_ANSWERER = "manual:recorded"


def identity_of(text: str) -> dict[str, Any]:
    interface, _, name = text.partition(":")
    if not name:
        interface, name = "manual", text
    return {"interface": interface, "model_name": name, "tools": [], "config_id": None}


def read_answers(path: str | Path) -> tuple[dict[AnswerKey, str], list[dict[str, Any]], int]:
    """(answers by key, answering identities in order of appearance, replicate count)."""
    label = str(path)
    answers: dict[AnswerKey, str] = {}
    identities: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    replicates = 1
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise VerificationError(f"cannot read answers {label}: {exc.strerror or exc}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"not JSON: {exc.msg}", label, line=n))
            continue
        if not isinstance(row, dict):
            problems.append(Problem("each line must be a JSON object", label, line=n))
            continue
        qid, response = row.get("question_id"), row.get("response")
        if not isinstance(qid, str) or not qid:
            problems.append(Problem("'question_id' must be a non-empty string", label, pointer="/question_id", line=n))
            continue
        if not isinstance(response, str):
            problems.append(Problem("'response' must be a string", label, "/response", qid, line=n))
            continue
        model = row.get("answering_model", DEFAULT_ANSWERER)
        rep = row.get("replicate")
        if not isinstance(model, str) or not model:
            problems.append(Problem("'answering_model' must be 'interface:model'", label, "/answering_model", qid, n))
            continue
        if rep is not None and (not isinstance(rep, int) or isinstance(rep, bool) or rep < 1):
            problems.append(Problem("'replicate' must be a positive integer or null", label, "/replicate", qid, n))
            continue
        identity = identity_of(model)
        key = canonical_key(identity)
        identities.setdefault(key, identity)
        answers[(qid, key, rep)] = response
        replicates = max(replicates, rep or 1)
    if problems:
        raise CheckpointError(problems)
    if not answers:
        raise VerificationError(f"{label} holds no answers")
    return answers, list(identities.values()), replicates


def stored_answers(store: Store, run: str) -> tuple[dict[AnswerKey, str], list[dict[str, Any]], int, set[str]]:
    """The answers a stored run holds (results whose answer was generated): answers by key,
    answering identities, replicate count, and the benchmarks the run used."""
    from karenina_rdf.results import ResultRebuilder, ordered_results, resolve_run, run_reader

    iri, graph = resolve_run(store, run)
    source = run_reader(store, graph)
    rebuild = ResultRebuilder(source, graph)
    answers: dict[AnswerKey, str] = {}
    identities: dict[str, dict[str, Any]] = {}
    replicates = 1
    for r in ordered_results(source, graph):
        row = rebuild.row(r)
        meta, template = row.get("metadata") or {}, row.get("template") or {}
        failure = meta.get("failure") or {}
        text = template.get("raw_llm_response")
        if not text or failure.get("stage") == "generate_answer":
            continue
        identity = meta.get("answering") or identity_of(DEFAULT_ANSWERER)
        key = canonical_key(identity)
        identities.setdefault(key, identity)
        rep = meta.get("replicate")
        answers[(meta["question_id"], key, rep)] = text
        replicates = max(replicates, rep or 1)
    if not answers:
        raise VerificationError(f"run {run!r} holds no answers to rescore")
    import pyoxigraph as ox

    from karenina_rdf.rdf import term_value
    from karenina_rdf.results import PROV

    benches = {
        term_value(q.object)
        for q in store.oxigraph.quads_for_pattern(ox.NamedNode(iri), ox.NamedNode(PROV + "used"), None, graph)
    }
    return answers, list(identities.values()), replicates, benches
