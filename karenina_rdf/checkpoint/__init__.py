"""karenina_rdf.checkpoint."""
