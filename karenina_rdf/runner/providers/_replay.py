"""Recording model calls and answering from the recordings: runs without a model.

A recordings file is JSONL, one call a line::

    {"key": "<sha256>", "stage": "parsing", "label": "q1",
     "request": {<ChatRequest.normalised()>}, "response": {"text", "usage", "model"}}

An embedding call (the embedding check) is a line of the same file whose ``request`` is
``{"model", "texts"}`` and whose ``response`` is ``{"vectors", "usage", "model"}``; its key is
:func:`embedding_key`, so a run with the embedding check replays like any other.

``key`` is :meth:`ChatRequest.key`, the hash of the normalised request, so line-end and
trailing-blank differences in prompts do not miss. ``stage``/``label`` are for people reading
the file. No API key, header or base URL is written: the request is the normalised one.

:class:`Recorder` appends one line per new key, written through before the call returns, so
an interrupted run keeps everything it recorded; a line cut short by a crash is removed
before the next append (and ignored when loading). :class:`ReplayProvider` loads the file
once into a dict, read-only afterwards, so any number of threads may share it. Replay is a
transport: the caller keeps the model identity (interface and model name) of the recorded
model, and gives the ``interface`` it records results under (e.g. ``"claude_tool"``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, ClassVar

from karenina_rdf._errors import ProviderError, VerificationError

from ._base import ChatRequest, ChatResponse, EmbeddingRequest, EmbeddingResponse, Provider, Usage
from ._retry import call_context

logger = logging.getLogger(__name__)


def recording(request: ChatRequest, response: ChatResponse) -> dict[str, Any]:
    """One line of a recordings file."""
    return {
        "key": request.key(),
        "stage": request.stage,
        "label": request.label,
        "request": request.normalised(),
        "response": {
            "text": response.text,
            "usage": {"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens},
            "model": response.model,
        },
    }


def embedding_key(request: EmbeddingRequest) -> str:
    """SHA-256 (hex) of what decides an embedding: the model and the texts, in order."""
    blob = json.dumps({"embed": request.model, "texts": list(request.texts)}, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def embedding_recording(request: EmbeddingRequest, response: EmbeddingResponse) -> dict[str, Any]:
    """One line of a recordings file for an embedding call."""
    return {
        "key": embedding_key(request),
        "stage": request.stage,
        "label": request.label,
        "request": {"model": request.model, "texts": list(request.texts)},
        "response": {
            "vectors": [list(v) for v in response.vectors],
            "usage": {"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens},
            "model": response.model,
        },
    }


def read_recordings(path: Path) -> dict[str, ChatResponse]:
    """Key -> recorded chat response (``cached=True``, no calls made)."""
    return _read_all(path)[0]


def read_embedding_recordings(path: Path) -> dict[str, EmbeddingResponse]:
    """Key -> recorded embedding response."""
    return _read_all(path)[1]


def _read_all(path: Path) -> tuple[dict[str, ChatResponse], dict[str, EmbeddingResponse]]:
    """The first line of a key wins. A last line without its newline (a run cut short) is
    skipped; any other bad line is an error."""
    out: dict[str, ChatResponse] = {}
    embeddings: dict[str, EmbeddingResponse] = {}
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as err:
        raise VerificationError(f"cannot read recordings file {path}: {err}") from err
    lines = raw.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            reply = entry["response"]
            usage = reply.get("usage") or {}
            if "vectors" in reply:  # an embedding call
                embeddings.setdefault(
                    str(entry["key"]),
                    EmbeddingResponse(
                        vectors=tuple(tuple(float(x) for x in v) for v in reply["vectors"]),
                        usage=Usage(
                            input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0)
                        ),
                        model=reply.get("model") or entry.get("request", {}).get("model", ""),
                    ),
                )
                continue
            response = ChatResponse(
                text=reply["text"],
                usage=Usage(input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0)),
                model=reply.get("model") or entry.get("request", {}).get("model", ""),
                cached=True,
                attempts=0,
            )
            key = str(entry["key"])
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            if number == len(lines):  # no newline after it: the write was interrupted
                logger.warning("%s:%d: ignoring an incomplete last line", path, number)
                continue
            raise VerificationError(f"{path}:{number}: not a recording ({type(err).__name__}: {err})") from err
        out.setdefault(key, response)
    return out, embeddings


class ReplayProvider:
    """Answers from a recordings file; a request that was not recorded is a ProviderError
    (``unexpected_error``, not retryable) naming its hash, stage, label and the file."""

    def __init__(self, path: str | Path, interface: str = "replay") -> None:
        self.path = Path(path)
        self.interface = interface
        self._responses, self._embeddings = _read_all(self.path)

    def __len__(self) -> int:
        return len(self._responses)

    def __repr__(self) -> str:
        return f"ReplayProvider({str(self.path)!r}, interface={self.interface!r}, recordings={len(self)})"

    def complete(self, request: ChatRequest) -> ChatResponse:
        key = request.key()
        response = self._responses.get(key)
        if response is None:
            raise ProviderError(
                f"no recording of request {key} ({call_context(request)}) in {self.path}",
                category="unexpected_error",
            )
        return response

    @property
    def serves_embeddings(self) -> bool:
        return bool(self._embeddings)

    def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        key = embedding_key(request)
        response = self._embeddings.get(key)
        if response is None:
            raise ProviderError(
                f"no recording of embedding request {key} (model {request.model}, {request.label}) in {self.path}",
                category="unexpected_error",
            )
        return response


class _Journal:
    """The append end of one recordings file, shared by every Recorder on it in this process
    (a run wraps each model in its own Recorder): one lock, one set of keys, one descriptor.
    Each line goes out in a single unbuffered ``os.write`` on an ``O_APPEND`` descriptor, so it
    is on disk when the call returns and lines from other processes do not interleave with it."""

    _open: ClassVar[dict[Path, _Journal]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.keys: set[str] = set()  # read when the file is opened
        self.users = 0
        self._fd: int | None = None

    @classmethod
    def acquire(cls, path: Path) -> _Journal:
        resolved = path.resolve()
        with cls._registry_lock:
            journal = cls._open.get(resolved)
            if journal is None:
                journal = cls._open[resolved] = _Journal(path)
            journal.users += 1
            return journal

    def release(self) -> None:
        with self._registry_lock:
            self.users -= 1
            if self.users > 0:
                return
            self._open.pop(self.path.resolve(), None)
        with self.lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def append(self, key: str, line: str) -> None:
        with self.lock:
            if self._fd is not None and not _still_at(self._fd, self.path):
                # Moved or deleted since it was opened (a new run in this process): start over.
                os.close(self._fd)
                self._fd = None
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                _drop_cut_short_line(self.path)
                if self.path.exists():
                    chats, embeddings = _read_all(self.path)
                    self.keys = set(chats) | set(embeddings)
                else:
                    self.keys = set()
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if key in self.keys:
                return
            data = (line + "\n").encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            self.keys.add(key)


def _still_at(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        return False


def _drop_cut_short_line(path: Path) -> None:
    """Cut off a last line without its newline (a writer killed mid-line): it holds no whole
    recording, and appending after it would turn it into a bad line in the middle."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        logger.warning("%s: dropping an incomplete last line", path)
        os.truncate(path, data.rfind(b"\n") + 1)


