"""A published benchmark as a Croissant dataset (MLCommons' schema.org-based format for ML
datasets, version 1.1): ``croissant.json`` beside the benchmark's page, and the files its record
sets read, written by ``publish`` into the same folder.

The JSON is written here, not through ``mlcroissant``: it is a plain format, and the library (a
test dependency) pulls in pandas, scipy and more. The tests load what is written with
``mlcroissant`` and compare its records with the store's questions and Karenina's results files.

Record sets (each a JSON file of the site, with its SHA-256 in its ``cr:FileObject``):

- ``questions``: one record per question, in the benchmark's order: id, text, reference answer,
  keywords, answer template (code and Karenina's template id), the question's own rubric.
- ``global_rubric``: one record per trait of the global rubric (when there is one).
- ``results``: one record per verification result on the benchmark's questions, from every
  published run (when there is one): run, question, models, verified, rubric scores, response.

Rubrics and rubric scores are JSON text in a field (Karenina's own ``model_dump`` shapes): their
traits differ per question, which no fixed Croissant field list can hold.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from karenina_rdf.checkpoint import TRAIT_FIELDS, RubricTrait

CROISSANT = "http://mlcommons.org/croissant/1.1"
JSON = "application/json"
# Croissant 1.1's JSON-LD context, as mlcroissant writes it (a different one is warned about).
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "name": {"@container": "@language"},
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str  # a schema.org type, e.g. "sc:Text"
    description: str
    array: bool = False


QUESTION_COLUMNS = (
    Column("id", "sc:Text", "The question's id in the Karenina checkpoint."),
    Column("question", "sc:Text", "The question put to the answering model."),
    Column("raw_answer", "sc:Text", "The reference answer."),
    Column("keywords", "sc:Text", "The question's keywords.", array=True),
    Column("template_id", "sc:Text", "Karenina's template id: the MD5 of the answer template's code."),
    Column("answer_template", "sc:Text", "The answer template: the Pydantic class the judge fills and verifies."),
    Column(
        "question_rubric",
        "sc:Text",
        "The question's own rubric as JSON: Karenina's Rubric fields (llm_traits, regex_traits, callable_traits,"
        " metric_traits, agentic_traits), each trait as Karenina's model_dump; empty when it has none.",
    ),
)
RUBRIC_COLUMNS = (
    Column("name", "sc:Text", "The trait's name."),
    Column("trait_type", "sc:Text", "llm, regex, callable, metric or agentic."),
    Column("description", "sc:Text", "What the trait asks."),
    Column("definition", "sc:Text", "The trait as JSON: Karenina's model_dump of its trait class."),
)
RESULT_COLUMNS = (
    Column("run", "sc:Text", "The verification run's id (the job id of its Karenina results export)."),
    Column("result_id", "sc:Text", "The result's id in the run."),
    Column("question_id", "sc:Text", "The question answered (a record of the questions record set)."),
    Column("template_id", "sc:Text", "The answer template verified (Karenina's template id)."),
    Column("answering_model", "sc:Text", "The model that answered."),
    Column("parsing_model", "sc:Text", "The judge model that parsed the answer into the template."),
    Column("verified", "sc:Text", "The template's verdict: true, false, or empty when it was not verified."),
    Column("response", "sc:Text", "The answering model's response."),
    Column(
        "rubric_scores",
        "sc:Text",
        "The rubric's scores as JSON, trait name to score (metric traits: their metrics); empty when none.",
    ),
    Column("timestamp", "sc:Text", "When the result was made, as Karenina wrote it."),
)


def json_rows(rows: list[dict[str, Any]]) -> bytes:
    """A record set's file: a JSON array of objects, one line each. Not JSON Lines: mlcroissant
    reads those with pandas, which guesses types (an id of digits becomes a number, a column
    named ``timestamp`` a date); a JSON file it reads by JSONPath, keeping the values as written."""
    return ("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]\n").encode("utf-8")


def _dump(value: Any) -> str:
    """JSON text of a value; "" for none (Croissant text fields, read by pandas: no nulls)."""
    return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def trait_fields(t: RubricTrait) -> dict[str, Any]:
    """A trait as Karenina's ``model_dump()`` of its trait class: ``karenina_fields`` and, for an
    LLM trait, ``include_ground_truth`` (a field of Karenina's LLMRubricTrait that
    ``karenina_fields`` does not list; the trait's settings hold it when the checkpoint set it)."""
    fields = t.karenina_fields()
    if t.trait_type == "llm":
        fields["include_ground_truth"] = bool(t.settings.get("include_ground_truth", False))
    return fields


def rubric_json(traits: list[RubricTrait]) -> str:
    """Traits as Karenina's ``Rubric.model_dump()``; "" for none."""
    if not traits:
        return ""
    grouped: dict[str, list[dict[str, Any]]] = {field: [] for field in TRAIT_FIELDS.values()}
    for t in traits:
        grouped[TRAIT_FIELDS[t.trait_type]].append(trait_fields(t))
    return _dump(grouped)


def question_rows(questions: list[Any]) -> list[dict[str, Any]]:
    """The questions record set's rows, from the store's ``Question`` values."""
    return [
        {
            "id": q.id,
            "question": q.question,
            "raw_answer": q.raw_answer,
            "keywords": list(q.keywords or []),
            "template_id": q.template_id if q.answer_template else "",
            "answer_template": q.answer_template or "",
            "question_rubric": rubric_json([t for t in q.question_rubric or [] if not t.dynamic]),
        }
        for q in questions
    ]


def rubric_rows(traits: list[RubricTrait]) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "trait_type": t.trait_type,
            "description": t.description or "",
            "definition": _dump(trait_fields(t)),
        }
        for t in traits
    ]


