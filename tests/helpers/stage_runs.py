"""What the stage tests of tests/runner share on our side: a fake judge answering by call kind
and trait (the counterpart of the Karenina scripts' judge, ``karenina_ref.judge_script``) and a
run's results read back as the rows of its Karenina export."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Mapping
from typing import Any

from karenina_rdf import Store
from karenina_rdf.runner import ChatRequest, ChatResponse, FunctionProvider, ModelSpec, Usage

# Our stages by the kind the Karenina scripts' RUBRIC_KIND_OF gives the same call.
RUBRIC_KINDS: Mapping[str, str] = {
    "dynamic_rubric_presence_check": "PRESENCE",
    "rubric_deep_judgment_excerpts": "EXCERPTS",
    "rubric_deep_judgment_reasoning": "REASONING",
    "rubric_deep_judgment_score": "SCORE",
    "rubric_evaluation": "BATCH",
    "parsing": "PARSING",
}


class Judge:
    """A fake judge (model "j") answering by (call kind, trait) or by kind: a call's kind is its
    stage through ``kinds`` (the stage itself when not there). A list of replies is one a call,
    its last one repeated; a dict picks its reply by a marker the user text holds ("" for the
    others). Every request is kept. With ``usage`` every reply reports those token counts."""

    def __init__(
        self, replies: dict[str, Any], kinds: Mapping[str, str] = RUBRIC_KINDS, usage: Usage | None = None
    ) -> None:
        self.kinds, self.usage = kinds, usage
        self.queues = {k: list(v) if isinstance(v, list) else [v] for k, v in replies.items()}
        self.requests: list[ChatRequest] = []
        self.lock = threading.Lock()
        self.spec = ModelSpec(FunctionProvider(self.reply, interface="openai_endpoint"), "j", "openai_endpoint")

    def reply(self, r: ChatRequest) -> str | ChatResponse:
        with self.lock:
            self.requests.append(r)
            kind = self.kinds.get(r.stage, r.stage)
            queue = self.queues.get(f"{kind}:{r.label}") or self.queues.get(kind) or ["{}"]
            content = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(content, dict):
            user = " ".join(m.content for m in r.messages if m.role == "user")
            content = next((v for m, v in content.items() if m and m in user), content.get(""))
        if self.usage is not None:
            return ChatResponse(text=str(content), usage=self.usage, model="j")
        return str(content)

    def stages(self) -> list[str]:
        return [r.stage for r in self.requests]


def exported_rows(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The run's results as the rows of its Karenina export (format 2.2)."""
    buf = io.StringIO()
    store.export_results(run_id, buf)
    rows: list[dict[str, Any]] = json.loads(buf.getvalue())["results"]
    return rows
