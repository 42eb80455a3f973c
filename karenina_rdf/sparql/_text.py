"""What the endpoint needs to know of a SPARQL text before pyoxigraph runs it.

pyoxigraph offers no syntax tree, and two rules of the endpoint are about the text itself: a
``SERVICE`` call to a host nobody allowed is refused, and the protocol's ``using-graph-uri`` /
``using-named-graph-uri`` become ``USING`` clauses of each ``DELETE``/``INSERT … WHERE``. A token
scanner that skips comments, strings and IRIs is enough for both: the text has already been
parsed (and so is valid SPARQL) when these run, or it is parsed right after.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

# SPARQL 1.1's own terminals (§19.8): the scan must split the text exactly where pyoxigraph does,
# or a SERVICE hides in what it takes for a name, a string or a comment (tests/sparql/test_sparql_text.py
# keeps the shapes that once did: `?o.SERVICE`, `ex:a\\#`, `<…\\u0073…>`, a no-break space in an IRI).
_IRI = re.compile(r'<((?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*)>')
_UCHAR = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_CH = r"A-Za-z0-9_\-\u00b7\u00c0-\U000effff"
_PLX = r"%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%]"
_VAR = re.compile(r"[?$][A-Za-z0-9_\u00b7\u00c0-\U000effff]+")  # a variable has no '.'
_PNAME = re.compile(  # PNAME_LN, PNAME_NS and blank node labels: a '.' only inside
    rf"(?:[A-Za-z_\u00c0-\U000effff](?:[{_CH}.]*[{_CH}])?)?:"
    rf"(?:(?:[{_CH}:]|{_PLX})(?:(?:[{_CH}.:]|{_PLX})*(?:[{_CH}:]|{_PLX}))?)?"
)
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?")
_KEYWORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # keywords, 'a', true/false: never a '.'
_SPACE = re.compile(r"[ \t\r\n]+")  # SPARQL's WS: a no-break space is not one


@dataclass(frozen=True)
class Token:
    kind: str  # "iri", "word", "string", "punct"
    text: str
    start: int
    depth: int  # braces open before this token


def tokens(text: str) -> Iterator[Token]:
    """The tokens of ``text``; comments and whitespace are dropped."""
    i, n, depth = 0, len(text), 0
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
            continue
        if ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                j += 2 if text[j] == "\\" else 1
            yield Token("string", text[i : j + len(quote)], i, depth)
            i = j + len(quote)
            continue
        if ch == "<":
            m = _IRI.match(text, i)
            if m:
                iri = _UCHAR.sub(lambda u: chr(int(u.group(1) or u.group(2), 16)), m.group(1))
                yield Token("iri", iri, i, depth)
                i = m.end()
                continue
        m = (
            (_VAR.match(text, i) if ch in "?$" else None)
            or _PNAME.match(text, i)
            or _NUMBER.match(text, i)
            or _KEYWORD.match(text, i)
        )
        if m and m.end() > i:
            yield Token("word", m.group(0), i, depth)
            i = m.end()
            continue
        if ch == "}":
            depth -= 1
        yield Token("punct", ch, i, depth)
        if ch == "{":
            depth += 1
        i += 1


def _declarations(toks: Sequence[Token], prefixes: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    known, base = dict(prefixes), None
    for k, tok in enumerate(toks[:-1]):
        word = tok.text.upper() if tok.kind == "word" else ""
        if word == "BASE" and toks[k + 1].kind == "iri":
            base = toks[k + 1].text
        elif word == "PREFIX" and k + 2 < len(toks) and toks[k + 2].kind == "iri":
            known[toks[k + 1].text.rstrip(":")] = toks[k + 2].text
    return known, base


def service_targets(text: str, prefixes: Mapping[str, str] | None = None) -> list[str | None]:
    """The IRI of every ``SERVICE`` in ``text``, resolved; None for a ``SERVICE ?var``."""
    if "service" not in text.lower():
        return []  # keywords take no escapes: a SERVICE is spelled out (a scan costs ~0.1 ms)
    toks = list(tokens(text))
    known, base = _declarations(toks, prefixes or {})
    out: list[str | None] = []
    for k, tok in enumerate(toks):
        glued = _glued(tok, "SERVICE", known)
        if glued is not None:
            out.append(_resolve(glued, known, base))
            continue
        if tok.kind != "word" or tok.text.upper() != "SERVICE":
            continue
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        if nxt is not None and nxt.kind == "word" and nxt.text.upper() == "SILENT":
            nxt = toks[k + 2] if k + 2 < len(toks) else None
        if nxt is not None:
            # None when not understood (a variable …): refused unless any SERVICE is allowed.
            out.append(_resolve(nxt, known, base) or None)
    return out


def _glued(tok: Token, keyword: str, known: Mapping[str, str]) -> Token | None:
    """The prefixed name a keyword is glued to, read as pyoxigraph reads it: ``SERVICE:x`` and
    ``SERVICEe:x`` (with ``:`` or ``e:`` declared) are the keyword SERVICE and a prefixed name,
    not one name. None when ``tok`` is not such a word. A name that merely starts with the
    keyword and whose rest is a declared prefixed name (``services:x`` beside a prefix ``s:``)
    is taken as the keyword too: the scan errs on the side of refusing."""
    if tok.kind != "word" or len(tok.text) <= len(keyword) or tok.text[: len(keyword)].upper() != keyword:
        return None
    rest = Token("word", tok.text[len(keyword) :], tok.start + len(keyword), tok.depth)
    return rest if ":" in rest.text and prefix_known(rest.text, known) else None


def _resolve(tok: Token | None, known: Mapping[str, str], base: str | None) -> str:
    """The IRI an IRI token or a prefixed name stands for, or "" when the scan cannot tell."""
    if tok is not None and tok.kind == "iri":
        return urljoin(base, tok.text) if base else tok.text
    if tok is not None and tok.kind == "word" and "\\" not in tok.text and prefix_known(tok.text, known):
        prefix, _, local = tok.text.partition(":")
        return known[prefix] + local
    return ""


def prefix_known(name: str, known: Mapping[str, str]) -> bool:
    return name.partition(":")[0] in known


def load_targets(update: str, prefixes: Mapping[str, str] | None = None) -> list[str]:
    """The IRI of every ``LOAD`` in an update, resolved."""
    if "load" not in update.lower():
        return []
    toks = list(tokens(update))
    known, base = _declarations(toks, prefixes or {})
    out = []
    for k, tok in enumerate(toks):
        glued = _glued(tok, "LOAD", known)
        if glued is not None:
            out.append(_resolve(glued, known, base))
            continue
        if tok.kind == "word" and tok.text.upper() == "LOAD":
            nxt = toks[k + 1] if k + 1 < len(toks) else None
            if nxt is not None and nxt.kind == "word" and nxt.text.upper() == "SILENT":
                nxt = toks[k + 2] if k + 2 < len(toks) else None
            out.append(_resolve(nxt, known, base))  # "" matches no allowed prefix
    return out


def names_dataset(update: str) -> bool:
    """Whether an update names its own dataset (``USING``, ``USING NAMED`` or ``WITH``), which
    the protocol forbids beside ``using-graph-uri`` / ``using-named-graph-uri`` (§2.2.3)."""
    return any(t.kind == "word" and t.text.upper() in ("USING", "WITH") for t in tokens(update))


def add_using(update: str, default_graphs: Sequence[str], named_graphs: Sequence[str]) -> str:
    """``update`` with ``USING <g>`` / ``USING NAMED <g>`` before the ``WHERE`` of every
    ``DELETE``/``INSERT … WHERE`` operation, as the protocol's ``using-graph-uri`` and
    ``using-named-graph-uri`` ask. ``DELETE WHERE { … }`` (no template) takes no USING clause
    in SPARQL and is left as it is."""
    clause = " ".join([*(f"USING <{g}>" for g in default_graphs), *(f"USING NAMED <{g}>" for g in named_graphs)])
    if not clause:
        return update
    toks = list(tokens(update))
    at = [
        tok.start
        for k, tok in enumerate(toks)
        if tok.kind == "word"
        and tok.depth == 0
        and tok.text.upper() == "WHERE"
        and k > 0
        and toks[k - 1].kind == "punct"
        and toks[k - 1].text == "}"
    ]
    for start in reversed(at):
        update = f"{update[:start]}{clause} {update[start:]}"
    return update


def dataset_clauses(query: str, prefixes: Mapping[str, str] | None = None) -> tuple[list[str], list[str]] | None:
    """The graphs of a query's own ``FROM`` and ``FROM NAMED`` clauses, resolved, or None when
    it has none. A graph the scan cannot resolve is given as ""."""
    if "from" not in query.lower():
        return None
    toks = list(tokens(query))
    known, base = _declarations(toks, prefixes or {})
    default: list[str] = []
    named: list[str] = []
    found = False
    for k, tok in enumerate(toks):
        if tok.kind != "word" or tok.depth != 0 or tok.text.upper() != "FROM":
            continue
        found = True
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        into = default
        if nxt is not None and nxt.kind == "word" and nxt.text.upper() == "NAMED":
            into, nxt = named, toks[k + 2] if k + 2 < len(toks) else None
        into.append(_resolve(nxt, known, base))
    return (default, named) if found else None


def url_allowed(target: str, allowed: Sequence[str]) -> bool:
    """Whether ``target`` falls under one of the ``allowed`` URL prefixes: same scheme, host and
    port, no credentials, and a path under the prefix's path at a ``/`` boundary (so
    ``https://a.org`` does not allow ``https://a.org.evil.example`` or ``https://a.org@evil``)."""
    if "*" in allowed:
        return True
    try:
        t = urlsplit(target)
        t_port = t.port
    except ValueError:
        return False
    if not t.scheme or not t.hostname or t.username is not None or t.password is not None:
        return False
    defaults = {"http": 80, "https": 443}
    for prefix in allowed:
        try:
            a = urlsplit(prefix)
            a_port = a.port
        except ValueError:
            continue
        same_host = (t.scheme.lower(), t.hostname, t_port or defaults.get(t.scheme.lower())) == (
            a.scheme.lower(),
            a.hostname,
            a_port or defaults.get(a.scheme.lower()),
        )
        under = a.path in ("", "/") or t.path == a.path or t.path.startswith(a.path.rstrip("/") + "/")
        if same_host and under:
            return True
    return False
