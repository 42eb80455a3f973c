"""``complete_structured`` against Karenina's own adapters, driven offline: the same replies, one
a call, to Karenina's ``LangChainLLMAdapter.with_structured_output`` and
``LangChainParserAdapter.parse_to_pydantic`` (the ``openai_endpoint`` path, pointed at a fake
OpenAI-compatible server) and to ours. Both must make the same calls in the same order (told
apart by their shape: structured with a schema, instructions, plain), take the same reply, and
count the same usage. This pins the two calls an attempt, the JSON extraction, the json_repair
fallback and the exact triggers of the parser's null-feedback and format-feedback retries.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from karenina_rdf.runner.providers import (
    ChatRequest,
    ChatResponse,
    FunctionProvider,
    Message,
    StructuredOutputError,
    Usage,
    complete_structured,
    json_object,
)
from karenina_rdf.runner.providers._structured import format_instructions
from tests.helpers.karenina_ref import FAKE_OPENAI_JUDGE, karenina

pytestmark = pytest.mark.slow  # Karenina in its own environment

GOOD = json.dumps({"verdict": True})
NO = "I would rather explain in prose: it looks right."
TRUNCATED = '{"verdict": true'
FENCED = f"```json\n{GOOD}\n```"
TWO_OBJECTS = 'First {"verdict": false} then, on reflection, {"verdict": true}.'
NULL = json.dumps({"verdict": None})
FROM_COMPLETION = 'Failed to parse from completion {"verdict": null}. Got: nothing'
FORMAT = "Expecting value: I cannot give JSON."
BROKEN_FENCE = '```json\n{"verdict": tru}\n```'

# (id, replies: one a call, the last one repeated)
CASES: list[tuple[str, list[str]]] = [
    ("good", [GOOD]),
    ("fenced", [FENCED]),
    ("two objects in prose: the last one", [TWO_OBJECTS]),
    ("a fence holding broken JSON", [BROKEN_FENCE, GOOD]),
    ("bad, then good", [NO, GOOD]),
    ("three bad, then good", [NO, NO, NO, GOOD]),
    ("four bad, then good", [NO] * 4 + [GOOD]),
    ("seven bad, then good", [NO] * 7 + [GOOD]),
    ("truncated every time", [TRUNCATED]),
    ("null every time", [NULL]),
    ("no JSON every time", [NO]),
    ("eight bad, then good", [NO] * 8 + [GOOD]),
    ("eight bad, then the null retry", [NO] * 8 + [FROM_COMPLETION, GOOD]),
    ("eight bad, then the format retry", [NO] * 8 + [FORMAT, GOOD]),
    ("eight bad, both retries", [NO] * 8 + [f'{FORMAT} from completion {{"verdict": null}}.', NO, GOOD]),
    ("eight bad, both retries unusable", [NO] * 8 + [f'{FORMAT} from completion {{"verdict": null}}.', NO]),
    ("an array", ["[true]"]),
]

KARENINA = (
    r"""
import json, sys
state = {"q": [], "kinds": []}

def reply(body):
    last = body["messages"][-1]["content"]
    last = last if isinstance(last, str) else json.dumps(last)
    if body.get("response_format"):
        state["kinds"].append("S")
    else:
        state["kinds"].append("I" if "You must respond with valid JSON" in last else "P")
    q = state["q"]
    return q.pop(0) if len(q) > 1 else q[0]

"""
    + FAKE_OPENAI_JUDGE
    + r"""
from pydantic import BaseModel
from karenina.adapters.factory import get_llm, get_parser
from karenina.ports import Message

class Verdict(BaseModel):
    verdict: bool

messages = [Message.system("Judge."), Message.user("Is it right?")]
out = []
for replies in json.loads(sys.argv[1]):
    row = {}
    for way in ("structured", "parser"):
        state["q"], state["kinds"] = list(replies), []
        try:
            if way == "parser":
                got = get_parser(model("j")).parse_to_pydantic(messages, Verdict)
                value, tokens = got.parsed.verdict, got.usage.total_tokens
            else:
                got = get_llm(model("j")).with_structured_output(Verdict).invoke(messages)
                value, tokens = got.raw.verdict, got.usage.total_tokens
        except Exception as exc:
            value, tokens = None, None
        row[way] = {"value": value, "tokens": tokens, "kinds": "".join(state["kinds"])}
    out.append(row)
