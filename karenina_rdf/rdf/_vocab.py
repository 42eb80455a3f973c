"""Namespaces and terms of the RDF model (documented in docs/data-model.md)."""

from __future__ import annotations

import re

import pyoxigraph as ox

from ._namespace import ClosedNamespace, OpenFamily

SCHEMA = "https://schema.org/"
# Karenina's own canonical context binds `karenina:` to this URN; reusing it means an
# `additionalType` CURIE in a checkpoint and the IRI in the store are the same term.
KARENINA = "urn:karenina:vocab:"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD = "http://www.w3.org/2001/XMLSchema#"
CATALOG_GRAPH = ox.NamedNode("urn:karenina-rdf:catalog")
VOCABULARY_GRAPH = ox.NamedNode("urn:karenina-rdf:vocabulary")  # the failure taxonomy (SKOS)
# The models of every run, once: a model node copied into each run graph would be seen once per
# run by queries over the union of graphs (pyoxigraph's union default graph keeps duplicates).
MODELS_GRAPH = ox.NamedNode("urn:karenina-rdf:models")
DEFAULT_BASE_IRI = "http://127.0.0.1:8000/"

PREFIXES = {
    "schema": SCHEMA,
    "karenina": KARENINA,
    "rdf": RDF,
    "xsd": XSD,
    # Verification results (docs/data-model.md §9): test outcomes, provenance, the failure taxonomy.
    "earl": "http://www.w3.org/ns/earl#",
    "prov": "http://www.w3.org/ns/prov#",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
}


def sparql_prefixes() -> str:
    return "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())


def schema(local: str) -> ox.NamedNode:
    return ox.NamedNode(SCHEMA + local)


TYPE = ox.NamedNode(RDF + "type")
RDF_JSON = ox.NamedNode(RDF + "JSON")
XSD_STRING = ox.NamedNode(XSD + "string")
XSD_BOOLEAN = ox.NamedNode(XSD + "boolean")
XSD_INTEGER = ox.NamedNode(XSD + "integer")
XSD_DOUBLE = ox.NamedNode(XSD + "double")
XSD_BASE64 = ox.NamedNode(XSD + "base64Binary")

_CAMEL = re.compile(r"_([a-z0-9])")


def camel(name: str) -> str:
    """`higher_is_better` → `higherIsBetter`: Karenina setting names as RDF property names."""
    return _CAMEL.sub(lambda m: m.group(1).upper(), name)


# Question-level additionalProperty names with a typed predicate of their own (spec §4).
QUESTION_SETTINGS = (
    "finished",
    "author",
    "sources",
    "few_shot_examples",
    "answer_notes",
    "workspace_path",
)
# Values Karenina writes as JSON-encoded strings; stored decoded, as rdf:JSON.
JSON_STRING_SETTINGS = frozenset(
    {
        "author",
        "sources",
        "few_shot_examples",
        "classes",
        "metrics",
        "tp_instructions",
        "tn_instructions",
    }
)
# Trait-level additionalProperty names (spec §6.0).
TRAIT_SETTINGS = (
    "higher_is_better",
    "summary",
    "min_score",
    "max_score",
    "kind",
    "classes",
    "deep_judgment_enabled",
    "deep_judgment_excerpt_enabled",
    "deep_judgment_search_enabled",
    "deep_judgment_max_excerpts",
    "deep_judgment_excerpt_retry_attempts",
    "deep_judgment_fuzzy_match_threshold",
    "pattern",
    "case_sensitive",
    "invert_result",
    "callable_code",
    "metrics",
    "tp_instructions",
    "tn_instructions",
    "repeated_extraction",
    "evaluation_mode",
    "context_mode",
    "materialize_trace",
    "persist_trace",
    "max_turns",
    "timeout_seconds",
    "model_override",
    "dynamic_trait_type",
)
# Benchmark-level names that are system data rather than user custom properties (spec §5).
BENCHMARK_SETTINGS = ("benchmark_format_version", "benchmark_type")
CUSTOM_PREFIX = "custom_"

