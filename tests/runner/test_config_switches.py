"""Karenina's ``VerificationConfig`` switches that shape a run rather than a stage, read by
``Benchmark.run_verification`` here: ``rubric_trait_names``.

``rubric_trait_names``: Karenina's rubric stage would skip a present dynamic trait not named
("excluded by rubric_trait_names filter"), but its runner never hands the setting to the stage
(``run_single_model_verification`` has no such parameter and the context keeps its default,
None), so a Karenina run with the filter evaluates every trait, static and dynamic. The test
runs Karenina's own ``Benchmark.run_verification`` offline against a fake OpenAI-compatible
server (streaming answers included) with the filter set, and ours with the same config: the
same traits are scored, and the setting is recorded in the run's stored configuration.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from karenina_rdf import Benchmark, RubricTrait, Store
from karenina_rdf.runner import Sandbox
from tests.helpers.fake_llm_server import FakeLLM
from tests.helpers.karenina_ref import karenina

pytestmark = pytest.mark.slow  # Karenina runs in its own environment; templates in sandbox workers

TEMPLATE = """class Answer(BaseAnswer):
    city: str = Field(description="The city")

    def ground_truth(self):
        self.correct = {"city": "Paris"}

    def verify(self) -> bool:
        return self.city == "Paris"
"""
KARENINA_RUN = r'''
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def fill(schema, defs=None):
    defs = defs or schema.get("$defs") or {}
    if "$ref" in schema:
        return fill(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for alt in schema.get("anyOf") or []:
        if alt.get("type") != "null":
            return fill(alt, defs)
    t = schema.get("type")
    if t == "object":
        props = schema.get("properties") or {}
        if not props and isinstance(schema.get("additionalProperties"), dict):
            return {}
        return {k: fill(v, defs) for k, v in props.items()}
    return {"boolean": True, "integer": 1, "number": 1, "array": [], "string": "Paris"}.get(t, "Paris")

log = []
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        rf = (body.get("response_format") or {}).get("json_schema") or {}
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        log.append({"schema": rf.get("name"), "user": user[-600:]})
        if rf.get("name", "").startswith("Answer"):
            content = json.dumps({"city": "Paris"})
        elif rf:
            content = json.dumps(fill(rf["schema"]))
            if "clarity" in user and "depth" in user and rf.get("name") == "BatchRubricScores":
                content = json.dumps({"scores": {"clarity": True, "depth": True}})
        else:
            content = "Paris"
        out = {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
               "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
        if body.get("stream"):
            delta = {"role": "assistant", "content": content}
            chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body.get("model"),
                     "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            end = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body.get("model"),
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
            data = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()
            self.send_response(200); self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
            return
        data = json.dumps(out).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)

server = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/v1"
from karenina import Benchmark
from karenina.schemas.config import ModelConfig
from karenina.schemas.verification.config import VerificationConfig
from karenina.schemas.entities.rubric import Rubric, LLMRubricTrait
TEMPLATE = """class Answer(BaseAnswer):
    city: str = Field(description="The city")

    def ground_truth(self):
        self.correct = {"city": "Paris"}

    def verify(self) -> bool:
        return self.city == "Paris"
"""
b = Benchmark.create(name="f")
qid = b.add_question("Capital of France?", "Paris", answer_template=TEMPLATE, finished=True)
b.set_global_rubric(Rubric(llm_traits=[LLMRubricTrait(name="clarity", description="Is it clear?", kind="boolean"),
                                       LLMRubricTrait(name="depth", description="Is it deep?", kind="boolean")]))
m = ModelConfig(id="m", model_name="m", interface="openai_endpoint", endpoint_base_url=url, endpoint_api_key="k",
                temperature=0.0)
cfg = VerificationConfig(answering_models=[m], parsing_models=[m], evaluation_mode="template_and_rubric",
                         rubric_trait_names=json.loads(sys.argv[1]), async_enabled=False)
rs = b.run_verification(cfg)
r = rs.results[0]
scores = r.rubric.llm_trait_scores if r.rubric else None
print(json.dumps({"scores": scores, "failure": str(r.metadata.failure), "calls": [e["schema"] for e in log]}))
'''

# (id, rubric_trait_names)
FILTERS: list[tuple[str, list[str] | None]] = [
    ("one named", ["clarity"]),
    ("none named", []),
    ("unknown name", ["no-such-trait"]),
    ("no filter", None),
]


@pytest.mark.parametrize(("case", "names"), FILTERS, ids=[c[0] for c in FILTERS])
def test_rubric_trait_names_filters_as_karenina_s_run_does(case: str, names: list[str] | None) -> None:
    theirs = karenina(KARENINA_RUN, json.dumps(names), timeout=600)
    with FakeLLM() as llm, Store.memory() as store, Sandbox(workers=1) as sandbox:
        llm.answers["Capital of France?"] = "Paris"
        b = Benchmark.create("filter", store=store)
        b.add_question("Capital of France?", "Paris", TEMPLATE, question_id="q", finished=True)
        b.set_global_rubric([RubricTrait.llm("clarity", "Is it clear?"), RubricTrait.llm("depth", "Is it deep?")])
        model: dict[str, Any] = {
            "id": "m",
            "model_name": "m",
            "interface": "openai_endpoint",
            "endpoint_base_url": llm.base_url,
            "endpoint_api_key": "k",
            "temperature": 0.0,
        }
        config = {
            "answering_models": [model],
            "parsing_models": [model],
            "evaluation_mode": "template_and_rubric",
            "rubric_trait_names": names,
        }
        got = b.run_verification(config, sandbox=sandbox)
        (row,) = got.results
        assert row["rubric"]["llm_trait_scores"] == theirs["scores"]
        assert row["metadata"]["failure"] is None and theirs["failure"] == "None"
        from karenina_rdf.runner._run import stored_config

        stored = stored_config(store, got.metadata["run_id"])
        assert stored.get("rubric_trait_names") == (names if names is not None else None)


def test_rubric_trait_names_of_the_wrong_type_is_named() -> None:
    from karenina_rdf._errors import InvalidTypeError

    with Store.memory() as store:
        b = Benchmark.create("bad", store=store)
        b.add_question("Capital of France?", "Paris", TEMPLATE, question_id="q", finished=True)
        model = {"model_name": "m", "interface": "openai_endpoint", "endpoint_base_url": "http://127.0.0.1:9/v1"}
        with pytest.raises(InvalidTypeError, match="rubric_trait_names must be a list"):
            b.run_verification(
                {"answering_models": [model], "parsing_models": [model], "rubric_trait_names": "clarity"}
            )
