"""Model providers: real HTTP against fake servers on 127.0.0.1, replay, recording, the cache,
retries, pricing and model specs. No test reaches a model or the internet: the fake servers
answer from a script, and the Anthropic SDK is pointed at one of them."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from karenina_rdf._errors import ProviderError, VerificationError
from karenina_rdf.runner import ChatRequest, ChatResponse, FunctionProvider, Message, Provider, Usage
from karenina_rdf.runner.providers._anthropic import AnthropicProvider
from karenina_rdf.runner.providers._cache import CachedProvider, ResponseCache
from karenina_rdf.runner.providers._openai import OpenAICompatibleProvider
from karenina_rdf.runner.providers._pricing import cost_usd, prices
from karenina_rdf.runner.providers._registry import estimate_tokens, provider_from_spec
from karenina_rdf.runner.providers._replay import Recorder, ReplayProvider
from karenina_rdf.runner.providers._retry import RetryingProvider, RetryPolicy, parse_retry_after
from tests.conftest import ROOT

SECRET = "sk-test-DO-NOT-LEAK-1234567890"


# --- a scripted HTTP server ------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON, str/bytes -> as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """Answers POSTs with the scripted replies in order (the last one repeats) and keeps what
    it was sent."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.seen: list[Seen] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                server.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = server.replies.pop(0) if len(server.replies) > 1 else server.replies[0]
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body
                data = payload if isinstance(payload, bytes) else str(payload).encode()
                if isinstance(payload, dict | list):
                    data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up waiting (timeout tests)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def script(self, *replies: Reply) -> FakeServer:
        self.replies = list(replies)
        self.seen = []
        return self


# A fake LLM server over HTTP: the tests that use it are marked slow.
@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def req(text: str = "What is 2+2?", *, model: str = "m-1", schema: bool = False, **kw: Any) -> ChatRequest:
    return ChatRequest(
        model=model,
        messages=(Message(role="system", content="Answer briefly."), Message(role="user", content=text)),
        json_schema={"type": "object", "properties": {"answer": {"type": "string"}}} if schema else None,
        stage=kw.pop("stage", "parsing"),
        label=kw.pop("label", "q1"),
        **kw,
    )


class FakeSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def chat_ok(text: str = "4", prompt: int = 11, completion: int = 2, model: str = "m-1") -> Reply:
    return Reply(
        body={
            "id": "c1",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }
    )


def chat_error(status: int, message: str = "boom", headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": "server_error"}}, headers or {})


# --- OpenAI-compatible endpoint --------------------------------------------------------------


@pytest.mark.slow
def test_openai_success_usage_and_wire_format(fake_server: FakeServer) -> None:
    fake_server.script(chat_ok('{"answer": "4"}', prompt=11, completion=2, model="m-1-2025"))
    provider = OpenAICompatibleProvider(fake_server.url + "/v1/", api_key=SECRET, timeout=5)
    assert isinstance(provider, Provider) and provider.interface == "openai_endpoint"
    response = provider.complete(req(schema=True, temperature=0.1, max_tokens=50))
    assert response == ChatResponse(
        text='{"answer": "4"}', usage=Usage(input_tokens=11, output_tokens=2), model="m-1-2025"
    )
    assert response.usage.total_tokens == 13 and not response.cached and response.attempts == 1
    (seen,) = fake_server.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {SECRET}" and SECRET not in repr(provider)
    assert seen.body == {
        "model": "m-1",
        "messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 2+2?"}],
        "temperature": 0.1,
        "max_tokens": 50,
        "response_format": {"type": "json_object"},
    }