# The 14 rubric-trait additionalType values (spec §6.1) and the trait class each one means.
TRAIT_TYPES = {
    f"{scope}{suffix}": cls
    for scope in ("Global", "QuestionSpecific")
    for suffix, cls in (
        ("RubricTrait", "LLMRubricTrait"),
        ("LLMRubricTrait", "LLMRubricTrait"),
        ("RegexTrait", "RegexRubricTrait"),
        ("CallableTrait", "CallableRubricTrait"),
        ("MetricRubricTrait", "MetricRubricTrait"),
        ("AgenticRubricTrait", "AgenticRubricTrait"),
        ("DynamicRubricTrait", "DynamicRubricTrait"),
    )
}
DYNAMIC_TRAIT_CLASSES = {
    "llm": "LLMRubricTrait",
    "regex": "RegexRubricTrait",
    "callable": "CallableRubricTrait",
    "metric": "MetricRubricTrait",
    "agentic": "AgenticRubricTrait",
}


# -- the karenina: vocabulary ------------------------------------------------------------------
def _words(*sections: str) -> tuple[str, ...]:
    return tuple(word for section in sections for word in section.split())


# Every karenina: term the package writes, reads or queries, and every one the shapes, the named
# queries and the docs use: tests/rdf/test_vocabulary.py checks them all, and every attribute of KAR
# the package spells. A term may be listed in more than one section.
KARENINA_TERMS = _words(
    # The catalog graph and the store node (data-model §2); a run's catalog entry (§9).
    "graph contentHash sourceSha256 tripleCount importedFrom importedAt baseIri pendingGraph runGraph textStamp",
    "validatedFindings validationNonce",
    # Kept versions of a benchmark (data-model § Versions): a version node in the catalog, its
    # number, the graph of the version archive holding its triples, its question count.
    "BenchmarkVersion versionNumber versionGraph questionCount",
    # The full-text index's SPARQL functions (docs/queries.md § Full-text search).
    "textScore textMatch",
    # Benchmark nodes (§4): order, identity kept from the file, Karenina's derived values.
    "position sourceId derivedIdentifier emptyLists propertyLayout textMd5 keywordOrder",
    "templateId isDefaultTemplate traitKind",
    # Scenario benchmarks (§6): a scenario, its nodes (turns) with their questions, its edges and
    # outcome criteria; Karenina's free-JSON fields of these as rdf:JSON.
    "Scenario ScenarioNode ScenarioEdge ScenarioOutcome scenarioNode scenarioEdge scenarioOutcome",
    "entryNode entry nodeId question toolFilter stateUpdateSource questionData agentIdentity scenarioMetadata",
    "edgeSource edgeTarget fromNode toNode endsScenario condition conditionSource handover check evaluateSource",
    "verbatimFields",
    # An item whose question id a later item takes again, kept whole to be written back.
    "ShadowedItem shadowedItem itemJson",
    # Settings become typed data (§5): QUESTION_SETTINGS, BENCHMARK_SETTINGS, TRAIT_SETTINGS, camelCased.
    "finished author sources fewShotExamples answerNotes workspacePath",
    "benchmarkFormatVersion benchmarkType",
    "higherIsBetter summary minScore maxScore kind classes deepJudgmentEnabled deepJudgmentExcerptEnabled",
    "deepJudgmentSearchEnabled deepJudgmentMaxExcerpts deepJudgmentExcerptRetryAttempts",
    "deepJudgmentFuzzyMatchThreshold pattern caseSensitive invertResult callableCode metrics tpInstructions",
    "tnInstructions repeatedExtraction evaluationMode contextMode materializeTrace persistTrace maxTurns",
    "timeoutSeconds modelOverride dynamicTraitType",
    # Rubric traits: the trait classes (DYNAMIC_TRAIT_CLASSES) and the 14 additionalType values (TRAIT_TYPES).
    "LLMRubricTrait RegexRubricTrait CallableRubricTrait MetricRubricTrait AgenticRubricTrait DynamicRubricTrait",
    "GlobalRubricTrait GlobalLLMRubricTrait GlobalRegexTrait GlobalCallableTrait GlobalMetricRubricTrait",
    "GlobalAgenticRubricTrait GlobalDynamicRubricTrait",
    "QuestionSpecificRubricTrait QuestionSpecificLLMRubricTrait QuestionSpecificRegexTrait",
    "QuestionSpecificCallableTrait QuestionSpecificMetricRubricTrait QuestionSpecificAgenticRubricTrait",
    "QuestionSpecificDynamicRubricTrait",
    # Runs (§9): the run node, its import records, what verify records, the header of an export
    # (results._runs RUN_METADATA, SHARED_DATA, TOP_LEVEL; results._model JOB_SUMMARY).
    "VerificationRun ResultsImport import resultCount formatVersion runStatus configuration versions",
    "benchmarkGraph runMetadataVerbatim sharedDataVerbatim jobSummaryVerbatim jobSummaryNull",
    "exportTimestamp kareninaVersion jobId verificationConfig rubricDefinition scenarioResults",
    "totalQuestions successfulCount failedCount startTime endTime totalDuration isComplete",
    # Tallies: counts per (answering model, judge, benchmark) of a run.
    "Tally answeringModel parsingModel benchmark results verified passed failures",
    # Summaries of a run's results for the named queries (results._summaries): the marker that a
    # run has them, then partial sums per model, stage, failure category, trait and value.
    # Their own predicates: the checks of results (validation) select by the results' predicates.
    "RunSummaries UsageSummary FailureSummary MetricSummary ScoreSummary priced scores",
    "valueSum valueMin valueMax isBoolean summaryModel summaryStage inputTokenSum outputTokenSum totalTokenSum",
    "costUsdSum summaryCategory summaryGroup summaryTraitName summaryTrait summaryMetric summaryKind",
    "summaryDirection summaryValue",
    # Models (results._model MODEL_IDENTITY).
    "Model canonicalKey interface tools configId",
    # A result (results._model METADATA, TEMPLATE, RUBRIC, DEEP_JUDGMENT, DEEP_JUDGMENT_RUBRIC, ROOT).
    "VerificationResult template templatePart legacyFields rowKeyOrder emptyDicts",
    "questionId templateId failure caveats warnings partialContent retryCounts questionText rawAnswer keywords",
    "answeringSystemPrompt parsingSystemPrompt executionTime timestamp resultId runName replicate",
    "fewShotEnabled fewShotExampleCount evaluationMode scenarioId scenarioNode scenarioTurn scenarioPath",
    "rawLlmResponse traceMessages conversationContext parsedGtResponse parsedLlmResponse",
    "templateVerificationPerformed verifyResult verifyGranularResult fieldVerificationError fieldResults",
    "fieldScores compositionStrategy embeddingCheckPerformed embeddingSimilarityScore embeddingOverrideApplied",
    "embeddingModelUsed regexValidationsPerformed regexValidationResults regexValidationDetails",
    "regexOverallSuccess regexExtractionResults recursionLimitReached responseTimeoutPartial usageUnavailable",
    "investigationTrace agenticParsingPerformed agenticExtractionRecovery agenticExtractionError",
    "dynamicParsingPerformed dynamicParseDecision dynamicDecisionReasoning abstentionCheckPerformed",
    "abstentionDetected abstentionOverrideApplied abstentionReasoning sufficiencyCheckPerformed",
    "sufficiencyDetected sufficiencyOverrideApplied sufficiencyReasoning answeringMcpServers usageMetadata",
    "agentMetrics",
    "rubricEvaluationPerformed rubricEvaluationStrategy llmTraitScores llmTraitLabels regexTraitScores",
    "callableTraitScores metricTraitScores metricTraitConfusionLists agenticTraitScores",
    "agenticTraitInvestigationTraces agenticTraitExtractionMetadata dynamicRubricSkippedTraits",
    "dynamicRubricPromotedTraits traitProvenance",
    "deepJudgmentMode deepJudgmentPerformed extractedExcerpts attributeReasoning deepJudgmentStagesCompleted",
    "deepJudgmentModelCalls deepJudgmentExcerptRetryCount attributesWithoutExcerpts deepJudgmentSearchEnabled",
    "hallucinationRiskAssessment",
    "deepJudgmentRubricPerformed extractedRubricExcerpts rubricTraitReasoning deepJudgmentRubricScores",
    "standardRubricScores traitMetadata traitsWithoutValidExcerpts rubricHallucinationRiskAssessment",
    "totalDeepJudgmentModelCalls totalTraitsEvaluated totalExcerptRetries",
    "evaluationInput usedFullTrace traceExtractionError",
    # A result's parts: the link to a part's node and its class, a part that was not an object,
    # a model identity that was not a ModelIdentity.
    "rubric deepJudgment deepJudgmentRubric RubricEvaluation DeepJudgment",
    "templateVerbatim rubricVerbatim deepJudgmentVerbatim deepJudgmentRubricVerbatim",
    "answeringIdentity parsingIdentity",
    # Fields beyond Karenina's and keys out of Karenina's order, per part (ResultMapper._part).
    "metadataExtraFields metadataKeyOrder templateExtraFields templateKeyOrder rubricExtraFields rubricKeyOrder",
    "deepJudgmentExtraFields deepJudgmentKeyOrder deepJudgmentRubricExtraFields deepJudgmentRubricKeyOrder",
    "resultExtraFields resultKeyOrder jobSummaryExtraFields jobSummaryKeyOrder runMetadataExtraFields",
    "runMetadataKeyOrder sharedDataExtraFields sharedDataKeyOrder exportExtraFields exportKeyOrder",
    # Failures (the scheme karenina:failure is also the predicate to a result's failure node).
    "failure Failure failureCategory failureGroup failureStage failureDetails",
    # Token usage per stage (results._model USAGE_KEYS) and its cost.
    "tokenUsage TokenUsage stage inputTokens outputTokens totalTokens model inputTokenDetails outputTokenDetails",
    "costUsd",
    # Per-field results and scores.
    "fieldOutcome FieldOutcome fieldResult fieldScore resultPosition scorePosition",
    # Rubric trait scores, their metrics and confusion lists (results._model CONFUSION_BUCKETS).
    "traitScore TraitScore traitName scoresTrait higherIsBetter scoreKind metricValue",
    "label labelPosition provenance provenancePosition confusionPosition",
    "tp fn fp tn tpCount fnCount fpCount tnCount",
)

