"""docs/security.md shows the attack tables of the tests, generated from those tables, so that the
page says what the tests assert and nothing else. Regenerate the blocks with
``python -m tests.test_security_doc`` (it rewrites what lies between each block's markers)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

from tests.conftest import ROOT
from tests.runner.sandbox import test_attacks
from tests.web import test_federation, test_hostile_requests, test_query_limits

DOC = ROOT / "docs" / "security.md"


def _cell(text: str) -> str:
    return "`" + text.replace("\n", "\\n").replace("|", "\\|").replace("`", "'") + "`"


def federation() -> str:
    rows = [
        "| form | text (`{u}`: the listener's URL) | as sent | scan blinded |",
        "|---|---|---:|---:|",
    ]
    for kind, table in (("query", test_federation.QUERIES), ("update", test_federation.UPDATES)):
        for name, (text, as_sent, blinded) in table.items():
            rows.append(f"| {kind}: {name} | {_cell(text)} | {as_sent} | {blinded} |")
    cases = 2 * 2 * 2 * (len(test_federation.QUERIES) + len(test_federation.UPDATES))
    rows.append("")
    rows.append(
        "Each row is sent by GET and POST, as sent and with the scan blinded, to an endpoint on a store "
        "in memory (queries evaluated on filtered threads) and on one on disk (queries evaluated in "
        f"worker processes under the same filter): {cases} requests, and the listener records no "
        "contact for any of them."
    )
    return "\n".join(rows)


def hostile_requests() -> str:
    values = ", ".join(
        _cell(v if len(v) <= 24 else f"{v[:12]}… ({len(v):,} characters)") for v in test_hostile_requests.HOSTILE
    )
    paths = ", ".join(_cell(p) for p in test_hostile_requests.PATHS)
    queries = ", ".join(_cell(q) for q in test_hostile_requests.QUERIES)
    total = len(test_hostile_requests.HOSTILE) * (len(test_hostile_requests.PATHS) + len(test_hostile_requests.QUERIES))
    return (
        f"Values: {values}.\n\n"
        f"Put in each path ({paths}) and each query parameter ({queries}): {total:,} requests, each "
        "answered below 500 with at most one line of text and no traceback."
    )


def sandbox_attacks() -> str:
    rows = [
        "| attack | with the audit hook | with the hook switched off first |",
        "|---|---|---|",
    ]
    # Host paths differ between checkouts: the page shows them relative to the repository.
    root = str(ROOT) + "/"
    for row in test_attacks.ROWS:
        on, off = (text.replace(root, "{REPO}/") for text in (row.hook_on, row.hook_off))
        rows.append(f"| {row.name} | {_cell(on)} | {_cell(off)} |")
    extra = [
        f"`{name}`: {(inspect.getdoc(fn) or '').split(chr(10) + chr(10))[0].replace(chr(10), ' ')}"
        for name, fn in inspect.getmembers(test_attacks, inspect.isfunction)
        if name.startswith("test_") and name != "test_template_attack" and inspect.getdoc(fn)
    ]
    rows += ["", f"{len(test_attacks.ROWS)} rows, each run twice: {2 * len(test_attacks.ROWS)} attacks. Besides:", ""]
    rows += [f"- {line}" for line in extra]
    return "\n".join(rows)


def query_limits() -> str:
    rows = ["| query | `serve` options | answer | message |", "|---|---|---:|---|"]
    for name, query, options, _, status, message in test_query_limits.HEAVY:
        shown = _cell(message) if message else "the time or the memory limit, whichever comes first"
        rows.append(f"| {name}: {_cell(query)} | {_cell(' '.join(options))} | {status} | {shown} |")
    return "\n".join(rows)


def engine_crashes() -> str:
    rows = ["| query | its size |", "|---|---:|"]
    for name, query in test_query_limits.CRASHES:
        rows.append(f"| {name} | {len(query):,} characters |")
    return "\n".join(rows)


BLOCKS: dict[str, Callable[[], str]] = {
    "federation": federation,
    "hostile-requests": hostile_requests,
    "sandbox-attacks": sandbox_attacks,
    "query-limits": query_limits,
    "engine-crashes": engine_crashes,
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)\n?(<!-- end: {re.escape(name)} -->)", re.S)


def render(text: str) -> str:
    for name, block in BLOCKS.items():
        text, found = _pattern(name).subn(lambda m, b=block: m.group(1) + b() + "\n" + m.group(3), text)
        assert found == 1, f"docs/security.md has no block {name!r} (or more than one)"
    return text


def test_the_attack_tables_in_the_doc_are_the_tests_tables() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert text == render(text), "docs/security.md is out of date: run `python -m tests.test_security_doc`"


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text(encoding="utf-8")), encoding="utf-8")
