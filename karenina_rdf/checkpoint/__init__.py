"""Karenina checkpoints: reading the JSON, Karenina's load rules, the mapping to triples
(``_map``), typed properties (``_properties``), rubric traits and rubrics (``_traits``, ``_rubric``, ``_rubric_sets``),
Karenina's default template (``_template_defaults``), and triples back to canonical
checkpoint JSON (``_export``)."""

from ._export import CANONICAL_CONTEXT, benchmark_json, item_json, write_json
from ._json import too_long_integer, without_lone_surrogates
from ._map import (
    MappedBenchmark,
    QuestionText,
    entries,
    identity,
    map_checkpoint,
    map_item,
    read_bytes,
    read_checkpoint,
    read_json,
)
from ._properties import finished_value
from ._rubric import RubricTrait, coerce_trait, karenina_rating, karenina_trait_fields, read_as_karenina
from ._rubric_sets import TRAIT_FIELDS, DynamicRubric, Rubric, rubric_traits
from ._scenarios import scenario_json
from ._template_defaults import default_template, is_default_template, template_name
from ._traits import decode_json_string

__all__ = [
    "CANONICAL_CONTEXT",
    "MappedBenchmark",
    "QuestionText",
    "DynamicRubric",
    "Rubric",
    "RubricTrait",
    "TRAIT_FIELDS",
    "benchmark_json",
    "coerce_trait",
    "decode_json_string",
    "default_template",
    "entries",
    "finished_value",
    "identity",
    "is_default_template",
    "item_json",
    "karenina_rating",
    "karenina_trait_fields",
    "map_checkpoint",
    "map_item",
    "read_bytes",
    "read_checkpoint",
    "read_as_karenina",
    "read_json",
    "rubric_traits",
    "scenario_json",
    "template_name",
    "without_lone_surrogates",
    "too_long_integer",
    "write_json",
]
