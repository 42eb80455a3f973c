"""The endpoint's HTML pages: routes (``_routes``), what the benchmark and run pages show
(``_benchmarks``, ``_runs``), terms and queries as shown (``_display``), Jinja templates and
static files."""

from ._routes import Pages

__all__ = ["Pages"]
