"""Reading a Karenina results export one result at a time.

A results export is one JSON object whose ``results`` array may hold a million rows (spec
verification.md §11.1). ``json.load`` would hold all of them as Python objects at once; here the
top-level object is walked by hand and each value decoded with the standard library's
``raw_decode`` from a sliding window of the file, so memory holds one row at a time. (No
streaming JSON parser is among the project's dependencies; ``raw_decode`` does the decoding,
this module only finds where values start.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from karenina_rdf._errors import CheckpointError, Problem
from karenina_rdf.checkpoint import too_long_integer

_WINDOW = 1 << 20
_WS = " \t\n\r"
_decode = json.JSONDecoder().raw_decode


def is_sqlite(path: str | Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def looks_like_results(path: str | Path) -> bool:
    """A Karenina results export (a ``format_version`` before any ``@context``) or a SQLite
    results database, judged from the file's first bytes."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
    except OSError:
        return False
    if head.startswith(b"SQLite format 3\x00"):
        return True
    if re.match(rb'^(\xef\xbb\xbf)?\s*\{\s*"runs"\s*:', head):  # a ResultsStore file (_store_json)
        return True
    version = head.find(b'"format_version"')
    context = head.find(b'"@context"')
    return version >= 0 and (context < 0 or version < context)


class ExportReader:
    """The top-level members of an export, with ``results`` (and ``scenario_results``) yielded
    row by row by :meth:`rows` instead of being kept. ``header`` holds every other member read
    so far: in Karenina's layout all of them come before ``results``."""

    ROW_KEYS = ("results",)

    def __init__(self, source: str | Path | IO[str], label: str | None = None) -> None:
        if isinstance(source, (str, Path)):
            self.label = label or str(source)
            try:
                self._fh: IO[str] = open(source, encoding="utf-8")  # noqa: SIM115 - closed by close()
            except OSError as exc:
                raise CheckpointError([Problem(f"cannot read the file: {exc.strerror or exc}", self.label)]) from None
        else:
            self.label = label or getattr(source, "name", None) or "<input>"
            self._fh = source
        self.header: dict[str, Any] = {}
        self._buf = ""
        self._pos = 0
        self._line = 1  # line number of the start of _buf
        self._eof = False
        self._started = False
        self._done = False
        self.row_key_order: list[str] = []  # order of top-level keys, row arrays included

    def close(self) -> None:
        self._fh.close()

    def bytes_read(self) -> int:
        """How far into the file reading has got, in bytes (for progress reports); 0 for a
        stream that does not say."""
        try:
            return int(self._fh.buffer.tell())  # type: ignore[attr-defined]
        except (AttributeError, OSError, ValueError):
            return 0

    # -- window ----------------------------------------------------------------------------
    def _more(self) -> bool:
        if self._eof:
            return False
        try:
            chunk = self._fh.read(_WINDOW)
        except UnicodeDecodeError as exc:
            self._fail(f"not UTF-8 text ({exc.reason})")
        if not chunk:
            self._eof = True
            return False
        self._line += self._buf.count("\n", 0, self._pos)
        self._buf = self._buf[self._pos :] + chunk
        self._pos = 0
        return True

    def _fail(self, message: str, pointer: str | None = None) -> Any:
        line = self._line + self._buf.count("\n", 0, self._pos)
        raise CheckpointError([Problem(message, self.label, pointer, line=line)])

    def _skip_ws(self) -> str:
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            self._pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._more():
                return ""

    def _expect(self, char: str, what: str, pointer: str) -> None:
        got = self._skip_ws()
        if got != char:
            self._fail(
                f"expected {what}, found {got!r}" if got else f"expected {what}, found the end of the file", pointer
            )
        self._pos += 1

    def _value(self, pointer: str) -> Any:
        self._skip_ws()
        while True:
            try:
                value, end = _decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                # More text helps only if the value ran into the window's end: an unterminated
                # string reports where it starts, a cut "fals" where it starts (8 covers every
                # keyword); an error earlier in the window is the file's, raised without reading on.
                at_end = exc.pos >= len(self._buf) - 8 or exc.msg.startswith("Unterminated string")
                if at_end and self._more():
                    continue
                line = self._line + self._buf.count("\n", 0, exc.pos)
                raise CheckpointError([Problem(f"invalid JSON: {exc.msg}", self.label, pointer, line=line)]) from None
            except ValueError:  # json's own refusal of a number Python will not convert
                buf, start = self._buf, self._pos

                def again(decoder: json.JSONDecoder, buf: str = buf, start: int = start) -> Any:
                    return decoder.raw_decode(buf, start)[0]

                found = too_long_integer(again, pointer)
                if found is None:
                    raise
                line = self._line + self._buf.count("\n", 0, start)
                raise CheckpointError([Problem(found[1], self.label, found[0], line=line)]) from None
            # A number may end at the window's edge only because the window does.
            edge = end == len(self._buf) and not self._eof and not isinstance(value, (dict, list, str))
            if edge and self._more():
                continue
            self._pos = end
            return value

    # -- structure -------------------------------------------------------------------------
    def _members(self) -> Iterator[str]:
        """Keys of the top-level object, positioned at each value in turn."""
        if not self._started:
            self._started = True
            if self._skip_ws() != "{":
                self._fail("a results export is a JSON object", "")
            self._pos += 1
            if self._skip_ws() == "}":
                self._pos += 1
                return
        while True:
            key = self._value("")
            if not isinstance(key, str):
                self._fail("expected a member name", "")
            self._expect(":", "':'", "/" + key)
            self.row_key_order.append(key)
            yield key
            sep = self._skip_ws()
            self._pos += 1
            if sep == "}":
                if self._skip_ws():
                    self._fail("text after the end of the export", "")
                return
            if sep != ",":
                self._fail(f"expected ',' or '}}' after /{key}", "/" + key)

    def rows(self) -> Iterator[tuple[str, int, Any]]:
        """(array key, index, row) for every row of every row array, header members collected
        on the way (into ``header``)."""
        for key in self._members():
            if key not in self.ROW_KEYS:
                self.header[key] = self._value("/" + key)
                continue
            if self._skip_ws() != "[":
                self.header[key] = self._value("/" + key)  # not an array: the checks will say so
                continue
            self._pos += 1
            index = 0
            if self._skip_ws() == "]":
                self._pos += 1
            else:
                while True:
                    yield key, index, self._value(f"/{key}/{index}")
                    index += 1
                    sep = self._skip_ws()
                    self._pos += 1
                    if sep == "]":
                        break
                    if sep != ",":
                        self._fail(f"expected ',' or ']' after /{key}/{index - 1}", f"/{key}/{index - 1}")
            self.header.setdefault(key, None)
        self._done = True

    def read_header(self) -> dict[str, Any]:
        """Every member but the rows, reading (and dropping) rows when the header comes after them."""
        for _ in self.rows():
            pass
        return self.header
