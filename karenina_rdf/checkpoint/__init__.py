"""Karenina checkpoints: reading the JSON, Karenina's load rules, the mapping to triples
(``_map``), typed properties (``_properties``), rubric traits (``_traits``, ``_rubric``),
Karenina's default template (``_template_defaults``), and triples back to canonical
checkpoint JSON (``_export``)."""

from ._export import CANONICAL_CONTEXT, benchmark_json, item_json, write_json
from ._json import too_long_integer, without_lone_surrogates
from ._map import MappedBenchmark, identity, map_checkpoint, map_item, read_bytes, read_checkpoint, read_json
from ._properties import finished_value
from ._rubric import RubricTrait, coerce_trait
from ._template_defaults import default_template, is_default_template, template_name
from ._traits import decode_json_string

__all__ = [
    "CANONICAL_CONTEXT",
    "MappedBenchmark",
    "RubricTrait",
    "benchmark_json",
    "coerce_trait",
    "decode_json_string",
    "default_template",
    "finished_value",
    "identity",
    "is_default_template",
    "item_json",
    "map_checkpoint",
    "map_item",
    "read_bytes",
    "read_checkpoint",
    "read_json",
    "template_name",
    "without_lone_surrogates",
    "too_long_integer",
    "write_json",
]
