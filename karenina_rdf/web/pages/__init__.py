"""karenina_rdf.web.pages."""
