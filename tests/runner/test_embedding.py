"""Karenina's embedding check (EmbeddingCheck stage), run through a real run and compared with
Karenina's own pipeline.

Karenina embeds with a SentenceTransformer it loads locally (and ``sklearn`` for the cosine);
neither is installed in its environment and nothing is downloaded here. So in Karenina's run
those two modules are stand-ins that return the vectors the case gives (recording the texts
they were asked to embed), and everything else is Karenina's code: which results are checked,
the strings embedded, the threshold, the clamping, the equivalence question to its judge (a fake
OpenAI-compatible server), the override and the result fields. Our run gets the same vectors
from an embeddings provider and the same judge replies, and the fields are compared, texts
embedded included.
"""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest

from karenina_rdf import Benchmark, Store
from karenina_rdf._errors import ProviderError
from karenina_rdf.runner import (
    ChatRequest,
    EmbeddingCheckConfig,
    FunctionProvider,
    ModelSpec,
    RunOptions,
    Sandbox,
    run_verification,
)
from karenina_rdf.runner.providers import EmbeddingRequest
from tests.helpers.karenina_ref import FAKE_OPENAI_JUDGE, karenina

pytestmark = pytest.mark.slow  # template code in sandbox workers; Karenina in its own environment

QUESTION = "What is the capital of Atlantis?"
REFERENCE = "The capital is Zanzibar-City-77 (reference answer text, never for the judge)."
CAPITAL = """class Answer(BaseAnswer):
    capital: str = Field(description="The capital city named in the response")

    def ground_truth(self):
        self.correct = {"capital": "Zanzibar-City-77"}

    def verify(self) -> bool:
        return self.capital.strip().lower() == self.correct["capital"].lower()
"""
# The same, with a regex check on the raw answer: an embedding never overrides a failed regex.
CAPITAL_REGEX = CAPITAL.replace(
    '        self.correct = {"capital": "Zanzibar-City-77"}\n',
    '        self.correct = {"capital": "Zanzibar-City-77"}\n'
    '        self.regex = {"year": {"pattern": "[0-9]{4}", "expected": "1902", "match_type": "contains"}}\n',
)
PARSED_NEAR = json.dumps({"capital": "Zanzibar City 77"})
PARSED_RIGHT = json.dumps({"capital": "Zanzibar-City-77"})
CLOSE = [[1.0, 0.0], [0.9, 0.43589]]  # cosine 0.9
FAR = [[1.0, 0.0], [0.5, 0.866025]]  # cosine 0.5
OPPOSITE = [[1.0, 0.0], [-1.0, 0.0]]  # cosine -1, clamped to 0

# (id, template, answer, parse reply, settings, vectors or "fail", the judge's equivalence reply)
CASES: list[tuple[str, str, str, str, dict[str, Any], Any, str]] = [
    ("close, judge says yes", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {}, CLOSE, "YES"),
    ("close, judge says no", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {}, CLOSE, "NO, different"),
    ("close, yes in lower case", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {}, CLOSE, "  yes, the same"),
    ("below the threshold", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {}, FAR, "YES"),
    ("threshold lowered", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {"threshold": 0.45}, FAR, "YES"),
    ("opposite vectors, clamped", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {"threshold": 0.0}, OPPOSITE, "NO"),
    ("named model", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {"model": "text-embedding-3-small"}, CLOSE, "YES"),
    ("verification passed: not checked", CAPITAL, "Zanzibar-City-77.", PARSED_RIGHT, {}, CLOSE, "YES"),
    ("check off", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {"enabled": False}, CLOSE, "YES"),
    ("embedding fails", CAPITAL, "Zanzibar City 77.", PARSED_NEAR, {}, "fail", "YES"),
    ("regex fails too: no pass", CAPITAL_REGEX, "Zanzibar City 77, since 1850.", PARSED_NEAR, {}, CLOSE, "YES"),
    ("regex passes: override passes", CAPITAL_REGEX, "Zanzibar City 77, since 1902.", PARSED_NEAR, {}, CLOSE, "YES"),
]
IDS = [c[0] for c in CASES]
FIELDS = [
    "embedding_check_performed",
    "embedding_similarity_score",
    "embedding_override_applied",
    "embedding_model_used",
    "verify_result",
    "regex_overall_success",
    "parsed_gt_response",
    "parsed_llm_response",
]