class Recorder:
    """Passes calls to ``inner`` and appends each new (key, request, response) to ``path``.
    Thread-safe, also with several Recorders on one file; keys already in the file are not
    written again. Failed calls are not recorded. :meth:`close` (or ``with``) lets go of the file."""

    def __init__(self, inner: Provider, path: str | Path) -> None:
        self.inner = inner
        self.interface = inner.interface
        self.path = Path(path)
        if self.path.exists():
            read_recordings(self.path)  # a file that is not recordings fails here, not mid-run
        self._journal: _Journal | None = _Journal.acquire(self.path)

    def __repr__(self) -> str:
        return f"Recorder({self.inner!r}, {str(self.path)!r})"

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        journal, self._journal = self._journal, None
        if journal is not None:
            journal.release()

    def complete(self, request: ChatRequest) -> ChatResponse:
        response = self.inner.complete(request)
        if self._journal is None:
            raise VerificationError(f"{self!r} is closed")
        line = json.dumps(recording(request, response), ensure_ascii=False, sort_keys=True)
        self._journal.append(request.key(), line)
        return response

    @property
    def serves_embeddings(self) -> bool:
        return bool(getattr(self.inner, "serves_embeddings", False))

    def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """Embedding calls are recorded too (the embedding check), in the same file."""
        response: EmbeddingResponse = self.inner.embed(request)  # type: ignore[attr-defined]
        if self._journal is None:
            raise VerificationError(f"{self!r} is closed")
        line = json.dumps(embedding_recording(request, response), ensure_ascii=False, sort_keys=True)
        self._journal.append(embedding_key(request), line)
        return response
