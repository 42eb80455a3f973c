"""The authoring API against Karenina's own (issue 18, point 3): the same calls in both libraries,
the same results. Karenina runs in its own environment (tests/helpers/karenina_ref.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from karenina_rdf import Benchmark, Store
from tests.helpers.karenina_ref import karenina

pytestmark = [pytest.mark.slow]  # Karenina runs in a subprocess of its own environment

# One class, written in a module file as a user would, with each library's BaseAnswer.
CLASS = '''

class CapitalAnswer(BaseAnswer):
    """The capital named in the answer."""

    capital: str = Field(description="the capital")

    def model_post_init(self, __context):
        self.correct = {"capital": "Paris"}

    def verify(self) -> bool:
        return self.capital.strip().lower() == "paris"
'''

KARENINA = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from capital import CapitalAnswer
from karenina import Benchmark
b = Benchmark.create(name="t", description="d", version="1.0.0")
qid = b.add_question(question="What is the capital of France?", raw_answer="Paris")
b.add_answer_template(qid, CapitalAnswer)
print(json.dumps({"template": b.get_template(qid)}))
"""


def test_a_template_class_is_kept_as_written(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "capital.py").write_text(
        "from pydantic import Field\nfrom karenina.schemas.entities import BaseAnswer\n" + CLASS, encoding="utf-8"
    )
    expected = karenina(KARENINA, str(theirs))["template"]

    ours = tmp_path / "ours" / "capital_ours.py"
    ours.parent.mkdir()
    # Our API never imports Karenina: a class deriving from any class named BaseAnswer will do.
    ours.write_text(
        "from pydantic import BaseModel, Field\n\nclass BaseAnswer(BaseModel):\n    pass\n" + CLASS, encoding="utf-8"
    )
    spec = importlib.util.spec_from_file_location("capital_ours", ours)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["capital_ours"] = module
    try:
        spec.loader.exec_module(module)
        with Store.memory() as store:
            bench = Benchmark.create("t", description="d", version="1.0.0", store=store)
            qid = bench.add_question("What is the capital of France?", "Paris")
            bench.add_answer_template(qid, module.CapitalAnswer)
            assert bench.get_template(qid) == expected
    finally:
        del sys.modules["capital_ours"]
    assert expected.startswith("class CapitalAnswer(BaseAnswer):")