KARENINA_RUN = (
    r"""
import json, sys, types
import numpy as np
cases = json.loads(sys.argv[1])
state = {"case": None, "embedded": [], "asked": []}

# Stand-ins for the local model Karenina would load and for sklearn's cosine (not installed).
class SentenceTransformer:
    def __init__(self, name):
        self.name = name
    def encode(self, texts):
        state["embedded"].append(list(texts))
        if state["case"]["vectors"] == "fail":
            raise OSError("no model here")
        return np.array(state["case"]["vectors"], dtype=float)

st = types.ModuleType("sentence_transformers")
st.SentenceTransformer = SentenceTransformer
sys.modules["sentence_transformers"] = st
def cosine_similarity(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return (a @ b.T) / (np.linalg.norm(a, axis=1)[:, None] * np.linalg.norm(b, axis=1)[None, :])
for name in ("sklearn", "sklearn.metrics", "sklearn.metrics.pairwise"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["sklearn.metrics.pairwise"].cosine_similarity = cosine_similarity

def reply(body):
    system = " ".join(m.get("content") or "" for m in body["messages"] if m["role"] == "system")
    if "semantic equivalence evaluator" in system:
        state["asked"].append([m["content"] for m in body["messages"] if m["role"] == "user"][0])
        content = state["case"]["equivalent"]
    else:
        content = state["case"]["parsed"]
    return content

"""
    + FAKE_OPENAI_JUDGE
    + r"""
from karenina.benchmark.verification.runner import run_single_model_verification
from karenina.benchmark.verification.utils import embedding_check as ec

out = []
for case in cases:
    state.update(case=case, embedded=[], asked=[])
    ec.clear_embedding_model_cache()
    kw = {f"embedding_check_{k}": v for k, v in case["settings"].items()}
    kw.setdefault("embedding_check_enabled", True)
    r = run_single_model_verification(
        "q", case["question"], case["template"], model("a"), model("j"), evaluation_mode="template_only",
        raw_answer=case["reference"], cached_answer_data={"raw_llm_response": case["answer"], "usage_metadata": {}},
        **kw)
    out.append({"result": r.model_dump(mode="json"), "embedded": state["embedded"], "asked": state["asked"]})
print(json.dumps(out))
"""
)


@pytest.fixture(scope="module")
def theirs() -> dict[str, dict[str, Any]]:
    cases = [
        {
            "question": QUESTION,
            "template": template,
            "reference": REFERENCE,
            "answer": answer,
            "parsed": parsed,
            "settings": settings,
            "vectors": vectors,
            "equivalent": equivalent,
        }
        for _, template, answer, parsed, settings, vectors, equivalent in CASES
    ]
    return dict(zip(IDS, karenina(KARENINA_RUN, json.dumps(cases), timeout=600), strict=True))


class Recorded:
    """A judge (chat by stage) that also embeds, every request kept."""

    def __init__(self, parsed: str, vectors: Any, equivalent: str) -> None:
        self.chats: list[ChatRequest] = []
        self.embeds: list[EmbeddingRequest] = []
        self.lock = threading.Lock()

        def chat(r: ChatRequest) -> str:
            with self.lock:
                self.chats.append(r)
            return equivalent if r.stage == "embedding_check" else parsed

        def embed(r: EmbeddingRequest) -> list[list[float]]:
            with self.lock:
                self.embeds.append(r)
            if vectors == "fail":
                raise ProviderError("embeddings endpoint down", category="server_error")
            return [list(v) for v in vectors]

        self.provider = FunctionProvider(chat, interface="openai_endpoint", embed_fn=embed)
        self.spec = ModelSpec(self.provider, "j", "openai_endpoint")