@pytest.mark.slow
def test_openai_without_key_or_schema_sends_neither(fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_server.script(chat_ok())
    OpenAICompatibleProvider(fake_server.url).complete(req())
    (seen,) = fake_server.seen
    assert "authorization" not in seen.headers and "response_format" not in seen.body


@pytest.mark.slow
def test_openai_drops_a_refused_response_format(fake_server: FakeServer) -> None:
    refused = chat_error(400, "Invalid parameter: 'response_format' of type 'json_object' is not supported")
    fake_server.script(refused, chat_ok(), chat_ok())
    provider = OpenAICompatibleProvider(fake_server.url)
    assert provider.complete(req(schema=True)).text == "4"
    provider.complete(req("again", schema=True))  # remembered: no second refusal
    assert ["response_format" in s.body for s in fake_server.seen] == [True, False, False]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("reply", "category", "retryable", "retry_after"),
    [
        (chat_error(429, "slow down", {"Retry-After": "3"}), "rate_limit", True, 3.0),
        (chat_error(529, "overloaded"), "rate_limit", True, None),
        (chat_error(500), "server_error", True, None),
        (chat_error(503, "busy", {"retry-after-ms": "1500"}), "server_error", True, 1.5),
        (chat_error(408), "timeout", True, None),
        (chat_error(401, "bad key"), "unexpected_error", False, None),
        (chat_error(404, "no such model"), "unexpected_error", False, None),
        (Reply(200, "this is not JSON"), "unexpected_error", False, None),
        (Reply(200, {"choices": []}), "unexpected_error", False, None),
        (Reply(200, {"choices": [{"message": {"content": ["a", "list"]}}]}), "unexpected_error", False, None),
    ],
    ids=["429", "529", "500", "503-ms", "408", "401", "404", "not-json", "no-choices", "bad-content"],
)
def test_openai_error_categories(
    fake_server: FakeServer, reply: Reply, category: str, retryable: bool, retry_after: float | None
) -> None:
    fake_server.script(reply)
    with pytest.raises(ProviderError) as caught:
        OpenAICompatibleProvider(fake_server.url, api_key=SECRET).complete(req())
    err = caught.value
    assert (err.category, err.retryable, err.retry_after) == (category, retryable, retry_after)
    assert "label 'q1'" in str(err) and SECRET not in str(err)


@pytest.mark.slow
def test_openai_429_with_retry_after_then_success(fake_server: FakeServer) -> None:
    fake_server.script(chat_error(429, "slow down", {"Retry-After": "7"}), chat_ok())
    sleep = FakeSleep()
    provider = RetryingProvider(OpenAICompatibleProvider(fake_server.url), sleep=sleep, rand=lambda: 0.0)
    response = provider.complete(req())
    assert response.text == "4" and response.attempts == 2 and response.retries == {"rate_limit": 1}
    assert sleep.delays == [7.0]  # the server's hint beats the 1 s first backoff
    assert provider.interface == "openai_endpoint"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("budget", "failures", "calls", "outcome"),
    [
        (1, 2, 2, "exhausted"),  # 500 twice with one retry allowed: exhausted
        (2, 2, 3, "ok"),  # Karenina's default budget of 2 retries: the third call answers
        (2, 9, 3, "exhausted"),
        (0, 1, 1, "exhausted"),
    ],
)
def test_openai_server_errors_against_the_budget(
    fake_server: FakeServer, budget: int, failures: int, calls: int, outcome: str
) -> None:
    fake_server.script(*[chat_error(500)] * failures, chat_ok())
    sleep = FakeSleep()
    policy = RetryPolicy(attempts={"server_error": budget}, jitter=0)
    provider = RetryingProvider(OpenAICompatibleProvider(fake_server.url), policy, sleep=sleep)
    if outcome == "ok":
        response = provider.complete(req())
        assert response.retries == {"server_error": failures} and response.attempts == calls
    else:
        with pytest.raises(ProviderError) as caught:
            provider.complete(req())
        err = caught.value
        assert (
            err.exhausted
            and err.category == "server_error"
            and err.retries == ({"server_error": budget} if budget else {})
        )
    assert len(fake_server.seen) == calls
    assert sleep.delays == [1.0, 2.0][: calls - 1]


