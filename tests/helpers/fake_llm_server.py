"""A fake OpenAI-compatible chat-completions server for end-to-end tests of the runner: a real
``ThreadingHTTPServer`` on 127.0.0.1 and a free port, answering ``POST /v1/chat/completions``
deterministically.

What it answers, by the request's system message:

* template generation (starts "You write answer templates"): ``templates[question text]``
  (default: a class that is not a template);
* parsing (holds "JSON schema:"): a JSON object of the schema's fields, strings filled with
  the text under "## Response to parse", booleans true, numbers 0, lists empty;
* rubric evaluation (starts "You are an impartial evaluator" or "You are a careful evaluator"):
  the reply shape the prompt asks for, every yes/no trait true, every score its lowest, every
  literal trait its first class, metric buckets empty;
* the abstention check (starts "You decide whether an assistant's response declines"): abstained
  when the response says "I cannot answer", else not;
* the sufficiency check (starts "You decide whether an assistant's response contains enough"):
  insufficient when the response says "no idea", else sufficient;
* the dynamic rubric's presence check (starts "You check which evaluation concepts"): every
  concept present;
* deep judgment's excerpt step (starts "You find verbatim evidence"): per attribute, the
  response's first sentence as a high-confidence quote; its reasoning steps (start "You explain,
  attribute by attribute"): one line of reasoning per attribute;
* anything else is an answering request: ``answers[question text]``, default "I do not know".

``POST /v1/embeddings`` (OpenAI's embeddings format) answers one vector per input text:
``vectors[text]`` when set, else the text's letter-and-digit counts (texts sharing their
characters come out similar); its requests are logged too (``kind`` "embeddings"). The
embedding check's equivalence question (starts "You judge whether two structured answers")
is answered ``equivalent`` ("YES" by default).

Every reply carries ``usage`` of :data:`PROMPT_TOKENS` and :data:`COMPLETION_TOKENS`. Knobs,
settable between (and during) requests: ``delay`` seconds before each reply, ``rate_limited``
429 replies (``Retry-After: 0``) before answering, and ``log``, every request body received.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMPT_TOKENS = 11
COMPLETION_TOKENS = 7
DEFAULT_ANSWER = "I do not know"
NOT_A_TEMPLATE = "```python\nclass Answer:\n    pass\n```"


def kind(body: dict[str, Any]) -> str:
    """What a logged request was for: answer, parse, generate or rubric."""
    if "input" in body and "messages" not in body:
        return "embeddings"
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    if system.startswith("You write answer templates"):
        return "generate"
    if system.startswith("You judge whether two structured answers"):
        return "equivalence"
    if "JSON schema:" in system:
        return "parse"
    if system.startswith(("You are an impartial evaluator", "You are a careful evaluator")):
        return "rubric"
    if system.startswith("You decide whether an assistant's response declines"):
        return "abstention"
    if system.startswith("You decide whether an assistant's response contains enough"):
        return "sufficiency"
    if system.startswith("You check which evaluation concepts"):
        return "presence"
    if system.startswith("You find verbatim evidence"):
        return "excerpts"
    if system.startswith("You explain, attribute by attribute"):
        return "reasoning"
    if system.startswith("You find evidence for one rubric trait"):
        return "trait excerpts"
    if system.startswith("You explain how the evidence bears on one rubric trait"):
        return "trait reasoning"
    if system.startswith("You turn an explanation of how a response meets one rubric trait"):
        return "trait score"
    return "answer"


def user_text(body: dict[str, Any]) -> str:
    return next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")


def fill(schema: dict[str, Any], text: str) -> dict[str, Any]:
    """An object of ``schema``'s properties filled from ``text``."""
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def value(spec: Any) -> Any:
        if not isinstance(spec, dict):
            return text
        if "$ref" in spec:
            return value(defs.get(spec["$ref"].rsplit("/", 1)[-1], {}))
        for alt in spec.get("anyOf") or spec.get("oneOf") or ():
            if alt.get("type") != "null":
                return value(alt)
        if "enum" in spec:
            return spec["enum"][0]
        kind_ = spec.get("type")
        if isinstance(kind_, list):
            kind_ = next((k for k in kind_ if k != "null"), "string")
        if not isinstance(kind_, str):
            return text
        return {
            "boolean": True,
            "integer": 0,
            "number": 0,
            "array": [],
            "object": fill(spec, text) if "properties" in spec else {},
            "null": None,
        }.get(kind_, text)

    return {name: value(spec) for name, spec in (schema.get("properties") or {}).items()}


