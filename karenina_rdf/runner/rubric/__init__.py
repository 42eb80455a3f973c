"""karenina_rdf.runner.rubric."""
