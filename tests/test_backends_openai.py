"""The ``openai:`` backend end to end over real HTTP against a local OpenAI-compatible server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from generation_helpers import FakeAPI, Response, fake_api
from generation_helpers import completion as chat_completion

from pytest_vibecheck.generate.backends import (
    BackendError,
    BackendSettings,
    GenerationRequest,
    MissingKeyError,
    MissingSDKError,
    RateLimitError,
    make_backend,
)
from pytest_vibecheck.generate.backends.openai_backend import OpenAIBackend
from pytest_vibecheck.generate.cache import GenerationCache
from pytest_vibecheck.generate.generator import Generator

pytest.importorskip("openai")

MESSAGES = (
    {"role": "system", "content": "You are an expert code-generation assistant."},
    {"role": "user", "content": "Write task_func returning 1."},
)
REPLY = "Here it is:\n```python\ndef task_func():\n    return 1\n```\n"


def completion(text: str = REPLY, finish: str = "stop", model: str = "qwen2.5-coder-7b") -> dict[str, Any]:
    return chat_completion(text, finish, model)


RATE_LIMITED = Response(
    429,
    {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}},
    {"retry-after": "0.01"},
)


@pytest.fixture
def api() -> Any:
    with fake_api() as server:
        yield server


def backend(api: FakeAPI, env: dict[str, str] | None = None, **kw: Any) -> OpenAIBackend:
    settings = BackendSettings(base_url=api.url + "/v1", env=env or {}, timeout_s=kw.pop("timeout_s", 10.0), **kw)
    b = make_backend("openai:qwen2.5-coder-7b", settings)
    assert isinstance(b, OpenAIBackend)
    return b


def request(**kw: Any) -> GenerationRequest:
    return GenerationRequest(MESSAGES, temperature=0.0, max_tokens=256, task_id="BigCodeBench/1", label="baseline", **kw)


def test_chat_completion_round_trip(api: FakeAPI) -> None:
    api.push(Response(200, completion()))
    b = backend(api)
    b.preflight()  # a custom server needs no key
    g = b.generate(request(extra={"top_p": 0.9, "seed": 7}))
    assert g.text == REPLY
    assert dict(g.usage) == {"input_tokens": 42, "output_tokens": 17}
    assert (g.model, g.finish_reason, g.cached) == ("qwen2.5-coder-7b", "stop", False)
    assert g.latency_s > 0
    (rec,) = api.requests
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == "Bearer sk-no-key"
    assert rec.body == {
        "model": "qwen2.5-coder-7b",
        "messages": list(MESSAGES),
        "max_tokens": 256,
        "temperature": 0.0,
        "top_p": 0.9,
        "seed": 7,
    }


def test_429_then_success_retries_once(api: FakeAPI) -> None:
    api.push(RATE_LIMITED, Response(200, completion()))
    g = backend(api).generate(request())
    assert g.text == REPLY
    assert len(api.requests) == 2
    assert api.requests[0].body == api.requests[1].body
    assert api.requests[1].headers["x-stainless-retry-count"] == "1"


def test_5xx_then_success(api: FakeAPI) -> None:
    api.push(Response(503, {"error": {"message": "overloaded"}}, {"retry-after": "0.01"}), Response(200, completion()))
    assert backend(api).generate(request()).text == REPLY
    assert len(api.requests) == 2


def test_persistent_429_is_a_rate_limit_error(api: FakeAPI) -> None:
    api.default = RATE_LIMITED
    with pytest.raises(RateLimitError) as info:
        backend(api, max_retries=2).generate(request())
    assert len(api.requests) == 3
    err = info.value
    assert (err.status, err.provider, err.model, err.fatal) == (429, "openai", "qwen2.5-coder-7b", False)
    assert "rate limited (HTTP 429) after 3 attempts" in str(err)


def test_401_is_fatal_and_not_retried(api: FakeAPI) -> None:
    api.push(Response(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}))
    with pytest.raises(BackendError) as info:
        backend(api, env={"OPENAI_API_KEY": "sk-wrong"}).generate(request())
    assert len(api.requests) == 1
    assert api.requests[0].headers["authorization"] == "Bearer sk-wrong"
    assert (info.value.status, info.value.fatal) == (401, True)
    assert f"openai:qwen2.5-coder-7b at {api.url}/v1: HTTP 401: Incorrect API key provided; check the API key variable" in str(info.value)
    assert "sk-wrong" not in str(info.value)


def test_404_is_fatal_and_one_line_naming_model_url_status_and_what_to_do(api: FakeAPI) -> None:
    api.default = Response(404, {"error": {"message": "The model `nope` does not exist", "code": "model_not_found"}})
    settings = BackendSettings(base_url=f"http://user:secret@127.0.0.1:{api.port}/v1?api-key=k", env={})
    with pytest.raises(BackendError) as info:
        make_backend("openai:nope", settings).generate(request())
    assert len(api.requests) == 1  # not retried
    assert (info.value.status, info.value.fatal) == (404, True)
    assert str(info.value) == (
        f"openai:nope at {api.url}/v1: HTTP 404: The model `nope` does not exist; check the model "
        "name (--vibe-model) and the base URL (--vibe-base-url)"
    )


def test_unknown_model_as_400_is_fatal(api: FakeAPI) -> None:
    api.default = Response(400, {"error": {"message": "no such model", "code": "model_not_found"}})
    with pytest.raises(BackendError) as info:
        backend(api).generate(request())
    assert (info.value.status, info.value.fatal) == (400, True)


def test_refused_connection_is_fatal_and_names_the_url() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    settings = BackendSettings(base_url=f"http://127.0.0.1:{port}/v1", env={}, max_retries=1, timeout_s=5.0)
    with pytest.raises(BackendError) as info:
        make_backend("openai:m", settings).generate(request())
    assert info.value.fatal is True
    assert str(info.value) == (
        f"openai:m at http://127.0.0.1:{port}/v1: cannot connect after 2 attempts (connection refused "
        "or host not found): check --vibe-base-url and that the server is running"
    )


def test_empty_choices_is_an_infrastructure_error_and_never_cached(api: FakeAPI, tmp_path: Path) -> None:
    empty = completion()
    empty["choices"] = []
    api.push(Response(200, empty), Response(200, completion()))
    gen = Generator(backend(api), cache=GenerationCache(tmp_path / "c.sqlite"), mode="use")
    with pytest.raises(BackendError, match="empty 'choices' list") as info:
        gen.generate(request())
    assert info.value.fatal is False
    assert len(gen.cache or []) == 0  # nothing cached: the server recovers on the next run
    assert gen.generate(request()).text == REPLY  # the recovered server's reply
    assert len(api.requests) == 2


def test_timeout_is_a_backend_error(api: FakeAPI) -> None:
    api.push(Response(200, completion(), delay_s=1.0))
    with pytest.raises(BackendError) as info:
        backend(api, max_retries=0, timeout_s=0.2).generate(request())
    assert not isinstance(info.value, RateLimitError)
    # the timeout and the setting that raises it are named (a hung server gets a remedy)
    assert str(info.value).endswith(
        ": request timed out after 1 attempts of 0.2 s each: raise the request timeout "
        "(--vibe-request-timeout SECONDS, or request_timeout in [tool.vibecheck]) for a slow "
        "server, or check that the server answers"
    )


def test_key_from_named_variable_and_secrets_not_sent(api: FakeAPI) -> None:
    api.push(Response(200, completion()))
    b = backend(api, env={"MY_KEY": "sk-mine"}, api_key_env="MY_KEY")
    b.generate(request(extra={"api_key": "sk-leak", "timeout": 5, "top_p": 1.0}))
    (rec,) = api.requests
    assert rec.headers["authorization"] == "Bearer sk-mine"
    assert rec.body["top_p"] == 1.0
    assert "api_key" not in rec.body and "timeout" not in rec.body


def test_missing_key_on_official_endpoint() -> None:
    b = make_backend("openai:gpt-5", BackendSettings(env={}))
    assert b.base_url == "https://api.openai.com/v1"
    with pytest.raises(MissingKeyError, match=r"export OPENAI_API_KEY=\.\.\. \(or name another variable with --vibe-api-key-env\)"):
        b.preflight()
    named = make_backend("openai:gpt-5", BackendSettings(env={}, api_key_env="TEAM_KEY"))
    with pytest.raises(MissingKeyError, match=r"export TEAM_KEY=\.\.\."):
        named.preflight()


def test_official_endpoint_parameters() -> None:
    env = {"OPENAI_API_KEY": "sk-x"}
    reasoning = OpenAIBackend("gpt-5", BackendSettings(env=env)).request_params(request())
    assert "temperature" not in reasoning and reasoning["max_completion_tokens"] == 256
    chat = OpenAIBackend("gpt-4.1", BackendSettings(env=env)).request_params(request())
    assert chat["temperature"] == 0.0 and chat["max_completion_tokens"] == 256 and "max_tokens" not in chat
    forced = OpenAIBackend(
        "gpt-5", BackendSettings(env=env, options={"send_temperature": True, "max_tokens_param": "max_tokens"})
    ).request_params(request())
    assert forced["temperature"] == 0.0 and forced["max_tokens"] == 256


def test_base_url_from_environment() -> None:
    b = make_backend("openai:m", BackendSettings(env={"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1/"}))
    assert b.base_url == "http://127.0.0.1:11434/v1"
    assert b.cache_identity() == {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:11434/v1"}


def test_missing_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    b = make_backend("openai:m", BackendSettings(base_url="http://127.0.0.1:1/v1", env={}))
    with pytest.raises(MissingSDKError, match=r"pip install 'pytest-vibecheck\[openai\]'"):
        b.preflight()


def test_through_the_generator_and_cache(api: FakeAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-PLANTED-REAL-ENV-KEY")
    api.push(RATE_LIMITED, Response(200, completion()))
    settings = BackendSettings(base_url=api.url + "/v1", timeout_s=10.0)
    path = tmp_path / "cache.sqlite"
    gen = Generator(make_backend("openai:qwen2.5-coder-7b", settings), GenerationCache(path), "use")
    first = gen.generate(request())
    second = gen.generate(request())
    assert (first.cached, second.cached, second.text) == (False, True, REPLY)
    assert len(api.requests) == 2  # the 429 and the success; the second call was a cache hit
    assert api.requests[1].headers["authorization"] == "Bearer sk-PLANTED-REAL-ENV-KEY"
    assert (gen.stats.generated, gen.stats.hits, gen.stats.input_tokens, gen.stats.cached_output_tokens) == (1, 1, 42, 17)
    gen.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert REPLY.encode() in blob
    assert b"PLANTED" not in blob


def test_401_without_a_key_says_none_was_set(api: FakeAPI) -> None:
    api.push(Response(401, {"error": {"message": "Missing API key", "code": "invalid_api_key"}}))
    with pytest.raises(BackendError) as info:
        backend(api, env={}).generate(request())
    assert str(info.value) == (
        f"openai:qwen2.5-coder-7b at {api.url}/v1: HTTP 401: Missing API key; no API key was set: "
        "OPENAI_API_KEY is empty, so a placeholder was sent; export OPENAI_API_KEY=... (or name "
        "another variable with --vibe-api-key-env)"
    )
