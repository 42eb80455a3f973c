"""A Violation found after a benchmark was loaded, for tests of that path.

A checkpoint Karenina loads is no longer refused by a shape or check once the mapper has read it
(every rule stricter than Karenina's load reports a warning: tests/parity/test_load.py), so the
refusal that happens after the triples are in their generation graph cannot be reached with a
real file. ``violation_after_loading`` adds one Violation, located at the first question's
template, to what validation finds: the importer must then refuse and leave the store as it was.
"""

from __future__ import annotations

from typing import Any

import pytest

from karenina_rdf import _importing
from karenina_rdf.validation import Finding

MESSAGE = "a Violation found after loading (tests/helpers/violations.py)"
POINTER = "/dataFeedElement/0/item/hasPart"


def violation_after_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _importing.findings_in_graph

    def findings(store: Any, graph: Any, bench: str, name: str, pointers: Any, *rest: Any) -> list[Finding]:
        found = real(store, graph, bench, name, pointers, *rest)
        violation = Finding(
            severity="Violation",
            message=MESSAGE,
            benchmark=name,
            pointer=POINTER,
            component="urn:karenina-rdf:tests:violation",
        )
        return [violation, *found]

    monkeypatch.setattr(_importing, "findings_in_graph", findings)
