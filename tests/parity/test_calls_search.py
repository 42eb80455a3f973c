"""``search_questions`` answered by the full-text index gives Karenina's answers: the same
benchmark loaded in Karenina (its own environment, tests/helpers/karenina_ref.py) and imported
here, the same calls, the same question ids in the same order.

Karenina's semantics are substring (or regular-expression) matching over the chosen fields'
texts joined by a space, folded with ``str.lower`` (no accent folding: "meniere" does not find
"Ménière" there, nor here); the index only narrows the candidates and holds the texts.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store
from tests.conftest import ROOT
from tests.helpers.karenina_ref import karenina

pytestmark = [pytest.mark.slow]  # Karenina runs in a subprocess of its own environment

# (query, match_all, fields, case_sensitive, regex)
CALLS: list[tuple[Any, bool, list[str] | None, bool, bool]] = [
    ("tumour", True, None, False, False),  # a word
    ("TUMOUR", True, None, False, False),  # case
    ("umou", True, None, False, False),  # inside a word
    ("tum", True, None, False, False),  # a prefix
    ("Ménière", True, None, False, False),  # accents as written
    ("meniere", True, None, False, False),  # no accent folding in Karenina
    ("xenopus laevis", True, None, False, False),  # two words, one substring
    ("laevis breast", True, None, False, False),  # across words
    ("RB1", True, None, True, False),  # case-sensitive
    ("rb1", True, None, True, False),
    (["alectinib", "reduce"], True, None, False, False),  # all terms
    (["alectinib", "imatinib"], False, None, False, False),  # any term
    (["alectinib", "?"], False, None, False, False),  # any, one term not a word
    ("high doses", True, ["raw_answer"], False, False),  # the answer only
    ("xenograft", True, ["question", "raw_answer"], False, False),
    ("mentions_drug", True, ["answer_template"], False, False),  # template code
    ("signalling", True, ["keywords"], False, False),  # not in the index: read the old way
    (r"tum(ou)?r", True, None, False, True),  # regex
    (r"^Does \w+ reduce", True, None, True, True),
    ("(", True, None, False, True),  # an invalid pattern matches nothing
    ("", True, None, False, False),  # the empty string is in every text
    ("?", True, None, False, False),  # no word: every text is checked
    ("zzzz-no-such-text", True, None, False, False),
]

SCRIPT = r"""
import json, sys
from karenina import Benchmark
b = Benchmark.load(sys.argv[1])
out = []
for query, match_all, fields, case_sensitive, regex in json.loads(sys.argv[2]):
    found = b.search_questions(query, match_all=match_all, fields=fields, case_sensitive=case_sensitive, regex=regex)
    out.append([q["id"] for q in found])
print(json.dumps(out))
"""


def _checkpoint(tmp: Path) -> Path:
    spec = importlib.util.spec_from_file_location("generate", ROOT / "benchmarks" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Path(module.write_checkpoint(tmp / "search.jsonld", 400, seed=7))


def test_search_questions_as_karenina(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path)
    theirs = karenina(SCRIPT, str(path), json.dumps(CALLS))
    store = Store.memory()
    bench = Benchmark(store, store.import_checkpoint(path).iri)
    ours = [
        [q["id"] for q in bench.search_questions(query, match_all, fields, case_sensitive, regex)]
        for query, match_all, fields, case_sensitive, regex in CALLS
    ]
    assert any(theirs) and not all(theirs)  # the table finds something, and not everything
    for call, mine, karenina_ids in zip(CALLS, ours, theirs, strict=True):
        assert mine == karenina_ids, call
