"""``scripted:NAME``: a scripted test model for the plugin's own tests (and yours).

Two ways to make ``scripted:NAME`` exist:

1. In the same process (a test or ``conftest.py``)::

       from pytest_vibecheck.generate.backends.scripted import ScriptedBackend, register_scripted
       bot = ScriptedBackend(replies=["```python\\ndef f():\\n    return 1\\n```"])
       register_scripted("bot", bot)          # spec: scripted:bot
       ...
       bot.history                            # the requests it received

   A ``ScriptedBackend`` answers from, in order: its queue (:meth:`ScriptedBackend.enqueue`;
   an exception in the queue is raised), its ``respond(request)`` function, its rules, its
   ``default``; if none applies it raises :class:`BackendError`.

2. Across processes (pytester subprocesses, ``-n 2`` workers): set ``VIBECHECK_SCRIPTED`` to
   the path of a JSON file (several paths separated by ``os.pathsep``)::

       {"bot": {
           "rules": [
             {"task_id": "BigCodeBench/1*", "label": "single-*", "contains": "PEP 8",
              "reply": "```python\\n...\\n```", "usage": {"input_tokens": 10, "output_tokens": 5},
              "finish_reason": "stop"},
             {"task_id": "BigCodeBench/2", "error": "rate_limit"},
             {"label": "multi-*", "reply": "@reference"}
           ],
           "default": "@reference",
           "log": "/tmp/requests.jsonl",
           "cacheable": true
       }}

   Rules are tried in order; the first whose ``task_id`` and ``label`` globs (fnmatch) match
   and whose ``contains`` text occurs in the last user message wins. ``reply: "@reference"``
   answers with the task's canonical solution as a fenced block; ``error`` is
   ``"rate_limit"`` (RateLimitError), ``"api"`` (BackendError, HTTP 500) or ``"fatal"``
   (BackendError, HTTP 401, ``fatal=True``). ``log`` appends every request as a JSON line
   (``task_id``, ``label``, ``sample``, ``temperature``, ``max_tokens``, ``messages``), safe for
   several processes. Scripted replies go through the generation cache like an API's
   (``cacheable``, default true), so cache modes can be tested.
"""

from __future__ import annotations

import fnmatch
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError, UnknownIdError
from pytest_vibecheck.generate.backends.base import (
    Backend,
    BackendError,
    BackendSettings,
    Generation,
    GenerationRequest,
    RateLimitError,
    ReplayMissError,
    fence,
)

#: Environment variable naming JSON script files (``os.pathsep``-separated).
SCRIPT_ENV = "VIBECHECK_SCRIPTED"

REFERENCE_REPLY = "@reference"

Reply = str | Generation | BaseException
Responder = Callable[[GenerationRequest], str | Generation]

_registry: dict[str, ScriptedBackend] = {}
_registry_lock = threading.Lock()


def _error(kind: str, name: str, request: GenerationRequest) -> BackendError:
    where = request.describe()
    if kind == "rate_limit":
        return RateLimitError(
            f"scripted:{name}: rate limited (HTTP 429) for {where}", provider="scripted", model=name, status=429
        )
    if kind == "fatal":
        return BackendError(
            f"scripted:{name}: HTTP 401 for {where}", provider="scripted", model=name, status=401, fatal=True
        )
    return BackendError(f"scripted:{name}: HTTP 500 for {where}", provider="scripted", model=name, status=500)


