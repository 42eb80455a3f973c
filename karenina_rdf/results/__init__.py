"""karenina_rdf.results."""
