"""Running one step of an in-process test run on a fresh thread, token-gated (inside the sandbox;
loaded by ``harness.py``; standard library only).

The candidate's import and every test run on threads started with
``_thread.start_new_thread`` whose target is a C-level chain (``functools.partial`` of
``collections.deque(map(operator.call, steps), 0)``): first the work, then
``os.write(pipe, token)`` of a one-time random token. A step passes only when its token
arrives: the candidate would have to produce 16 random bytes that exist only inside that
chain. The work runs inside ``calls.INVOKE`` (a function with nothing in its namespace), which
keeps what it returned or raised; the chain's last step puts a marker on the queue the main
thread waits on (:class:`Steps`). No Python function of the harness is a hook.
"""

from __future__ import annotations

import _queue
import _thread
import collections
import contextlib
import functools
import operator
import os
import select
import time
from typing import Any

TOKEN_BYTES = 16

# Pristine references, taken when this file is loaded (before any candidate code runs): the
# main thread only ever calls these, never a module attribute looked up later.
_write, _read, _urandom = os.write, os.read, os.urandom
_poll = select.poll
_monotonic = time.monotonic
_start_thread = _thread.start_new_thread
_partial, _deque = functools.partial, collections.deque
_call: Any = operator.call  # type: ignore[attr-defined]
_Empty = _queue.Empty


class Steps:
    """The main thread's side of a run's steps: the token pipe and the queue each step's
    thread reports its end on."""

    def __init__(self, invoke: Any, describe: Any, limit: float) -> None:
        self.tok_r, self.tok_w = os.pipe()
        os.set_blocking(self.tok_r, False)
        self.ended: Any = _queue.SimpleQueue()
        self.invoke = invoke
        self.describe = describe
        self.limit = limit
        self.tokbuf = b""
        self.forged = False

    def step(self, setup: list[Any], fn: Any, args: tuple[Any, ...],
             deadline: float, invoke: Any = None,
             teardown: tuple[Any, ...] = ()) -> tuple[str, str, str]:
        """Run ``setup`` (callables), then ``fn(*args)`` on a fresh thread until it ends or
        ``deadline`` (monotonic seconds), then ``teardown``. Returns ``(outcome, message, missing)``: ``pass``
        (``fn`` returned and the step's token arrived), ``fail`` or ``timeout``; a failure's
        message and missing module come from its exception. ``fn`` runs inside ``invoke``
        (default: the one given at creation; ``calls.INVOKE_TRUSTED`` or ``calls.INVOKE``),
        which keeps what it returned or raised."""
        token = _urandom(TOKEN_BYTES)
        done = object()
        box: list[Any] = []
        chain: Any = _partial(_deque, map(_call, [
            *setup, _partial(invoke or self.invoke, fn, args, {}, box),
            _partial(_write, self.tok_w, token), *teardown, _partial(self.ended.put, done),
        ]), 0)
        _start_thread(chain, ())
        del chain
        while True:
            left = deadline - _monotonic()
            try:
                got = self.ended.get(timeout=max(left, 0.0)) if left > 0 else self.ended.get_nowait()
            except _Empty:
                return "timeout", f"time limit of {self.limit:g} s exceeded", ""
            if got is done:
                break
        self._read_tokens()
        passed = token in self.tokbuf
        if passed:
            self.tokbuf = self.tokbuf.replace(token, b"", 1)
        if self.tokbuf:
            self.forged = True
            self.tokbuf = b""
        result = box[-1] if box else (False, None)
        box.clear()  # the step's frame holds the box: no cycle keeps the exception alive
        if passed and type(result) is tuple and result[0] is True:
            return "pass", "", ""
        exc = result[1] if type(result) is tuple and len(result) == 2 else None
        if not isinstance(exc, BaseException):
            return "fail", "the step ended without passing (no exception was reported)", ""
        with contextlib.suppress(BaseException):
            message, missing = self.describe(exc)
            return "fail", message, missing
        return "fail", "the step failed (its exception could not be described)", ""

    def _read_tokens(self) -> None:
        poller = _poll()
        poller.register(self.tok_r, select.POLLIN)
        while poller.poll(0):
            try:
                data = _read(self.tok_r, 1 << 16)
            except (BlockingIOError, InterruptedError):
                break
            if not data:
                break
            self.tokbuf += data
