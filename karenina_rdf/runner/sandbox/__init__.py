"""karenina_rdf.runner.sandbox."""