def run_ours(
    sandbox: Sandbox, template: str, answer: str, judge: Recorded, settings: dict[str, Any]
) -> tuple[dict[str, Any], Any]:
    store = Store.memory()
    b = Benchmark.create("embedding", store=store)
    b.add_question(QUESTION, REFERENCE, template, question_id="q", finished=True)
    answerer = ModelSpec(FunctionProvider(lambda r: answer, interface="openai_endpoint"), "a", "openai_endpoint")
    opts = RunOptions(embedding_check=EmbeddingCheckConfig(**{"enabled": True, **settings}))
    report = run_verification(store, b.id, judges=[judge.spec], answerers=[answerer], sandbox=sandbox, options=opts)
    buf = io.StringIO()
    store.export_results(report.run_id, buf)
    (row,) = json.loads(buf.getvalue())["results"]
    return row, report


@pytest.mark.parametrize(("case", "template", "answer", "parsed", "settings", "vectors", "equivalent"), CASES, ids=IDS)
def test_embedding_check_decides_as_karenina(
    sandbox: Sandbox,
    theirs: dict[str, dict[str, Any]],
    case: str,
    template: str,
    answer: str,
    parsed: str,
    settings: dict[str, Any],
    vectors: Any,
    equivalent: str,
) -> None:
    judge = Recorded(parsed, vectors, equivalent)
    ours, _ = run_ours(sandbox, template, answer, judge, settings)
    ref = theirs[case]
    for f in FIELDS:
        mine, karenina_value = ours["template"].get(f), ref["result"]["template"].get(f)
        if isinstance(mine, float) and isinstance(karenina_value, float):
            assert mine == pytest.approx(karenina_value, abs=1e-9), f
        else:
            assert mine == karenina_value, f
    # The same texts embedded (sorted-key JSON of the parsed ground truth, then the parsed fields).
    assert [list(r.texts) for r in judge.embeds] == ref["embedded"]
    # The judge asked about equivalence exactly when Karenina's was.
    asked = [r for r in judge.chats if r.stage == "embedding_check"]
    assert len(asked) == len(ref["asked"])
    mine_failure, karenina_failure = ours["metadata"]["failure"], ref["result"]["metadata"]["failure"]
    assert (mine_failure and mine_failure["category"]) == (karenina_failure and karenina_failure["category"])
    # Ours records the equivalence call's tokens (they were spent); Karenina's check does not.
    usage = set(ours["template"]["usage_metadata"] or {}) - {"embedding_check", "answer_generation"}
    assert usage == set(ref["result"]["template"]["usage_metadata"] or {})
    assert ("embedding_check" in (ours["template"]["usage_metadata"] or {})) is bool(asked)
    # Nothing the embedder or the judge sees holds the question's reference answer.
    seen = [t for r in judge.embeds for t in r.texts] + [m.content for r in judge.chats for m in r.messages]
    assert not any(REFERENCE in text or "reference answer text" in text for text in seen)
    if asked:  # the equivalence question holds the question and both parsed answers
        text = asked[0].messages[-1].content
        assert QUESTION in text and ref["embedded"][0][0] in text and ref["embedded"][0][1] in text


def test_an_embedding_check_without_an_embeddings_endpoint_is_refused(sandbox: Sandbox) -> None:
    from karenina_rdf._errors import VerificationError

    store = Store.memory()
    b = Benchmark.create("embedding", store=store)
    b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q", finished=True)
    judge = ModelSpec(FunctionProvider(lambda r: PARSED_NEAR, interface="anthropic"), "j", "claude_tool")
    opts = RunOptions(embedding_check=EmbeddingCheckConfig(enabled=True))
    with pytest.raises(VerificationError, match="needs an embeddings endpoint"):
        run_verification(store, b.id, judges=[judge], answerers=[judge], sandbox=sandbox, options=opts)
    assert not store.catalog.runs()  # refused before a run was written


