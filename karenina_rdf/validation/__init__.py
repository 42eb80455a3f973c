"""karenina_rdf.validation."""
