"""A persistent response cache keyed by the request hash, and the provider that uses it.

Karenina has no prompt-keyed cache (spec §9.5); this one is ours, for re-running a benchmark
without paying twice. It is stdlib ``sqlite3``: one file, atomic writes, and in WAL mode
readers never wait for the writer, so several processes (a run and a resumed run, two
judges) can share a file. Each :class:`ResponseCache` holds one connection used under a
lock rather than one per thread: a lookup takes microseconds against the seconds of a model
call, and a single connection cannot leak per-thread handles in long-lived worker pools.

What is stored is what :class:`Recorder` writes (text, usage, model; the normalised request
for reading), never a key or header. A hit comes back with ``cached=True`` and
``attempts=0``: no model was called. The recorded usage is kept, so token counts stay those of
the original call; costs should be counted only for responses that are not ``cached``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

from karenina_rdf._errors import VerificationError

from ._base import ChatRequest, ChatResponse, Provider, Usage

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    request TEXT NOT NULL,
    stage TEXT NOT NULL,
    created TEXT NOT NULL
)
"""


class ResponseCache:
    """Request key -> response, in the SQLite file at ``path`` (created when missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except sqlite3.Error as err:
            raise VerificationError(f"cannot open the response cache {self.path}: {err}") from err

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT count(*) FROM responses").fetchone()
        return int(count)

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, key: str) -> ChatResponse | None:
        with self._lock:
            row = self._db.execute(
                "SELECT model, text, input_tokens, output_tokens FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        model, text, input_tokens, output_tokens = row
        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        return ChatResponse(text=text, usage=usage, model=model, cached=True, attempts=0)

    def put(self, request: ChatRequest, response: ChatResponse) -> None:
        """Store ``response`` under ``request.key()``; an existing entry is kept."""
        row = (
            request.key(),
            response.model,
            response.text,
            response.usage.input_tokens,
            response.usage.output_tokens,
            json.dumps(request.normalised(), ensure_ascii=False, sort_keys=True),
            request.stage,
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)


class CachedProvider:
    """Answers from ``cache`` when it can, else asks ``inner`` and stores the answer.
    Two threads missing on the same key at once both call ``inner``; the first answer stored wins."""

    def __init__(self, inner: Provider, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.interface = inner.interface

    def __repr__(self) -> str:
        return f"CachedProvider({self.inner!r}, {self.cache!r})"

    def complete(self, request: ChatRequest) -> ChatResponse:
        hit = self.cache.get(request.key())
        if hit is not None:
            return hit
        response = self.inner.complete(request)
        self.cache.put(request, response)
        return response