def test_a_failed_equivalence_call_keeps_the_score_and_does_not_override(sandbox: Sandbox) -> None:
    """Karenina: a failing equivalence check records the similarity and model, no override (its
    fake judge cannot fail a call, so this is against its code: perform_embedding_check)."""

    def chat(r: ChatRequest) -> str:
        if r.stage == "embedding_check":
            raise ProviderError("judge down", category="unexpected_error")
        return PARSED_NEAR

    provider = FunctionProvider(chat, interface="openai_endpoint", embed_fn=lambda r: CLOSE)
    judge = Recorded(PARSED_NEAR, CLOSE, "YES")
    judge.spec = ModelSpec(provider, "j", "openai_endpoint")
    ours, _ = run_ours(sandbox, CAPITAL, "Zanzibar City 77.", judge, {})
    t = ours["template"]
    assert (t["embedding_check_performed"], t["embedding_override_applied"], t["verify_result"]) == (True, False, False)
    assert t["embedding_similarity_score"] == pytest.approx(0.9, abs=1e-4)
    assert t["embedding_model_used"] == "all-MiniLM-L6-v2"
    assert ours["metadata"]["failure"]["category"] == "content"


def test_embedding_results_map_validate_export_and_load_in_karenina(sandbox: Sandbox) -> None:
    """Three results (overridden, below the threshold, embeddings call failed): the stored run
    meets the shapes, its format-2.2 export loads in Karenina as the same VerificationResults,
    and each result page shows the check."""
    import re

    from fastapi.testclient import TestClient

    from karenina_rdf import create_app, validate_store
    from tests.runner.test_stages import KARENINA_LOAD

    store = Store.memory()
    b = Benchmark.create("embedding pages", store=store)
    answers = {"q-close": "Zanzibar City 77.", "q-far": "Zanzibar City 78.", "q-down": "Zanzibar City 79."}
    for qid in answers:
        b.add_question(f"{QUESTION} ({qid})", REFERENCE, CAPITAL, question_id=qid, finished=True)

    def embed(r: EmbeddingRequest) -> list[list[float]]:
        if "79" in r.texts[1]:
            raise ProviderError("embeddings endpoint down", category="unexpected_error")
        return CLOSE if "77" in r.texts[1] else FAR

    def chat(r: ChatRequest) -> str:
        if r.stage == "embedding_check":
            return "YES"
        return json.dumps({"capital": next(a for a in answers.values() if a in r.messages[-1].content)[:-1]})

    judge = ModelSpec(FunctionProvider(chat, interface="openai_endpoint", embed_fn=embed), "j", "openai_endpoint")
    answerer = ModelSpec(
        FunctionProvider(lambda r: next(a for q, a in answers.items() if q in r.messages[-1].content)),
        "a",
        "openai_endpoint",
    )
    opts = RunOptions(embedding_check=EmbeddingCheckConfig(enabled=True))
    report = run_verification(store, b.id, judges=[judge], answerers=[answerer], sandbox=sandbox, options=opts)
    assert (report.passed, report.failed) == (1, 2)
    problems = [f for r in validate_store(store) if r.run for f in r.findings if f.severity == "Violation"]
    assert problems == []
    buf = io.StringIO()
    store.export_results(report.run_id, buf)
    exported = json.loads(buf.getvalue())
    assert exported["format_version"] == "2.2"
    rows = exported["results"]
    assert karenina(KARENINA_LOAD, json.dumps(rows)) == rows
    by_id = {r["metadata"]["question_id"]: r["template"] for r in rows}
    assert by_id["q-close"]["embedding_override_applied"] is True and by_id["q-close"]["verify_result"] is True
    assert by_id["q-far"]["embedding_similarity_score"] == pytest.approx(0.5, abs=1e-4)
    assert by_id["q-down"]["embedding_check_performed"] is True and by_id["q-down"]["embedding_model_used"] is None

    client = TestClient(create_app(store))
    run_page = client.get(f"/runs/{report.run_id}", headers={"accept": "text/html"}).text
    links = sorted(set(re.findall(r'href="(/runs/[^"]+/results/[^"]+)"', run_page)))
    pages = [client.get(link, headers={"accept": "text/html"}).text for link in links]
    assert len(pages) == 3
    close = next(p for p in pages if 'data-verdict="equivalent"' in p)
    assert "similarity 0.900 (all-MiniLM-L6-v2)" in close
    far = next(p for p in pages if 'data-verdict="not-equivalent"' in p)
    assert "similarity 0.500" in far
    assert any('data-verdict="embedding-failed"' in p for p in pages)


