"""Karenina's verification presets: a JSON file holding a saved ``VerificationConfig``.

The file is Karenina's (``schemas/verification/config_presets.py``): an object with ``id``,
``name``, ``description``, ``created_at``, ``updated_at`` and ``config``, the config being
``VerificationConfig.model_dump(mode="json")`` with its models sanitised. A preset is found as
Karenina's ``get_preset_path`` finds it: a file path, else ``NAME`` or ``NAME.json`` in
``$KARENINA_PRESETS_DIR`` (default ``./presets``).

Loading gives the ``config`` object, which ``Benchmark.run_verification`` takes as it takes a
dict of VerificationConfig fields, and which ``karenina-rdf verify --preset`` reads through the
same mapping (``verification_plan``): a setting the runner cannot honour is refused, naming it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from karenina_rdf._errors import VerificationError

from ._members import verification_plan

PRESETS_DIR_ENV = "KARENINA_PRESETS_DIR"


def presets_dir() -> Path:
    """Karenina's presets folder: ``$KARENINA_PRESETS_DIR``, else ``./presets``."""
    return Path(os.environ.get(PRESETS_DIR_ENV) or "presets")


def resolve_preset_path(name_or_path: str | Path) -> Path:
    """A preset file path or name as Karenina resolves it; a missing one is a one-line error."""
    path = Path(name_or_path)
    if path.is_file():
        return path.resolve()
    folder = presets_dir()
    text = str(name_or_path)
    candidate = folder / (text if text.endswith(".json") else f"{text}.json")
    if candidate.is_file():
        return candidate.resolve()
    raise VerificationError(f"preset {text!r}: no such file, and not in the presets folder {folder}")


def load_preset(name_or_path: str | Path) -> dict[str, Any]:
    """The VerificationConfig fields a Karenina preset file holds (its ``config`` object)."""
    path = resolve_preset_path(name_or_path)
    try:
        preset = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise VerificationError(f"preset {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise VerificationError(f"preset {path} is corrupted: {exc}") from None
    config = preset.get("config") if isinstance(preset, dict) else None
    if not config or not isinstance(config, dict):
        raise VerificationError(f"preset {path} has no configuration data (no 'config' object)")
    return config


def preset_run(store: Any, config: dict[str, Any]) -> dict[str, Any]:
    """A preset's configuration as ``verify()`` arguments (models, mode, replicates and every
    stage switch), through the mapping ``Benchmark.run_verification`` uses."""
    plan = verification_plan(store, config, None)
    return {
        "answerers": plan.answerers,
        "judges": plan.judges,
        "mode": plan.mode,
        "replicates": plan.replicates,
        "concurrency": plan.concurrency,
        "few_shot": plan.few_shot,
        "few_shot_config": plan.few_shot_config,
        "prompt_config": plan.prompt_config,
        "abstention": plan.abstention,
        "sufficiency": plan.sufficiency,
        "deep_judgment": plan.deep_judgment,
        "deep_judgment_rubric": plan.deep_judgment_rubric,
        "embedding_check": plan.embedding_check,
        "base_url": plan.base_url or plan.embedding_base_url,
        "rubric_strategy": plan.rubric_strategy,
        "scheduling": plan.scheduling,
    }


# verify() arguments whose default means "not given": a preset's value stands in for them.
_DEFAULTS: dict[str, Any] = {"replicates": 1, "concurrency": 4}


def with_preset(store: Any, preset: str | Path | dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``verify()`` arguments from a preset, overridden by those given (Karenina's order: the
    command line over the preset over the defaults). Models, answers, mode, replicates,
    concurrency and the few-shot, prompt, deep-judgment and embedding settings given replace the
    preset's; the stage switches given (``abstention``, ``sufficiency``, ``few_shot``) turn a
    stage on, never off."""
    config = preset if isinstance(preset, dict) else load_preset(preset)
    base = preset_run(store, config)
    out = dict(given)
    for key, value in base.items():
        mine = given.get(key)
        if key in ("abstention", "sufficiency", "few_shot"):
            out[key] = bool(mine) or bool(value)
        elif key == "answerers" and given.get("answers") is not None:
            out[key] = mine  # recorded answers stand in for the preset's answering models
        elif mine is None or (key in _DEFAULTS and mine == _DEFAULTS[key]):
            out[key] = value
    return out
