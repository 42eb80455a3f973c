"""The HTTP endpoint (FastAPI + uvicorn): SPARQL at ``/sparql``, named queries, every minted IRI
dereferenceable, and the HTML pages (``pages/``). Imported only by code that serves."""

from ._app import Endpoint, EndpointSettings, create_app, serve
from ._publish import PublishReport, publish

__all__ = ["Endpoint", "EndpointSettings", "PublishReport", "create_app", "publish", "serve"]
