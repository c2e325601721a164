"""``openai:MODEL``: the OpenAI Chat Completions API through the official ``openai`` SDK.

Works with any OpenAI-compatible server (vLLM, Ollama, llama.cpp, OpenRouter ...) through
``--vibe-base-url`` (``BackendSettings.base_url``) or ``OPENAI_BASE_URL``; such a server may
run without a key (a placeholder is sent). Retries: the SDK's own (exponential backoff with
jitter, ``Retry-After`` honoured) on 408, 409, 429, 5xx, timeouts and connection errors,
``settings.max_retries`` times. The SDK is imported only when the backend is first used.

Parameters sent: ``model``, ``messages``, ``temperature``, the token limit, and
``request.extra`` in the JSON body. On the official endpoint the limit is sent as
``max_completion_tokens`` and, for reasoning models (``o1``, ``o3``, ``o4``, ``gpt-5``
families), which accept only their default temperature, the temperature is omitted; on other
servers ``max_tokens`` and the temperature are always sent. Options (``settings.options``):
``max_tokens_param`` (``"max_tokens"`` | ``"max_completion_tokens"``) and
``send_temperature`` (bool) override both choices.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.generate.backends._sdk import SDKBackend, api_params
from pytest_vibecheck.generate.backends.base import (
    Backend,
    BackendError,
    BackendSettings,
    Generation,
    GenerationRequest,
    redact_url,
)

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends.batch_api import BatchAPI

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_REASONING = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)


class OpenAIBackend(SDKBackend):
    """Chat Completions via ``openai.OpenAI``; see the module docstring."""

    provider = "openai"
    key_env_var = "OPENAI_API_KEY"
    base_url_env_var = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    sdk_module = "openai"
    client_class = "OpenAI"
    error_class = "OpenAIError"

    def request_params(self, request: GenerationRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        options = self.settings.options
        reasoning = not self.custom_server and bool(_REASONING.match(self.model))
        token_param = options.get("max_tokens_param") or (
            "max_tokens" if self.custom_server else "max_completion_tokens"
        )
        send_temperature = options.get("send_temperature", not reasoning)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            token_param: request.max_tokens,
        }
        if send_temperature:
            params["temperature"] = request.temperature
        body = api_params(request.extra)
        if body:
            params["extra_body"] = body
        return params

    def _create(self, client: Any, params: dict[str, Any]) -> Any:
        return client.chat.completions.create(**params)

    def _to_generation(self, resp: Any, latency_s: float) -> Generation:
        """The first choice as a :class:`Generation`. A reply without choices (an empty
        ``choices`` list: an overloaded or misbehaving server) is an infrastructure error
        (:class:`BackendError`), never a model reply with no code, so it is not cached."""
        if not getattr(resp, "choices", None):
            raise BackendError(
                f"{self.provider}:{self.model} at {redact_url(self.base_url)}: the server answered "
                "with an empty 'choices' list (no reply); not counted as a model failure, retry later",
                provider=self.provider,
                model=self.model,
                base_url=redact_url(self.base_url),
            )
        choice = resp.choices[0]
        text = choice.message.content or ""
        usage = getattr(resp, "usage", None)
        return Generation(
            text=text,
            usage={
                "input_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
                "output_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            },
            latency_s=latency_s,
            model=str(getattr(resp, "model", "") or self.model),
            cached=False,
            finish_reason=getattr(choice, "finish_reason", None),
        )

    def batch_api(self) -> BatchAPI:
        """OpenAI's batch API for this model
        (:mod:`pytest_vibecheck.generate.backends.openai_batch`)."""
        from pytest_vibecheck.generate.backends.openai_batch import OpenAIBatchAPI

        return OpenAIBatchAPI(self)


def from_spec(model: str, settings: BackendSettings) -> Backend:
    """Factory of ``openai:MODEL``."""
    return OpenAIBackend(model, settings)
