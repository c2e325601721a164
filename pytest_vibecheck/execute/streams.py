"""Reading a sandbox's output pipes within their caps and its wall clock."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import time
from collections.abc import Callable

# --------------------------------------------------------------------------- running


def _exit_status(buf: bytes) -> int | None:
    status = None
    for line in buf.split(b"\n"):
        with contextlib.suppress(ValueError):
            msg = json.loads(line)
            if isinstance(msg, dict) and "exit" in msg:
                status = int(msg["exit"])
    return status


class _Pipes:
    """The pipes of one run and what was read from each (at most ``caps[fd]`` bytes kept)."""

    def __init__(self, caps: dict[int, int]) -> None:
        self.caps = caps
        self.bufs = {fd: bytearray() for fd in caps}
        self.totals = dict.fromkeys(caps, 0)
        self.open = set(caps)

    def read(self, fd: int, sel: selectors.BaseSelector) -> None:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            sel.unregister(fd)
            self.open.discard(fd)
            return
        self.totals[fd] += len(data)
        room = self.caps[fd] - len(self.bufs[fd])
        if room > 0:
            self.bufs[fd] += data[:room]


def _drain(
    out_fd: int,
    err_fd: int,
    deadline: float,
    cap: int,
    exited: Callable[[], bool],
    control: socket.socket | None = None,
    early: bytes = b"",
    *,
    result_fd: int | None = None,
    result_cap: int = 0,
    on_result: Callable[[bytes], bool] | None = None,
    stop_fd: int | None = None,
) -> tuple[bytes, bytes, int, int, bool, int | None, bytes, int, bool]:
    """Drain stdout, stderr and the result pipe until EOF or ``deadline``; keep ``cap`` bytes
    of stdout and of stderr and ``result_cap`` of the result pipe.

    ``exited()`` tells whether the main process has ended; when it has but a background
    process keeps the pipes open, stops after 0.5 s. ``control`` is the fork server's
    connection, which delivers ``{"exit": status}``. ``on_result`` sees every chunk read
    from the result pipe and stops the drain by returning True; so does ``stop_fd`` becoming
    readable.
    Returns ``(stdout, stderr, stdout_total, stderr_total, timed_out, exit_status, result,
    result_total, stopped)``.
    """
    caps = {out_fd: cap, err_fd: cap}
    if result_fd is not None:
        caps[result_fd] = result_cap
    pipes = _Pipes(caps)
    sel = selectors.DefaultSelector()
    for fd in caps:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    control_buf = early
    exit_status = _exit_status(early)
    if control is not None:
        control.setblocking(False)
        sel.register(control, selectors.EVENT_READ)
    if stop_fd is not None:
        sel.register(stop_fd, selectors.EVENT_READ)
    timed_out = False
    stopped = False
    grace_end: float | None = None
    waiting_exit = control is not None and exit_status is None
    try:
        while pipes.open or waiting_exit:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if grace_end is None and (exit_status is not None or (control is None and exited())):
                grace_end = now + 0.5
            if grace_end is not None and now >= grace_end:
                break
            wait = min(deadline, grace_end or deadline) - now
            for key, _ in sel.select(min(wait, 0.25)):
                if control is not None and key.fileobj is control:
                    data = _recv(control)
                    if data is None:
                        continue
                    if not data:
                        sel.unregister(control)
                        waiting_exit = False
                        continue
                    control_buf += data
                    status = _exit_status(control_buf)
                    if status is not None:
                        exit_status, waiting_exit = status, False
                    continue
                if stop_fd is not None and key.fd == stop_fd:
                    stopped = True
                    break
                before = len(pipes.bufs[key.fd]) if key.fd == result_fd else 0
                pipes.read(int(key.fd), sel)
                if (on_result is not None and key.fd == result_fd
                        and on_result(bytes(pipes.bufs[key.fd][before:]))):
                    stopped = True
                    break
            if stopped:
                break
        if result_fd is not None and result_fd in pipes.open:
            pipes.read(result_fd, sel)  # what is already there (a background writer may stay)
    finally:
        sel.close()
    res = result_fd if result_fd is not None else out_fd
    return (
        bytes(pipes.bufs[out_fd]),
        bytes(pipes.bufs[err_fd]),
        pipes.totals[out_fd],
        pipes.totals[err_fd],
        timed_out,
        exit_status,
        bytes(pipes.bufs[res]) if result_fd is not None else b"",
        pipes.totals[res] if result_fd is not None else 0,
        stopped,
    )


def _recv(control: socket.socket) -> bytes | None:
    """Bytes from the fork server's connection; None when none are ready, b"" at its end."""
    try:
        return control.recv(4096)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


def _exited(pid: int) -> bool:
    """True when ``pid`` has exited (without reaping it, so its group id stays valid)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _decode(data: bytes, total: int, cap: int) -> tuple[str, bool]:
    text = data.decode("utf-8", errors="replace")
    if total > cap:
        text += f"\n[... {total - len(data)} more bytes truncated]"
        return text, True
    return text, False


