"""Generate docs/shapes.md from ``shapes/*.ttl`` and the registry of Python checks.

Run ``python -m karenina_rdf.validation._docs > docs/shapes.md`` after changing a shape or a check;
a test fails while the checked-in document differs from :func:`render`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from karenina_rdf.rdf import PREFIXES

from ._checks import CHECKS, RUN_CHECKS
from ._shapes import SH, _path_text, shape_files

if TYPE_CHECKING:
    import rdflib

_PREFIXES = {**PREFIXES, "sh": SH, "ks": "urn:karenina-rdf:shapes:", "checks": "urn:karenina-rdf:checks:"}

# Hand-written, checked against the corpus with pyshacl when the shapes last changed.
CORPUS_WARNINGS = """\
Every file of the Karenina corpus that Karenina loads (`../shared/corpus/karenina/`) and every file
of `examples/` conforms: no violation from the shapes or the Python checks. Some produce warnings,
all of them rubric traits Karenina loads but cannot evaluate:

* **callable traits without code** (`ks:CallableTraitShape-callableCodeMissing`): the callable
  Ratings of the `with_results` fixture (one; in `tests__fixtures__checkpoints__…`,
  `history__e4d0b8fa__…` and `generated__resaved__…`) and of the `multi_question` fixture (two; in
  `tests__fixtures__checkpoints__…` and `history__e4d0b8fa__…`) have no `callable_code` property;
* **regex traits without a pattern** (`ks:RegexTraitShape-patternMissing`): the regex Rating of the
  `with_results` fixture (the same three files) has no `pattern` property, so it matches every
  answer.

The importer prints the same two warnings when it stores these files (docs/data-model.md §7).

