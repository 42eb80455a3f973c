"""karenina_rdf.authoring."""
