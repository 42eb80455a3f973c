"""karenina_rdf.runner.worker."""
