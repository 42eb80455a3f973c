"""Karenina's authoring API, member by member (issue 18, point 3): the list of ``Benchmark``'s
public members is read from Karenina itself (its own environment, tests/helpers/karenina_ref.py),
so a member Karenina adds shows up here. Each non-deprecated member must exist on our
``Benchmark`` with the same parameters, in the same order, with the same defaults; our only
additions are keyword-only parameters (``store=``). What is not there yet is listed in
``NOT_YET``, strictly: a member built must leave the list, a member missing must be on it.

docs/karenina-parity.md is generated from the same comparison: ``python -m tests.parity.test_api``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
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
NOT_YET: set[str] = set()
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
    # Compared by signature only, and why: what calls a model cannot be run in Karenina here (its
    # answering call streams, which the fake model server does not speak), so these are checked
    # against Karenina's documented behaviour in tests/authoring/test_templates.py.
    "run_verification": "takes Karenina's VerificationConfig (duck-typed) or a dict of its fields; settings "
    "not built here raise InvalidValueError naming them; the results are stored as a run in the graph",
    "resume_verification": "state_path names the stored run (id or IRI): a run here is resumed from the store, "
    "not from a .state file; returns every result of the run",
    "extend_template": "continues the prior stored run (new judges grade stored answers); a new run_name, "
    "sink and store=False are refused",
    "generate_template_for_question": "through an OpenAI-compatible or Anthropic provider; a missing API key "
    "raises at once",
    "generate_templates": "as generate_template_for_question; a generated template must also accept the "
    "question's own reference answer",
    "generate_all_templates": "as generate_templates",
    "optimize": "needs GEPA and a model: raises FeatureUnavailableError (an ImportError, as Karenina's "
    "without gepa); run it in Karenina on the saved checkpoint",
    "extend_rubric": "grades the stored answers of the prior run with the current rubric, rubric_only, "
    "Karenina's checks and merge; the rubric pass is stored as a run derived from the prior one",
    "id": "minted as Karenina mints it (urn:uuid:karenina-checkpoint-<time>), so two libraries never agree",
    "created_at": "the time of creation, in Karenina's format (local time, no zone)",
    "modified_at": "the time of the last change, in Karenina's format",
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


PARITY = Path(__file__).parent
# The modules whose tests drive Karenina and us with the same calls and compare the answers.
CALL_MODULES = (
    "test_calls",
    "test_calls_questions",
    "test_calls_rubrics",
    "test_calls_templates",
    "test_calls_scenarios",
    "test_authoring",
    "test_load",
    "test_results",
)
FORMAT_MODULES = ("test_load", "test_scenarios", "test_calls_templates", "test_results")


def compared_in(members: dict[str, Any]) -> dict[str, list[str]]:
    """Member → the parity modules that call it (a ``STEPS`` entry, or ``.member(`` in the
    module's source, which holds both sides' scripts) and compare what it gives."""
    out: dict[str, list[str]] = {}
    for module in CALL_MODULES:
        source = (PARITY / f"{module}.py").read_text(encoding="utf-8")
        called = set(re.findall(r"\.(\w+)\(", source))  # a call, in our code or the script's
        called |= set(re.findall(r"\(\s*\"=?(\w+)\",\s*\[", source))  # a STEPS entry
        called |= set(re.findall(r"\bb\.(\w+)\b", source))  # a property read on the benchmark
        for name in sorted(called & set(members)):
            out.setdefault(name, []).append(module)
    return out


def formats() -> list[tuple[str, str, str, str, str]]:
    rows = []
    for module in FORMAT_MODULES:
        mod = importlib.import_module(f"tests.parity.{module}")
        rows.extend((*row, module) for row in mod.FORMATS)
    return rows


def test_every_format_row_names_a_test_of_its_module() -> None:
    for *_, test, module in formats():
        assert callable(getattr(importlib.import_module(f"tests.parity.{module}"), test, None)), (module, test)


def render(members: dict[str, Any]) -> str:
    counts = {"same": 0, "differs": 0, "missing": 0}
    compared = compared_in(members)
    rows = []
    for name, info in sorted(members.items()):
        s = status(name, info)
        counts[s.split(":")[0]] += 1
        note = DIFFERENT.get(name) or NOTES.get(name, "")
        shown = {"same": "same", "missing": "not yet"}.get(s, s)
        where = ", ".join(compared.get(name, [])) or "signature only"
        rows.append(f"| `{name}` | {info['kind']} | {shown} | {where} | {note} |")
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
        f"`store=`. {len(compared)} members are called in both libraries by the parity tests named in "
        "the fourth column (`tests/parity/`), which compare the answers, the errors (type, and "
        "message where Karenina's is ours to match) and the checkpoints saved after the calls, "
        "timestamps aside; the others are compared by signature.",
        "",
        "| member | kind | here | compared in | why it differs, or how it behaves here |",
        "|---|---|---|---|---|",
    ]
    fmt = [
        "",
        "## File formats",
        "",
        "Each row is checked by the named test against files Karenina itself writes or reads.",
        "",
        "| format | direction | how ours compares | test |",
        "|---|---|---|---|",
    ]
    fmt += [f"| {f} | {d} | {how} | `{m}.py::{t}` |" for f, d, how, t, m in formats()]
    return "\n".join(head + rows + fmt) + "\n"


def test_the_parity_page_is_up_to_date(members: dict[str, Any]) -> None:
    assert DOC.read_text(encoding="utf-8") == render(members), "regenerate: python -m tests.parity.test_api"


if __name__ == "__main__":
    DOC.write_text(render({n: i for n, i in karenina(MEMBERS).items() if not i["deprecated"]}), encoding="utf-8")