print(json.dumps(out))
"""
)


class Verdict(BaseModel):
    verdict: bool


REQUEST = ChatRequest(
    model="j",
    messages=(Message(role="system", content="Judge."), Message(role="user", content="Is it right?")),
    json_schema=Verdict.model_json_schema(),
    stage="parsing",
)


def _kind(r: ChatRequest) -> str:
    if r.json_schema is not None:
        return "S"
    return "I" if r.messages[-1].content.endswith(format_instructions(REQUEST.json_schema)) else "P"


def ours(replies: list[str], parser: str | None) -> dict[str, Any]:
    queue, kinds = list(replies), []

    def fn(r: ChatRequest) -> ChatResponse:
        kinds.append(_kind(r))
        text = queue.pop(0) if len(queue) > 1 else queue[0]
        return ChatResponse(text=text, model="j", usage=Usage(input_tokens=5, output_tokens=3))

    provider = FunctionProvider(fn, interface="openai_endpoint")
    try:
        value, response = complete_structured(
            provider, REQUEST, lambda t: Verdict.model_validate(json_object(t)).verdict, parser=parser
        )
        tokens: int | None = response.usage.total_tokens
    except StructuredOutputError:
        value, tokens = None, None
    return {"value": value, "tokens": tokens, "kinds": "".join(kinds)}


@pytest.fixture(scope="module")
def theirs() -> dict[str, dict[str, Any]]:
    out = karenina(KARENINA, json.dumps([r for _, r in CASES]), timeout=600)
    return dict(zip([c for c, _ in CASES], out, strict=True))


@pytest.mark.parametrize(("case", "replies"), CASES, ids=[c for c, _ in CASES])
def test_the_same_calls_and_decisions_as_karenina_s_adapters(
    theirs: dict[str, dict[str, Any]], case: str, replies: list[str]
) -> None:
    ref = theirs[case]
    # with_structured_output (abstention, sufficiency, presence, rubric): attempts only.
    assert ours(replies, None) == ref["structured"]
    # The template parser: the attempts, then the plain call and its feedback retries.
    assert ours(replies, "Verdict") == ref["parser"]


KARENINA_CLAUDE_TOOL = r"""
import json, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
seen = []

class Anthropic(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        seen.append(self.path)
        out = {"id": "m", "type": "message", "role": "assistant", "model": body["model"],
               "content": [{"type": "text", "text": '{"verdict": true}'}], "stop_reason": "end_turn",
               "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 3}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

server = ThreadingHTTPServer(("127.0.0.1", 0), Anthropic)
threading.Thread(target=server.serve_forever, daemon=True).start()
from pydantic import BaseModel
from karenina.adapters.factory import get_llm, get_parser
from karenina.ports import Message
from karenina.schemas.config import ModelConfig

class Verdict(BaseModel):
    verdict: bool

cfg = ModelConfig(id="j", model_name="claude-x", interface="claude_tool", anthropic_api_key="k",
                  anthropic_base_url=f"http://127.0.0.1:{server.server_address[1]}")
messages = [Message.system("Judge."), Message.user("Is it right?")]
out = {"temperature": cfg.temperature}
for way in ("parser", "structured", "text"):
    seen.clear()
    try:
        if way == "parser":
            get_parser(cfg).parse_to_pydantic(messages, Verdict)
        elif way == "structured":
            get_llm(cfg).with_structured_output(Verdict).invoke(messages)
        else:
            get_llm(cfg).invoke(messages)
        out[way] = {"error": None, "requests": len(seen)}
    except Exception as exc:
        out[way] = {"error": f"{type(exc).__name__}: {exc}", "requests": len(seen)}
print(json.dumps(out))
"""


def test_karenina_s_claude_tool_structured_calls_fail_in_its_own_environment() -> None:
    """Why the claude_tool path here is not compared with a run of Karenina's claude_tool
    adapter (docs/verification.md): in Karenina's environment (the anthropic SDK it installs),
    the adapter passes ``temperature`` (a ModelConfig float, always set) to
    ``beta.messages.parse()`` and ``messages.create()``, which refuse it, so no call reaches the
    server: every structured attempt fails and ends in ParseError, whatever the judge would say,
    and a plain call fails too."""
    out = karenina(KARENINA_CLAUDE_TOOL, timeout=300)
    assert isinstance(out["temperature"], float)
    for way, attempts in (("parser", 3), ("structured", 4)):
        assert out[way]["requests"] == 0, way
        assert out[way]["error"].startswith(f"ParseError: Structured output failed after {attempts} attempts"), way
        assert "unexpected keyword argument 'temperature'" in out[way]["error"], way
    assert out["text"]["requests"] == 0
    assert "create() got an unexpected keyword argument 'temperature'" in out["text"]["error"]
