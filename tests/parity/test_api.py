"""Karenina's authoring API, member by member (issue 18, point 3): the list of ``Benchmark``'s
public members is read from Karenina itself (its own environment, tests/helpers/karenina_ref.py),
so a member Karenina adds shows up here. Each non-deprecated member must exist on our
``Benchmark`` with the same parameters, in the same order, with the same defaults; our only
additions are keyword-only parameters (``store=``). What is not there yet is listed in
``NOT_YET``, strictly: a member built must leave the list, a member missing must be on it.

docs/karenina-parity.md is generated from the same comparison: ``python -m tests.parity.test_api``.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

from karenina_rdf import Benchmark
from tests.conftest import ROOT
from tests.helpers.karenina_ref import karenina

pytestmark = [pytest.mark.slow]  # Karenina runs in a subprocess of its own environment

DOC = ROOT / "docs" / "karenina-parity.md"

MEMBERS = r"""
import inspect, json
from karenina import Benchmark

out = {}
for name, obj in inspect.getmembers(Benchmark):
    if name.startswith("_"):
        continue
    raw = inspect.getattr_static(Benchmark, name)
    fn = raw.fget if isinstance(raw, property) else obj
    kind = "property" if isinstance(raw, property) else "classmethod" if isinstance(raw, classmethod) else "method"
    params = None
    if kind != "property":
        params = [
            [p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
            for p in inspect.signature(fn).parameters.values()
            if p.name not in ("self", "cls")
        ]
    doc = inspect.getdoc(fn) or ""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        source = ""
    out[name] = {
        "kind": kind,
        "params": params,
        "deprecated": "deprecated" in doc.lower() or "DeprecationWarning" in source,
        "summary": doc.split("\n", 1)[0],
    }
print(json.dumps(out))
"""

# Members of Karenina's Benchmark not built here yet (issue 18 is open).
NOT_YET = {
    "extend_rubric",
}
# Parameters that differ on purpose, with why.
DIFFERENT = {
    "save": "no save_deep_judgment_config: deep-judgment settings are saved with the traits they belong to",
}
# Members with Karenina's parameters whose behaviour a user should know differs, or lives only
# in memory (issue 18: "say which in the docs"); shown on the parity page beside the member.
NOTES = {
    "workspace_root": "in memory only, as in Karenina (which never saves it): it belongs to the handle, "
    "and a new handle on the same benchmark has none until `create`/`load`/`set_workspace_root` give one",
    "set_workspace_root": "in memory only: sets this handle's workspace root, nothing is stored",
    "jsonld_data": "a dict, the checkpoint as it would be saved, read from the graph at each access; "
    "Karenina's is its live `JsonLdCheckpoint` model, so changing this one changes nothing stored",
    "clone": "the copy is a new benchmark with the same id in a new in-memory store (or `store=`, "
    "not its own, where the same id would replace it)",
    "validate": "templates are read, not run: one that does not parse or has no answer class is invalid "
    "(Karenina runs them; its own `validate` fails with ModuleNotFoundError in snapshot 9851a770)",
    "get_question": "Karenina's dict, key for key; its `question_rubric` holds our `RubricTrait` values where "
    "Karenina's holds its own trait classes (so do `get_all_questions`, iteration and the filters); "
    "`question_view` gives the typed `Question`",
    "to_dict": "`global_rubric` holds our `RubricTrait` dumps where Karenina's holds its trait classes' dumps",
    "get_question_as_object": "returns `QuestionObject`, a class with the fields of Karenina's `Question` "
    "(`id` is the MD5 of the text); Karenina's own `Question` objects are accepted wherever it takes one",
}

_SENTINEL = re.compile(r"<object object at 0x[0-9a-f]+>")


def _params(fn: Any) -> list[list[Any]]:
    return [
        [p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
        for p in inspect.signature(fn).parameters.values()
        if p.name not in ("self", "cls")
    ]


def _normal(params: list[list[Any]]) -> list[list[Any]]:
    # A sentinel default prints its address; only that it is a sentinel counts.
    return [[n, k, _SENTINEL.sub("<sentinel>", d) if isinstance(d, str) else d] for n, k, d in params]


def status(name: str, theirs: dict[str, Any]) -> str:
    """ "same", "missing" or "differs: …" for one member of Karenina's Benchmark."""
    if not hasattr(Benchmark, name):
        return "missing"
    raw = inspect.getattr_static(Benchmark, name)
    if theirs["kind"] == "property":
        return "same" if isinstance(raw, property) else "differs: not a property here"
    if isinstance(raw, property):
        return "differs: a property here, a method in Karenina"
    ours = _normal(_params(getattr(Benchmark, name)))
    ours = [p for p in ours if p[1] != "KEYWORD_ONLY" or p[0] in {q[0] for q in theirs["params"]}]
    want = _normal(theirs["params"])
    if ours == want:
        return "same"
    gone = [p[0] for p in want if p[0] not in {q[0] for q in ours}]
    return "differs: " + (f"no {', '.join(gone)}" if gone else "parameters in another order or with other defaults")


@pytest.fixture(scope="module")
def members() -> dict[str, Any]:
    found: dict[str, Any] = karenina(MEMBERS)
    return {name: info for name, info in found.items() if not info["deprecated"]}


def test_every_member_is_here_or_listed_as_not_yet(members: dict[str, Any]) -> None:
    missing = {name for name, info in members.items() if status(name, info) == "missing"}
    assert missing - NOT_YET == set(), "members of Karenina's Benchmark missing here and not listed"
    assert NOT_YET - missing == set(), "built since: take them off NOT_YET"


def test_members_here_take_karenina_s_parameters(members: dict[str, Any]) -> None:
    differs = {name: s for name, info in members.items() if (s := status(name, info)).startswith("differs")}
    assert set(differs) == set(DIFFERENT), differs


def render(members: dict[str, Any]) -> str:
    counts = {"same": 0, "differs": 0, "missing": 0}
    rows = []
    for name, info in sorted(members.items()):
        s = status(name, info)
        counts[s.split(":")[0]] += 1
        note = DIFFERENT.get(name) or NOTES.get(name, "")
        shown = {"same": "same", "missing": "not yet"}.get(s, s)
        rows.append(f"| `{name}` | {info['kind']} | {shown} | {note} |")
    head = [
        "# Karenina parity",
        "",
        "Generated by `python -m tests.parity.test_api` from Karenina itself (the snapshot in",
        "`../shared/karenina`, read in an environment of its own); a test fails when this page and the",
        "comparison disagree.",
        "",
        "## The authoring API: `karenina_rdf.Benchmark` against `karenina.Benchmark`",
        "",
        f"Karenina's `Benchmark` has {len(members)} public members that are not deprecated: "
        f"{counts['same']} are here with the same parameters, {counts['differs']} differ on purpose "
        f'(below, with why), {counts["missing"]} are not built yet. "Same" means the same name, kind, '
        "parameters, order and defaults; our only additions are keyword-only parameters such as "
        "`store=`. Return values are compared with Karenina's for `add_answer_template` and "
        "`get_template` (test_authoring.py), for the finished-flag and progress members in a call "
        "sequence (test_calls.py), for the question-data and reporting members (every answer "
        "whole, `to_csv`/`to_markdown`/`get_summary` character for character, timestamps aside, and "
        "the checkpoints saved after them; test_calls_questions.py), and saved checkpoints for "
        "`load` and `save` (test_load.py); the other members are compared by signature only, so far.",
        "",
        "| member | kind | here | why it differs, or how it behaves here |",
        "|---|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n"


def test_the_parity_page_is_up_to_date(members: dict[str, Any]) -> None:
    assert DOC.read_text(encoding="utf-8") == render(members), "regenerate: python -m tests.parity.test_api"


if __name__ == "__main__":
    DOC.write_text(render({n: i for n, i in karenina(MEMBERS).items() if not i["deprecated"]}), encoding="utf-8")
