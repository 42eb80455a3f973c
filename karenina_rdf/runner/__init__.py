"""Verification: answering and judge models behind one provider interface, template and callable
code in a sandbox, and the pipeline that turns (question, answerer, judge, replicate) tasks into
results written to the store as they complete. See docs/verification.md."""

from karenina_rdf.runner.providers import ChatRequest, ChatResponse, FunctionProvider, Message, Provider, Usage
from karenina_rdf.runner.sandbox import Limits, Sandbox, SandboxOutcome

from ._config import DeepJudgmentConfig, FewShotConfig, PromptConfig, QuestionFewShotConfig
from ._config import few_shot_for_mode as few_shot_for_mode
from ._embedding import EmbeddingCheckConfig
from ._generate import GeneratedTemplate, generate_templates

# The public karenina_rdf.Benchmark (exported there): the authoring handle and the members that
# call models, with what they return.
from ._members import Benchmark as Benchmark
from ._members import TemplateProgressEvent as TemplateProgressEvent
from ._members import VerificationResultSet as VerificationResultSet

# For the command line, not the Python API (hence not in __all__): the run modes it offers and
# how it builds providers for a store (replay, record, response cache).
from ._models import Transport as Transport
from ._presets import load_preset
from ._presets import with_preset as with_preset
from ._run import RunOptions, RunReport, rescore, run_verification, verify
from ._schedule import Scheduling
from ._tasks import MODES as MODES
from ._tasks import ModelSpec
from .rubric import DeepJudgmentRubricCustomConfig, DeepJudgmentTraitConfig, RubricDeepJudgmentConfig

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "DeepJudgmentConfig",
    "DeepJudgmentRubricCustomConfig",
    "DeepJudgmentTraitConfig",
    "EmbeddingCheckConfig",
    "FewShotConfig",
    "FunctionProvider",
    "GeneratedTemplate",
    "Limits",
    "Message",
    "ModelSpec",
    "PromptConfig",
    "Provider",
    "QuestionFewShotConfig",
    "RubricDeepJudgmentConfig",
    "RunOptions",
    "RunReport",
    "Sandbox",
    "SandboxOutcome",
    "Scheduling",
    "Usage",
    "generate_templates",
    "load_preset",
    "rescore",
    "run_verification",
    "verify",
]
