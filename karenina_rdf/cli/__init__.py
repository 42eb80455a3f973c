"""The ``karenina-rdf`` command line (typer + rich): one module per command group, the shared
options and error handling in ``_common``, the app in ``_app``."""

from ._app import app, main

__all__ = ["app", "main"]
