"""Running one step of a run on a fresh thread, token-gated (inside the sandbox; loaded by
``harness.py``).

The candidate's import, the test source and every test run on threads started with
``_thread.start_new_thread`` whose target is a C-level chain (``functools.partial`` of
``collections.deque(map(operator.call, steps), 0)``): first the work (``guard.run_one``), then
``os.write(pipe, token)`` of a one-time random token. A step passes only when its token
arrives: the candidate would have to produce 16 random bytes that exist only inside that chain,
which no Python object it can reach refers to. :class:`State` is what the main thread keeps for
one run.
"""

from __future__ import annotations

import _thread
import collections
import contextlib
import functools
import operator
import os
import select
import time
import weakref
from typing import Any

TOKEN_BYTES = 16

# Pristine references, taken when this file is loaded (before any candidate code runs): the
# main thread only ever calls these, never a module attribute looked up later.
_write, _read, _urandom = os.write, os.read, os.urandom
_select = select.select
_monotonic = time.monotonic
_start_thread = _thread.start_new_thread
_partial, _deque, _wref = functools.partial, collections.deque, weakref.ref
_call: Any = operator.call  # type: ignore[attr-defined]


class State:
    """What the main thread keeps for one run (only ever referenced from its own frames)."""

    def __init__(self) -> None:
        self.tamper: list[str] = []
        self.protected_ids: set[int] = set()
        self.protected_refs: list[object] = []
        self.snapshot: list[tuple[str, object, dict[str, Any], dict[str, object]]] = []
        self.unraisable: Any = None
        self.tok_r = self.tok_w = self.done_r = self.done_w = self.msg_r = self.msg_w = -1
        self.tokbuf = b""
        self.msgbuf = b""
        self.messages: list[tuple[str, str]] = []
        self.done_seen = 0
        self.done_count = 0
        self.candidate_ran = False
        self.out_write: Any = None
        self.limit = 0.0
        self.pid = os.getpid()
        self.block_ctypes = False
        self.in_sys: set[str] = set()
        self.decoy: Any = None

    def flag(self, reason: str) -> None:
        if len(self.tamper) < 20 and reason not in self.tamper:
            self.tamper.append(reason[:300])

    def protect(self, cls: object) -> None:
        self.protected_ids.add(id(cls))
        self.protected_refs.append(cls)



class _Marker:
    """Freed with a step's C-level chain, i.e. when its thread has ended."""

    __slots__ = ("__weakref__",)


def _ended(fd: int, _ref: object) -> None:
    with contextlib.suppress(OSError):
        _write(fd, b"E")


def _spawn(st: State, steps: list[Any], token: bytes) -> Any:
    """Start ``steps`` then ``os.write(token pipe, token)`` on a new thread; returns the
    weak reference whose callback reports the thread's end."""
    steps.append(_partial(_write, st.tok_w, token))
    chain: Any = _partial(_deque, map(_call, steps), 0)
    marker = _Marker()
    chain.marker = marker
    ref = _wref(marker, _partial(_ended, st.done_w))
    del marker, steps
    _start_thread(chain, ())
    del chain
    return ref


def _pump(st: State, timeout: float) -> None:
    try:
        ready, _, _ = _select([st.tok_r, st.done_r, st.msg_r], [], [], max(0.0, timeout))
    except InterruptedError:  # pragma: no cover
        return
    for fd in ready:
        try:
            data = _read(fd, 1 << 16)
        except (BlockingIOError, InterruptedError):
            continue
        if fd == st.tok_r:
            st.tokbuf += data
        elif fd == st.done_r:
            st.done_count += data.count(b"E")
            if data.strip(b"E"):
                st.flag("wrote to the harness's pipe")
        else:
            st.msgbuf += data
    while len(st.msgbuf) >= 4:
        size = int.from_bytes(st.msgbuf[:4], "big")
        if size > 8000:
            st.flag("wrote to the harness's pipe")
            st.msgbuf = b""
            break
        if len(st.msgbuf) < 4 + size:
            break
        raw, st.msgbuf = st.msgbuf[4 : 4 + size], st.msgbuf[4 + size :]
        missing, _, text = raw.decode("utf-8", "replace").partition("\0")
        st.messages.append((missing, text))


def step(st: State, steps: list[Any], deadline: float) -> tuple[str, str, str]:
    """Run ``steps`` on a fresh thread until it ends or ``deadline`` (monotonic seconds).

    Returns ``(outcome, message, missing)``: ``pass`` (its token arrived), ``fail`` or
    ``timeout``; the message and missing module of a failure come from the thread's
    exception.
    """
    token = _urandom(TOKEN_BYTES)
    st.messages = []
    ref = _spawn(st, steps, token)
    target = st.done_seen + 1
    try:
        while st.done_count < target:
            remaining = deadline - _monotonic()
            if remaining <= 0:
                return "timeout", f"time limit of {st.limit:g} s exceeded", ""
            _pump(st, min(remaining, 1.0))
        _pump(st, 0)
    except BaseException as exc:
        st.flag(f"interrupted the harness ({type(exc).__name__})")
        return "fail", "the harness was interrupted", ""
    finally:
        del ref
    st.done_seen = target
    passed = token in st.tokbuf
    if passed:
        st.tokbuf = st.tokbuf.replace(token, b"", 1)
    if st.tokbuf:
        st.flag("wrote to the harness's pipe")
        st.tokbuf = b""
    if passed:
        return "pass", "", ""
    missing, message = st.messages[-1] if st.messages else ("", "")
    return "fail", message or "the test ended without passing (no exception was reported)", missing


def started(st: State) -> None:
    """Tell the evaluator that candidate code runs from now on: a process that ends without a
    result after this line was ended by the candidate, before it by the harness."""
    st.candidate_ran = True
    st.out_write('{"started": true}\n')