def _endpoint_model(url: str) -> dict[str, Any]:
    return {
        "id": "fake",
        "model_name": "fake-model",
        "model_provider": "openai",
        "interface": "openai_endpoint",
        "endpoint_base_url": url,
        "endpoint_api_key": "sk-test",
        "temperature": 0.0,
    }


def test_run_verification_maps_karenina_s_embedding_settings(sandbox: Sandbox) -> None:
    """Benchmark.run_verification with Karenina's embedding_check_* over an OpenAI-compatible
    server: its /embeddings serves the check, named by embedding_check_model."""
    from tests.helpers.fake_llm_server import FakeLLM

    with FakeLLM() as llm, Store.memory() as store:
        llm.answers[QUESTION] = "Zanzibar City 77"
        b = Benchmark.create("mapped", store=store)
        b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q", finished=True)
        model = _endpoint_model(llm.base_url)
        config = {
            "answering_models": [model],
            "parsing_models": [model],
            "embedding_check_enabled": True,
            "embedding_check_model": "emb-x",
            "embedding_check_threshold": 0.0,
        }
        (row,) = b.run_verification(config, sandbox=sandbox).results
        t = row["template"]
        assert (t["embedding_check_performed"], t["embedding_model_used"]) == (True, "emb-x")
        assert t["embedding_override_applied"] is True and t["verify_result"] is True
        (embed,) = llm.requests("embeddings")
        assert embed["model"] == "emb-x"
        assert embed["input"] == ['{"capital": "Zanzibar-City-77"}', '{"capital": "Zanzibar City 77"}']
        assert len(llm.requests("equivalence")) == 1


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"embedding_check_enabled": True, "embedding_check_threshold": 1.5}, r"embedding_check_\*: threshold"),
        ({"embedding_check_enabled": True, "embedding_check_threshold": -0.1}, r"embedding_check_\*: threshold"),
    ],
)
def test_bad_embedding_settings_are_named(settings: dict[str, Any], message: str) -> None:
    from karenina_rdf._errors import InvalidValueError

    with Store.memory() as store:
        b = Benchmark.create("bad", store=store)
        b.add_question(QUESTION, REFERENCE, CAPITAL, question_id="q", finished=True)
        model = _endpoint_model("http://127.0.0.1:9/v1")
        with pytest.raises(InvalidValueError, match=message):
            b.run_verification({"answering_models": [model], "parsing_models": [model], **settings})


def test_the_openai_compatible_embeddings_call() -> None:
    """The provider's ``/embeddings`` call: vectors in the texts' order, usage, and a server
    without the endpoint as a one-line, non-retried failure."""
    from karenina_rdf.runner.providers._openai import OpenAICompatibleProvider
    from tests.helpers.fake_llm_server import PROMPT_TOKENS, FakeLLM

    with FakeLLM() as llm, OpenAICompatibleProvider(llm.base_url, api_key="sk-secret") as p:
        llm.vectors = {"b": [0.0, 1.0]}
        got = p.embed(EmbeddingRequest(model="m", texts=("ab", "b")))
        assert got.vectors[1] == (0.0, 1.0) and sum(got.vectors[0]) == 2.0
        assert (got.model, got.usage.input_tokens) == ("m", PROMPT_TOKENS)
        wrong = OpenAICompatibleProvider(llm.base_url + "/nowhere", api_key="sk-secret")
        with wrong, pytest.raises(ProviderError) as err:
            wrong.embed(EmbeddingRequest(model="m", texts=("a",), label="q1"))
        assert err.value.category == "unexpected_error" and not err.value.retryable
        assert "HTTP 404" in str(err.value) and "sk-secret" not in str(err.value) and "\n" not in str(err.value)
