"""What the tests of the web pages share."""

from __future__ import annotations

from karenina_rdf import Store


def result_path(store: Store, run_id: str, position: int) -> str:
    """The path of the page of the run's result at ``position`` (its row in the results file)."""
    found = store.query(
        "SELECT ?r WHERE { ?r a karenina:VerificationResult ; karenina:position ?p ; prov:wasGeneratedBy ?run . "
        "?run schema:identifier ?id }",
        p=position,
        id=run_id,
    )
    iri = next(iter(found))["r"].value
    return iri[len(store.base_iri) - 1 :]