SCORES = ("llm_trait_scores", "regex_trait_scores", "callable_trait_scores", "metric_trait_scores")
SCORES_AGENTIC = "agentic_trait_scores"


def result_rows(export: dict[str, Any], questions: set[str]) -> list[dict[str, Any]]:
    """The results record set's rows of one run, from its Karenina results export (format 2.2):
    those on ``questions``, in the export's order."""
    run = str(export.get("metadata", {}).get("job_id") or "")
    rows = []
    for r in export.get("results", []):
        meta = r.get("metadata") or {}
        if meta.get("question_id") not in questions:
            continue
        template = r.get("template") or {}
        rubric = r.get("rubric") or {}
        scores: dict[str, Any] = {}
        for key in (*SCORES, SCORES_AGENTIC):
            scores.update(rubric.get(key) or {})
        verified = template.get("verify_result")
        rows.append(
            {
                "run": run,
                "result_id": str(meta.get("result_id") or ""),
                "question_id": meta["question_id"],
                "template_id": str(meta.get("template_id") or ""),
                "answering_model": str((meta.get("answering") or {}).get("model_name") or ""),
                "parsing_model": str((meta.get("parsing") or {}).get("model_name") or ""),
                "verified": "" if verified is None else json.dumps(verified),
                "response": str(template.get("raw_llm_response") or ""),
                "rubric_scores": _dump(scores or None),
                "timestamp": str(meta.get("timestamp") or ""),
            }
        )
    return rows


def _record_set(
    name: str, description: str, file_id: str, columns: tuple[Column, ...], key: str | None
) -> dict[str, Any]:
    fields = []
    for c in columns:
        field: dict[str, Any] = {
            "@type": "cr:Field",
            "@id": f"{name}/{c.name}",
            "name": c.name,
            "description": c.description,
            "dataType": c.data_type,
            "source": {"fileObject": {"@id": file_id}, "extract": {"jsonPath": f"$[*].{c.name}"}},
        }
        if c.array:
            field["isArray"] = True
            field["arrayShape"] = "-1"
        fields.append(field)
    out: dict[str, Any] = {
        "@type": "cr:RecordSet",
        "@id": name,
        "name": name,
        "description": description,
        "field": fields,
    }
    if key:
        out["key"] = {"@id": f"{name}/{key}"}
    return out