def char_vector(text: str) -> list[float]:
    """A deterministic stand-in for an embedding: counts of each letter and digit."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    low = text.lower()
    return [float(low.count(c)) for c in alphabet]


def rubric_reply(system: str, user: str) -> dict[str, Any]:
    """What a rubric prompt asks for, read from its "Answer in this shape" line or its schema."""
    if system.startswith("You are a careful evaluator"):  # metric trait: confusion buckets
        return {b: [] for b in ("tp", "fn", "fp", *(("tn",) if "SHOULD NOT" in user else ()))}
    if "JSON schema of the reply:" in user:  # template-kind trait
        schema, _ = json.JSONDecoder().raw_decode(user.split("JSON schema of the reply:", 1)[1].lstrip())
        return fill(schema, "")
    if '{"classifications"' in system:
        pairs = re.findall(r'"trait_name": ("(?:[^"\\]|\\.)*"), "class_name": <one of ("(?:[^"\\]|\\.)*")', user)
        return {"classifications": [{"trait_name": json.loads(t), "class_name": json.loads(c)} for t, c in pairs]}
    scores: dict[str, Any] = {}
    for name, placeholder in re.findall(r'("(?:[^"\\]|\\.)*"): <(true or false|-?\d+)', user):
        scores[json.loads(name)] = True if placeholder == "true or false" else int(placeholder)
    return {"scores": scores}


class FakeLLM:
    """The server and its knobs; ``start()``/``stop()``, or use it as a context manager."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}
        self.templates: dict[str, str] = {}
        self.delay = 0.0
        self.rate_limited = 0
        self.vectors: dict[str, list[float]] = {}
        self.equivalent = "YES"
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests(self, of: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [b for b in self.log if of is None or kind(b) == of]

    def reply(self, body: dict[str, Any]) -> str:
        messages = body.get("messages", [])
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = user_text(body)
        what = kind(body)
        if what == "equivalence":
            return self.equivalent
        if what == "generate":
            question = user.split("## Question\n", 1)[-1].split("\n\n## Reference answer", 1)[0]
            return self.templates.get(question, NOT_A_TEMPLATE)
        if what == "parse":
            schema, _ = json.JSONDecoder().raw_decode(system.split("JSON schema:", 1)[1].lstrip())
            response = user.split("## Response to parse\n", 1)[-1]
            return json.dumps(fill(schema, response))
        if what == "rubric":
            return json.dumps(rubric_reply(system, user))
        if what in ("abstention", "sufficiency"):
            response = user.split("<response>\n", 1)[-1].split("\n</response>", 1)[0]
            if what == "abstention":
                return json.dumps({"reasoning": "checked", "abstention_detected": "I cannot answer" in response})
            return json.dumps({"reasoning": "checked", "sufficient": "no idea" not in response.lower()})
        if what in ("excerpts", "reasoning"):
            attrs = re.findall(r"^- (\w+): ", system, re.M)
            response = user.split("<response>\n", 1)[-1].split("\n</response>", 1)[0]
            quote = [{"text": response.split(".")[0], "confidence": "high"}]
            return json.dumps({a: quote if what == "excerpts" else f"{a} is given in the response" for a in attrs})
        if what == "trait excerpts":  # rubric deep judgment: the response's first sentence
            response = user.split("<response>\n", 1)[-1].split("\n</response>", 1)[0]
            return json.dumps({"excerpts": [{"text": response.split(".")[0], "confidence": "high"}]})
        if what == "trait reasoning":
            return "Evidence: the quote.\nInterpretation: it meets the criterion.\nConclusion: met."
        if what == "trait score":
            return json.dumps({"result": True} if "true/false" in system else {"score": 3})
        if what == "presence":
            names = re.findall(r'^- ("(?:[^"\\]|\\.)*"):', user, re.M)
            return json.dumps({"results": [{"trait_name": json.loads(n), "present": True} for n in names]})
        question = user.rsplit("Question: ", 1)[-1].removesuffix("\nAnswer:") if "Question: " in user else user
        return self.answers.get(question, DEFAULT_ANSWER)

    def start(self) -> FakeLLM:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") == "/v1/embeddings":
                    with fake.lock:
                        fake.log.append(body)
                    texts = body.get("input")
                    texts = [texts] if isinstance(texts, str) else list(texts or [])
                    data = [
                        {"object": "embedding", "index": i, "embedding": fake.vectors.get(t) or char_vector(t)}
                        for i, t in enumerate(texts)
                    ]
                    usage = {"prompt_tokens": PROMPT_TOKENS, "total_tokens": PROMPT_TOKENS}
                    self._send(200, {"object": "list", "data": data, "model": body.get("model", ""), "usage": usage})
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with fake.lock:
                    fake.log.append(body)
                    limited = fake.rate_limited > 0
                    if limited:
                        fake.rate_limited -= 1
                    delay = fake.delay
                if limited:
                    self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                    return
                if delay:
                    time.sleep(delay)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(fake.log)}",
                        "object": "chat.completion",
                        "model": body.get("model", ""),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": fake.reply(body)},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": PROMPT_TOKENS,
                            "completion_tokens": COMPLETION_TOKENS,
                            "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                        },
                    },
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