class ScriptedBackend(Backend):
    """A deterministic fake model; see the module docstring.

    ``replies``: initial queue. ``respond``: function of the request. ``rules``: dicts as in
    the JSON script. ``default``: reply when nothing else applies. ``log_path``: JSONL file
    of received requests. ``history``: the requests received by this object (in-process).
    """

    provider = "scripted"

    def __init__(
        self,
        name: str = "test",
        *,
        replies: Iterable[Reply] = (),
        respond: Responder | None = None,
        rules: Iterable[Mapping[str, Any]] = (),
        default: str | None = None,
        log_path: str | os.PathLike[str] | None = None,
        cacheable: bool = True,
        usage: Mapping[str, int] | None = None,
    ) -> None:
        self.model = name
        self._queue: deque[Reply] = deque(replies)
        self.respond = respond
        self.rules = [dict(r) for r in rules]
        self.default = default
        self.log_path = Path(log_path) if log_path else None
        self.cacheable = cacheable
        self.usage = dict(usage or {"input_tokens": 0, "output_tokens": 0})
        self.history: list[GenerationRequest] = []
        self._lock = threading.Lock()
        for i, rule in enumerate(self.rules):
            unknown = set(rule) - {"task_id", "label", "contains", "reply", "error", "usage", "finish_reason"}
            if unknown:
                raise DataFileError(f"scripted:{name}", f"rule {i} has unknown keys {sorted(unknown)}")
            if ("reply" in rule) == ("error" in rule):
                raise DataFileError(f"scripted:{name}", f"rule {i} needs exactly one of 'reply' or 'error'")
            if rule.get("error") not in (None, "rate_limit", "api", "fatal"):
                raise DataFileError(
                    f"scripted:{name}", f"rule {i}: error must be rate_limit, api or fatal", field="error"
                )

    def enqueue(self, *replies: Reply) -> None:
        """Queue replies (strings, Generations, or exceptions to raise), answered first-in first-out."""
        with self._lock:
            self._queue.extend(replies)

    def _log(self, request: GenerationRequest) -> None:
        if self.log_path is None:
            return
        line = json.dumps(
            {
                "task_id": request.task_id,
                "label": request.label,
                "sample": request.sample,
                "temperature": request.temperature,
                "max_tokens": request.max_tokens,
                "messages": list(request.messages),
            },
            ensure_ascii=False,
        )
        # One write() of a whole line on an O_APPEND file: lines of several processes never interleave.
        fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def _text(self, reply: str, request: GenerationRequest) -> str:
        if reply != REFERENCE_REPLY:
            return reply
        if request.reference is None:
            raise ReplayMissError(
                f"scripted:{self.model}: {request.describe()} has no canonical solution for '@reference'",
                task_id=request.task_id,
                label=request.label,
            )
        return fence(request.reference)

    def _match(self, rule: Mapping[str, Any], request: GenerationRequest) -> bool:
        if "task_id" in rule and not fnmatch.fnmatchcase(request.task_id or "", str(rule["task_id"])):
            return False
        if "label" in rule and not fnmatch.fnmatchcase(request.label or "", str(rule["label"])):
            return False
        return not ("contains" in rule and str(rule["contains"]) not in request.messages[-1]["content"])

    def _gen(self, text: str, usage: Mapping[str, int] | None = None, finish: str | None = "stop") -> Generation:
        return Generation(
            text=text,
            usage=dict(usage or self.usage),
            latency_s=0.0,
            model=f"scripted-{self.model}",
            cached=False,
            finish_reason=finish,
        )

    def generate(self, request: GenerationRequest) -> Generation:
        """The next scripted reply; raises what the script says to raise."""
        with self._lock:
            self.history.append(request)
            queued = self._queue.popleft() if self._queue else None
        self._log(request)
        if queued is not None:
            if isinstance(queued, BaseException):
                raise queued
            if isinstance(queued, Generation):
                return queued
            return self._gen(self._text(queued, request))
        if self.respond is not None:
            out = self.respond(request)
            return out if isinstance(out, Generation) else self._gen(out)
        for rule in self.rules:
            if self._match(rule, request):
                if rule.get("error"):
                    raise _error(str(rule["error"]), self.model, request)
                return self._gen(
                    self._text(str(rule["reply"]), request),
                    rule.get("usage"),
                    rule.get("finish_reason", "stop"),
                )
        if self.default is not None:
            return self._gen(self._text(self.default, request))
        raise BackendError(
            f"scripted:{self.model}: no scripted reply for {request.describe()} (queue empty, no rule matched)",
            provider="scripted",
            model=self.model,
        )


def register_scripted(name: str, backend: ScriptedBackend) -> None:
    """Make ``scripted:NAME`` return ``backend`` in this process (replaces an earlier one)."""
    backend.model = name
    with _registry_lock:
        _registry[name] = backend


def unregister_scripted(name: str) -> None:
    """Forget ``scripted:NAME`` (no error if absent)."""
    with _registry_lock:
        _registry.pop(name, None)


def _from_env(name: str, settings: BackendSettings) -> ScriptedBackend | None:
    paths = settings.getenv(SCRIPT_ENV)
    if not paths:
        return None
    for raw in paths.split(os.pathsep):
        if not raw:
            continue
        path = Path(raw)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DataFileError(path, f"cannot read the script named by ${SCRIPT_ENV}: {exc}") from None
        if not isinstance(doc, dict):
            raise DataFileError(path, "expected a JSON object mapping names to scripts")
        script = doc.get(name)
        if script is None:
            continue
        if not isinstance(script, dict):
            raise DataFileError(path, "expected an object", field=name)
        unknown = set(script) - {"rules", "default", "log", "cacheable", "usage"}
        if unknown:
            raise DataFileError(path, f"unknown keys {sorted(unknown)}", field=name)
        return ScriptedBackend(
            name,
            rules=script.get("rules", []),
            default=script.get("default"),
            log_path=script.get("log"),
            cacheable=bool(script.get("cacheable", True)),
            usage=script.get("usage"),
        )
    return None


def available_scripts(settings: BackendSettings | None = None) -> list[str]:
    """Names reachable as ``scripted:NAME`` (registered and in ``$VIBECHECK_SCRIPTED`` files)."""
    names = set(_registry)
    paths = (settings or BackendSettings()).getenv(SCRIPT_ENV) or ""
    for raw in paths.split(os.pathsep):
        try:
            doc = json.loads(Path(raw).read_text(encoding="utf-8")) if raw else {}
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(doc, dict):
            names.update(doc)
    return sorted(names)


def from_spec(model: str, settings: BackendSettings) -> Backend:
    """Factory of ``scripted:NAME``: the registered backend, else the script in ``$VIBECHECK_SCRIPTED``."""
    with _registry_lock:
        backend = _registry.get(model)
    if backend is not None:
        return backend
    found = _from_env(model, settings)
    if found is None:
        raise UnknownIdError(
            "scripted test model",
            model,
            available_scripts(settings),
            none_hint=f"register one with register_scripted() or list it in a JSON file named by ${SCRIPT_ENV}",
        )
    return found
