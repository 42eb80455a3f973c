"""Verification: answering and judge models behind one provider interface, template and callable
code in a sandbox, and the pipeline that turns (question, answerer, judge, replicate) tasks into
results written to the store as they complete. See docs/verification.md."""

from ._generate import GeneratedTemplate, generate_templates
from ._llm import ChatRequest, ChatResponse, Message, Provider, Usage
from ._providers import FunctionProvider
from ._run import RunOptions, RunReport, rescore, run_verification, verify
from ._sandbox import Limits, Sandbox, SandboxOutcome
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