@pytest.mark.slow
def test_openai_slow_reply_is_a_timeout(fake_server: FakeServer) -> None:
    fake_server.script(Reply(delay=1.0, body={"choices": []}))
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        OpenAICompatibleProvider(fake_server.url, timeout=0.2).complete(req())
    assert caught.value.category == "timeout" and caught.value.retryable
    assert time.monotonic() - started < 0.9


def test_openai_connection_refused() -> None:
    with pytest.raises(ProviderError) as caught:
        OpenAICompatibleProvider(f"http://127.0.0.1:{free_port()}/v1", timeout=2).complete(req())
    assert caught.value.category == "connection" and caught.value.retryable


# --- Anthropic through the SDK ---------------------------------------------------------------


def message_ok(text: str = "Paris", model: str = "claude-haiku-4-5-20251001") -> Reply:
    return Reply(
        body={
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 21, "output_tokens": 3},
        }
    )


def anthropic_error(status: int, kind: str, message: str = "no", headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers or {})


@pytest.mark.slow
def test_anthropic_success_usage_and_wire_format(fake_server: FakeServer) -> None:
    fake_server.script(message_ok())
    provider = AnthropicProvider(api_key=SECRET, base_url=fake_server.url, timeout=5)
    assert isinstance(provider, Provider) and provider.interface == "claude_tool"
    response = provider.complete(req("Capital of France?", model="claude-haiku-4-5", temperature=0.2, max_tokens=64))
    assert response.text == "Paris" and response.model == "claude-haiku-4-5-20251001"
    assert response.usage == Usage(input_tokens=21, output_tokens=3)
    (seen,) = fake_server.seen
    assert seen.path == "/v1/messages"
    assert SECRET in (seen.headers.get("x-api-key"), seen.headers.get("authorization", "").removeprefix("Bearer "))
    assert seen.body["system"] == "Answer briefly."
    assert seen.body["messages"] == [{"role": "user", "content": "Capital of France?"}]
    assert (seen.body["model"], seen.body["max_tokens"], seen.body["temperature"]) == ("claude-haiku-4-5", 64, 0.2)
    assert SECRET not in repr(provider)


@pytest.mark.slow
def test_anthropic_model_refusing_temperature(fake_server: FakeServer) -> None:
    refused = anthropic_error(400, "invalid_request_error", "`temperature` is deprecated for this model.")
    fake_server.script(refused, message_ok(), message_ok())
    provider = AnthropicProvider(api_key=SECRET, base_url=fake_server.url)
    assert provider.complete(req(model="claude-new")).text == "Paris"
    provider.complete(req("again", model="claude-new"))
    assert ["temperature" in s.body for s in fake_server.seen] == [True, False, False]


@pytest.mark.slow
def test_anthropic_temperature_out_of_range_is_not_dropped(fake_server: FakeServer) -> None:
    fake_server.script(anthropic_error(400, "invalid_request_error", "temperature: must be <= 1.0"), message_ok())
    with pytest.raises(ProviderError) as caught:
        AnthropicProvider(api_key=SECRET, base_url=fake_server.url).complete(req(temperature=1.5))
    assert caught.value.category == "unexpected_error" and len(fake_server.seen) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("reply", "category", "retryable", "retry_after"),
    [
        (anthropic_error(429, "rate_limit_error", headers={"retry-after": "4"}), "rate_limit", True, 4.0),
        # Karenina's ErrorRegistry names OverloadedError before InternalServerError: rate_limit.
        (anthropic_error(529, "overloaded_error", "Overloaded"), "rate_limit", True, None),
        (anthropic_error(500, "api_error"), "server_error", True, None),
        (anthropic_error(401, "authentication_error", "invalid x-api-key"), "unexpected_error", False, None),
        (anthropic_error(400, "invalid_request_error", "max_tokens too large"), "unexpected_error", False, None),
    ],
    ids=["429", "529", "500", "401", "400"],
)
def test_anthropic_error_categories(
    fake_server: FakeServer, reply: Reply, category: str, retryable: bool, retry_after: float | None
) -> None:
    fake_server.script(reply)
    with pytest.raises(ProviderError) as caught:
        AnthropicProvider(api_key=SECRET, base_url=fake_server.url).complete(req(model="claude-haiku-4-5"))
    err = caught.value
    assert (err.category, err.retryable, err.retry_after) == (category, retryable, retry_after)
    assert len(fake_server.seen) == 1  # the SDK did not retry on its own
    assert SECRET not in str(err) and err.__cause__ is None and err.__suppress_context__


