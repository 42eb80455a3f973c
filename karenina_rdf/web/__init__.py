"""karenina_rdf.web."""