@dataclass(frozen=True)
class CroissantFiles:
    """What ``publish`` writes for one benchmark: file name (beside its page) to bytes."""

    files: dict[str, bytes]

    @property
    def description(self) -> dict[str, Any]:
        return json.loads(self.files["croissant.json"])  # type: ignore[no-any-return]


def croissant(
    *,
    url: str,
    info: Any,
    questions: list[dict[str, Any]],
    global_rubric: list[dict[str, Any]],
    results: list[dict[str, Any]],
    checkpoint_url: str,
    run_pages: dict[str, str],
) -> CroissantFiles:
    """The Croissant description of a benchmark published at ``url`` (its page, ending in "/"),
    and the data files its record sets read (named as in ``url``'s folder). ``info`` is the
    benchmark's ``BenchmarkInfo``."""
    files: dict[str, bytes] = {}
    distribution: list[dict[str, Any]] = []
    record_sets: list[dict[str, Any]] = []

    def add_file(name: str, data: bytes, description: str) -> str:
        files[name] = data
        distribution.append(
            {
                "@type": "cr:FileObject",
                "@id": name,
                "name": name,
                "description": description,
                "contentUrl": url + name,
                "encodingFormat": JSON,
                "contentSize": f"{len(data)} B",
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
        return name

    qfile = add_file("questions.json", json_rows(questions), "The benchmark's questions, a JSON array.")
    record_sets.append(
        _record_set(
            "questions", "The benchmark's questions and their reference answers.", qfile, QUESTION_COLUMNS, "id"
        )
    )
    if global_rubric:
        rfile = add_file("global-rubric.json", json_rows(global_rubric), "The global rubric's traits, a JSON array.")
        record_sets.append(
            _record_set(
                "global_rubric",
                "The traits every answer is scored on (the global rubric).",
                rfile,
                RUBRIC_COLUMNS,
                None,
            )
        )
    if results:
        sfile = add_file("results.json", json_rows(results), "Verification results on the questions, a JSON array.")
        rs = _record_set(
            "results",
            "Verification results of the published runs on these questions: each answer, its verdict and scores.",
            sfile,
            RESULT_COLUMNS,
            None,
        )
        for field in rs["field"]:
            if field["name"] == "question_id":
                field["references"] = {"field": {"@id": "questions/id"}}
        record_sets.append(rs)
    name = info.name or info.id
    description = info.description or f"The Karenina benchmark {name}"
    year = (info.date_modified or info.date_created or "")[:4]
    doc: dict[str, Any] = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "@id": url,  # the benchmark's page: where the dataset is described, embedded
        "conformsTo": CROISSANT,
        "name": name,
        "description": description,
        "url": url,
        "identifier": info.id,
        "version": info.version,
        "keywords": ["LLM evaluation", "benchmark", "question answering", "Karenina"],
        "citeAs": f"{info.creator or 'Anonymous'}{f' ({year})' if year else ''}. {name}, version {info.version}. {url}",
    }
    license_ = info.custom_properties.get("license")
    if isinstance(license_, str) and license_:
        # Karenina's checkpoint has no licence field; a custom property named so is taken as one.
        doc["license"] = license_
    if info.creator:
        # Karenina records a creator's name only: a person or an organisation, it does not say.
        doc["creator"] = {"@type": "sc:Organization", "name": info.creator}
    if info.date_created:
        doc["dateCreated"] = doc["datePublished"] = info.date_created
    if info.date_modified:
        doc["dateModified"] = info.date_modified
    doc["isBasedOn"] = {"@id": checkpoint_url}
    # The task the benchmark poses and the runs' evaluations (a vocabulary outside Croissant 1.1).
    files["croissant-tasks.jsonld"] = tasks(url=url, name=name, results=results, run_pages=run_pages)
    doc["subjectOf"] = {"@id": url + "croissant-tasks.jsonld#problem"}
    doc["distribution"] = distribution
    doc["recordSet"] = record_sets
    files["croissant.json"] = (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    return CroissantFiles(files)


def script_tag(description: dict[str, Any]) -> str:
    """The description as a ``<script type="application/ld+json">`` for a page's head: ``<``
    escaped (so no ``</script>`` or ``<!--`` inside can end it), the JSON unchanged."""
    text = json.dumps(description, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/ld+json" id="croissant">{text}</script>\n'


# -- Croissant Tasks ---------------------------------------------------------------------------
# A vocabulary MLCommons drafts beside Croissant (github.com/mlcommons/croissant, tasks/: the
# classes cr:TaskProblem, cr:TaskSolution, cr:EvaluationTask, cr:EvaluationResult and SHACL
# shapes). It is in neither the Croissant 1.1 specification nor mlcroissant 1.1.1, so it is a
# file of its own (``croissant-tasks.jsonld``), which croissant.json names as ``subjectOf``: the benchmark
# is a problem (its questions the input, an answering LLM the implementation expected), and each
# answering model of each published run a solution, evaluated by Karenina's verification.
TASKS_CONTEXT = {
    "cr": "http://mlcommons.org/croissant/",
    "sc": "https://schema.org/",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
}


def evaluation_metrics(rows: list[dict[str, Any]]) -> list[tuple[str, int | str]]:
    """The evaluation results of one answering model in one run, from its results rows:
    how many results, template verifications and passes, and the pass rate (passes per
    verification, four decimals; absent when nothing was verified)."""
    verified = [r for r in rows if r["verified"]]
    passed = sum(1 for r in verified if r["verified"] == "true")
    out: list[tuple[str, int | str]] = [
        ("results", len(rows)),
        ("template verifications", len(verified)),
        ("template passes", passed),
    ]
    if verified:
        out.append(("template pass rate", f"{passed / len(verified):.4f}"))
    return out


def tasks(*, url: str, name: str, results: list[dict[str, Any]], run_pages: dict[str, str]) -> bytes:
    """``croissant-tasks.jsonld`` of the benchmark published at ``url``: the problem it poses and, per run
    (``run_pages``: run id to its page) and answering model, the solution and its evaluation."""
    here = url + "croissant-tasks.jsonld"
    problem = here + "#problem"
    graph: list[dict[str, Any]] = [
        {
            "@id": problem,
            "@type": "cr:TaskProblem",
            "sc:name": f"Answer the questions of {name}",
            # How answers are judged: in words. (An EvaluationSpec would say it, but the
            # draft's shape for every Task wants an EvaluationTask there.)
            "sc:description": (
                "Answer each question of the benchmark in text. Karenina verifies an answer: a judge model"
                " parses it into the question's answer template, whose verify() gives the verdict, and rubric"
                " traits score it."
            ),
            "cr:input": {"@id": url, "@type": "sc:Dataset"},
            "cr:implementation": {
                "@type": "cr:ImplementationSpec",
                "sc:description": "A language model (with its prompt and tools) that answers a question's text.",
            },
        }
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in results:
        groups.setdefault((row["run"], row["answering_model"]), []).append(row)
    for (run, model), rows in sorted(groups.items()):
        solution = here + "#" + quote(f"{run}/{model}", safe="")
        evaluation: dict[str, Any] = {
            "@type": "cr:EvaluationTask",
            "sc:name": f"Run {run}: {model}",
            "cr:evaluatedSolution": {"@id": solution},
            "cr:evaluationResults": [
                {
                    "@type": "cr:EvaluationResult",
                    "cr:metric": metric,
                    "cr:value": value if isinstance(value, int) else {"@value": value, "@type": "xsd:decimal"},
                }
                for metric, value in evaluation_metrics(rows)
            ],
        }
        if run in run_pages:
            evaluation["sc:url"] = {"@id": run_pages[run]}
        graph.append(
            {
                "@id": solution,
                "@type": "cr:TaskSolution",
                "sc:name": f"{model} in run {run}",
                "sc:isBasedOn": {"@id": problem},
                "cr:implementation": {"@type": "sc:SoftwareApplication", "sc:name": model},
                "cr:evaluation": evaluation,
            }
        )
    doc = {"@context": TASKS_CONTEXT, "@graph": graph}
    return (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