@pytest.mark.slow
def test_anthropic_timeout_and_connection(fake_server: FakeServer) -> None:
    fake_server.script(Reply(delay=1.0, body={}))
    with pytest.raises(ProviderError) as caught:
        AnthropicProvider(api_key=SECRET, base_url=fake_server.url, timeout=0.2).complete(req())
    assert caught.value.category == "timeout"
    with pytest.raises(ProviderError) as caught:
        AnthropicProvider(api_key=SECRET, base_url=f"http://127.0.0.1:{free_port()}", timeout=2).complete(req())
    assert caught.value.category == "connection"


def test_anthropic_key_from_environment_or_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(VerificationError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider()
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    assert AnthropicProvider().interface == "claude_tool"


# --- replay and recording --------------------------------------------------------------------


def echo(request: ChatRequest) -> str:
    return "echo: " + request.messages[-1].content.strip()


def test_recorder_then_replay_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "rec" / "calls.jsonl"
    calls: list[ChatRequest] = []

    def model(request: ChatRequest) -> str:
        calls.append(request)
        return echo(request)

    with Recorder(FunctionProvider(model, interface="claude_tool"), path) as recorder:
        assert recorder.interface == "claude_tool"
        first = recorder.complete(req("What is 2+2?"))
        recorder.complete(req("What is 2+2?"))  # same key: recorded once
        recorder.complete(req("Another\nquestion", stage="rubric_evaluation", label="clarity"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and len(calls) == 3
    entry = json.loads(lines[0])
    assert set(entry) == {"key", "stage", "label", "request", "response"}
    assert entry["key"] == req().key() and entry["request"] == req().normalised()
    assert entry["response"] == {"text": first.text, "usage": first.usage.model_dump(), "model": "m-1"}

    replay = ReplayProvider(path, interface="claude_tool")
    assert len(replay) == 2 and replay.interface == "claude_tool"
    # CRLF line ends, trailing blanks and different stage/label do not change the key.
    again = replay.complete(req("What is 2+2?  \r\n", stage="other", label="x"))
    assert again.text == first.text and again.usage == first.usage and again.model == "m-1"
    assert again.cached and again.attempts == 0
    assert replay.complete(req("Another\r\nquestion")).text == "echo: Another\nquestion"


def test_replay_miss_names_hash_stage_label_and_file(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with Recorder(FunctionProvider(echo), path) as recorder:
        recorder.complete(req())
    missing = req("Something never recorded", stage="parsing", label="q42")
    with pytest.raises(ProviderError) as caught:
        ReplayProvider(path).complete(missing)
    message = str(caught.value)
    assert missing.key() in message and "'parsing'" in message and "'q42'" in message and str(path) in message
    assert caught.value.category == "unexpected_error" and not caught.value.retryable


def test_embeddings_are_recorded_and_replayed(tmp_path: Path) -> None:
    """The embedding check's calls go into the same recordings file as the chat calls (a run with
    the check on replays without an embeddings model); keyed by model and texts, in order."""
    from karenina_rdf.runner.providers import EmbeddingRequest

    path = tmp_path / "calls.jsonl"
    asked: list[tuple[str, ...]] = []

    def embed(request: EmbeddingRequest) -> list[list[float]]:
        asked.append(request.texts)
        return [[float(len(t)), 1.0] for t in request.texts]

    one = EmbeddingRequest(model="emb-1", texts=("Paris", "paris, France"), label="q1")
    with Recorder(FunctionProvider(echo, interface="claude_tool", embed_fn=embed), path) as recorder:
        assert recorder.serves_embeddings
        first = recorder.embed(one)
        recorder.embed(one)  # same key: recorded once
        recorder.complete(req())
    assert not Recorder(FunctionProvider(echo), path).serves_embeddings  # its model embeds nothing
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2 and len(asked) == 2
    assert lines[0]["request"] == {"model": "emb-1", "texts": ["Paris", "paris, France"]}
    assert lines[0]["stage"] == "embedding_check" and lines[0]["label"] == "q1"
    replay = ReplayProvider(path)
    assert replay.serves_embeddings and len(replay) == 1  # len: chat recordings
    again = replay.embed(EmbeddingRequest(model="emb-1", texts=("Paris", "paris, France"), label="other"))
    assert again.vectors == first.vectors == ((5.0, 1.0), (13.0, 1.0)) and again.model == first.model
    assert replay.complete(req()).text == echo(req())
    # Another model, or the texts in another order, were not recorded.
    for missing in (
        EmbeddingRequest(model="emb-2", texts=one.texts),
        EmbeddingRequest(model="emb-1", texts=one.texts[::-1]),
    ):
        with pytest.raises(ProviderError, match="no recording of embedding request") as caught:
            replay.embed(missing)
        assert caught.value.category == "unexpected_error" and str(path) in str(caught.value)
    chat_only = tmp_path / "chat.jsonl"
    with Recorder(FunctionProvider(echo), chat_only) as recorder:
        recorder.complete(req())
    assert not ReplayProvider(chat_only).serves_embeddings


def test_run_transport_records_and_replays_the_embedder(tmp_path: Path) -> None:
    """``verify --record`` records the embedding check's calls and ``--replay`` answers them."""
    from karenina_rdf.runner._models import Transport
    from karenina_rdf.runner.providers import EmbeddingRequest

    path = tmp_path / "calls.jsonl"
    recording = Transport(record=path, base_url="http://127.0.0.1:9/v1").embedder()
    assert isinstance(recording, Recorder) and recording.path == path
    recording.close()
    one = EmbeddingRequest(model="emb-1", texts=("a", "b"))
    with Recorder(FunctionProvider(echo, embed_fn=lambda r: [[1.0, 0.0], [0.0, 1.0]]), path) as recorder:
        recorder.embed(one)
    replayed = Transport(replay=path).embedder()
    assert replayed.embed(one).vectors == ((1.0, 0.0), (0.0, 1.0))


def test_replay_file_errors(tmp_path: Path) -> None:
    with pytest.raises(VerificationError, match="cannot read recordings"):
        ReplayProvider(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "a", "response": {"text": "x"}}\nnot json\n{"key": "b", "response": {"text": "y"}}\n')
    with pytest.raises(VerificationError, match=r"bad\.jsonl:2"):
        ReplayProvider(bad)
    with pytest.raises(VerificationError, match=r"bad\.jsonl:2"):
        Recorder(FunctionProvider(echo), bad)


def test_interrupted_recording_is_repaired(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with Recorder(FunctionProvider(echo), path) as recorder:
        recorder.complete(req("one"))
    with path.open("a", encoding="utf-8") as f:
        f.write('{"key": "cut-sho')  # a run killed mid-line
    assert len(ReplayProvider(path)) == 1
    with Recorder(FunctionProvider(echo), path) as recorder:
        recorder.complete(req("two"))
        recorder.complete(req("one"))  # already in the file
    text = path.read_text()
    assert "cut-sho" not in text and len(text.splitlines()) == 2
    assert ReplayProvider(path).complete(req("two")).text == "echo: two"


def test_recorder_follows_a_deleted_file(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    first = Recorder(FunctionProvider(echo), path)  # left open, as a long-lived run would
    first.complete(req("one"))
    path.unlink()
    with Recorder(FunctionProvider(echo), path) as second:
        second.complete(req("one"))
        second.complete(req("two"))
    first.close()
    assert len(ReplayProvider(path)) == 2


@pytest.mark.slow
def test_recordings_and_cache_never_hold_the_key(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.script(chat_ok(), message_ok())
    recordings, cache_file = tmp_path / "calls.jsonl", tmp_path / "cache.sqlite"
    cache = ResponseCache(cache_file)
    for inner in (
        OpenAICompatibleProvider(fake_server.url, api_key=SECRET),
        AnthropicProvider(api_key=SECRET, base_url=fake_server.url),
    ):
        with Recorder(inner, recordings) as recorder:
            CachedProvider(recorder, cache).complete(req(model=f"model-of-{inner.interface}"))
    cache.close()
    assert len(recordings.read_text().splitlines()) == 2
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert SECRET.encode() not in data and b"Bearer" not in data and fake_server.url.encode() not in data


def test_recorders_sharing_a_file_from_threads(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    recorders = [Recorder(FunctionProvider(lambda r: "x" * 20000 + echo(r)), path) for _ in range(3)]

    def work(i: int) -> None:
        for j in range(20):
            recorders[(i + j) % 3].complete(req(f"q{j % 15}"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for recorder in recorders:
        recorder.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 15 and len(ReplayProvider(path)) == 15


# --- the response cache ----------------------------------------------------------------------


def test_cache_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    calls: list[str] = []

    def model(request: ChatRequest) -> ChatResponse:
        calls.append(request.label)
        return ChatResponse(text="42", usage=Usage(input_tokens=5, output_tokens=1), model="m-1-snap")

    first = CachedProvider(FunctionProvider(model, interface="openai_endpoint"), ResponseCache(path))
    assert first.interface == "openai_endpoint"
    live = first.complete(req())
    assert not live.cached and live.attempts == 1
    assert first.complete(req()).cached and calls == ["q1"]

    def unreachable(request: ChatRequest) -> str:
        raise AssertionError("the model was called")

    with ResponseCache(path) as cache:
        second = CachedProvider(FunctionProvider(unreachable), cache)
        hit = second.complete(req("What is 2+2?\r\n"))
        assert len(cache) == 1
    assert hit == ChatResponse(
        text="42", usage=Usage(input_tokens=5, output_tokens=1), model="m-1-snap", cached=True, attempts=0
    )


def test_cache_from_threads(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    provider = CachedProvider(FunctionProvider(echo), cache)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(40):
                assert provider.complete(req(f"q{i % 10}")).text == f"echo: q{i % 10}"
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(cache) == 10
    cache.close()


# --- retrying --------------------------------------------------------------------------------


def failing(*errors: ProviderError, answer: str = "ok") -> tuple[FunctionProvider, list[int]]:
    queue = list(errors)
    calls = [0]

    def fn(request: ChatRequest) -> str:
        calls[0] += 1
        if queue:
            raise queue.pop(0)
        return answer

    return FunctionProvider(fn), calls


def err(category: str, retry_after: float | None = None, retryable: bool = True) -> ProviderError:
    return ProviderError(f"{category} happened", category=category, retryable=retryable, retry_after=retry_after)


def test_retry_delays_grow_with_jitter() -> None:
    inner, calls = failing(*[err("rate_limit") for _ in range(5)])
    sleep = FakeSleep()
    response = RetryingProvider(inner, sleep=sleep).complete(req())
    assert response.retries == {"rate_limit": 5} and response.attempts == 6 and calls[0] == 6
    assert all(later > earlier for earlier, later in zip(sleep.delays, sleep.delays[1:], strict=False))
    for n, delay in enumerate(sleep.delays):
        assert 0.75 * 2**n <= delay <= 2**n  # default jitter shortens by at most a quarter


@pytest.mark.parametrize(
    ("errors", "policy", "delays", "retries"),
    [
        ([err("server_error"), err("server_error")], RetryPolicy(jitter=0), [1.0, 2.0], {"server_error": 2}),
        ([err("rate_limit", 30.0), err("rate_limit", 0.5)], RetryPolicy(jitter=0), [30.0, 2.0], {"rate_limit": 2}),
        ([err("rate_limit", 3600.0)], RetryPolicy(jitter=0), [60.0], {"rate_limit": 1}),  # capped
        ([err("timeout")] * 3, RetryPolicy(jitter=0, base_delay=10, max_delay=25), [10.0, 20.0, 25.0], {"timeout": 3}),
        # Each category has its own budget and its own backoff.
        (
            [err("connection"), err("rate_limit"), err("connection")],
            RetryPolicy(jitter=0, multiplier=3),
            [1.0, 1.0, 3.0],
            {"connection": 2, "rate_limit": 1},
        ),
    ],
    ids=["backoff", "retry-after-floor", "retry-after-cap", "max-delay", "per-category"],
)
def test_retry_delays(
    errors: list[ProviderError], policy: RetryPolicy, delays: list[float], retries: dict[str, int]
) -> None:
    inner, _ = failing(*errors)
    sleep = FakeSleep()
    response = RetryingProvider(inner, policy, sleep=sleep).complete(req())
    assert sleep.delays == delays and response.retries == retries and response.text == "ok"


def test_retry_exhaustion_and_non_retryable() -> None:
    inner, calls = failing(err("connection"), *[err("server_error")] * 5)
    with pytest.raises(ProviderError) as caught:
        RetryingProvider(inner, sleep=FakeSleep()).complete(req())
    assert caught.value.exhausted and caught.value.category == "server_error"
    assert caught.value.retries == {"connection": 1, "server_error": 2} and calls[0] == 4

    inner, calls = failing(err("timeout"), err("unexpected_error", retryable=False))
    sleep = FakeSleep()
    with pytest.raises(ProviderError) as caught:
        RetryingProvider(inner, sleep=sleep).complete(req())
    assert not caught.value.exhausted and caught.value.retries == {"timeout": 1} and len(sleep.delays) == 1

    inner, calls = failing(err("parsing"))  # retryable but not a retry category: no budget
    with pytest.raises(ProviderError) as caught:
        RetryingProvider(inner, sleep=FakeSleep()).complete(req())
    assert not caught.value.exhausted and calls[0] == 1


def test_retry_policy_budgets_and_snapshot() -> None:
    policy = RetryPolicy(attempts={"server_error": 0})
    assert policy.attempts == {"connection": 3, "timeout": 3, "rate_limit": 5, "server_error": 0}
    assert policy.retry_counts({"rate_limit": 2}) == {
        "connection": {"used": 0, "budget": 3},
        "timeout": {"used": 0, "budget": 3},
        "rate_limit": {"used": 2, "budget": 5},
        "server_error": {"used": 0, "budget": 0},
    }
    with pytest.raises(ValueError, match="unknown retry categories"):
        RetryPolicy(attempts={"rate-limit": 2})
    with pytest.raises(ValueError, match=">= 0"):
        RetryPolicy(attempts={"timeout": -1})


def test_retry_wrapper_keeps_cache_hits_free(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    provider = RetryingProvider(CachedProvider(FunctionProvider(echo), cache))
    assert provider.complete(req()).attempts == 1
    hit = provider.complete(req())
    assert hit.cached and hit.attempts == 0 and hit.retries == {}
    cache.close()


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "12"}, 12.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "-4"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date() -> None:
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    value = parse_retry_after({"retry-after": when})
    assert value is not None and 25 <= value <= 31


# --- the fake model --------------------------------------------------------------------------


def test_function_provider() -> None:
    provider = FunctionProvider(echo)
    assert isinstance(provider, Provider) and provider.interface == "fake"
    response = provider.complete(req("abcdefgh"))
    assert response.model == "m-1" and response.text == "echo: abcdefgh"
    assert response.usage == Usage(input_tokens=estimate_tokens("Answer briefly.") + 2, output_tokens=4)
    assert provider.complete(req("abcdefgh")) == response  # deterministic
    fixed = ChatResponse(text="t", model="other", usage=Usage(input_tokens=1))
    assert FunctionProvider(lambda r: fixed).complete(req()) is fixed
    assert [estimate_tokens(s) for s in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


# --- pricing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-haiku-4-5", 1000 * 1.0 / 1e6 + 500 * 5.0 / 1e6),
        ("claude-sonnet-4-5-20250929", 1000 * 3.0 / 1e6 + 500 * 15.0 / 1e6),
        ("gpt-4o-mini", 1000 * 0.15 / 1e6 + 500 * 0.6 / 1e6),
        ("gpt-4o-2024-05-13", None),  # a snapshot with its own price: not guessed from gpt-4o
        ("claude-haiku-4-5-20991231", None),
        ("my-local-llama", None),
    ],
)
def test_cost_known_and_unknown(model: str, expected: float | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KARENINA_RDF_PRICES", raising=False)
    cost = cost_usd(model, Usage(input_tokens=1000, output_tokens=500))
    assert cost == (pytest.approx(expected) if expected is not None else None)


def test_shipped_price_table_says_where_from() -> None:
    raw = json.loads((ROOT / "karenina_rdf" / "runner" / "providers" / "prices.json").read_text())
    assert raw["_source"] and raw["as_of"] and raw["models"]


def test_price_override_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "prices.json"
    user.write_text(
        json.dumps({"models": {"my-local-llama": {"input": 0, "output": 0}, "gpt-4o": {"input": 1, "output": 2}}})
    )
    monkeypatch.setenv("KARENINA_RDF_PRICES", str(user))
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd("my-local-llama", usage) == 0.0
    assert cost_usd("gpt-4o", usage) == pytest.approx(3.0)
    assert cost_usd("claude-haiku-4-5", usage) == pytest.approx(6.0)  # shipped entries stay
    assert "gpt-4.1" in prices()

    user.write_text('{"gpt-4o": {"input": 1}}')  # edited into the wrong shape: read again, refused
    os.utime(user, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    with pytest.raises(VerificationError, match="not a price table"):
        cost_usd("gpt-4o", usage)
    monkeypatch.setenv("KARENINA_RDF_PRICES", str(tmp_path / "nope.json"))
    with pytest.raises(VerificationError, match="KARENINA_RDF_PRICES"):
        cost_usd("gpt-4o", usage)


# --- model specs -----------------------------------------------------------------------------


def test_provider_from_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    provider, model = provider_from_spec("anthropic:claude-haiku-4-5")
    assert isinstance(provider, AnthropicProvider) and model == "claude-haiku-4-5"
    provider, model = provider_from_spec("openai:llama3:8b", base_url="http://127.0.0.1:1/v1")
    assert isinstance(provider, OpenAICompatibleProvider) and model == "llama3:8b"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2/v1")
    provider, _ = provider_from_spec("openai:gpt-4o")
    assert isinstance(provider, OpenAICompatibleProvider) and provider.base_url == "http://127.0.0.1:2/v1"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("claude-haiku-4-5", "not PROVIDER:MODEL; known: anthropic:MODEL, openai:MODEL"),
        ("anthropic:", "not PROVIDER:MODEL"),
        (":gpt-4o", "not PROVIDER:MODEL"),
        ("gemini:gemini-2.5-pro", "unknown provider 'gemini'; known: anthropic:MODEL, openai:MODEL"),
        ("openai:gpt-4o", "OPENAI_BASE_URL"),
    ],
)
def test_provider_from_spec_errors(spec: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(VerificationError) as caught:
        provider_from_spec(spec)
    assert message in str(caught.value)


def test_provider_from_spec_without_anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(VerificationError, match="ANTHROPIC_API_KEY"):
        provider_from_spec("anthropic:claude-haiku-4-5")
