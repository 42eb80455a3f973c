"""Verification: answering and judge models behind one provider interface, template and callable
code in a sandbox, and the pipeline that turns (question, answerer, judge, replicate) tasks into
results written to the store as they complete. See docs/verification.md."""

from karenina_rdf.runner.providers._base import ChatRequest, ChatResponse, Message, Provider, Usage
from karenina_rdf.runner.providers._registry import FunctionProvider
from karenina_rdf.runner.sandbox._pool import Limits, Sandbox, SandboxOutcome

from ._generate import GeneratedTemplate, generate_templates
from ._run import RunOptions, RunReport, rescore, run_verification, verify
from ._tasks import ModelSpec

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "FunctionProvider",
    "GeneratedTemplate",
    "Limits",
    "Message",
    "ModelSpec",
    "Provider",
    "RunOptions",
    "RunReport",
    "Sandbox",
    "SandboxOutcome",
    "Usage",
    "generate_templates",
    "rescore",
    "run_verification",
    "verify",
]
