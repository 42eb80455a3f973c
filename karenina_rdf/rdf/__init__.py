"""karenina_rdf.rdf."""
