"""A fast SHACL Core validator: the shapes compiled to SPARQL and run by pyoxigraph.

pyshacl over rdflib is the reference (:func:`karenina_rdf.validation._shapes.validate_graph_pyshacl`) but
takes minutes and gigabytes on a large store. Here the shapes graph is read once into a small
intermediate form (:class:`Shape`), and each shape becomes a few SPARQL SELECT queries that
return only the violating (focus node, value node) pairs, so the scanning happens in Rust.

Supported SHACL Core: targets (``sh:targetClass`` with ``rdfs:subClassOf`` when the data has it,
``sh:targetNode``, ``sh:targetSubjectsOf``, ``sh:targetObjectsOf``), ``sh:property``, property
paths (IRI, inverse, sequence, alternative, zero-or-more, one-or-more, zero-or-one),
``sh:minCount``, ``sh:maxCount``, ``sh:datatype`` (ill-typed literals of the numeric, boolean and
date types do not conform), ``sh:nodeKind``, ``sh:class``, ``sh:in``, ``sh:minLength``,
``sh:maxLength``, ``sh:pattern`` (with ``sh:flags``), ``sh:minInclusive``, ``sh:maxInclusive``,
``sh:minExclusive``, ``sh:maxExclusive``, ``sh:hasValue``, ``sh:lessThan``, ``sh:or``,
``sh:and``, ``sh:not``, ``sh:xone``, ``sh:node``, ``sh:closed`` with ``sh:ignoredProperties`` (on
node shapes), ``sh:severity``, ``sh:message``, ``sh:deactivated``. Any other constraint parameter
raises :class:`UnsupportedShape`.

Query plan (see :class:`_Run`): shapes whose target classes have no instance are skipped; value
checks are grouped by path (one scan per path, one gate expression); sh:maxCount 1 is first
gated by a count; missing values are anti-joins (MINUS); shapes with at most ``SMALL_FOCUS``
focus nodes start from them instead. Queries run on several threads.

Known differences from pyshacl (none affects the agreement on shapes/): literal focus nodes and
values are reported as pyoxigraph stores them (numbers canonical: ``4.0`` → ``4``); blank nodes
as ``_:label``; a shape without ``sh:message`` gets "<Component> violated" instead of pyshacl's
generated text; a node checked through ``sh:node`` against a closed shape gives the ``sh:node``
result only (SHACL §4.7.1), where pyshacl 0.40 also reports the nested shape's closed result.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pyoxigraph as ox

from ._shapes import SH, Severity, ValidationReport, ValidationResult, _severity, shape_files

if TYPE_CHECKING:
    import rdflib

Node = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
XSD = "http://www.w3.org/2001/XMLSchema#"

# Datatypes whose lexical space SPARQL can check with a cast (an ill-typed literal fails it).
_CASTABLE = {f"{XSD}{t}" for t in ("integer", "decimal", "double", "float", "boolean", "dateTime", "date")}

# The integer types derived from xsd:integer and their value ranges (None: unbounded).
_INT_RANGES: dict[str, tuple[int | None, int | None]] = {
    f"{XSD}{name}": bounds
    for name, bounds in {
        "byte": (-(2**7), 2**7 - 1),
        "short": (-(2**15), 2**15 - 1),
        "int": (-(2**31), 2**31 - 1),
        "long": (-(2**63), 2**63 - 1),
        "unsignedByte": (0, 2**8 - 1),
        "unsignedShort": (0, 2**16 - 1),
        "unsignedInt": (0, 2**32 - 1),
        "unsignedLong": (0, 2**64 - 1),
        "nonNegativeInteger": (0, None),
        "positiveInteger": (1, None),
        "nonPositiveInteger": (None, 0),
        "negativeInteger": (None, -1),
    }.items()
}

# Value-node constraints: checked on every value node (the focus node for a node shape).
_VALUE_PARAMS = (
    "class",
    "datatype",
    "nodeKind",
    "in",
    "minLength",
    "maxLength",
    "pattern",
    "minInclusive",
    "maxInclusive",
    "minExclusive",
    "maxExclusive",
    "or",
    "and",
    "not",
    "xone",
    "node",
)
_KNOWN_PARAMS = {
    *_VALUE_PARAMS,
    "minCount",
    "maxCount",
    "hasValue",
    "lessThan",
    "closed",
    "ignoredProperties",
    "flags",
    "path",
    "property",
    "targetClass",
    "targetNode",
    "targetSubjectsOf",
    "targetObjectsOf",
    "severity",
    "message",
    "deactivated",
    "name",
    "description",
    "order",
    "group",
    "defaultValue",
}
# Constraints whose SPARQL form cannot raise an error (EXISTS, or combinations of wrapped parts).
_ERROR_FREE = frozenset({"class", "not", "node", "or", "and", "xone"})
_COMPONENT = {
    "class": "ClassConstraintComponent",
    "datatype": "DatatypeConstraintComponent",
    "nodeKind": "NodeKindConstraintComponent",
    "in": "InConstraintComponent",
    "minLength": "MinLengthConstraintComponent",
    "maxLength": "MaxLengthConstraintComponent",
    "pattern": "PatternConstraintComponent",
    "minInclusive": "MinInclusiveConstraintComponent",
    "maxInclusive": "MaxInclusiveConstraintComponent",
    "minExclusive": "MinExclusiveConstraintComponent",
    "maxExclusive": "MaxExclusiveConstraintComponent",
    "or": "OrConstraintComponent",
    "and": "AndConstraintComponent",
    "not": "NotConstraintComponent",
    "xone": "XoneConstraintComponent",
    "node": "NodeConstraintComponent",
    "minCount": "MinCountConstraintComponent",
    "maxCount": "MaxCountConstraintComponent",
    "hasValue": "HasValueConstraintComponent",
    "lessThan": "LessThanConstraintComponent",
    "closed": "ClosedConstraintComponent",
}


# A shape whose targets have at most SMALL_FOCUS instances has "few" focus nodes: its queries
# start from them (index lookups, about 10 µs each on disk) instead of scanning whole paths.
SMALL_FOCUS = 100


class UnsupportedShape(ValueError):
    """The shapes use a SHACL feature this engine does not implement."""


# ---------------------------------------------------------------------------------------------
# Intermediate form
# ---------------------------------------------------------------------------------------------

# A property path: ("iri", str) | ("inv", path) | ("seq", [paths]) | ("alt", [paths]) |
# ("*" | "+" | "?", path). Kept as tuples so shapes stay hashable and cheap.
PathIR = tuple[object, ...]


@dataclass
class Constraint:
    param: str  # local name of the parameter, e.g. "datatype"
    values: list[Node]  # the parameter's objects (a list for sh:in; shapes for sh:or…)
    shapes: list[Shape] = field(default_factory=list)  # nested shapes of or/and/not/xone/node


@dataclass
class Shape:
    node: Node
    path: PathIR | None = None
    path_text: str | None = None
    targets: list[tuple[str, Node]] = field(default_factory=list)
    severity: Severity = "Violation"
    message: str = ""
    deactivated: bool = False
    constraints: list[Constraint] = field(default_factory=list)
    properties: list[Shape] = field(default_factory=list)
    flags: str = ""
    # sh:closed: the predicates a focus node may have (its property shapes' IRI paths and
    # sh:ignoredProperties); None when the shape is not closed.
    closed: frozenset[str] | None = None
    ignored: tuple[str, ...] = ()

    def allowed(self) -> frozenset[str]:
        """The predicates a closed shape allows: IRI paths of its property shapes, and ignored ones."""
        direct = {str(ps.path[1]) for ps in self.properties if ps.path is not None and ps.path[0] == "iri"}
        return frozenset(direct | set(self.ignored))

    def value_constraints(self) -> list[Constraint]:
        return [c for c in self.constraints if c.param in _VALUE_PARAMS]

    def count(self, param: str) -> int | None:
        for c in self.constraints:
            if c.param == param:
                return int(_text(c.values[0]))
        return None


RDF_FIRST = "http://www.w3.org/1999/02/22-rdf-syntax-ns#first"
RDF_REST = "http://www.w3.org/1999/02/22-rdf-syntax-ns#rest"
RDFS_CLASS = "http://www.w3.org/2000/01/rdf-schema#Class"


class _Graph:
    """The few reads :func:`parse_shapes` makes, on a pyoxigraph store's default graph: the shapes
    are read with pyoxigraph (milliseconds) rather than rdflib (a fifth of a second to import and
    as much to parse), which matters when one small checkpoint is validated."""

    def __init__(self, store: ox.Store) -> None:
        self.store = store

    def objects(self, node: Node, pred: str) -> list[Node]:
        quads = self.store.quads_for_pattern(node, ox.NamedNode(pred), None, ox.DefaultGraph())  # type: ignore[arg-type]
        return [q.object for q in quads]

    def value(self, node: Node, pred: str) -> Node | None:
        found = self.objects(node, pred)
        return found[0] if found else None

    def subjects(self, pred: str, obj: str | None = None) -> list[Node]:
        o = ox.NamedNode(obj) if obj is not None else None
        return [q.subject for q in self.store.quads_for_pattern(None, ox.NamedNode(pred), o, ox.DefaultGraph())]

    def predicate_objects(self, node: Node) -> list[tuple[str, Node]]:
        quads = self.store.quads_for_pattern(node, None, None, ox.DefaultGraph())  # type: ignore[arg-type]
        return [(q.predicate.value, q.object) for q in quads]

    def has_type(self, node: Node, cls: str) -> bool:
        return any(_text(o) == cls for o in self.objects(node, RDF_TYPE))

    def collection(self, node: Node) -> list[Node]:
        items: list[Node] = []
        while isinstance(node, ox.BlankNode):
            first = self.value(node, RDF_FIRST)
            if first is not None:
                items.append(first)
            node = self.value(node, RDF_REST)  # type: ignore[assignment]
        return items


def shapes_store(graph: rdflib.Graph) -> ox.Store:
    """An rdflib shapes graph copied into a pyoxigraph store (through N-Triples)."""
    store = ox.Store()
    store.load(graph.serialize(format="nt").encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)
    return store


def parse_shapes(shapes: rdflib.Graph | ox.Store) -> list[Shape]:
    """The shapes with targets (the roots of validation), nested shapes resolved, from an rdflib
    graph or the default graph of a pyoxigraph store."""
    graph = _Graph(shapes if isinstance(shapes, ox.Store) else shapes_store(shapes))
    cache: dict[Node, Shape] = {}

    def read_path(node: Node) -> PathIR:
        if isinstance(node, ox.NamedNode):
            return ("iri", node.value)
        if (inv := graph.value(node, SH + "inversePath")) is not None:
            return ("inv", read_path(inv))
        if (alt := graph.value(node, SH + "alternativePath")) is not None:
            return ("alt", [read_path(p) for p in graph.collection(alt)])
        for pred, op in (("zeroOrMorePath", "*"), ("oneOrMorePath", "+"), ("zeroOrOnePath", "?")):
            if (inner := graph.value(node, SH + pred)) is not None:
                return (op, read_path(inner))
        if graph.value(node, RDF_FIRST) is not None:
            return ("seq", [read_path(p) for p in graph.collection(node)])
        raise UnsupportedShape(f"unsupported property path {node!r}")

    def path_text(path: PathIR, top: bool = True) -> str:
        # As pyshacl's results are rendered (_shapes._path_text): a bare IRI at the top only.
        op, arg = path
        if op == "iri":
            return str(arg) if top else f"<{arg}>"
        if op == "inv":
            return "^" + path_text(cast(PathIR, arg), False)
        parts = [path_text(p, False) for p in cast(list[PathIR], arg)] if op in ("alt", "seq") else []
        if op == "alt":
            return "(" + "|".join(parts) + ")"
        if op == "seq":
            return "/".join(parts)
        return path_text(cast(PathIR, arg), False) + str(op)

    def read(node: Node) -> Shape:
        if node in cache:
            return cache[node]
        shape = Shape(node=node)
        cache[node] = shape
        for p, obj in graph.predicate_objects(node):
            if not p.startswith(SH):
                continue
            local = p.removeprefix(SH)
            if local not in _KNOWN_PARAMS:
                raise UnsupportedShape(f"sh:{local} is not implemented (shape {node})")
            if local == "path":
                shape.path = read_path(obj)
                shape.path_text = path_text(shape.path)
            elif local.startswith("target"):
                shape.targets.append((local, obj))
            elif local == "severity":
                shape.severity = _severity(_text(obj) if isinstance(obj, ox.NamedNode) else None)
            elif local == "deactivated":
                shape.deactivated = _text(obj).lower() == "true"
            elif local == "flags":
                shape.flags = _text(obj)
            elif local == "closed":
                if _text(obj).lower() == "true":
                    shape.closed = frozenset()  # filled in once its property shapes are read
            elif local == "ignoredProperties":
                shape.ignored = tuple(_text(i) for i in graph.collection(obj))
            elif local == "property":
                shape.properties.append(read(obj))
            elif local in ("in", "or", "and", "xone"):
                items = graph.collection(obj)
                nested = [read(i) for i in items] if local != "in" else []
                shape.constraints.append(Constraint(local, items, nested))
            elif local in ("not", "node"):
                shape.constraints.append(Constraint(local, [obj], [read(obj)]))
            elif local in _COMPONENT:
                shape.constraints.append(Constraint(local, [obj]))
        messages = sorted(_text(m) for m in graph.objects(node, SH + "message"))
        shape.message = messages[0] if messages else ""
        if shape.closed is not None:
            if shape.path is not None:
                raise UnsupportedShape(f"sh:closed on a property shape is not implemented (shape {node})")
            shape.closed = shape.allowed()
        return shape

    roots: list[Shape] = []
    seen: set[Node] = set()
    candidates: list[Node] = []
    for pred in ("targetClass", "targetNode", "targetSubjectsOf", "targetObjectsOf"):
        candidates.extend(graph.subjects(SH + pred))
    # Implicit class targets: a shape that is also an rdfs:Class targets its instances.
    for kind in ("NodeShape", "PropertyShape"):
        for s in graph.subjects(RDF_TYPE, SH + kind):
            if graph.has_type(s, RDFS_CLASS):
                candidates.append(s)
    for node in sorted(candidates, key=str):
        if node in seen:
            continue
        seen.add(node)
        shape = read(node)
        if graph.has_type(node, RDFS_CLASS) and not any(k == "targetClass" and v == node for k, v in shape.targets):
            shape.targets.append(("targetClass", node))
        roots.append(shape)
    return roots


# ---------------------------------------------------------------------------------------------
# Compilation to SPARQL
# ---------------------------------------------------------------------------------------------


def _term(node: Node) -> str:
    if isinstance(node, ox.NamedNode | ox.Literal):
        return str(node)  # N-Triples syntax, which SPARQL reads
    if isinstance(node, ox.BlankNode):
        raise UnsupportedShape("a blank node as a constraint value")
    raise UnsupportedShape(f"unexpected term {node!r}")


def _path_sparql(path: PathIR) -> str:
    op = path[0]
    if op == "iri":
        return f"<{path[1]}>"
    if op == "inv":
        return f"^({_path_sparql(cast(PathIR, path[1]))})"
    if op in ("seq", "alt"):
        parts = [_path_sparql(p) for p in cast(list[PathIR], path[1])]
        return "(" + ("/" if op == "seq" else "|").join(parts) + ")"
    return f"({_path_sparql(cast(PathIR, path[1]))}){op}"


class _Compiler:
    """Turns shapes into SPARQL; ``subclass`` says whether sh:class follows rdfs:subClassOf."""

    def __init__(self, subclass: bool, portable: bool = False) -> None:
        self.subclass = subclass
        self.portable = portable
        self._n = 0

    def same(self, x: str, term: Node) -> str:
        """``x`` is the RDF term ``term``. pyoxigraph compares encoded terms (sameTerm, no
        decoding); Virtuoso's sameTerm is false for equal strings, so a server gets an exact
        comparison of kind, datatype or language, and lexical form."""
        if not self.portable:
            return f"sameTerm({x}, {_term(term)})"
        if isinstance(term, ox.NamedNode):
            return f"(isIRI({x}) && STR({x}) = {ox.Literal(term.value)})"
        if isinstance(term, ox.Literal):
            lex = ox.Literal(term.value)
            if term.language:
                return f"(isLiteral({x}) && LANG({x}) = {ox.Literal(term.language)} && STR({x}) = {lex})"
            return f"(isLiteral({x}) && DATATYPE({x}) = <{term.datatype.value}> && STR({x}) = {lex})"
        raise UnsupportedShape(f"unexpected term {term!r}")

    def reset(self) -> None:
        """Start a new top-level expression (variables need only be unique inside one)."""
        self._n = 0

    def var(self) -> str:
        self._n += 1
        return f"?_v{self._n}"

    def type_path(self) -> str:
        return f"<{RDF_TYPE}>/<{RDFS_SUBCLASS}>*" if self.subclass else f"<{RDF_TYPE}>"

    def value_expr(self, c: Constraint, x: str, shape: Shape) -> str:
        """A SPARQL boolean, never an error: does value node ``x`` satisfy ``c``?"""
        if c.param in _ERROR_FREE:
            # Built of EXISTS and of expressions already wrapped: no error to catch. Leaving out
            # the COALESCE also keeps Virtuoso, which refuses EXISTS inside COALESCE, working.
            return self._value_expr(c, x, shape)
        return f"COALESCE({self._value_expr(c, x, shape)}, false)"

    def _value_expr(self, c: Constraint, x: str, shape: Shape) -> str:
        p = c.param
        v = c.values[0] if c.values else None
        if p == "class":
            return f"EXISTS {{ {x} {self.type_path()} {_term(cast('Node', v))} }}"
        if p == "datatype":
            dt = _text(v)
            if dt == "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString":
                return f"(isLiteral({x}) && lang({x}) != '')"
            # datatype() fails on IRIs and blank nodes, and is rdf:langString with a language.
            base = f"datatype({x}) = <{dt}>"
            if dt in _CASTABLE:  # an ill-typed literal fails the cast: not of the datatype
                base += f" && sameTerm(<{dt}>(str({x})), <{dt}>(str({x})))"
            elif dt in _INT_RANGES:
                as_int = f"<{XSD}integer>(str({x}))"
                base += f" && sameTerm({as_int}, {as_int})"
                lo, hi = _INT_RANGES[dt]
                base += "" if lo is None else f" && {as_int} >= {lo}"
                base += "" if hi is None else f" && {as_int} <= {hi}"
            return f"({base})"
        if p == "nodeKind":
            kind = _text(v).removeprefix(SH)
            tests = {
                "IRI": f"isIRI({x})",
                "BlankNode": f"isBlank({x})",
                "Literal": f"isLiteral({x})",
                "BlankNodeOrIRI": f"(isBlank({x}) || isIRI({x}))",
                "BlankNodeOrLiteral": f"(isBlank({x}) || isLiteral({x}))",
                "IRIOrLiteral": f"(isIRI({x}) || isLiteral({x}))",
            }
            if kind not in tests:
                raise UnsupportedShape(f"sh:nodeKind {v}")
            return tests[kind]
        if p == "in":
            if not c.values:
                return "false"
            return "(" + " || ".join(self.same(x, t) for t in c.values) + ")"
        if p in ("minLength", "maxLength"):
            op = ">=" if p == "minLength" else "<="
            return f"(STRLEN(STR({x})) {op} {int(_text(v))})"  # STR fails on a blank node
        if p == "pattern":
            pat = _term(cast("Node", v))
            flags = f", {_string_literal(shape.flags)}" if shape.flags else ""
            return f"REGEX(STR({x}), {pat}{flags})"  # STR fails on a blank node
        if p in ("minInclusive", "maxInclusive", "minExclusive", "maxExclusive"):
            op = {"minInclusive": ">=", "maxInclusive": "<=", "minExclusive": ">", "maxExclusive": "<"}[p]
            return f"({x} {op} {_term(cast('Node', v))})"
        if p == "not":
            return f"!({self.conforms(c.shapes[0], x)})"
        if p == "node":
            return self.conforms(c.shapes[0], x)
        if p in ("or", "and"):
            if not c.shapes:
                return "true" if p == "and" else "false"
            joiner = " || " if p == "or" else " && "
            return "(" + joiner.join(self.conforms(s, x) for s in c.shapes) + ")"
        if p == "xone":
            if not c.shapes:
                return "false"
            terms = " + ".join(f"IF({self.conforms(s, x)}, 1, 0)" for s in c.shapes)
            return f"(({terms}) = 1)"
        raise UnsupportedShape(f"sh:{p}")

    def conforms(self, shape: Shape, x: str) -> str:
        """A SPARQL boolean, never an error: does node ``x`` conform to ``shape``?"""
        if shape.deactivated:
            return "true"
        parts: list[str] = []
        if shape.path is None:
            parts += [self.value_expr(c, x, shape) for c in shape.value_constraints()]
            parts += [self.conforms(ps, x) for ps in shape.properties]
            for c in shape.constraints:
                if c.param == "hasValue":
                    parts.append(self.same(x, c.values[0]))
                elif c.param in ("minCount", "maxCount", "lessThan"):
                    raise UnsupportedShape(f"sh:{c.param} on a node shape")
            if shape.closed is not None:
                p, o = self.var(), self.var()
                allowed = ", ".join(f"<{a}>" for a in sorted(shape.closed))
                stray = f" FILTER({p} NOT IN ({allowed}))" if allowed else ""
                parts.append(f"NOT EXISTS {{ {x} {p} {o}{stray} }}")
        else:
            path = _path_sparql(shape.path)
            v = self.var()
            checks = [self.value_expr(c, v, shape) for c in shape.value_constraints()]
            checks += [self.conforms(ps, v) for ps in shape.properties]
            if checks:
                parts.append(f"NOT EXISTS {{ {x} {path} {v} FILTER(!({' && '.join(checks)})) }}")
            lo, hi = shape.count("minCount"), shape.count("maxCount")
            if lo is not None and lo > 0:
                parts.append(self._count_expr(x, path, lo, ">="))
            if hi is not None:
                if hi == 0:
                    parts.append(f"NOT EXISTS {{ {x} {path} {self.var()} }}")
                else:
                    parts.append(self._count_expr(x, path, hi, "<="))
            for c in shape.constraints:
                if c.param == "hasValue":
                    w = self.var()
                    parts.append(f"EXISTS {{ {x} {path} {w} FILTER({self.same(w, c.values[0])}) }}")
                elif c.param == "lessThan":
                    w, u = self.var(), self.var()
                    parts.append(
                        f"NOT EXISTS {{ {x} {path} {w} . {x} {_term(c.values[0])} {u} "
                        f"FILTER(!COALESCE({w} < {u}, false)) }}"
                    )
        return "(" + " && ".join(parts) + ")" if parts else "true"

    def _count_expr(self, x: str, path: str, n: int, op: str) -> str:
        """``x`` has at least ``n`` (op ">=") or at most ``n`` (op "<=") distinct values:
        n (or n + 1) pairwise distinct values exist, a pattern correlated with ``x``."""
        k = n if op == ">=" else n + 1
        if k > 8:
            raise UnsupportedShape(f"a nested count constraint of {n}")
        vs = [self.var() for _ in range(k)]
        triples = " . ".join(f"{x} {path} {v}" for v in vs)
        distinct = [f"!sameTerm({a}, {b})" for i, a in enumerate(vs) for b in vs[i + 1 :]]
        filt = f" FILTER({' && '.join(distinct)})" if distinct else ""
        return f"{'EXISTS' if op == '>=' else 'NOT EXISTS'} {{ {triples}{filt} }}"


def _string_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------


def _text(term: object) -> str:
    if isinstance(term, ox.BlankNode):
        return f"_:{term.value}"
    return str(getattr(term, "value", term))


class _Run:
    """One validation of one graph: the queries of all shapes, deduplicated and run in parallel.

    Value checks are grouped by path: one query per path scans the path's values once and
    evaluates every distinct check the shapes make on them, without joining with the focus nodes
    (pyoxigraph would look the focus up once per value). Its rows are candidate violations
    only; a candidate is a result when its subject is a focus node of the shape, which is
    decided in Python against the shape's focus set (fetched only when there are candidates).
    Missing values (sh:minCount, sh:hasValue) are anti-joins (MINUS) with the focus nodes."""

    def __init__(self, store: ox.Store, graph: ox.NamedNode | ox.DefaultGraph, subclass: bool) -> None:
        self.store = store
        self.graph = graph
        # A SPARQL server rather than pyoxigraph: no EXISTS inside BIND (Virtuoso refuses it).
        self.portable = not isinstance(store, ox.Store)
        self.c = _Compiler(subclass, self.portable)
        self.results: list[ValidationResult] = []
        self._focus_sets: dict[str, set[object]] = {}
        # path -> ordered distinct check expressions on its values (?v), subject ?f
        self._checks: dict[str, list[str]] = {}
        # path -> ordered distinct focus patterns (on ?f) of the shapes checking it, and the
        # (check, focus) pairs that make a violation
        self._check_focus: dict[str, list[str]] = {}
        self._check_pairs: dict[str, list[tuple[int, int]]] = {}
        # query text -> rows; filled by :meth:`execute`
        self._queries: dict[str, list[ox.QuerySolution]] = {}
        # group query -> a cheaper query whose one row (?n, ?m) says whether it can have rows
        self._gates: dict[str, str] = {}
        # deferred handlers, run once every query is answered
        self._handlers: list[Callable[[], None]] = []

    def select(self, query: str) -> list[ox.QuerySolution]:
        solutions = self.store.query(query, default_graph=self.graph)
        return list(cast("Iterable[ox.QuerySolution]", solutions))

    def want(self, query: str) -> str:
        self._queries.setdefault(query, [])
        return query

    def rows(self, query: str) -> list[ox.QuerySolution]:
        return self._queries[query]

    def add(self, shape: Shape, param: str, focus: object, value: object | None, path: str | None = None) -> None:
        self.results.append(
            ValidationResult(
                focus_node=_text(focus),
                path=path if path is not None else shape.path_text,
                message=shape.message or f"{_COMPONENT[param]} violated",
                severity=shape.severity,
                source_shape=_text(shape.node),
                source_constraint_component=SH + _COMPONENT[param],
                value=None if value is None else _text(value),
                value_term=str(value) if isinstance(value, ox.NamedNode | ox.Literal) else None,
            )
        )

    def focus_pattern(self, shape: Shape, f: str) -> str:
        branches: list[str] = []
        for kind, node in shape.targets:
            if kind == "targetClass":
                branches.append(f"{f} {self.c.type_path()} {_term(node)} .")
            elif kind == "targetNode":
                branches.append(f"VALUES {f} {{ {_term(node)} }}")
            elif kind == "targetSubjectsOf":
                branches.append(f"{f} {_term(node)} ?_t .")
            elif kind == "targetObjectsOf":
                branches.append(f"?_t {_term(node)} {f} .")
        return " UNION ".join(f"{{ {b} }}" for b in branches)

    def focus_set(self, focus: Callable[[str], str]) -> set[object]:
        pattern = focus("?f")
        if pattern not in self._focus_sets:
            rows = self.select(f"SELECT DISTINCT ?f WHERE {{ {pattern} }}")
            self._focus_sets[pattern] = {row["f"] for row in rows}
        return self._focus_sets[pattern]

    def execute(self, workers: int) -> None:
        """Answer every wanted query (in threads: pyoxigraph releases the GIL), then handle."""
        for path, exprs in self._checks.items():
            # Most paths have no failing value: a count says so before the focus join is paid.
            count = f"SELECT (COUNT(*) AS ?n) (0 AS ?m) WHERE {{ ?f {path} ?v . FILTER(!({' && '.join(exprs)})) }}"
            if self.portable:
                for index in range(len(exprs)):
                    self._gates[self._check_query_one(path, index)] = count
            else:
                self._gates[self._check_query(path)] = count
        gates = sorted(set(self._gates.values()))
        pending = [q for q, rows in self._queries.items() if not rows]
        self._run_all(pending + gates, workers)
        opened = [q for q, gate in self._gates.items() if any(r["n"] != r["m"] for r in self._queries.pop(gate, []))]
        for q in self._gates:
            self._queries.setdefault(q, [])
        self._run_all(opened, workers)
        for handle in self._handlers:
            handle()
        # The handlers close over this run: without them no cycle keeps the store open.
        self._handlers.clear()

    def _run_all(self, queries: list[str], workers: int) -> None:
        if workers > 1 and len(queries) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=workers) as pool:
                answers = list(pool.map(self.select, queries))
        else:
            answers = [self.select(q) for q in queries]
        self._queries.update(zip(queries, answers, strict=True))

    def _check_query(self, path: str) -> str:
        # One filter over the path's values (one scan, one expression); the rows it lets
        # through, which are few, are joined with the focus nodes of the shapes checking the
        # path (a UNION tagged by ?j: a hash join, where EXISTS would cost a lookup per row) and
        # kept when they violate a check of that shape: shapes on one path (schema:name of
        # traits and of templates) differ in both. The per-check flags are computed on those.
        exprs = self._checks[path]
        foci = self._check_focus[path]
        gate = " && ".join(exprs)
        union = " UNION ".join(f"{{ {p} BIND({j} AS ?j) }}" for j, p in enumerate(foci))
        binds = " ".join(f"BIND({e} AS ?ok{i})" for i, e in enumerate(exprs))
        keep = " || ".join(f"(?j = {j} && !?ok{i})" for i, j in self._check_pairs[path])
        oks = " ".join(f"?ok{i}" for i in range(len(exprs)))
        return (
            f"SELECT ?f ?v ?j {oks} WHERE {{ {{ SELECT DISTINCT ?f ?v WHERE {{ ?f {path} ?v . "
            f"FILTER(!({gate})) }} }} {{ {union} }} {binds} FILTER({keep}) }}"
        )

    def _value_check(self, shape: Shape, param: str, path: str, expr: str, focus: Callable[[str], str]) -> None:
        exprs = self._checks.setdefault(path, [])
        if expr not in exprs:
            exprs.append(expr)
        index = exprs.index(expr)
        foci = self._check_focus.setdefault(path, [])
        pattern = focus("?f")
        if pattern not in foci:
            foci.append(pattern)
        member = foci.index(pattern)
        pairs = self._check_pairs.setdefault(path, [])
        if (index, member) not in pairs:
            pairs.append((index, member))

        def handle() -> None:
            if self.portable:
                for r in self.rows(self._check_query_one(path, index)):
                    if _text(r["j"]) == str(member):
                        self.add(shape, param, r["f"], r["v"])
                return
            for r in self.rows(self._check_query(path)):
                if _text(r["j"]) == str(member) and _text(r[f"ok{index}"]) != "true":
                    self.add(shape, param, r["f"], r["v"])

        self._handlers.append(handle)

    def _check_query_one(self, path: str, index: int) -> str:
        """One check of a path on its own, without BIND: the portable form of
        :meth:`_check_query`, for servers (Virtuoso) that refuse EXISTS inside BIND."""
        expr = self._checks[path][index]
        foci = self._check_focus[path]
        members = [j for i, j in self._check_pairs[path] if i == index]
        union = " UNION ".join(f"{{ {foci[j]} BIND({j} AS ?j) }}" for j in members)
        return (
            f"SELECT ?f ?v ?j WHERE {{ {{ SELECT DISTINCT ?f ?v WHERE {{ ?f {path} ?v . "
            f"FILTER(!({expr})) }} }} {{ {union} }} }}"
        )

    def _validate_small(self, shape: Shape, path: str, focus: Callable[[str], str]) -> None:
        """The path constraints of ``shape`` as queries that start from its few focus nodes."""
        c = self.c
        others = [k for k in shape.value_constraints() if k.param != "class"]
        if others and self.portable:
            for k in others:
                c.reset()
                expr = c.value_expr(k, "?v", shape)
                q = f"SELECT DISTINCT ?f ?v WHERE {{ {focus('?f')} ?f {path} ?v . FILTER(!({expr})) }}"
                self._simple(shape, k.param, q, "v")
        elif others:
            exprs = []
            for k in others:
                c.reset()
                exprs.append(c.value_expr(k, "?v", shape))
            binds = " ".join(f"BIND({e} AS ?ok{i})" for i, e in enumerate(exprs))
            oks = " ".join(f"?ok{i}" for i in range(len(exprs)))
            q = self.want(
                f"SELECT ?f ?v {oks} WHERE {{ {{ SELECT DISTINCT ?f ?v WHERE {{ {focus('?f')} ?f {path} ?v . "
                f"FILTER(!({' && '.join(exprs)})) }} }} {binds} }}"
            )

            params = [k.param for k in others]

            def handle(q: str = q, params: list[str] = params) -> None:
                for r in self.rows(q):
                    for i, param in enumerate(params):
                        ok = r[f"ok{i}"]
                        if ok is None or _text(ok) != "true":
                            self.add(shape, param, r["f"], r["v"])

            self._handlers.append(handle)
        for k in shape.constraints:
            if k.param == "class":
                # MINUS (one hash anti-join) rather than FILTER NOT EXISTS (a lookup per value).
                q = (
                    f"SELECT DISTINCT ?f ?v WHERE {{ {focus('?f')} ?f {path} ?v "
                    f"MINUS {{ ?v {c.type_path()} {_term(k.values[0])} }} }}"
                )
                self._simple(shape, "class", q, "v")
        lo, hi = shape.count("minCount"), shape.count("maxCount")
        if lo is not None and lo > 0:
            q = (
                f"SELECT ?f WHERE {{ {{ SELECT DISTINCT ?f WHERE {{ {focus('?f')} }} }} OPTIONAL {{ ?f {path} ?v }} }} "
                f"GROUP BY ?f HAVING(COUNT(DISTINCT ?v) < {lo})"
            )
            self._simple(shape, "minCount", q, None)
        if hi is not None:
            q = (
                f"SELECT ?f WHERE {{ {{ SELECT DISTINCT ?f WHERE {{ {focus('?f')} }} }} ?f {path} ?v }} "
                f"GROUP BY ?f HAVING(COUNT(DISTINCT ?v) > {hi})"
            )
            self._simple(shape, "maxCount", q, None)
        self._path_pairs(shape, path, focus, small=True)

    def _candidates(
        self, shape: Shape, param: str, query: str, focus: Callable[[str], str], with_value: bool = True
    ) -> None:
        """Rows of ``query`` (?f, maybe ?v) are results where ?f is a focus node of ``shape``."""

        def handle() -> None:
            rows = self.rows(query)
            if rows:
                members = self.focus_set(focus)
                for r in rows:
                    if r["f"] in members:
                        self.add(shape, param, r["f"], r["v"] if with_value else None)

        self._handlers.append(handle)

    def _simple(self, shape: Shape, param: str, query: str, value: str | None) -> None:
        self.want(query)

        def handle() -> None:
            for r in self.rows(query):
                self.add(shape, param, r["f"], None if value is None else r[value])

        self._handlers.append(handle)

    def validate(self, shape: Shape, focus: Callable[[str], str], small: bool = False) -> None:
        """Plan the queries of ``shape`` on the focus nodes bound to a variable by ``focus(var)``.

        ``small``: there are few focus nodes, so the queries start from them (one index lookup
        each) instead of scanning every value of the path."""
        if shape.deactivated:
            return
        c = self.c
        direct_class = [k for k in shape.constraints if k.param == "class"]
        others = [k for k in shape.value_constraints() if k.param != "class"]
        if shape.path is None:
            for k in others:
                c.reset()
                q = f"SELECT DISTINCT ?f WHERE {{ {focus('?f')} FILTER(!{c.value_expr(k, '?f', shape)}) }}"
                self._simple(shape, k.param, q, "f")
            for k in shape.constraints:
                if k.param == "hasValue":
                    q = f"SELECT DISTINCT ?f WHERE {{ {focus('?f')} FILTER(!{c.same('?f', k.values[0])}) }}"
                    self._simple(shape, "hasValue", q, "f")
            for k in direct_class:
                q = f"SELECT DISTINCT ?f WHERE {{ {focus('?f')} MINUS {{ ?f {c.type_path()} {_term(k.values[0])} }} }}"
                self._simple(shape, "class", q, "f")
            if shape.closed is not None:
                self._closed(shape, focus)
            for ps in shape.properties:
                self.validate(ps, focus, small)
            return
        path = _path_sparql(shape.path)
        if small:
            self._validate_small(shape, path, focus)
            return
        for k in others:
            c.reset()
            self._value_check(shape, k.param, path, c.value_expr(k, "?v", shape), focus)
        for k in direct_class:
            q = self.want(
                f"SELECT DISTINCT ?f ?v WHERE {{ ?f {path} ?v MINUS {{ ?v {c.type_path()} {_term(k.values[0])} }} }}"
            )
            self._candidates(shape, "class", q, focus)
        lo, hi = shape.count("minCount"), shape.count("maxCount")
        if lo is not None and lo > 0:
            if lo == 1:
                q = f"SELECT DISTINCT ?f WHERE {{ {focus('?f')} MINUS {{ ?f {path} ?v }} }}"
            else:
                q = (
                    f"SELECT DISTINCT ?f WHERE {{ {focus('?f')} MINUS {{ SELECT ?f WHERE {{ ?f {path} ?v }} "
                    f"GROUP BY ?f HAVING(COUNT(DISTINCT ?v) >= {lo}) }} }}"
                )
            self._simple(shape, "minCount", q, None)
        if hi is not None:
            q = f"SELECT ?f WHERE {{ ?f {path} ?v }} GROUP BY ?f HAVING(COUNT(DISTINCT ?v) > {hi})"
            if hi == 1:
                # Gate: with as many (subject, value) rows as subjects, none has two values.
                self._gates[q] = f"SELECT (COUNT(*) AS ?n) (COUNT(DISTINCT ?f) AS ?m) WHERE {{ ?f {path} ?v }}"
            else:
                self.want(q)
            self._candidates(shape, "maxCount", q, focus, with_value=False)
        self._path_pairs(shape, path, focus)

    def _closed(self, shape: Shape, focus: Callable[[str], str]) -> None:
        """sh:closed: each (predicate, value) of a focus node whose predicate the shape does not
        allow is a result, with the predicate as its path (SHACL §4.8.1)."""
        allowed = ", ".join(f"<{p}>" for p in sorted(shape.closed or ()))
        stray = f"FILTER(?p NOT IN ({allowed}))" if allowed else ""
        q = self.want(f"SELECT DISTINCT ?f ?p ?v WHERE {{ {focus('?f')} ?f ?p ?v {stray} }}")

        def handle() -> None:
            for r in self.rows(q):
                self.add(shape, "closed", r["f"], r["v"], path=_text(r["p"]))

        self._handlers.append(handle)

    def _path_pairs(self, shape: Shape, path: str, focus: Callable[[str], str], small: bool = False) -> None:
        """sh:hasValue, sh:lessThan and nested property shapes (queries from the focus nodes)."""
        for k in shape.constraints:
            if k.param == "hasValue":
                q = (
                    f"SELECT DISTINCT ?f WHERE {{ {focus('?f')} MINUS "
                    f"{{ ?f {path} ?v FILTER({self.c.same('?v', k.values[0])}) }} }}"
                )
                self._simple(shape, "hasValue", q, None)
            elif k.param == "lessThan":
                q = (
                    f"SELECT DISTINCT ?f ?v WHERE {{ {{ SELECT ?f ?v WHERE {{ ?f {path} ?v . "
                    f"?f {_term(k.values[0])} ?w FILTER(!COALESCE(?v < ?w, false)) }} }} {focus('?f')} }}"
                )
                self._simple(shape, "lessThan", q, "v")
        if shape.properties:
            # Nested property shapes take the value nodes as their focus nodes.
            depth = focus("?f").count("?_o")
            outer = f"?_o{depth}"

            def inner(f: str) -> str:
                return f"{focus(outer)} {outer} {path} {f} ."

            for ps in shape.properties:
                self.validate(ps, inner, small)


def _has_subclass(store: ox.Store, graph: ox.NamedNode | ox.DefaultGraph) -> bool:
    return bool(store.query(f"ASK {{ ?a <{RDFS_SUBCLASS}> ?b }}", default_graph=graph))


def validate_store_graph(
    store: ox.Store,
    graphs: list[ox.NamedNode],
    shapes: rdflib.Graph | None = None,
    *,
    workers: int | None = None,
) -> ValidationReport:
    """Validate each named graph of ``store`` in ``graphs`` against ``shapes`` (default: all of
    ``shapes/``); one report for all of them, results sorted as pyshacl's. Queries run on
    ``workers`` threads (default: the number of CPUs)."""
    import os

    workers = workers if workers is not None else (os.cpu_count() or 1)
    roots = _roots(shapes)
    results: list[ValidationResult] = []
    for graph in graphs:
        results.extend(_validate(store, graph, roots, workers))
    results.sort(key=lambda r: (r.focus_node, r.path or "", r.message, r.value or ""))
    return ValidationReport(conforms=not results, results=results)


def _roots(shapes: rdflib.Graph | None) -> list[Shape]:
    if shapes is not None:
        return parse_shapes(shapes)
    if not _DEFAULT:
        _DEFAULT.append(parse_shapes(default_shapes_store()))
    return _DEFAULT[0]


_DEFAULT: list[list[Shape]] = []


@functools.lru_cache(maxsize=1)
def default_shapes_store() -> ox.Store:
    """Every file of ``shapes/`` in the default graph of an in-memory pyoxigraph store (blank
    nodes stay apart: each file is parsed on its own)."""
    store = ox.Store()
    for path in shape_files():
        store.load(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=f"urn:karenina-rdf:shapes:file:{path.name}")
    return store


def _focus_of(run: _Run, shape: Shape, var: str) -> str:
    return run.focus_pattern(shape, var)


def _validate(
    store: ox.Store,
    graph: ox.NamedNode | ox.DefaultGraph,
    roots: list[Shape],
    workers: int,
) -> list[ValidationResult]:
    subclass = _has_subclass(store, graph)
    run = _Run(store, graph, subclass)
    counts: dict[str, int] = {}
    if not subclass:
        rows = run.select(f"SELECT ?c (COUNT(DISTINCT ?f) AS ?n) WHERE {{ ?f <{RDF_TYPE}> ?c }} GROUP BY ?c")
        counts = {_text(r["c"]): int(_text(r["n"])) for r in rows}
    for shape in roots:
        small = all(kind == "targetNode" for kind, _ in shape.targets)
        if not subclass and all(kind == "targetClass" for kind, _ in shape.targets):
            n = sum(counts.get(_text(node), 0) for _, node in shape.targets)
            if n == 0:
                continue  # no focus node: nothing to check
            small = n <= SMALL_FOCUS
        run.validate(shape, functools.partial(_focus_of, run, shape), small)
    run.execute(workers)
    return run.results


def validate_turtle(data: str | Path | rdflib.Graph, shapes: rdflib.Graph | None = None) -> ValidationReport:
    """Validate Turtle text, a Turtle file or an rdflib graph: it is loaded into an in-memory
    pyoxigraph store (as N-Triples for a graph) and validated with :func:`validate_store_graph`."""
    store = ox.Store()
    graph = ox.NamedNode("urn:karenina-rdf:shacl:data")
    if isinstance(data, Path):
        store.load(path=str(data), format=ox.RdfFormat.TURTLE, to_graph=graph, base_iri=data.resolve().as_uri())
    elif isinstance(data, str):
        store.load(data, format=ox.RdfFormat.TURTLE, to_graph=graph)
    else:
        nt = data.serialize(format="nt")
        store.load(nt, format=ox.RdfFormat.N_TRIPLES, to_graph=graph)
    return validate_store_graph(store, [graph], shapes)
