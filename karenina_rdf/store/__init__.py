"""karenina_rdf.store."""
