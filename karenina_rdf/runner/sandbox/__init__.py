"""The parent's side of the sandbox: a pool of isolated worker processes (``_pool``) and the
handle on one of them (``_process``). What runs inside is ``runner/worker/``."""

from ._pool import IsolationUnavailableError, Limits, Sandbox, SandboxOutcome, check_isolation

__all__ = ["IsolationUnavailableError", "Limits", "Sandbox", "SandboxOutcome", "check_isolation"]
