"""One exception tree for karenina-rdf.

::

    KareninaRDFError
    ├── CheckpointError (ValueError)        bad input: names file, JSON pointer, question id, rule
    ├── NotFoundError (LookupError)
    │   ├── BenchmarkNotFoundError          no benchmark matches the reference
    │   ├── QuestionNotFoundError (KeyError, ValueError)  no question with that id
    │   ├── ScenarioNotFoundError (KeyError)  no scenario with that name
    │   └── QueryNotFoundError              no named query or .rq file by that name
    ├── AmbiguousBenchmarkError (LookupError) a name matches several benchmarks
    ├── DuplicateQuestionError (ValueError)  a question id that already exists
    ├── InvalidValueError (ValueError)       an argument the API refuses: a bad value, a SPARQL text
    │   │                                    that does not parse, or an option this install cannot
    │   │                                    serve (pyshacl not installed)
    │   └── InvalidTypeError (TypeError)     an argument of a type the API does not take
    ├── FeatureUnavailableError (ImportError) a Karenina feature karenina-rdf does not have
    │                                        (GEPA optimisation), where Karenina raises ImportError
    │                                        when its optional dependency is missing
    ├── StoreError                           the store (or its SPARQL server) cannot be opened, read
    │                                        or written
    └── VerificationError                    a run cannot start or go on (bad options, no tasks)
        └── ProviderError                    a model call failed; ``category`` is Karenina's
                                             failure category (timeout, rate_limit, ...)

Errors that subclass ``ValueError``/``KeyError``/``TypeError`` do so because Karenina raises those
for the same situations, and code written against Karenina catches them.

The rule for what reaches a user of the CLI, the Python API or the endpoint: an error of this tree,
never a bare ``ValueError``/``RuntimeError``; a foreign exception (pyoxigraph's, httpx's, json's,
pydantic's) met on the way is turned into one of these, with the original as ``__cause__`` or in
its message. Left as they are: pydantic's ``ValidationError`` (a ``ValueError``) from the
constructors of the pydantic models (``RubricTrait(...)``, ``RunOptions(...)``, ``Limits(...)``),
as Karenina's own models raise it, and ``OSError`` from writing a file the caller named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class KareninaRDFError(Exception):
    """Base of every error raised on purpose by karenina-rdf."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, located as precisely as the input allows."""

    message: str
    file: str | None = None
    pointer: str | None = None
    question_id: str | None = None
    line: int | None = None
    trait: str | None = None  # the rubric trait's name, when the problem is about one

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        if self.pointer is not None:
            where += f" at {self.pointer or '/'}"
        if self.question_id is not None:
            where += f" (question {self.question_id!r})"
        if self.trait is not None:
            where += f" (trait {self.trait!r})"
        return f"{where}: {self.message}"


class CheckpointError(KareninaRDFError, ValueError):
    """A checkpoint that Karenina would not load, with every problem found in it."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class NotFoundError(KareninaRDFError, LookupError):
    """Something looked up by id or name is not in the store."""


class BenchmarkNotFoundError(NotFoundError):
    """No benchmark matches the given id, IRI or name."""


class QuestionNotFoundError(NotFoundError, KeyError, ValueError):
    """No question with that id in the benchmark (Karenina raises ValueError here)."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0]) if self.args else ""


class ScenarioNotFoundError(NotFoundError, KeyError):
    """No scenario with that name in the benchmark (Karenina raises KeyError here)."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0]) if self.args else ""


class QueryNotFoundError(NotFoundError):
    """No named query (``queries/*.rq``) or query file by that name."""


class AmbiguousBenchmarkError(KareninaRDFError, LookupError):
    """A benchmark name that matches more than one stored benchmark."""


class DuplicateQuestionError(KareninaRDFError, ValueError):
    """A question id that already exists in the benchmark."""


class InvalidValueError(KareninaRDFError, ValueError):
    """An argument the API refuses, as Karenina would: a bad value, or an option this install
    cannot serve (``engine="pyshacl"`` without pyshacl)."""


class InvalidTypeError(InvalidValueError, TypeError):
    """An argument of a type the API does not take (Karenina raises ``TypeError`` here)."""


class FeatureUnavailableError(KareninaRDFError, ImportError):
    """A member of Karenina's API whose machinery karenina-rdf does not have (``optimize``):
    ``ImportError``, as Karenina raises when the optional dependency it needs is missing."""


class StoreError(KareninaRDFError):
    """The store cannot be opened, read or written."""


class VerificationError(KareninaRDFError):
    """A verification run cannot start or go on: bad options, nothing to run, a run to resume
    that does not match. Failures of single tasks are never raised: they are recorded as data."""


class ProviderError(VerificationError):
    """A model call that failed. ``category`` is Karenina's failure category for it
    (``timeout``, ``connection``, ``rate_limit``, ``server_error``, ``unexpected_error``);
    ``retryable`` says whether trying again may help; ``retry_after`` is the server's hint (s)."""

    def __init__(
        self,
        message: str,
        *,
        category: str = "unexpected_error",
        retryable: bool = False,
        retry_after: float | None = None,
        retries: dict[str, int] | None = None,
        exhausted: bool = False,
    ) -> None:
        super().__init__(message)
        self.category = category
        self.retryable = retryable
        self.retry_after = retry_after
        self.retries = retries or {}  # retries used per category before giving up
        self.exhausted = exhausted  # the retry budget of ``category`` was used up


def validation_message(exc: Any) -> str:
    """A pydantic ``ValidationError`` as one line: ``field: message; field: message``."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error.get("loc", ()))
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or str(exc)