KARENINA_FAMILIES = {
    # A user's custom property (data-model §5): "custom_" + the property name as a path segment.
    "custom_property": "custom_",
    # Karenina's failure taxonomy as SKOS concepts (data-model §9), in the scheme KAR.failure.
    "failure_category": "failure/",
    "failure_group": "failure-group/",
}


class KareninaNamespace(ClosedNamespace):
    """``karenina:`` (:data:`KARENINA`) as a closed namespace: :data:`KARENINA_TERMS` as
    attributes, and the open families of IRIs that data completes."""

    custom_property: OpenFamily
    failure_category: OpenFamily
    failure_group: OpenFamily


# The one way to spell a karenina: IRI: KAR.position, KAR.position.nt ("<…>", for N-Triples),
# KAR.position.node (a NamedNode), KAR.term(name) for a name known at run time.
KAR = KareninaNamespace(KARENINA, KARENINA_TERMS, KARENINA_FAMILIES)

# The classes of a run's summary nodes (results._summaries), the marker first: here, below both
# the results package that writes them and the store whose raw updates drop them.
SUMMARY_CLASSES = (KAR.RunSummaries, KAR.UsageSummary, KAR.FailureSummary, KAR.MetricSummary, KAR.ScoreSummary)


def drop_summaries(graph: str | None = None) -> str:
    """The SPARQL update removing the summary nodes from ``graph`` (N-Triples form of its IRI;
    every graph when None)."""
    g = graph if graph is not None else "?g"
    classes = " ".join(c.nt for c in SUMMARY_CLASSES)
    return (
        f"DELETE {{ GRAPH {g} {{ ?t ?p ?o }} }} WHERE {{ GRAPH {g} {{ VALUES ?c {{ {classes} }} ?t a ?c ; ?p ?o }} }}"
    )
