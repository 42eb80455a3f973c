"""What runs inside a sandbox worker, and nothing else: the worker's loop and audit hook
(``_main``), the answer-template runtime (``_runtime``, ``_primitives``, ``_composition``) and
``verify()`` (``_template``). The sandbox puts only this folder on the worker's path, as a package
of its own: these modules import nothing else of karenina_rdf."""

from ._main import HEADER, ID_SIZE
from ._seccomp import unavailable as seccomp_unavailable

__all__ = ["HEADER", "ID_SIZE", "seccomp_unavailable"]
