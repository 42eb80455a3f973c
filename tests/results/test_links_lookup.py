"""A results import finds the stored question each result names by its id, one id at a time
from the store's indexes (``results._runs._Links``), instead of reading every stored question
first: on a store of a million questions that read took minutes and a Python object per
question for a run naming nine (docs/performance.md § One million questions). The lookup must
give what the join it replaced gives, for every id."""

from __future__ import annotations

from pathlib import Path

import pytest

from karenina_rdf import Store
from karenina_rdf.rdf import KAR, SCHEMA, solutions, term_value
from karenina_rdf.results._map import QuestionLink
from karenina_rdf.results._runs import _Links
from tests.conftest import EXAMPLES

# The query _Links ran before, over every live benchmark graph: the reference.
JOIN = f"""SELECT ?b ?q ?id ?tpl ?tid WHERE {{
    ?q a <{SCHEMA}Question> ; <{SCHEMA}identifier> ?id ; <{SCHEMA}isPartOf> ?b .
    OPTIONAL {{ ?q <{SCHEMA}hasPart> ?tpl . ?tpl {KAR.templateId.nt} ?tid }} }}"""


def _by_join(store: Store, graphs: list) -> dict[str, list[QuestionLink]]:
    out: dict[str, list[QuestionLink]] = {}
    for row in solutions(store.oxigraph.query(JOIN, default_graph=graphs)):
        out.setdefault(term_value(row["id"]), []).append(
            QuestionLink(
                benchmark=term_value(row["b"]),
                question=term_value(row["q"]),
                template=term_value(row["tpl"]) if row["tpl"] is not None else None,
                template_id=term_value(row["tid"]) if row["tid"] is not None else None,
            )
        )
    return out


def _key(link: QuestionLink) -> tuple[str, str, str, str]:
    return (link.benchmark, link.question, link.template or "", link.template_id or "")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    folder: Path = tmp_path_factory.mktemp("links") / "store"
    s = Store(folder)
    s.import_paths(sorted(EXAMPLES.glob("*.jsonld")), validate=False)
    return s


@pytest.mark.parametrize("benchmark", [None, "Pharmacology examples"])
def test_every_id_finds_what_the_join_found(store: Store, benchmark: str | None) -> None:
    links = _Links(store, benchmark, "test")
    expected = _by_join(store, list(links.graphs.values()))
    assert expected, "the examples hold questions"
    assert any(link.template_id for found in expected.values() for link in found), "some with a template"
    for qid, found in expected.items():
        assert sorted(map(_key, links._find(qid))) == sorted(map(_key, found)), qid
    assert links._find("no-such-question-id") == []


def test_nothing_is_read_before_a_lookup(store: Store) -> None:
    """Only the ids asked for are read (the old code held every stored question after __init__)."""
    links = _Links(store, None, "test")
    assert links.by_id == {}
    qid = next(
        q for q, found in _by_join(store, list(links.graphs.values())).items() if len({f.benchmark for f in found}) == 1
    )
    assert links.lookup(qid) is not None
    assert list(links.by_id) == [qid]
