"""karenina_rdf.sparql."""
