# ruff: noqa: E501  (the expected messages are asserted verbatim, so lines stay long)
"""SHACL shapes (shapes/*.ttl) checked with pyshacl, the reference engine.

Each shape file has a conforming and a violating fixture in tests/validation/fixtures/shapes/, validated
against that shape file alone; for a violating fixture the exact set of (focus node, path,
message) is asserted. Every loadable corpus file and every example must give no Violation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import rdflib
from rdflib.namespace import SH

from karenina_rdf import Store
from karenina_rdf.validation._shapes import (
    SHAPES_DIR,
    ValidationReport,
    shape_files,
    shapes_graph,
    store_graph_to_rdflib,
    validate_graph_pyshacl,
)
from tests.conftest import EXAMPLES, ROOT, corpus_params

FIXTURES = ROOT / "tests" / "validation" / "fixtures" / "shapes"
SHAPE_NAMES = [p.stem for p in shape_files()]
PREFIXES = {
    "http://example.org/": ":",
    "https://schema.org/": "schema:",
    "urn:karenina:vocab:": "karenina:",
    "http://www.w3.org/ns/earl#": "earl:",
    "http://www.w3.org/ns/prov#": "prov:",
    "http://www.w3.org/2000/01/rdf-schema#": "rdfs:",
}

# (focus node, path, message) of every result, with the prefixes above; "_:" is a blank node.
EXPECTED: dict[str, set[tuple[str, str | None, str]]] = {
    "answer": {
        (
            ":a1",
            "schema:text",
            "A reference answer needs its text: one string, possibly empty (Question.acceptedAnswer.text)",
        ),
        (
            ":a2",
            "^schema:acceptedAnswer",
            "A reference answer belongs to exactly one question (Question.acceptedAnswer)",
        ),
        (
            ":a2",
            "schema:text",
            "A reference answer needs its text: one string, possibly empty (Question.acceptedAnswer.text)",
        ),
        (
            ":a3",
            "^schema:acceptedAnswer",
            "A reference answer belongs to exactly one question (Question.acceptedAnswer)",
        ),
        (
            ":a3",
            "schema:text",
            "A reference answer needs its text: one string, possibly empty (Question.acceptedAnswer.text)",
        ),
    },
    "benchmark": {
        (
            ":b1",
            "schema:contentRating/schema:additionalType",
            "A benchmark-level rubric trait must have a Global… additionalType, not QuestionSpecific… (DataFeed.rating[].additionalType)",
        ),
        (":b1", "schema:creator", "The benchmark creator must be one string or one Person (DataFeed.creator)"),
        (":b1", "schema:dateModified", "A benchmark needs its modification date, a string (DataFeed.dateModified)"),
        (":b1", "schema:name", "A benchmark needs a name: one non-empty string (DataFeed.name)"),
        (
            ":b1",
            "schema:version",
            'The benchmark version must be a single string, e.g. "1.0.0", not a number (DataFeed.version)',
        ),
        (
            ":b1",
            None,
            "A benchmark cannot have both questions (DataFeed.dataFeedElement) and scenarios (DataFeed.hasPart)",
        ),
        (":p", "schema:name", "A creator Person needs a name, a string (DataFeed.creator.name)"),
        (":p", "schema:url", "A creator's url must be one string (DataFeed.creator.url)"),
    },
    "item": {
        (
            ":i1",
            "karenina:position",
            "A question entry needs its position in DataFeed.dataFeedElement: one integer >= 0 (karenina:position)",
        ),
        (":i1", "schema:dateCreated", "A question entry needs its creation date, a string (DataFeedItem.dateCreated)"),
        (
            ":i1",
            "schema:dateModified",
            "A question entry needs its modification date, a string (DataFeedItem.dateModified)",
        ),
        (":i1", "schema:item", "A question entry needs exactly one Question (DataFeedItem.item)"),
        (":i2", "schema:item", "A question entry needs exactly one Question (DataFeedItem.item)"),
        (
            ":i3",
            "^schema:dataFeedElement",
            "A question entry belongs to exactly one benchmark (DataFeed.dataFeedElement)",
        ),
        (
            ":i3",
            "karenina:position",
            "A question entry needs its position in DataFeed.dataFeedElement: one integer >= 0 (karenina:position)",
        ),
        (":i3", "schema:item", "A question entry needs exactly one Question (DataFeedItem.item)"),
        (
            "_:",
            "^schema:dataFeedElement",
            "A question entry belongs to exactly one benchmark (DataFeed.dataFeedElement)",
        ),
        ("_:", None, "A question entry must be a node with an IRI (DataFeed.dataFeedElement[])"),
    },
    "property-value": {
        (":pv0", "schema:name", "An additional property needs a name, a string (PropertyValue.name)"),
        (
            ":pv0",
            "schema:value",
            "An additional property has at most one value, a JSON value: string, boolean, integer, number, array or object (PropertyValue.value)",
        ),
        (
            ":pv1",
            "schema:value",
            "An additional property has at most one value, a JSON value: string, boolean, integer, number, array or object (PropertyValue.value)",
        ),
        (
            ":pv2",
            "^schema:additionalProperty",
            "An additional property belongs to exactly one benchmark, question or trait (additionalProperty)",
        ),
        (
            ":pv2",
            "karenina:position",
            "An additional property needs its position in the additionalProperty list: one integer >= 0 (karenina:position)",
        ),
        (
            ":pv2",
            "schema:value",
            "An additional property has at most one value, a JSON value: string, boolean, integer, number, array or object (PropertyValue.value)",
        ),
    },
    "scenario": {
        (
            ":e",
            "karenina:condition",
            "An edge's condition is one rdf:JSON value, a state check or a list of them (ScenarioEdge.condition)",
        ),
        (
            ":e",
            "karenina:fromNode",
            "The edge's source names none of the scenario's nodes: the edge is never taken (ScenarioEdge.source)",
        ),
        (
            ":e",
            None,
            "The edge's target names none of the scenario's nodes and is not __end__: taking it stops the run (ScenarioEdge.target)",
        ),
        (":e2", "karenina:endsScenario", "karenina:endsScenario is true on an edge to __end__, and absent otherwise"),
        (
            ":n",
            "(karenina:modelOverride|karenina:toolFilter|karenina:questionData|karenina:scenarioMetadata)",
            "A node's modelOverride, toolFilter, questionData and metadata are rdf:JSON objects (ScenarioNode)",
        ),
        (":n", "karenina:nodeId", "A scenario node needs its nodeId, one string (ScenarioNode.nodeId)"),
        (":n", "karenina:question", "A scenario node asks exactly one Question (ScenarioNode.question)"),
        (
            ":o",
            "^karenina:scenarioOutcome",
            "An outcome criterion belongs to exactly one scenario (Scenario.outcomeCriteria)",
        ),
        (":o", "schema:name", "An outcome criterion needs a name, one string (ScenarioOutcome.name)"),
        (
            ":s",
            "karenina:entry",
            "The scenario's entryNode names none of its nodes: Karenina loads it but cannot run it (Scenario.entryNode)",
        ),
        (":s", "schema:name", "A scenario needs a name, one string (Scenario.name)"),
    },
    "question": {
        (
            ":q1",
            "karenina:author",
            "The question author should be a JSON object or a string (additionalProperty author)",
        ),
        (
            ":q1",
            "karenina:finished",
            "The question's 'finished' flag must be one boolean (additionalProperty finished)",
        ),
        (
            ":q1",
            "karenina:textMd5",
            "A question needs the MD5 of its text: 32 lowercase hex characters (karenina:textMd5)",
        ),
        (
            ":q1",
            "schema:acceptedAnswer",
            "A question needs exactly one reference answer, an Answer node (Question.acceptedAnswer)",
        ),
        (
            ":q1",
            "schema:hasPart",
            "This question has no answer template (Question.hasPart): it can only run rubric_only, and Karenina refuses such a file",
        ),
        (":q1", "schema:text", "A question needs its text: one non-empty string (Question.text)"),
        (
            ":q2",
            "^(schema:item|karenina:question)",
            "A question is the item of exactly one question entry (DataFeedItem.item) or the question of one scenario node (ScenarioNode.question)",
        ),
        (":q2", "karenina:workspacePath", "The workspace path must be one string (additionalProperty workspace_path)"),
        (
            ":q2",
            "schema:hasPart",
            "A question has at most one answer template, a SoftwareSourceCode node (Question.hasPart)",
        ),
        (":q2", "schema:isPartOf", "A question belongs to exactly one benchmark (schema:isPartOf a DataFeed)"),
        (":q2", "schema:keywords", "Each keyword must be a string (Question.keywords)"),
    },
    "template": {
        (
            ":t1",
            "karenina:templateId",
            "An answer template needs Karenina's template id: 32 lowercase hex characters, or no_template for a blank template (karenina:templateId)",
        ),
        (":t1", "schema:name", "An answer template needs a name, a string (SoftwareSourceCode.name)"),
        (
            ":t1",
            "schema:programmingLanguage",
            'An answer template\'s language must be exactly "Python" (SoftwareSourceCode.programmingLanguage)',
        ),
        (
            ":t1",
            "schema:text",
            "The answer template is empty (SoftwareSourceCode.text): Karenina loads it but cannot verify answers with it",
        ),
        (":t2", "^schema:hasPart", "An answer template belongs to exactly one question (Question.hasPart)"),
        (":t2", "schema:text", "An answer template needs its Python source, a string (SoftwareSourceCode.text)"),
    },
    "trait-agentic": {
        (":t1", "karenina:maxTurns", "max_turns must be one positive integer (Rating additionalProperty max_turns)"),
        (":t1", "schema:description", "An agentic trait needs a non-empty description (Rating.description)"),
        (
            ":t1",
            None,
            "materialize_trace cannot be used with context_mode workspace_only (Rating additionalProperty materialize_trace)",
        ),
        (
            ":t2",
            "karenina:contextMode",
            "context_mode must be 'workspace_only', 'trace_and_workspace' or 'trace_only' (Rating additionalProperty context_mode)",
        ),
        (
            ":t2",
            "karenina:timeoutSeconds",
            "timeout_seconds must be one positive integer (Rating additionalProperty timeout_seconds)",
        ),
        (
            ":t2",
            "karenina:traitKind",
            "An agentic trait is boolean, score, literal or a template (additionalProperty kind)",
        ),
        (":t2", "schema:description", "An agentic trait needs a non-empty description (Rating.description)"),
    },
    "trait-callable": {
        (
            ":t1",
            "karenina:callableCode",
            "This callable trait has no code (Rating additionalProperty callable_code): Karenina loads it, but it cannot be evaluated",
        ),
        (
            ":t2",
            "karenina:callableCode",
            "This callable trait has no code (Rating additionalProperty callable_code): Karenina loads it, but it cannot be evaluated",
        ),
        (
            ":t3",
            "karenina:callableCode",
            "callable_code must be one standard base64 string (Rating additionalProperty callable_code)",
        ),
        (":t3", "karenina:traitKind", "A callable trait is boolean, score or literal (additionalProperty kind)"),
    },
    "trait-llm": {
        (
            ":t",
            "karenina:deepJudgmentEnabled",
            "deep_judgment_enabled must be true or false (Rating additionalProperty deep_judgment_enabled)",
        ),
        (
            ":t",
            "karenina:deepJudgmentFuzzyMatchThreshold",
            "deep_judgment_fuzzy_match_threshold must be one number from 0 to 1 (Rating additionalProperty deep_judgment_fuzzy_match_threshold)",
        ),
        (
            ":t",
            "karenina:deepJudgmentMaxExcerpts",
            "deep_judgment_max_excerpts must be one integer (Rating additionalProperty deep_judgment_max_excerpts)",
        ),
        (":t", "karenina:traitKind", "An LLM trait is boolean, score, literal or a template (additionalProperty kind)"),
    },
    "trait-metric": {
        (
            ":t1",
            "karenina:metrics",
            "A metric trait needs at least one metric, a list such as ['precision', 'recall'] (Rating additionalProperty metrics)",
        ),
        (
            ":t1",
            "karenina:tpInstructions",
            "A metric trait needs tp_instructions, a non-empty list (Rating additionalProperty tp_instructions)",
        ),
        (
            ":t2",
            "karenina:evaluationMode",
            "evaluation_mode must be 'tp_only' or 'full_matrix' (Rating additionalProperty evaluation_mode)",
        ),
        (
            ":t2",
            "karenina:metrics",
            "A metric trait needs at least one metric, a list such as ['precision', 'recall'] (Rating additionalProperty metrics)",
        ),
        (
            ":t2",
            "karenina:repeatedExtraction",
            "repeated_extraction must be true or false (Rating additionalProperty repeated_extraction)",
        ),
        (
            ":t2",
            "karenina:tpInstructions",
            "A metric trait needs tp_instructions, a non-empty list (Rating additionalProperty tp_instructions)",
        ),
        (":t2", "karenina:traitKind", "A metric trait is always of kind metric (MetricRubricTrait)"),
        (
            ":t2",
            None,
            "full_matrix evaluation needs tn_instructions, a non-empty list (Rating additionalProperty tn_instructions)",
        ),
        (
            ":t3",
            None,
            "full_matrix evaluation needs tn_instructions, a non-empty list (Rating additionalProperty tn_instructions)",
        ),
    },
    "trait-regex": {
        (
            ":t1",
            "karenina:pattern",
            "This regex trait has no pattern (Rating additionalProperty pattern): Karenina loads it, but it matches every answer",
        ),
        (
            ":t2",
            "karenina:pattern",
            "This regex trait has no pattern (Rating additionalProperty pattern): Karenina loads it, but it matches every answer",
        ),
        (
            ":t3",
            "karenina:caseSensitive",
            "case_sensitive must be true or false (Rating additionalProperty case_sensitive)",
        ),
        (":t3", "karenina:pattern", "A regex pattern must be one string (Rating additionalProperty pattern)"),
        (":t3", "karenina:traitKind", "A regex trait is always boolean (RegexRubricTrait)"),
    },
    "trait": {
        (
            ":t0",
            "schema:additionalType",
            "A rubric trait needs exactly one additionalType, one of the 14 karenina:…Trait types (Rating.additionalType)",
        ),
        (
            ":t0",
            "schema:bestRating",
            "A rubric trait needs bestRating: one number, stored as xsd:double (Rating.bestRating)",
        ),
        (":t0", "schema:name", "A rubric trait name may not contain '.' (Rating.name; Karenina's Rubric refuses it)"),
        (
            ":t0",
            None,
            "A rubric trait must be a node with an IRI, typed with its trait class (karenina:LLMRubricTrait, RegexRubricTrait, CallableRubricTrait, MetricRubricTrait or AgenticRubricTrait)",
        ),
        (
            ":t1",
            "karenina:higherIsBetter",
            "higher_is_better must be true or false (Rating additionalProperty higher_is_better)",
        ),
        (":t1", "karenina:minScore", "min_score must be one integer (Rating additionalProperty min_score)"),
        (
            ":t1",
            "karenina:traitKind",
            "A rubric trait has one kind: boolean, score, literal, a template, or metric (additionalProperty kind)",
        ),
        (
            ":t1",
            "schema:additionalType",
            "A rubric trait needs exactly one additionalType, one of the 14 karenina:…Trait types (Rating.additionalType)",
        ),
        (
            ":t1",
            "schema:bestRating",
            "A rubric trait needs bestRating: one number, stored as xsd:double (Rating.bestRating)",
        ),
        (":t1", "schema:name", "A rubric trait needs a name: one non-empty string (Rating.name)"),
        (
            ":t1",
            "schema:worstRating",
            "A rubric trait needs worstRating: one number, stored as xsd:double (Rating.worstRating)",
        ),
        (
            ":t2",
            "karenina:dynamicTraitType",
            "Unknown dynamic_trait_type (llm, regex, callable, metric or agentic): Karenina skips this dynamic trait",
        ),
        (
            ":t2",
            None,
            "A literal trait needs its classes: an object of 2 to 20 class names (Rating additionalProperty classes)",
        ),
        (
            ":t3",
            None,
            "A score trait's range is empty: min_score must be less than max_score (Rating additionalProperty min_score, max_score)",
        ),
        (
            ":t4",
            "^schema:contentRating",
            "A rubric trait belongs to exactly one benchmark or question (DataFeed.rating or Question.rating)",
        ),
    },
    "failure": {
        (
            ":f1",
            "karenina:failureCategory",
            "A failure needs exactly one category, one of Karenina's 14 failure categories (a skos:Concept of karenina:failure with a broader group) (metadata.failure.category)",
        ),
        (":f1", "karenina:failureDetails", "A failure's details are one rdf:JSON value (metadata.failure.details)"),
        (":f1", "schema:description", "A failure needs its reason: one string (metadata.failure.reason)"),
        (
            ":f2",
            "karenina:failureCategory",
            "A failure needs exactly one category, one of Karenina's 14 failure categories (a skos:Concept of karenina:failure with a broader group) (metadata.failure.category)",
        ),
        (
            ":f2",
            "karenina:failureGroup",
            "A failure has at most one group, one of content, autofail, retry, abstained, system (a top concept of karenina:failure) (metadata.failure.group)",
        ),
        (
            ":f2",
            "karenina:failureStage",
            "A failure needs the stage it happened in: one string such as verify_template (metadata.failure.stage)",
        ),
        (
            ":f2",
            "schema:description",
            "A failure reason is longer than the 500 characters Karenina keeps (metadata.failure.reason)",
        ),
        (":f4", "^karenina:failure", "A failure belongs to exactly one result (metadata.failure)"),
    },
    "field-outcome": {
        (
            ":f1",
            None,
            "A field outcome must be a node with an IRI holding a field result, a field score, or both (template.field_results, template.field_scores)",
        ),
        (
            ":f1",
            "schema:name",
            "A field outcome needs the name of its template field: one string (a key of template.field_results)",
        ),
        (":f2", "karenina:fieldResult", "A field result is one boolean, or null (template.field_results[field])"),
        (":f3", "karenina:fieldScore", "A field score is one number (template.field_scores[field])"),
        (
            ":f3",
            "schema:name",
            "A field outcome needs the name of its template field: one string (a key of template.field_results)",
        ),
        (":f4", "^karenina:fieldOutcome", "A field outcome belongs to exactly one result (template.field_results)"),
    },
    "model": {
        (
            ":m1",
            None,
            "A model must be a node with an IRI, also a prov:SoftwareAgent (metadata.answering / metadata.parsing)",
        ),
        (
            ":m1",
            "karenina:interface",
            "A model needs its interface: one string such as langchain (ModelIdentity.interface)",
        ),
        (
            ":m2",
            "karenina:canonicalKey",
            "A model needs Karenina's canonical key, interface:model_name[:config_id]:tools, one string; results are identified by it (ModelIdentity.canonical_key)",
        ),
        (":m2", "karenina:configId", "A model's config id must be one string (ModelIdentity.config_id)"),
        (
            ":m2",
            "karenina:tools",
            "A model's tools are one rdf:JSON list of tool names, written only when not empty (ModelIdentity.tools)",
        ),
        (
            ":m2",
            "rdfs:label",
            "A model needs its display name, one string such as 'langchain:gpt-4o' (ModelIdentity.display_string)",
        ),
        (":m2", "schema:name", "A model needs its name: one string such as gpt-4o (ModelIdentity.model_name)"),
    },
    "result": {
        (
            ":dj",
            "^(karenina:deepJudgment|karenina:deepJudgmentRubric)",
            "A deep judgment part belongs to exactly one result (deep_judgment, deep_judgment_rubric)",
        ),
        (
            ":dj",
            "karenina:deepJudgmentPerformed",
            "deep_judgment_performed must be one boolean (deep_judgment.deep_judgment_performed)",
        ),
        (
            ":o4",
            "earl:outcome",
            "An outcome is exactly one of earl:passed, earl:failed, earl:cantTell, earl:inapplicable, earl:untested (earl:outcome)",
        ),
        (":o6", "^earl:result", "An outcome belongs to exactly one result (earl:result)"),
        (":r1", None, "A result must be a node with an IRI, also an earl:Assertion (results[])"),
        (
            ":r1",
            None,
            "A result names its answering model and its judge exactly once each: a Model node, or the identity kept verbatim (metadata.answering, metadata.parsing)",
        ),
        (":r1", "earl:result", "A result needs exactly one outcome, an earl:TestResult (earl:result)"),
        (":r1", "earl:subject", "A result has at most one answering model, a Model node (metadata.answering)"),
        (
            ":r1",
            "earl:test",
            "A result tests at most one stored question, by IRI (earl:test, from metadata.question_id)",
        ),
        (
            ":r1",
            "karenina:executionTime",
            "execution_time must be one number of seconds >= 0 (metadata.execution_time)",
        ),
        (
            ":r1",
            "karenina:position",
            "A result needs its position in the run's results: one integer >= 0 (karenina:position, the export order)",
        ),
        (":r1", "karenina:questionId", "A result needs its question id: one string (metadata.question_id)"),
        (
            ":r1",
            "karenina:replicate",
            "replicate must be one integer >= 1, or absent for a run of one replicate (metadata.replicate)",
        ),
        (":r1", "karenina:templateId", "A result needs its template id: one string (metadata.template_id)"),
        (
            ":r1",
            "karenina:verifyResult",
            "verify_result must be one boolean, or absent when there is no verdict (template.verify_result)",
        ),
        (":r1", "prov:wasGeneratedBy", "A result was generated by exactly one verification run (prov:wasGeneratedBy)"),
        (
            ":r2",
            None,
            "A result names its answering model and its judge exactly once each: a Model node, or the identity kept verbatim (metadata.answering, metadata.parsing)",
        ),
        (
            ":r2",
            "earl:test",
            "The question this result tests is not a stored Question: its benchmark was deleted or no longer has it (metadata.question_id)",
        ),
        (
            ":r2",
            "karenina:answeringIdentity",
            "The answering model is not a ModelIdentity as Karenina writes it (interface, model_name, tools, config_id): kept verbatim as JSON and linked to no model (metadata.answering)",
        ),
        (
            ":r2",
            "karenina:evaluationMode",
            "Unknown evaluation mode: Karenina's are template_only, template_and_rubric and rubric_only (metadata.evaluation_mode)",
        ),
        (
            ":r2",
            "karenina:failure",
            "The failure is not a Failure as Karenina writes it (category, stage, reason, details, group): kept verbatim as JSON (metadata.failure)",
        ),
        (":r2", "karenina:fewShotEnabled", "few_shot_enabled must be one boolean (metadata.few_shot_enabled)"),
        (
            ":r2",
            "karenina:parsingIdentity",
            "The judge (parsing model) is null: Karenina's result needs one (metadata.parsing)",
        ),
        (
            ":r2",
            "karenina:parsingIdentity",
            "The judge is not a ModelIdentity as Karenina writes it (interface, model_name, tools, config_id): kept verbatim as JSON and linked to no model (metadata.parsing)",
        ),
        (
            ":r2",
            "karenina:resultId",
            "The result id is not Karenina's: 16 lowercase hex characters (metadata.result_id)",
        ),
        (
            ":r2",
            "karenina:template",
            "The answer template of this result is not a stored template: its benchmark was deleted or no longer has it (metadata.template_id)",
        ),
        (
            ":r2",
            "karenina:templateId",
            "The template id is not Karenina's: 32 lowercase hex characters (MD5 of the template), or no_template (metadata.template_id)",
        ),
        (
            ":r3",
            None,
            "The stored question's answer template is not the one this result was verified with (metadata.template_id): the result is linked to no template",
        ),
        (
            ":r3",
            "karenina:rubricVerbatim",
            "The rubric part is not a JSON object, kept verbatim: Karenina cannot read this result (rubric)",
        ),
        (
            ":r3",
            "karenina:templatePart",
            "karenina:templatePart is written only as false, for a result whose template part is null (template)",
        ),
        (
            ":r5",
            None,
            "verify_result is false but no failure is recorded: Karenina's classifier records a content failure (metadata.failure)",
        ),
        (":r6", "earl:subject", "A result has at most one answering model, a Model node (metadata.answering)"),
        (
            ":r6",
            "earl:test",
            "No stored question has this question id: the result is kept but linked to no benchmark (metadata.question_id)",
        ),
        (":r6", "karenina:caveats", "caveats must be one rdf:JSON value, a list (metadata.caveats)"),
        (":r6", "karenina:failure", "A result has at most one failure, a Failure node (metadata.failure)"),
        (":rub", "^karenina:rubric", "A rubric part belongs to exactly one result (rubric)"),
        (
            ":rub",
            "karenina:rubricEvaluationPerformed",
            "rubric_evaluation_performed must be one boolean (rubric.rubric_evaluation_performed)",
        ),
    },
    "run": {
        (":i1", "^karenina:import", "An import record belongs to exactly one run (karenina:import)"),
        (
            ":i1",
            "karenina:formatVersion",
            "The format version of an imported file is one of 2.0, 2.1 or 2.2 (format_version)",
        ),
        (
            ":i1",
            "karenina:importedAt",
            "An import record needs the time of the import: one ISO string in UTC (karenina:importedAt)",
        ),
        (
            ":i1",
            "karenina:resultCount",
            "An import record needs the number of results it read: one integer >= 0 (karenina:resultCount)",
        ),
        (
            ":i1",
            "karenina:sourceSha256",
            "An import record needs the SHA-256 of the imported file: 64 lowercase hex characters (karenina:sourceSha256)",
        ),
        (":i1", "schema:name", "An import record needs the file it imported: one string (schema:name)"),
        (
            ":run1",
            None,
            "A verification run must be a node with an IRI, also a prov:Activity (karenina:VerificationRun)",
        ),
        (
            ":run1",
            "karenina:exportTimestamp",
            "The export timestamp should be one string such as '2026-05-02 10:00:00 UTC' (metadata.export_timestamp)",
        ),
        (
            ":run1",
            "karenina:formatVersion",
            "The export format version must be one of the versions Karenina reads: 2.0, 2.1 or 2.2 (format_version)",
        ),
        (
            ":run1",
            None,
            "A run is either imported (karenina:import, one ResultsImport per file) or made by karenina-rdf verify "
            "(karenina:configuration)",
        ),
        (
            ":run4",
            "karenina:configuration",
            "A run made by karenina-rdf verify records its configuration once, as rdf:JSON (karenina:configuration)",
        ),
        (
            ":run4",
            "karenina:runStatus",
            "A run's status is one of running, completed, interrupted (karenina:runStatus)",
        ),
        (":run1", "karenina:isComplete", "is_complete should be one boolean (metadata.job_summary.is_complete)"),
        (
            ":run1",
            "karenina:runMetadataVerbatim",
            "The export's metadata is not a JSON object: kept verbatim (metadata)",
        ),
        (
            ":run1",
            "karenina:startTime",
            "start_time should be one number, seconds since the epoch (metadata.job_summary.start_time)",
        ),
        (
            ":run1",
            "karenina:totalQuestions",
            "total_questions should be one integer >= 0 (metadata.job_summary.total_questions)",
        ),
        (
            ":run1",
            "karenina:verificationConfig",
            "The verification config should be one JSON object (metadata.verification_config)",
        ),
        (
            ":run1",
            "prov:startedAtTime",
            "prov:startedAtTime is one xsd:dateTime in UTC, derived from metadata.job_summary.start_time",
        ),
        (
            ":run1",
            "prov:used",
            "A benchmark this run used is no longer stored: its results are linked to questions that are gone (prov:used)",
        ),
        (":run1", "prov:used", "Each benchmark a run used is named by its IRI (prov:used)"),
        (":run1", "schema:identifier", "A run needs its run id: one non-empty string (--run, else metadata.job_id)"),
        (":run2", None, "The run ends before it starts (metadata.job_summary.start_time, end_time)"),
    },
    "run-summary": {
        (
            ":f1",
            "karenina:summaryCategory",
            "A failure summary needs its failure category: one IRI of the taxonomy (karenina:summaryCategory)",
        ),
        (
            ":f1",
            "prov:wasGeneratedBy",
            "A run summary node belongs to exactly one verification run of the same graph (prov:wasGeneratedBy)",
        ),
        (
            ":m1",
            "karenina:valueSum",
            "A metric summary needs the sum of its values: one xsd:double (karenina:valueSum)",
        ),
        (
            ":marker",
            "schema:name",
            "The marker of a summarised run (karenina:RunSummaries) is an IRI node with its run (prov:wasGeneratedBy) and nothing else",
        ),
        (
            ":s1",
            "karenina:isBoolean",
            "A score summary says whether its scores were booleans: one integer, 0 or 1 (karenina:isBoolean)",
        ),
        (
            ":s1",
            "karenina:summaryKind",
            "A score summary's kind is at most one of llm, regex, callable, metric, agentic (karenina:summaryKind)",
        ),
        (
            ":s1",
            "karenina:verifyResult",
            "A score summary (karenina:ScoreSummary) has only its run, its keys (answering model, trait name, kind, trait, direction, value) and its counts",
        ),
        (
            ":t1",
            None,
            "A tally counts more passed results than results with a verdict (karenina:passed > karenina:verified)",
        ),
        (":t1", "karenina:failures", "A tally needs its count of failed results: one integer >= 0 (karenina:failures)"),
        (":t2", "karenina:results", "A tally needs its count of results: one integer >= 1 (karenina:results)"),
        (
            ":u1",
            "karenina:inputTokenSum",
            "A usage summary needs its sum of input tokens: one number (karenina:inputTokenSum)",
        ),
        (
            ":u1",
            "prov:wasGeneratedBy",
            "A run summary node belongs to exactly one verification run of the same graph (prov:wasGeneratedBy)",
        ),
    },
    "token-usage": {
        (
            ":u1",
            "karenina:costUsd",
            "The cost of a stage's calls is one decimal >= 0, in USD (karenina:costUsd, written by karenina-rdf verify)",
        ),
        (
            ":u1",
            "karenina:inputTokens",
            "input_tokens should be one integer >= 0 (template.usage_metadata[stage].input_tokens)",
        ),
        (
            ":u1",
            "karenina:model",
            "The model of a stage's usage should be one string (template.usage_metadata[stage].model)",
        ),
        (
            ":u1",
            "karenina:outputTokens",
            "output_tokens should be one integer >= 0 (template.usage_metadata[stage].output_tokens)",
        ),
        (
            ":u1",
            "karenina:position",
            "A token usage needs its position in template.usage_metadata: one integer >= 0 (karenina:position)",
        ),
        (
            ":u1",
            "karenina:stage",
            "A token usage needs its stage: one string such as answer_generation or total (template.usage_metadata key)",
        ),
        (":u2", "^karenina:tokenUsage", "A token usage belongs to exactly one result (template.usage_metadata)"),
        (
            ":u2",
            "karenina:inputTokenDetails",
            "input_token_details is one rdf:JSON value (template.usage_metadata[stage].input_token_details)",
        ),
        (
            ":u2",
            "karenina:totalTokens",
            "total_tokens should be one integer >= 0 (template.usage_metadata[stage].total_tokens)",
        ),
        (":u3", "^karenina:tokenUsage", "A token usage belongs to exactly one result (template.usage_metadata)"),
    },
    "trait-score": {
        (
            ":m1",
            "schema:name",
            "A metric value is named by one of precision, recall, f1, specificity, accuracy (rubric.metric_trait_scores[trait] key)",
        ),
        (":m1", "schema:value", "A metric value is one number from 0 to 1 (rubric.metric_trait_scores[trait][metric])"),
        (
            ":m2",
            "karenina:position",
            "A metric value needs its position in its trait's metric dict: one integer >= 0 (karenina:position)",
        ),
        (
            ":s1",
            "karenina:position",
            "A trait score's position in its score dict must be one integer >= 0 (karenina:position)",
        ),
        (
            ":s1",
            "karenina:scoreKind",
            "A trait score has at most one kind, the score dict it came from: llm, regex, callable, metric or agentic (rubric.*_trait_scores)",
        ),
        (
            ":s1",
            "karenina:traitName",
            "A trait score needs the name of its trait: one string (a key of rubric.*_trait_scores)",
        ),
        (
            ":s1",
            "schema:value",
            "A trait score has at most one value: a boolean, a number, or a template-kind field value (rubric.*_trait_scores[trait])",
        ),
        (":s2", "karenina:scoresTrait", "A trait score scores at most one stored trait, by IRI (karenina:scoresTrait)"),
        (
            ":s2",
            "karenina:scoresTrait",
            "The trait this score is for is not a stored rubric trait (Rating): its benchmark was deleted or no longer has it (karenina:scoresTrait)",
        ),
        (
            ":s3",
            "karenina:tp",
            "The true positives are one rdf:JSON list of excerpts (rubric.metric_trait_confusion_lists[trait].tp)",
        ),
        (
            ":s3",
            "karenina:tpCount",
            "The number of true positives must be one integer >= 0 (len of rubric.metric_trait_confusion_lists[trait].tp)",
        ),
        (":s4", "karenina:scoresTrait", "A trait score scores at most one stored trait, by IRI (karenina:scoresTrait)"),
        (
            ":s5",
            "karenina:scoresTrait",
            "The trait this score is for is not a stored rubric trait (Rating): its benchmark was deleted or no longer has it (karenina:scoresTrait)",
        ),
        (
            ":s6",
            "karenina:label",
            "A literal trait's label must be one string, the class name the judge chose (rubric.llm_trait_labels[trait])",
        ),
        (
            ":s6",
            "karenina:provenance",
            "Unknown trait provenance: Karenina writes global or question_specific (dynamic in its tables) (rubric.trait_provenance[trait])",
        ),
        (":s7", "^karenina:traitScore", "A trait score belongs to exactly one rubric evaluation (the result's rubric)"),
    },
}


def _short(term: str | None) -> str | None:
    if term is None:
        return None
    term = term.replace("<", "").replace(">", "")
    for iri, prefix in PREFIXES.items():
        term = term.replace(iri, prefix)
    return term


def _validate_fixture(name: str) -> ValidationReport:
    shape = name.rsplit("-", 1)[0]
    data = rdflib.Graph().parse(FIXTURES / name, format="turtle")
    return validate_graph_pyshacl(data, shapes_graph([f"{shape}.ttl"]))


def test_every_shape_file_has_fixtures_and_expectations() -> None:
    assert SHAPE_NAMES, f"no shape files in {SHAPES_DIR}"
    for shape in SHAPE_NAMES:
        assert (FIXTURES / f"{shape}-conforms.ttl").is_file(), shape
        assert (FIXTURES / f"{shape}-violates.ttl").is_file(), shape
    assert set(EXPECTED) == set(SHAPE_NAMES)


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_conforming_fixture(shape: str) -> None:
    report = _validate_fixture(f"{shape}-conforms.ttl")
    assert report.conforms, [r.message for r in report.results]
    assert report.results == []


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_violating_fixture(shape: str) -> None:
    report = _validate_fixture(f"{shape}-violates.ttl")
    assert not report.conforms
    got = {
        (_short(r.focus_node) if r.focus_node.startswith("http") else "_:", _short(r.path), r.message)
        for r in report.results
    }
    assert got == EXPECTED[shape]


def test_severities_and_result_fields() -> None:
    report = _validate_fixture("question-violates.ttl")
    warnings = {(_short(r.focus_node), _short(r.path)) for r in report.warnings}
    assert warnings == {(":q1", "schema:hasPart"), (":q1", "karenina:author")}
    text = next(r for r in report.results if r.path == "https://schema.org/text")
    assert text.severity == "Violation"
    assert text.source_shape == "urn:karenina-rdf:shapes:QuestionShape-text"
    assert text.source_constraint_component == str(SH.MinLengthConstraintComponent)
    assert text.value == ""
    with pytest.raises(ValueError):
        text.message = "changed"  # type: ignore[misc]


def test_every_property_shape_has_message_and_severity() -> None:
    for path in shape_files():
        g = rdflib.Graph().parse(path, format="turtle")
        assert any(g.triples((None, SH.message, None))), f"{path.name} has no sh:message"
        props = set(g.subjects(SH.path, None)) | set(g.objects(None, SH.property))
        named = {p for p in props if isinstance(p, rdflib.URIRef)}
        assert named, f"{path.name} has no property shapes"
        for prop in named:
            assert g.value(prop, SH.severity) is not None, f"{path.name}: {prop} has no sh:severity"
            assert g.value(prop, SH.message) is not None, f"{path.name}: {prop} has no sh:message"
        for node in g.subjects(rdflib.RDF.type, SH.NodeShape):
            assert str(node).startswith("urn:karenina-rdf:shapes:"), node
        assert not any(g.triples((None, SH.sparql, None))), f"{path.name} uses sh:sparql (SHACL Core only)"


def test_shape_files_start_with_a_comment() -> None:
    for path in shape_files():
        assert path.read_text(encoding="utf-8").startswith("# "), path.name


def _validate_file(path: Path) -> ValidationReport:
    store = Store.memory()
    try:
        result = store.import_checkpoint(path)
        graph = store.graph_of(result.iri)[1]
        return validate_graph_pyshacl(store_graph_to_rdflib(store, graph))
    finally:
        store.close()


@pytest.mark.slow  # pyshacl, the reference engine, over whole benchmarks
@pytest.mark.parametrize("path", corpus_params(loadable_only=True))
def test_corpus_has_no_violations(path: Path) -> None:
    report = _validate_file(path)
    assert report.violations == [], [(r.focus_node, r.path, r.message) for r in report.violations]


@pytest.mark.slow  # pyshacl, the reference engine, over whole benchmarks
@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.jsonld")), ids=lambda p: p.name)
def test_examples_conform(path: Path) -> None:
    report = _validate_file(path)
    assert report.conforms, [(r.focus_node, r.path, r.message) for r in report.results]
