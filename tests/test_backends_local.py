"""The backend registry, the ``reference`` backend and the scripted test model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from registry_helpers import make_acme_package

from pytest_vibecheck.compose.build import installed_registry
from pytest_vibecheck.errors import DataFileError, DuplicateIdError, ParameterError, UnknownIdError
from pytest_vibecheck.generate.backends import (
    Backend,
    BackendError,
    BackendSettings,
    Generation,
    GenerationRequest,
    RateLimitError,
    ReplayMissError,
    available_providers,
    make_backend,
    parse_spec,
    register_backend,
    unregister_backend,
)
from pytest_vibecheck.generate.backends.base import fence, redact_url
from pytest_vibecheck.generate.backends.scripted import (
    SCRIPT_ENV,
    ScriptedBackend,
    register_scripted,
    unregister_scripted,
)
from pytest_vibecheck.generate.generator import Generator
from pytest_vibecheck.registry import activate

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = "def task_func(n):\n    return n * (n + 1) // 2\n"


def ask(task_id: str = "T/1", label: str = "baseline", content: str = "Write it.", reference: str | None = SOLUTION) -> GenerationRequest:
    return GenerationRequest(({"role": "user", "content": content},), task_id=task_id, label=label, reference=reference)


# ---------------------------------------------------------------- registry


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai:gpt-5", ("openai", "gpt-5")),
        ("openai:qwen2.5-coder:7b", ("openai", "qwen2.5-coder:7b")),
        (" anthropic:claude-opus-5 ", ("anthropic", "claude-opus-5")),
        ("gpt-4.1-mini", ("openai", "gpt-4.1-mini")),
        ("o3-mini", ("openai", "o3-mini")),
        ("claude-sonnet-5-5", ("anthropic", "claude-sonnet-5-5")),
        ("reference", ("reference", "")),
        ("replay:qwen2.5-coder-7b-instruct", ("replay", "qwen2.5-coder-7b-instruct")),
    ],
)
def test_parse_spec(spec: str, expected: tuple[str, str]) -> None:
    assert parse_spec(spec) == expected


def test_bad_specs() -> None:
    with pytest.raises(UnknownIdError, match=r"unknown backend provider 'antropic'; did you mean 'anthropic'\?"):
        parse_spec("antropic:claude")
    with pytest.raises(UnknownIdError, match=r"unknown model spec \(write PROVIDER:MODEL; providers\) 'llama3'"):
        parse_spec("llama3")
    with pytest.raises(ParameterError, match="names no model; expected replay:MODEL"):
        parse_spec("replay:")
    with pytest.raises(ParameterError, match="model spec is empty"):
        parse_spec("  ")


class Echo(Backend):
    provider = "echo"

    def __init__(self, model: str, settings: BackendSettings) -> None:
        self.model = model
        self.settings = settings

    def generate(self, request: GenerationRequest) -> Generation:
        return Generation(text=request.messages[-1]["content"], model=self.model)


def test_register_backend() -> None:
    register_backend("echo", Echo)
    try:
        assert "echo" in available_providers()
        b = make_backend("echo:v1", BackendSettings(base_url="http://x"))
        assert isinstance(b, Echo) and b.settings.base_url == "http://x"
        assert b.generate(ask(content="hi")).text == "hi"
        assert b.cache_identity() == {"provider": "echo", "model": "v1", "base_url": None}
        with pytest.raises(DuplicateIdError, match="already registered"):
            register_backend("echo", Echo)
        with pytest.raises(DuplicateIdError):
            register_backend("openai", Echo)
        register_backend("echo", Echo, replace=True)
    finally:
        unregister_backend("echo")
    assert "echo" not in available_providers()


def test_entry_point_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a package with an entry point of the group pytest_vibecheck, installed on sys.path
    monkeypatch.syspath_prepend(str(make_acme_package(tmp_path)))
    monkeypatch.delitem(sys.modules, "acme_vibe", raising=False)
    with activate(installed_registry(refresh=True)):
        assert type(make_backend("acme:m")).__name__ == "AcmeBackend"


def test_redact_url() -> None:
    assert redact_url("https://u:p@host:8443/v1/?api-key=s&a=1&token=t") == "https://host:8443/v1?a=1"
    assert redact_url(None) is None


def test_request_validation() -> None:
    with pytest.raises(ParameterError, match="messages is empty"):
        GenerationRequest(())
    with pytest.raises(ParameterError, match="role 'robot'"):
        GenerationRequest(({"role": "robot", "content": "x"},))
    with pytest.raises(ParameterError, match="last message must be a user message"):
        GenerationRequest(({"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}))
    with pytest.raises(ParameterError, match="temperature must be a number >= 0"):
        GenerationRequest(({"role": "user", "content": "x"},), temperature=-0.1)
    with pytest.raises(ParameterError, match="max_tokens must be an int > 0"):
        GenerationRequest(({"role": "user", "content": "x"},), max_tokens=0)


def test_generation_to_dict() -> None:
    g = Generation("t", {"input_tokens": 1, "output_tokens": 2}, 0.5, "m", True, "length", "k" * 64)
    assert g.to_dict() == {
        "text": "t",
        "usage": {"input_tokens": 1, "output_tokens": 2},
        "latency_s": 0.5,
        "model": "m",
        "cached": True,
        "finish_reason": "length",
        "key": "k" * 64,
    }
    assert g.truncated


# ---------------------------------------------------------------- reference


def test_reference_backend_replies_with_the_fenced_solution() -> None:
    b = make_backend("reference")
    assert (b.spec, b.cacheable) == ("reference", False)
    g = Generator(b).generate(ask(label="multi-k3"))
    assert g.text == "```python\ndef task_func(n):\n    return n * (n + 1) // 2\n```"
    assert g.text == fence(SOLUTION)
    assert fence("x = 1") == "```python\nx = 1\n```"
    with pytest.raises(ReplayMissError, match="task 'LCB/9' \\(baseline\\) has no canonical solution"):
        b.generate(ask("LCB/9", reference=None))


# ---------------------------------------------------------------- scripted


def test_scripted_queue_respond_rules_default() -> None:
    bot = ScriptedBackend(
        "bot",
        replies=["first", RateLimitError("slow down")],
        rules=[
            {"task_id": "T/2*", "label": "single-*", "contains": "PEP 8", "reply": "pep8", "usage": {"input_tokens": 9, "output_tokens": 1}},
            {"task_id": "T/3", "error": "api"},
            {"task_id": "T/4", "error": "fatal"},
            {"label": "multi-*", "reply": "@reference"},
        ],
        default="fallback",
    )
    assert bot.generate(ask()).text == "first"
    with pytest.raises(RateLimitError, match="slow down"):
        bot.generate(ask())
    g = bot.generate(ask("T/21", "single-k2", "Follow PEP 8."))
    assert (g.text, g.input_tokens) == ("pep8", 9)
    assert bot.generate(ask("T/21", "single-k2", "no match")).text == "fallback"
    with pytest.raises(BackendError) as info:
        bot.generate(ask("T/3"))
    assert (info.value.status, info.value.fatal) == (500, False)
    with pytest.raises(BackendError) as info:
        bot.generate(ask("T/4"))
    assert (info.value.status, info.value.fatal) == (401, True)
    assert bot.generate(ask("T/5", "multi-k1")).text == fence(SOLUTION)
    assert len(bot.history) == 7
    bot.enqueue("later")
    assert bot.generate(ask()).text == "later"
    no_default = ScriptedBackend("empty")
    with pytest.raises(BackendError, match="no scripted reply for task 'T/1' \\(baseline\\)"):
        no_default.generate(ask())


def test_scripted_rule_validation() -> None:
    with pytest.raises(DataFileError, match="needs exactly one of 'reply' or 'error'"):
        ScriptedBackend("x", rules=[{"task_id": "a"}])
    with pytest.raises(DataFileError, match="unknown keys"):
        ScriptedBackend("x", rules=[{"reply": "a", "taskid": "b"}])


def test_registered_scripted_backend() -> None:
    bot = ScriptedBackend(default="hello")
    register_scripted("unit-bot", bot)
    try:
        assert make_backend("scripted:unit-bot") is bot
        assert bot.spec == "scripted:unit-bot"
    finally:
        unregister_scripted("unit-bot")
    with pytest.raises(UnknownIdError, match="unknown scripted test model"):
        make_backend("scripted:unit-bot", BackendSettings(env={}))


def test_scripted_from_env_file_in_a_subprocess(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"bot": {"rules": [{"label": "single-*", "reply": "single!"}], "default": "@reference", "log": str(log)}}),
        encoding="utf-8",
    )
    code = (
        "from pytest_vibecheck.generate.backends import make_backend, GenerationRequest\n"
        "b = make_backend('scripted:bot')\n"
        "r = lambda label: GenerationRequest(({'role': 'user', 'content': 'q'},), task_id='T/1', label=label, reference='x = 1')\n"
        "print(repr(b.generate(r('single-k1')).text), repr(b.generate(r('baseline')).text), b.cacheable)\n"
    )
    env = {**os.environ, SCRIPT_ENV: str(script), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "'single!' '```python\\nx = 1\\n```' True"
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(d["task_id"], d["label"]) for d in lines] == [("T/1", "single-k1"), ("T/1", "baseline")]
    assert lines[0]["messages"] == [{"role": "user", "content": "q"}]
    assert (lines[0]["temperature"], lines[0]["max_tokens"], lines[0]["sample"]) == (0.0, 4096, 0)


def test_scripted_env_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataFileError, match="cannot read the script named by \\$VIBECHECK_SCRIPTED"):
        make_backend("scripted:bot", BackendSettings(env={SCRIPT_ENV: str(bad)}))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"bot2": {"default": "x"}}), encoding="utf-8")
    with pytest.raises(UnknownIdError, match="did you mean 'bot2'"):
        make_backend("scripted:bot", BackendSettings(env={SCRIPT_ENV: str(other)}))


def test_requests_generations_and_errors_pickle() -> None:
    import pickle

    r = GenerationRequest(({"role": "user", "content": "x"},), extra={"top_p": 1.0}, task_id="T/1", label="baseline")
    assert pickle.loads(pickle.dumps(r)) == r
    g = Generation("t", {"input_tokens": 1, "output_tokens": 2}, 0.5, "m", False, "stop")
    assert pickle.loads(pickle.dumps(g)) == g
    e = pickle.loads(pickle.dumps(RateLimitError("429", provider="openai", status=429, task_id="T/1")))
    assert (type(e), e.status, e.task_id, str(e)) == (RateLimitError, 429, "T/1", "429")
