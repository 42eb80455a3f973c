"""karenina_rdf.runner.providers."""
