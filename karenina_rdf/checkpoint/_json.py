"""Integers Python will not read: JSON allows any number of digits, Python's ``int()`` refuses
more than ``sys.get_int_max_str_digits()`` (4,300 by default) and ``json`` raises a bare
``ValueError`` that names no place. Karenina, reading with ``json``, refuses such a file too; we
refuse it with the JSON pointer of the number. The happy path pays nothing: the number is
looked for only after ``json`` has failed."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


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
