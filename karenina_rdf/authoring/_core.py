"""The core of a ``Benchmark`` handle: where its graph is, how it reads a node and writes a diff.

The members of Karenina's ``Benchmark`` API live in mixins beside this module, one per topic;
each derives from :class:`BenchmarkCore` and uses only what it offers, so none needs another.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyoxigraph as ox

from karenina_rdf._errors import InvalidValueError, QuestionNotFoundError
from karenina_rdf._store import Store
from karenina_rdf.checkpoint import benchmark_json, item_json, map_checkpoint, map_item
from karenina_rdf.rdf import (
    DATA_FEED_ELEMENT,
    KAR,
    SCHEMA,
    Index,
    diff_update,
    index_triples,
    item_iri,
    node_index,
    ordered_items,
    owning_question,
    parse_triples,
    question_iri,
    solutions,
    string,
    term_value,
)

from ._question import Question, question_from_item

_NOT_GIVEN: Any = object()


def _now() -> str:
    return dt.datetime.now().isoformat()  # Karenina writes local time without a zone


class BenchmarkCore:
    """A handle on one benchmark in a :class:`Store`, addressed by its IRI; no state but that."""

    def __init__(self, store: Store, ref: str) -> None:
        self.store = store
        self.iri = store.resolve(ref)

    @property
    def id(self) -> str:
        """The benchmark's identity: its checkpoint ``@id``, or the id derived at import."""
        for q in self.store.oxigraph.quads_for_pattern(
            ox.NamedNode(self.iri), ox.NamedNode(SCHEMA + "identifier"), None, self._graph
        ):
            return term_value(q.object)
        return self.iri

    # -- graph access ----------------------------------------------------------------------
    @property
    def _graph(self) -> ox.NamedNode:
        return self.store.graph_of(self.iri)[1]

    def _header_index(self) -> Index:
        return node_index(
            self.store.oxigraph,
            self._graph,
            [self.iri],
            skip=(f"{self.iri}/items/", f"{self.iri}/questions/", f"{self.iri}/shadowed/"),
        )

    def _header(self) -> dict[str, Any]:
        return benchmark_json(self._header_index(), self.iri, [])

    def _apply(self, *updates: str | None, questions: list[str] | None = None) -> None:
        """Run ``updates`` as one SPARQL update, with the benchmark's new full-text stamp in it
        (so an edit and the stamp that says it happened cannot part), then bring the full-text
        index in step: the ``questions`` touched, or (None) those that appeared or went."""
        body = " ;\n".join(u for u in updates if u)
        if questions is None and f"{self.iri}/items/" not in body and f"{self.iri}/questions/" not in body:
            questions = []  # the header alone (name, rubric, properties): no question's text changed
        if body:
            text = self.store.fulltext
            old = text.stamps().get(self.iri)
            new, stamp = text.bump(self.iri)
            # One update: the edit, the text stamp, and forgetting the hashes and recorded validation.
            self.store.edit(self.iri, f"{body} ;\n{stamp}")
            text.edited(self.iri, old, new, questions)

    def _header_update(self, header: dict[str, Any]) -> str | None:
        graph = self._graph
        # Items are not the header's: neither questions nor the items they shadow.
        skip = [DATA_FEED_ELEMENT, KAR.shadowedItem]
        old = index_triples(self._header_index(), skip_predicates=skip)
        doc = dict(header, dataFeedElement=[])
        mapped = map_checkpoint(doc, base_iri=self.store.base_iri, keep_id=self.id)
        if mapped.iri != self.iri:
            raise InvalidValueError("a benchmark's id cannot be changed in place; export and import it instead")
        new = parse_triples(mapped.triples, skip_predicates=skip)
        return diff_update(graph, old, new)

    def _set_header(self, **fields: Any) -> None:
        header = self._header()
        header.update(fields)
        self._apply(self._header_update(header))

    def _touch(self) -> str:
        """Set the benchmark's dateModified to now (a direct update: no header re-mapping)."""
        graph, modified = self._graph, f"<{SCHEMA}dateModified>"
        return (
            f"DELETE {{ GRAPH {graph} {{ <{self.iri}> {modified} ?d }} }} "
            f"INSERT {{ GRAPH {graph} {{ <{self.iri}> {modified} {string(_now())} }} }} "
            f"WHERE {{ OPTIONAL {{ GRAPH {graph} {{ <{self.iri}> {modified} ?d }} }} }}"
        )

    def _item_iri(self, question_id: str) -> str:
        return item_iri(self.iri, question_id)

    def _item_index(self, question_id: str) -> Index | None:
        i = self._item_iri(question_id)
        index = node_index(self.store.oxigraph, self._graph, [i, question_iri(self.iri, question_id)])
        return index if index.get(i) else None

    def _item_json(self, question_id: str) -> dict[str, Any]:
        index = self._item_index(question_id)
        if index is None:
            raise QuestionNotFoundError(f"Question not found: {question_id}")
        return item_json(index, self._item_iri(question_id))

    def question_view(self, question_id: str) -> Question:
        """The question as a typed, frozen value (``Question``), for code of ours: Karenina's
        ``get_question`` returns a dict, and so does ours."""
        item = self._item_json(question_id)
        item.setdefault("@id", question_id)
        return question_from_item(item, question_iri(self.iri, question_id))

    def question_views(self) -> list[Question]:
        """Every question as a ``Question`` value, in the benchmark's order."""
        return [self.question_view(q) for q in self._question_ids()]

    def _question_ids(self) -> list[str]:
        # The id is in the item's minted IRI: no lookups per item.
        items = ordered_items(self.store.oxigraph, self._graph, self.iri)
        return [owned[0] for i in items if (owned := owning_question(self.iri, i))]

    def _write_item(self, question_id: str, item: dict[str, Any], position: int, old_index: Index | None) -> None:
        """Replace the item's triples (``old_index``, None for a new item) by ``item``'s."""
        old = set()
        if old_index:
            old = index_triples(old_index)
            old.add(
                (ox.NamedNode(self.iri), ox.NamedNode(DATA_FEED_ELEMENT), ox.NamedNode(self._item_iri(question_id)))
            )
        new = parse_triples(map_item(item, bench_iri=self.iri, position=position, base_iri=self.store.base_iri))
        self._apply(diff_update(self._graph, old, new), self._touch(), questions=[question_id])

    def _edit_question(self, question_id: str, change: Any) -> None:
        index = self._item_index(question_id)  # read once: item JSON, position and old triples
        if index is None:
            raise QuestionNotFoundError(f"Question not found: {question_id}")
        node = self._item_iri(question_id)
        item = item_json(index, node)
        # An id derived from the text would change with it: the question keeps the id it has.
        item["@id"] = question_id
        change(item["item"])
        item["dateModified"] = _now()
        position = index[node].get(KAR.position)
        self._write_item(question_id, item, int(position[0].value) if position else 0, index)

    def _header_value(self, key: str) -> Any:
        return self._header().get(key)

    def _next_position(self) -> int:
        rows = self.store.oxigraph.query(
            f"SELECT (MAX(?p) AS ?m) WHERE {{ <{self.iri}> <{DATA_FEED_ELEMENT}> ?i . ?i {KAR.position.nt} ?p }}",
            default_graph=self._graph,
        )
        m = next(solutions(rows))["m"]
        return int(term_value(m)) + 1 if m is not None else 0


class _StoredIds:
    """Question ids of a benchmark as a container, answered by one lookup per id (no full read)."""

    def __init__(self, bench: BenchmarkCore) -> None:
        self.bench, self.graph = bench, bench._graph

    def __contains__(self, question_id: object) -> bool:
        if not isinstance(question_id, str):
            return False
        node = ox.NamedNode(self.bench._item_iri(question_id))
        return any(True for _ in self.bench.store.oxigraph.quads_for_pattern(node, None, None, self.graph))


def _pv(name: str, value: Any) -> dict[str, Any]:
    return {"@type": "PropertyValue", "name": name, "value": value}


def _set_pv(q: dict[str, Any], name: str, value: Any) -> None:
    pvs = q.setdefault("additionalProperty", [])
    for pv in pvs:
        if pv.get("name") == name:
            if value is None:
                pv.pop("value", None)
            else:
                pv["value"] = value
            return
    pvs.append({"@type": "PropertyValue", "name": name} | ({} if value is None else {"value": value}))


def _dumps(value: Any) -> str:
    return json.dumps(value)  # Karenina's defaults: ensure_ascii, ", " separators
