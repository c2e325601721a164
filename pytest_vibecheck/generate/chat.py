"""One question to a model backend outside a benchmark run: what an LLM selector asks
(:class:`pytest_vibecheck.suites.selectors.llm.LLMSelector` takes a :class:`ChatModel` as its
:class:`~pytest_vibecheck.suites.selectors.llm.SelectorModel`; the built-ins build it,
:mod:`pytest_vibecheck.compose.builtins`).

The request goes through the generation layer as any generation does: the backend's key lookup
(``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` from the environment, a placeholder on a custom
``*_BASE_URL`` server), the SDK's retries, the adaptive concurrency limit of
:class:`~pytest_vibecheck.generate.generator.Generator`, its preflight, and the error classes
(:class:`~pytest_vibecheck.generate.backends.base.BackendError`,
:class:`~pytest_vibecheck.generate.backends.base.MissingKeyError` ...). The key of a request is
the generation cache's (:func:`pytest_vibecheck.generate.cache.cache_key`: backend identity,
messages, sampling settings; never the API key).
"""

from __future__ import annotations

import threading

from pytest_vibecheck.generate.backends.base import Backend, GenerationRequest
from pytest_vibecheck.generate.cache import cache_key
from pytest_vibecheck.generate.generator import Generator

__all__ = ["ChatModel"]


class ChatModel:
    """A system prompt and one user prompt to ``backend``, answered with the reply's text.

    ``temperature`` >= 0 (default 0, greedy; the backend decides whether the API takes one);
    ``max_tokens`` > 0: output tokens of the reply; ``label``: the requests' label (metadata,
    never sent). ``name`` is the backend's spec (``openai:gpt-4o``).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        temperature: float = 0.0,
        max_tokens: int = 4096,
        label: str = "selector",
    ) -> None:
        self.backend = backend
        self.name = backend.spec
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.label = label
        self._generator: Generator | None = None
        self._lock = threading.Lock()

    def request(self, task_id: str, system: str, prompt: str) -> GenerationRequest:
        """The backend request: the system prompt, then ``prompt``. Raises
        :class:`~pytest_vibecheck.errors.ParameterError` for an invalid ``temperature`` or
        ``max_tokens``."""
        return GenerationRequest(
            ({"role": "system", "content": system}, {"role": "user", "content": prompt}),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            task_id=task_id,
            label=self.label,
        )

    def key(self, task_id: str, system: str, prompt: str) -> str:
        """The generation cache's key of the request (no secret in it)."""
        return cache_key(self.backend.cache_identity(), self.request(task_id, system, prompt))

    def _generator_for_calls(self) -> Generator:
        """The generator (built on the first call: its preflight checks the key and the SDK,
        which a caller answered from its own cache needs neither of)."""
        with self._lock:
            if self._generator is None:
                self._generator = Generator(self.backend, cache=None, mode="off")
            return self._generator

    def complete(self, task_id: str, system: str, prompt: str) -> str:
        """One model call; the reply's text. A missing key or SDK, an API error after the SDK's
        retries or a rate limit raises the backend's
        :class:`~pytest_vibecheck.errors.VibecheckError` (an infrastructure failure)."""
        return self._generator_for_calls().generate(self.request(task_id, system, prompt)).text

    def close(self) -> None:
        """Close the backend's client (idempotent)."""
        self.backend.close()
