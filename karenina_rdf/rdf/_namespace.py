"""Closed namespaces: a vocabulary whose terms are attributes, so a misspelt term fails loudly.

In the spirit of rdflib's ``DefinedNamespace``: ``KAR.position`` is the IRI of ``karenina:position``
and ``KAR.postion`` raises ``AttributeError`` as soon as it runs (and tests/rdf/test_vocabulary.py finds
it in code that never runs in the tests). A term is the IRI string itself, so it works wherever the
concatenated strings it replaces did (f-strings, dict keys, comparisons with stored IRIs); it also
carries its N-Triples form, made once, for the mappers that write millions of N-Triples lines.

Names known only at run time (a Karenina setting name, a result field) go through one checked
lookup, ``KAR.term(local)``, which raises for a name outside the vocabulary. IRIs minted from data
(a user's custom property, a failure category) are not terms: they belong to an :class:`OpenFamily`
the namespace declares by name, the one documented way to build them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NoReturn

import pyoxigraph as ox


class UnknownTermError(AttributeError, LookupError):
    """A name that is not a term of a closed namespace."""


class Term(str):
    """One IRI of a closed namespace: the IRI string itself, plus its local name, its N-Triples
    form ``nt`` (``<iri>``, a plain ``str``) and its ``pyoxigraph.NamedNode`` ``node``."""

    local: str
    nt: str
    node: ox.NamedNode

    def __new__(cls, base: str, local: str) -> Term:
        term = super().__new__(cls, base + local)
        term.local = local
        term.nt = f"<{base}{local}>"
        term.node = ox.NamedNode(base + local)
        return term

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]  # pickle and copy rebuild from these
        return (self[: len(self) - len(self.local)], self.local)


class OpenFamily(str):
    """A family of IRIs under a namespace that data completes (``custom_`` + a property name): the
    prefix IRI itself (for ``startswith`` and stripping), called with a local part to build one.
    The local part is used as given: encode data with ``rdf._ids.segment`` first."""

    def __call__(self, local: str) -> str:
        return str.__add__(self, local)

    def local(self, iri: str) -> str | None:
        """The part of ``iri`` after the prefix, or ``None`` for an IRI outside the family."""
        return iri[len(self) :] if iri.startswith(self) else None


class ClosedNamespace:
    """The terms of one vocabulary as attributes (``NS.name`` → :class:`Term`); any other attribute
    raises :class:`UnknownTermError` (an ``AttributeError``). ``NS.term(local)`` is the checked
    lookup for names known only at run time (and for terms that are Python keywords, such as
    ``import``). ``families`` maps attribute names to the open families of the namespace
    (``{"custom_property": "custom_"}`` → ``NS.custom_property("custom_x")``)."""

    _base: str
    _terms: dict[str, Term]
    _families: dict[str, OpenFamily]

    def __init__(self, base: str, terms: Iterable[str], families: Mapping[str, str] | None = None) -> None:
        own = self.__dict__
        own["_base"] = base
        own["_terms"] = {}
        reserved = {name for name in dir(type(self)) if not name.startswith("__")}
        for local in terms:
            if not local or not all(c.isalnum() or c == "_" for c in local) or local[0].isdigit():
                raise ValueError(f"{local!r} is not a term name (letters, digits and '_', not starting with a digit)")
            if local in reserved:
                raise ValueError(f"the term {local!r} would hide the namespace's own {local!r}")
            if local not in self._terms:
                self._terms[local] = own[local] = Term(base, local)
        own["_families"] = {}
        for name, prefix in (families or {}).items():
            if name in self._terms or name in reserved:
                raise ValueError(f"the open family {name!r} would hide a term or the namespace's own {name!r}")
            self._families[name] = own[name] = OpenFamily(base + prefix)

    @property
    def base(self) -> str:
        """The namespace IRI, which every term and family starts with."""
        return self._base

    @property
    def terms(self) -> frozenset[str]:
        """The local names of the terms."""
        return frozenset(self._terms)

    @property
    def families(self) -> Mapping[str, OpenFamily]:
        """The open families by attribute name."""
        return dict(self._families)

    def term(self, local: str) -> Term:
        """The term with this local name; :class:`UnknownTermError` for a name not in the vocabulary."""
        try:
            return self._terms[local]
        except KeyError:
            self._unknown(local)

    def local_name(self, iri: str) -> str | None:
        """The part of ``iri`` after the namespace IRI (a term or not: this reads data), or ``None``."""
        return iri[len(self._base) :] if iri.startswith(self._base) else None

    def __contains__(self, local: object) -> bool:
        return local in self._terms

    def __iter__(self) -> Iterator[Term]:
        return iter(self._terms.values())

    def __len__(self) -> int:
        return len(self._terms)

    def __getattr__(self, name: str) -> Term:
        # Only reached for a name that is neither a term nor a family nor an attribute of the class.
        if name.startswith("__"):
            raise AttributeError(name)  # copy, pickle and friends probing for optional hooks
        self._unknown(name)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"the namespace {self._base} is closed: {name!r} cannot be set")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._terms, *self._families})

    def __repr__(self) -> str:
        return f"ClosedNamespace({self._base!r}, {len(self._terms)} terms)"

    def _unknown(self, name: str) -> NoReturn:
        close = difflib.get_close_matches(name, list(self._terms), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UnknownTermError(f"{name!r} is not a term of the closed namespace {self._base}{hint}")
