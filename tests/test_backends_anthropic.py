"""The ``anthropic:`` backend against Messages API responses replayed by a local HTTP server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from generation_helpers import FakeAPI, Response, fake_api

from pytest_vibecheck.generate.backends import (
    BackendError,
    BackendSettings,
    GenerationRequest,
    MissingKeyError,
    MissingSDKError,
    RateLimitError,
    make_backend,
)
from pytest_vibecheck.generate.backends.anthropic_backend import AnthropicBackend
from pytest_vibecheck.generate.cache import GenerationCache
from pytest_vibecheck.generate.generator import Generator

pytest.importorskip("anthropic")

RECORDED: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "anthropic" / "messages_api_responses.json").read_text(encoding="utf-8")
)
SYSTEM = "You are an expert code-generation assistant."
MESSAGES = (
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Write task_func(n) returning 1 + ... + n."},
    {"role": "assistant", "content": "```python\ndef task_func(n):\n    return sum(range(n + 1))\n```"},
    {"role": "user", "content": "Each function has at most 2 branches."},
)
RATE_LIMITED = Response(429, RECORDED["rate_limit_error"], {"retry-after": "0.01"})


@pytest.fixture
def api() -> Any:
    with fake_api() as server:
        yield server


def backend(api: FakeAPI, env: dict[str, str] | None = None, **kw: Any) -> AnthropicBackend:
    b = make_backend(
        "anthropic:claude-sonnet-5-5",
        BackendSettings(base_url=api.url, env=env if env is not None else {"ANTHROPIC_API_KEY": "sk-ant-test"}, timeout_s=10.0, **kw),
    )
    assert isinstance(b, AnthropicBackend)
    return b


def request(**kw: Any) -> GenerationRequest:
    return GenerationRequest(MESSAGES, temperature=0.0, max_tokens=300, task_id="BigCodeBench/1", label="multi-k1", **kw)


def test_messages_round_trip_with_system_parameter(api: FakeAPI) -> None:
    api.push(Response(200, RECORDED["message_code"]))
    g = backend(api).generate(request(extra={"top_k": 5}))
    assert g.text == RECORDED["message_code"]["content"][0]["text"]
    assert dict(g.usage) == {"input_tokens": 118, "output_tokens": 41}
    assert (g.model, g.finish_reason, g.truncated) == ("claude-sonnet-5-5", "end_turn", False)
    (rec,) = api.requests
    assert rec.path == "/v1/messages"
    assert rec.headers["authorization"] == "Bearer sk-ant-test"
    assert rec.headers["anthropic-version"] == "2026-10-21"
    # API version 2026-10-21 rejects sampling parameters: no temperature unless asked for
    assert rec.body == {
        "model": "claude-sonnet-5-5",
        "system": SYSTEM,
        "messages": list(MESSAGES[1:]),
        "max_tokens": 300,
        "top_k": 5,
    }


def test_temperature_sent_only_when_asked(api: FakeAPI) -> None:
    api.push(Response(200, RECORDED["message_code"]))
    backend(api, options={"send_temperature": True}).generate(request())
    assert api.requests[0].body["temperature"] == 0.0


def test_thinking_blocks_are_skipped(api: FakeAPI) -> None:
    api.push(Response(200, RECORDED["message_thinking"]))
    g = backend(api).generate(request())
    assert g.text == "```python\ndef task_func(n):\n    return n * (n + 1) // 2\n```"
    assert g.output_tokens == 77


def test_max_tokens_stop_reason(api: FakeAPI) -> None:
    api.push(Response(200, RECORDED["message_max_tokens"]))
    g = backend(api).generate(request())
    assert (g.finish_reason, g.truncated) == ("max_tokens", True)


def test_429_then_success_retries_once(api: FakeAPI) -> None:
    api.push(RATE_LIMITED, Response(200, RECORDED["message_code"]))
    g = backend(api).generate(request())
    assert g.output_tokens == 41
    assert len(api.requests) == 2
    assert api.requests[0].body == api.requests[1].body


def test_529_overloaded_then_success(api: FakeAPI) -> None:
    api.push(Response(529, RECORDED["overloaded_error"], {"retry-after": "0.01"}), Response(200, RECORDED["message_code"]))
    assert backend(api).generate(request()).input_tokens == 118
    assert len(api.requests) == 2


def test_persistent_429_is_a_rate_limit_error(api: FakeAPI) -> None:
    api.default = RATE_LIMITED
    with pytest.raises(RateLimitError) as info:
        backend(api, max_retries=1).generate(request())
    assert len(api.requests) == 2
    assert f"anthropic:claude-sonnet-5-5 at {api.url}: rate limited (HTTP 429) after 2 attempts: This request would exceed" in str(info.value)
    assert "exceed the rate limit" in str(info.value)


def test_401_is_fatal(api: FakeAPI) -> None:
    api.push(Response(401, RECORDED["authentication_error"]))
    with pytest.raises(BackendError) as info:
        backend(api).generate(request())
    assert (info.value.status, info.value.fatal, len(api.requests)) == (401, True, 1)
    assert "sk-ant-test" not in str(info.value)


def test_custom_server_without_key_sends_placeholder(api: FakeAPI) -> None:
    api.push(Response(200, RECORDED["message_code"]))
    b = backend(api, env={})
    b.preflight()
    b.generate(request())
    assert api.requests[0].headers["authorization"] == "Bearer sk-no-key"


def test_missing_key_and_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    b = make_backend("claude-opus-5", BackendSettings(env={}))
    assert (b.provider, b.model, b.base_url) == ("anthropic", "claude-opus-5", "https://api.anthropic.com")
    with pytest.raises(MissingKeyError, match=r"export ANTHROPIC_API_KEY=\.\.\."):
        b.preflight()
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingSDKError, match=r"pytest-vibecheck\[anthropic\]"):
        b.preflight()


def test_through_generator_no_key_in_cache(api: FakeAPI, tmp_path: Path) -> None:
    api.push(RATE_LIMITED, Response(200, RECORDED["message_code"]))
    b = backend(api, env={"ANTHROPIC_API_KEY": "sk-ant-PLANTED-KEY"})
    gen = Generator(b, GenerationCache(tmp_path / "c.sqlite"), "use")
    assert gen.generate(request()).cached is False
    assert gen.generate(request()).cached is True
    assert len(api.requests) == 2
    gen.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"Gauss" in blob and b"PLANTED" not in blob
