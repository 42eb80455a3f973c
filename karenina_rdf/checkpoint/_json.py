"""Integers Python will not read: JSON allows any number of digits, Python's ``int()`` refuses
more than ``sys.get_int_max_str_digits()`` (4,300 by default) and ``json`` raises a bare
``ValueError`` that names no place. Karenina, reading with ``json``, refuses such a file too; we
refuse it with the JSON pointer of the number. The happy path pays nothing: the number is
looked for only after ``json`` has failed."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from karenina_rdf._errors import Problem


class LongInt(str):
    """The digits of an integer too long to convert, kept as text so its place can be found."""


def _checked_int(text: str) -> int | LongInt:
    limit = sys.get_int_max_str_digits()
    return LongInt(text) if limit and len(text.lstrip("-")) > limit else int(text)


def _first_long(value: Any, pointer: str) -> tuple[str, LongInt] | None:
    if isinstance(value, LongInt):
        return pointer, value
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, child in items:
        segment = str(key).replace("~", "~0").replace("/", "~1")
        found = _first_long(child, f"{pointer}/{segment}")
        if found is not None:
            return found
    return None


def too_long_integer(decode: Callable[[json.JSONDecoder], Any], pointer: str = "") -> tuple[str, str] | None:
    """After ``json`` failed with a ``ValueError`` that is no ``JSONDecodeError``: decode again
    (``decode`` is handed a decoder that keeps long integers as text) and return the pointer of
    the first integer too long to read and what to say of it, or None if that was not the cause."""
    try:
        value = decode(json.JSONDecoder(parse_int=_checked_int))
    except ValueError:
        return None
    found = _first_long(value, pointer)
    if found is None:
        return None
    where, digits = found
    return where, (
        f"an integer of {len(digits.lstrip('-')):,} digits: more than Python reads "
        f"(sys.get_int_max_str_digits() is {sys.get_int_max_str_digits():,}); Karenina cannot load it either"
    )


# "\ud800" is valid JSON that no Unicode text can hold: Python parses it into a lone surrogate,
# which Karenina loads (and then cannot save: its UTF-8 write raises). RDF literals are UTF-8,
# so the code point is replaced and the import warns; only an escape can bring one in.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def may_hold_surrogates(data: bytes) -> bool:
    """Whether the JSON text has a surrogate escape (a pair or a lone one): cheap, on bytes."""
    return _SURROGATE_ESCAPE.search(data) is not None


def replace_lone_surrogates(value: Any, pointer: str = "") -> tuple[Any, list[str]]:
    """``value`` with every lone surrogate replaced by U+FFFD, and the JSON pointers of the
    strings changed (of the object, for a key). A surrogate pair is one character once parsed, so any
    surrogate left in a Python string is a lone one."""
    places: list[str] = []

    def fix(text: str, where: str) -> str:
        if _SURROGATE.search(text) is None:
            return text
        places.append(where)
        return _SURROGATE.sub("\ufffd", text)

    def walk(node: Any, where: str) -> Any:
        if isinstance(node, str):
            return fix(node, where)
        if isinstance(node, list):
            return [walk(child, f"{where}/{i}") for i, child in enumerate(node)]
        if isinstance(node, dict):
            out = {}
            for key, child in node.items():
                # A key's place is its object's; pointers below it use the repaired key, so
                # that no message carries a lone surrogate on to a terminal.
                key = fix(key, where)
                out[key] = walk(child, f"{where}/" + key.replace("~", "~0").replace("/", "~1"))
            return out
        return node

    return walk(value, pointer), places


def without_lone_surrogates(doc: Any, source: str | None, data: bytes | None = None) -> tuple[Any, list[Problem]]:
    """``doc`` with lone surrogates replaced, and one warning per string changed. With the file's
    ``data`` the walk runs only if its bytes hold a surrogate escape."""
    if data is not None and not may_hold_surrogates(data):
        return doc, []
    doc, places = replace_lone_surrogates(doc)
    message = (
        "an unpaired UTF-16 surrogate, which is not text, was replaced by U+FFFD (Karenina loads it but cannot save it)"
    )
    return doc, [Problem(message, source, pointer) for pointer in places]
