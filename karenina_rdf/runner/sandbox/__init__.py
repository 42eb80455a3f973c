"""The parent's side of the sandbox: a pool of isolated worker processes (``_pool``) and the
handle on one of them (``_process``). What runs inside is ``runner/worker/``."""

from ._pool import Limits, Sandbox, SandboxOutcome

__all__ = ["Limits", "Sandbox", "SandboxOutcome"]