Verification runs are validated with the run shapes (`run.ttl`, `result.ttl`, `failure.ttl`,
`field-outcome.ttl`, `token-usage.ttl`, `trait-score.ttl`, `model.ttl`) and the run checks, over the
run graph together with the benchmarks it used and the vocabulary graph
(`karenina_rdf.validation._validate.findings_in_run`). Both results exports of the corpus
(`tests__fixtures__export_format__results_export_{empty,full}.json`) conform; stored without their
benchmark, the two rows of the full one warn that no stored question has their id
(`ks:ResultShape-testLinked`). The three runs of `examples/results/` conform; they warn
(`checks:ScoreFitsTrait`) where `benchmarks/generate_results.py` gave an LLM trait of kind boolean
an integer score from 1 to 5.
"""


_PLAIN = {"xsd:integer", "xsd:decimal", "xsd:double", "xsd:boolean"}


def _curie(iri: str) -> str:
    for prefix, ns in sorted(_PREFIXES.items(), key=lambda kv: -len(kv[1])):
        if iri.startswith(ns):
            return f"{prefix}:{iri[len(ns) :]}"
    return f"<{iri}>"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _header(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return " ".join(lines)


def _term(g: rdflib.Graph, node: Any) -> str:
    from rdflib import BNode, Literal, URIRef

    if isinstance(node, URIRef):
        return f"`{_curie(str(node))}`"
    if isinstance(node, Literal):
        if node.datatype is not None and _curie(str(node.datatype)) in _PLAIN:
            return f"`{node!s}`"
        if node.datatype is not None and str(node.datatype) != _PREFIXES["xsd"] + "string":
            return f"`{node!s}`^^`{_curie(str(node.datatype))}`"
        return f'`"{node!s}"`'
    if isinstance(node, BNode):
        return _shape_words(g, node)
    return str(node)


def _list(g: rdflib.Graph, node: Any) -> list[Any]:
    from rdflib.collection import Collection

    return list(Collection(g, node))


def _path_curie(g: rdflib.Graph, node: Any) -> str:
    """A SHACL property path with CURIEs: ``schema:text``, ``^schema:hasPart``, ``a/b``, ``(a|b)``, ``a*``."""
    return _path_text(g, node, _curie)


def _shape_words(g: rdflib.Graph, shape: Any) -> str:
    """The constraints of a shape (node or property shape) in words."""
    from rdflib import URIRef

    sh = _ns()
    words: list[str] = []
    path = g.value(shape, sh["path"])
    prefix = f"`{_path_curie(g, path)}`: " if path is not None and not isinstance(shape, URIRef) else ""
    lo, hi = g.value(shape, sh["minCount"]), g.value(shape, sh["maxCount"])
    if lo is not None and hi is not None:
        words.append(f"exactly {lo}" if lo == hi else f"{lo} to {hi} values")
    elif lo is not None:
        words.append(f"at least {lo}")
    elif hi is not None:
        words.append(f"at most {hi}")
    simple = {
        "nodeKind": "node kind",
        "datatype": "datatype",
        "class": "instance of",
        "hasValue": "has value",
        "pattern": "matches",
        "minLength": "min length",
        "maxLength": "max length",
        "minInclusive": "≥",
        "maxInclusive": "≤",
        "minExclusive": ">",
        "maxExclusive": "<",
        "lessThan": "less than",
        "equals": "equals",
        "disjoint": "disjoint from",
        "node": "conforms to",
    }
    for key, label in simple.items():
        for value in sorted(g.objects(shape, sh[key]), key=str):
            words.append(f"{label} {_term(g, value)}")
    for value in g.objects(shape, sh["in"]):
        words.append("one of " + ", ".join(_term(g, v) for v in _list(g, value)))
    for key, joiner in (("or", " or "), ("and", " and "), ("xone", " xor ")):
        for value in g.objects(shape, sh[key]):
            words.append("(" + joiner.join(f"[{_shape_words(g, v)}]" for v in _list(g, value)) + ")")
    for value in g.objects(shape, sh["not"]):
        words.append(f"not [{_shape_words(g, value)}]")
    if str(g.value(shape, sh["closed"])).lower() == "true":
        ignored = [_term(g, v) for v in _list(g, g.value(shape, sh["ignoredProperties"]))]
        also = " and " + ", ".join(ignored) if ignored else ""
        words.append(f"closed: no predicate but its property shapes' paths{also}")
    return prefix + ("; ".join(words) if words else "no constraint")


def _ns() -> rdflib.Namespace:
    from rdflib import Namespace

    return Namespace(SH)


def _severity(g: rdflib.Graph, shape: Any) -> str:
    value = g.value(shape, _ns()["severity"])
    return "Violation" if value is None else str(value).removeprefix(SH)


def _message(g: rdflib.Graph, shape: Any) -> str:
    return " / ".join(sorted(str(m) for m in g.objects(shape, _ns()["message"])))


def _has_node_constraints(g: rdflib.Graph, shape: Any) -> bool:
    from rdflib import RDF

    sh = _ns()
    skip = {
        sh["property"],
        sh["targetClass"],
        sh["targetNode"],
        sh["targetSubjectsOf"],
        sh["targetObjectsOf"],
        sh["severity"],
        sh["message"],
    }
    return any(p != RDF.type and p not in skip for p in g.predicates(shape, None))


def _property_rows(g: rdflib.Graph, owner: Any, order: Callable[[Any], tuple[int, str]], nesting: str) -> list[str]:
    """A table row per property shape of ``owner``. A property shape's own sh:property shapes
    check its value nodes (the metric values of a trait score): listed under it, marked ↳."""
    from rdflib import URIRef

    out = []
    for prop in sorted(g.objects(owner, _ns()["property"]), key=order):
        name = f"`{_curie(str(prop))}`" if isinstance(prop, URIRef) else "(inline)"
        p = g.value(prop, _ns()["path"])
        out.append(
            f"| {nesting}{name} | `{_cell(_path_curie(g, p))}` | {_cell(_shape_words(g, prop))} | "
            f"{_severity(g, prop)} | {_cell(_message(g, prop))} |"
        )
        out += _property_rows(g, prop, order, nesting + "↳ ")
    return out


def _render_file(path: Path) -> list[str]:
    import rdflib
    from rdflib import RDF

    text = path.read_text(encoding="utf-8")
    g = rdflib.Graph()
    g.parse(data=text, format="turtle")
    sh = _ns()

    def order(node: Any) -> tuple[int, str]:
        local = _curie(str(node))
        match = re.search(rf"^{re.escape(local)}\s", text, re.M)
        pos = match.start() if match else -1
        return (pos if pos >= 0 else len(text), str(node))

    out = [f"## `{path.name}`", "", _header(text), ""]
    for shape in sorted(g.subjects(RDF.type, sh["NodeShape"]), key=order):
        targets = []
        for key in ("targetClass", "targetNode", "targetSubjectsOf", "targetObjectsOf"):
            targets += [f"{key} `{_curie(str(t))}`" for t in sorted(g.objects(shape, sh[key]), key=str)]
        out += [
            f"### `{_curie(str(shape))}`",
            "",
            "Target: " + (", ".join(targets) or "none (used by other shapes)"),
            "",
        ]
        out += ["| shape | path | constraints | severity | message |", "|---|---|---|---|---|"]
        if _has_node_constraints(g, shape):
            out.append(
                f"| `{_curie(str(shape))}` | (the node) | {_cell(_shape_words(g, shape))} | "
                f"{_severity(g, shape)} | {_cell(_message(g, shape))} |"
            )
        out += _property_rows(g, shape, order, "")
        out.append("")
    return out


def render() -> str:
    """docs/shapes.md: every shape file, the Python checks and the warnings of the corpus."""
    out = [
        "# SHACL shapes and checks",
        "",
        "<!-- Generated by `python -m karenina_rdf.validation._docs > docs/shapes.md`; do not edit. -->",
        "",
        "The contract of the RDF model (docs/data-model.md): one Turtle file per resource type in",
        "`shapes/`, plus the rules SHACL Core cannot express as Python checks (`karenina_rdf/validation/_checks.py`)",
        "that report into the same validation report. Prefixes: "
        + ", ".join(f"`{p}:` = `{ns}`" for p, ns in _PREFIXES.items())
        + ".",
        "",
    ]
    for path in shape_files():
        out += _render_file(path)
    out += [
        "## Python checks",
        "",
        "Each check reports a `sh:ValidationResult` whose `sh:sourceConstraintComponent` and",
        "`sh:sourceShape` are its IRI, whose focus node is the node checked and whose path is the",
        "property read. Code is never executed: templates are read with `ast`, callable payloads are",
        "only base64-decoded, patterns only compiled. The checks on `karenina:` run classes run on",
        "verification runs only (`RUN_CHECKS`), over the run graph and the graphs it links to.",
        "",
        "| component | target | path | severity | what it checks |",
        "|---|---|---|---|---|",
    ]
    for check in (*CHECKS, *RUN_CHECKS):
        out.append(
            f"| `{_curie(check.iri)}` | {_cell(check.target)} | `{_curie(check.path)}` | {check.severity} | "
            f"{_cell(check.description)} |"
        )
    out += ["", "## Warnings in the corpus", "", CORPUS_WARNINGS]
    return "\n".join(out)


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
