"""``anthropic:MODEL``: the Anthropic Messages API through the official ``anthropic`` SDK.

The system prompt goes in ``system=``; the other messages are sent as they are. The reply is
the concatenation of the text blocks (thinking blocks are skipped). Key from
``ANTHROPIC_API_KEY`` (or ``settings.api_key_env``); ``settings.base_url`` or
``ANTHROPIC_BASE_URL`` selects another server (then a missing key is allowed). Retries: the
SDK's own (backoff with jitter, ``Retry-After`` honoured) on 408, 409, 429, 5xx and
connection errors. The client gets an explicit timeout (``settings.timeout_s``), so large
``max_tokens`` values are accepted without streaming.

Temperature: Messages API version 2026-10-21 (the default of ``anthropic`` SDK 2.x, whose
``messages.create`` has no sampling arguments) answers HTTP 400 to ``temperature``, ``top_p``
and ``top_k``, whatever their value. The temperature is therefore not sent (it still counts in
the cache key as requested); ``settings.options["send_temperature"] = True`` sends it in the
request body for servers that accept it. ``top_p``/``top_k`` given in ``request.extra`` are
sent as given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_vibecheck.generate.backends._sdk import SDKBackend, api_params
from pytest_vibecheck.generate.backends.base import (
    Backend,
    BackendSettings,
    Generation,
    GenerationRequest,
)

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends.batch_api import BatchAPI

DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicBackend(SDKBackend):
    """Messages API via ``anthropic.Anthropic``; see the module docstring."""

    provider = "anthropic"
    key_env_var = "ANTHROPIC_API_KEY"
    base_url_env_var = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    sdk_module = "anthropic"
    client_class = "Anthropic"
    error_class = "AnthropicError"

    def request_params(self, request: GenerationRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.chat],
            "max_tokens": request.max_tokens,
        }
        if request.system is not None:
            params["system"] = request.system
        body = api_params(request.extra)
        if self.settings.options.get("send_temperature", False):
            body = {"temperature": request.temperature, **body}
        if body:
            params["extra_body"] = body
        return params

    def _create(self, client: Any, params: dict[str, Any]) -> Any:
        return client.messages.create(**params)

    def _to_generation(self, resp: Any, latency_s: float) -> Generation:
        text = "".join(
            getattr(block, "text", "") for block in (resp.content or []) if getattr(block, "type", "") == "text"
        )
        usage = getattr(resp, "usage", None)
        return Generation(
            text=text,
            usage={
                "input_tokens": int(getattr(usage, "input_tokens", 0) or 0),
                "output_tokens": int(getattr(usage, "output_tokens", 0) or 0),
            },
            latency_s=latency_s,
            model=str(getattr(resp, "model", "") or self.model),
            cached=False,
            finish_reason=getattr(resp, "stop_reason", None),
        )

    def batch_api(self) -> BatchAPI:
        """Anthropic's batch API for this model
        (:mod:`pytest_vibecheck.generate.backends.anthropic_batch`)."""
        from pytest_vibecheck.generate.backends.anthropic_batch import AnthropicBatchAPI

        return AnthropicBatchAPI(self)


def from_spec(model: str, settings: BackendSettings) -> Backend:
    """Factory of ``anthropic:MODEL``."""
    return AnthropicBackend(model, settings)
