"""Rows of results exports 2.0 and 2.1 brought to the 2.2 record Karenina reads today.

Older exports carry the models as ``"provider/model"`` strings, two replicate numbers, and
``completed_without_errors``/``error`` instead of a failure (notes in docs/data-model.md §9,
verification.md §10-11). Karenina's legacy loader migrates such rows; so does this module, so a
stored legacy row exports as a row Karenina's current loader accepts. Keys the 2.2 record has no
place for are returned apart, to be kept in the store (``karenina:legacyFields``), not exported.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ._model import FAILURE_GROUPS, PARTS, ROOT, canonical_key

_LEGACY_META = (
    "completed_without_errors",
    "error",
    "answering_model",
    "parsing_model",
    "answering_replicate",
    "parsing_replicate",
)


def is_legacy(row: dict[str, Any]) -> bool:
    meta = row.get("metadata")
    return isinstance(meta, dict) and any(k in meta for k in _LEGACY_META)


def identity(model: Any, tools: Any = None) -> dict[str, Any]:
    """A ModelIdentity from a legacy ``"provider/model"`` string (the provider becomes the
    interface, as Karenina's legacy loader does)."""
    text = str(model or "")
    for sep in ("/", ":"):
        if sep in text:
            interface, name = text.split(sep, 1)
            break
    else:
        interface, name = "unknown", text
    names = sorted(str(t) for t in tools) if isinstance(tools, list) else []
    return {"interface": interface, "model_name": name, "tools": names, "config_id": None}


def result_id(meta: dict[str, Any]) -> str:
    """Karenina's ``result_id`` (verification.md §10) for a migrated row that had none."""
    key = {
        "answering": canonical_key(meta.get("answering")),
        "parsing": canonical_key(meta.get("parsing")),
        "question_id": meta.get("question_id"),
        "replicate": meta.get("replicate"),
        "scenario_id": meta.get("scenario_id"),
        "scenario_node": meta.get("scenario_node"),
        "scenario_turn": meta.get("scenario_turn"),
        "timestamp": meta.get("timestamp"),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, ensure_ascii=True).encode()).hexdigest()[:16]


def _failure(meta: dict[str, Any], template: dict[str, Any] | None) -> dict[str, Any] | None:
    """The failure Karenina's classifier (verification.md §8) gives what a legacy row says:
    a false verdict is ``content`` (rule 2), an error ``unexpected_error`` (rule 7)."""
    template = template or {}
    if template.get("template_verification_performed") and template.get("verify_result") is False:
        return {
            "category": "content",
            "stage": "verify_template",
            "reason": "verify_result is false",
            "details": None,
            "group": FAILURE_GROUPS["content"],
        }
    if meta.get("completed_without_errors") is False or meta.get("error"):
        error = str(meta.get("error") or "")
        return {
            "category": "unexpected_error",
            "stage": "unknown",
            "reason": error[:500],
            "details": {"error_message": error} if error else None,
            "group": FAILURE_GROUPS["unexpected_error"],
        }
    return None


def migrate(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the row as a 2.2 record, the legacy keys it had: ``{part: {key: value}}``)."""
    legacy: dict[str, Any] = {}
    out: dict[str, Any] = {}
    for part, fields, _ in PARTS:
        value = row.get(part)
        if not isinstance(value, dict):
            if part in row:
                out[part] = value
            continue
        known = {f.name for f in fields}
        kept = {k: v for k, v in value.items() if k in known}
        dropped = {k: v for k, v in value.items() if k not in known}
        if dropped:
            legacy[part] = dropped
        out[part] = kept
    meta = out.setdefault("metadata", {})
    raw = row.get("metadata")
    old: dict[str, Any] = raw if isinstance(raw, dict) else {}
    template = out.get("template") if isinstance(out.get("template"), dict) else None
    if "answering" not in meta and "answering_model" in old:
        meta["answering"] = identity(old["answering_model"], (template or {}).get("answering_mcp_servers"))
    if "parsing" not in meta and "parsing_model" in old:
        meta["parsing"] = identity(old["parsing_model"])
    if "replicate" not in meta:
        meta["replicate"] = old.get("answering_replicate", old.get("parsing_replicate"))
    if "failure" not in meta:
        meta["failure"] = _failure(old, template)
    if "result_id" not in meta:
        meta["result_id"] = result_id(meta)
    for part, fields, _ in PARTS:  # Karenina's order: the export then needs no key-order note
        if isinstance(out.get(part), dict):
            out[part] = {f.name: out[part][f.name] for f in fields if f.name in out[part]}
    root_known = {f.name for f in ROOT}
    for key, value in row.items():
        if key in out:
            continue
        if key in root_known:
            out[key] = value
        else:
            legacy.setdefault("result", {})[key] = value
    return out, legacy
