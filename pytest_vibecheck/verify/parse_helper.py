"""A second process that runs the no-code rule's parse for a batch, while this one works on.

Scoring a batch (:mod:`pytest_vibecheck.reward`) spends most of its own CPU in CPython's
parser: every whole reply is parsed to tell code from prose
(:func:`~pytest_vibecheck.verify.nocode.code_status`, about 0.2 ms per kilobyte), while Ruff
lints in its own process and leaves a core idle once it is done. :class:`ParseHelper` sends
the texts to a helper interpreter (the same ``sys.executable``, so the same grammar), which
parses them in order and streams one status byte back per text; meanwhile this process does
its other work, then takes texts from the back of the batch itself, until the two meet
(:meth:`Pending.settle`). The texts only are parsed there, never run.

Only texts shorter than :func:`~pytest_vibecheck.verify.nocode.parse_free_length` go there:
they cannot be too deep for the parser, so the answer cannot depend on which process's stack
parsed them. Anything that goes wrong with the helper (it cannot start, dies, stalls) costs
only speed: :meth:`Pending.settle` parses what is left here.

Protocol (binary, on the helper's standard input and output): a batch is ``b"B"``, its size
(4 bytes, big-endian) and per text a flag byte (``b"w"`` whole reply, ``b"f"`` fenced), its
length in bytes (4 bytes) and its UTF-8 bytes (``surrogatepass``). The helper answers one
byte per text, in order, then ``b"E"``: ``b"c"`` code that parsed, ``b"s"`` code that did not
(a fenced block with a syntax error), ``b"b"`` prose that parsed (bare names and constants),
``b"p"`` prose that did not parse, ``b"u"`` unparseable, ``b"e"`` code that parsed and has
nothing to run (:func:`~pytest_vibecheck.verify.substance.inert_module`).
``b"C"`` (cancel) makes it skip the rest of the batch and answer ``b"E"`` at once; a cancel
that arrives between batches is ignored. End of input ends the helper.
"""

# (os-level pipes and file descriptors on purpose: this is a byte protocol on raw pipes.)

from __future__ import annotations

import atexit
import contextlib
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["MIN_BATCH", "ParseHelper", "Pending", "shared_helper"]

#: Fewest texts worth a trip to the helper (below it, the pipe costs more than it saves).
MIN_BATCH = 64

#: Seconds to wait for the helper to start answering a batch before parsing here instead.
_STALL_S = 10.0

#: answer byte -> (no-code reason, parsed)
_STATUSES: dict[int, tuple[str | None, bool]] = {
    ord("c"): (None, True), ord("s"): (None, False), ord("b"): ("prose", True),
    ord("p"): ("prose", False), ord("u"): ("unparseable", False), ord("e"): ("empty", True),
}
_ANSWERS = {status: bytes([byte]) for byte, status in _STATUSES.items()}

_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from pytest_vibecheck.verify.parse_helper import _serve; _serve()"
)


class Pending:
    """One batch at the helper: ``statuses[i]`` (no-code reason, parsed) is filled as answers
    arrive (see :meth:`settle`)."""

    def __init__(self, helper: ParseHelper, texts: Sequence[tuple[str, bool]]) -> None:
        self._helper = helper
        self._texts = texts
        self.statuses: list[tuple[str | None, bool]] = [(None, False)] * len(texts)
        self.known = [False] * len(texts)
        self._front = 0  # answers read from the helper so far (texts 0 .. front-1)
        self._back = len(texts)  # texts from back .. end were parsed here
        self._ended = False  # the helper's b"E" was read
        self._closed = False
        self.writer: threading.Thread | None = None  # sends the batch (a pipe holds 64 KiB)

    def _read(self, timeout: float) -> bool:
        """Read what the helper has answered (waiting up to ``timeout`` seconds for the first
        byte); False when the helper is gone."""
        helper = self._helper
        fd = helper.stdout_fd
        if fd is None:
            return False
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLHUP)
            if not poller.poll(max(0, int(timeout * 1000))):
                return True
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            helper.broken()
            return False
        for byte in data:
            if byte == ord("E"):
                self._ended = True
                break
            i = self._front
            if i < len(self.known):
                status = _STATUSES.get(byte)
                if not self.known[i] and status is not None:
                    self.statuses[i] = status
                    self.known[i] = True
                self._front = i + 1
        return True

    def settle(
        self, parse_here: Callable[[str, bool], tuple[str | None, bool]]
    ) -> list[tuple[str | None, bool]]:
        """Every text's (no-code reason, parsed): the helper's answers, and
        ``parse_here(text, whole_reply)`` for the texts taken from the back (and for all that
        the helper could not answer). Ends the batch at the helper (a cancel, then its end
        marker). After :meth:`close`, everything is parsed here: the helper may be another
        batch's by then."""
        n = len(self._texts)
        alive = not self._closed
        while self._front < self._back and alive:
            alive = self._read(0)
            if self._front >= self._back:
                break
            self._back -= 1
            text, whole = self._texts[self._back]
            self.statuses[self._back] = parse_here(text, whole)
            self.known[self._back] = True
        self._finish(alive)
        for i in range(n):
            if not self.known[i]:
                text, whole = self._texts[i]
                self.statuses[i] = parse_here(text, whole)
                self.known[i] = True
        return self.statuses

    def close(self) -> None:
        """End the batch at the helper, its answers unused (idempotent; for a caller that
        gives up before :meth:`settle`)."""
        if not self._closed:
            self._finish(True)

    def _finish(self, alive: bool) -> None:
        if self._closed:
            return
        self._closed = True
        helper = self._helper
        try:
            if self.writer is not None:
                self.writer.join()  # the cancel must follow the whole batch
            if helper.write_error is not None:
                helper.broken()
            elif alive and not self._ended:
                try:
                    helper.send(b"C")
                except (OSError, ValueError):
                    helper.broken()
                    return
                deadline = time.monotonic() + _STALL_S
                while not self._ended and self._read(max(0.0, deadline - time.monotonic())):
                    if time.monotonic() >= deadline:
                        helper.broken()
                        break
        finally:
            helper.release()


class ParseHelper:
    """The helper process of this process (started on first use; see the module docstring).

    One batch at a time: :meth:`submit` returns None while another thread's batch is out,
    or when the helper cannot run, and the caller then parses itself."""

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable
        self.owner = os.getpid()
        self._proc: subprocess.Popen[bytes] | None = None
        self._failures = 0
        self._busy = threading.Lock()
        self.stdout_fd: int | None = None
        self.write_error: BaseException | None = None

    def _start(self) -> bool:
        if self._proc is not None and self._proc.poll() is None:
            return True
        if self._failures >= 3 or not self.python:
            return False
        root = str(Path(__file__).resolve().parents[2])  # the folder holding the package
        try:
            self._proc = subprocess.Popen(
                [self.python, "-I", "-c", _CHILD, root],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, close_fds=True,
            )
        except OSError:
            self._failures += 1
            self._proc = None
            return False
        assert self._proc.stdout is not None
        self.stdout_fd = self._proc.stdout.fileno()
        return True

    def cpu_seconds(self) -> float | None:
        """CPU seconds (user + system) the running helper has used, from ``/proc`` (Linux);
        None when no helper runs or the system does not say."""
        proc = self._proc
        if proc is None:
            return None
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def submit(self, texts: Sequence[tuple[str, bool]]) -> Pending | None:
        """Send ``(text, whole_reply)`` pairs; None when the helper is busy or cannot run."""
        if os.getpid() != self.owner or not self._busy.acquire(blocking=False):
            return None
        try:
            if not self._start():
                self._busy.release()
                return None
            parts = [b"B", len(texts).to_bytes(4, "big")]
            for text, whole in texts:
                data = text.encode("utf-8", "surrogatepass")
                parts += [b"w" if whole else b"f", len(data).to_bytes(4, "big"), data]
            pending = Pending(self, texts)
            self.write_error = None
            # A thread writes: a batch is larger than a pipe, and the helper may still be
            # starting; the write blocks without holding the GIL.
            pending.writer = threading.Thread(target=self._send_quietly, args=(b"".join(parts),),
                                              name="vibecheck-parse-helper-writer", daemon=True)
            pending.writer.start()
        except (OSError, RuntimeError):
            self.broken()
            self._busy.release()
            return None
        return pending

    def _send_quietly(self, data: bytes) -> None:
        try:
            self.send(data)
        except (OSError, ValueError) as exc:
            self.write_error = exc

    def send(self, data: bytes) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise OSError("the parse helper is not running")
        proc.stdin.write(data)
        proc.stdin.flush()

    def release(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._busy.release()

    def broken(self) -> None:
        """The helper failed: stop it (a later batch starts a new one, up to 3 failures)."""
        self._failures += 1
        self.close()

    def close(self) -> None:
        """Stop the helper (idempotent)."""
        proc, self._proc, self.stdout_fd = self._proc, None, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


_shared: ParseHelper | None = None
_shared_lock = threading.Lock()


def shared_helper() -> ParseHelper:
    """This process's helper (a new one after ``fork``: a helper belongs to one process)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.owner != os.getpid():
            _shared = ParseHelper()
            atexit.register(_shared.close)
        return _shared


# ----------------------------------------------------------------------------- helper side


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks: list[bytes] = []
    while n:
        data = os.read(fd, min(n, 1 << 20))
        if not data:
            return None
        chunks.append(data)
        n -= len(data)
    return b"".join(chunks)


def _serve() -> None:
    """The helper's loop (run in the helper process: ``python -I -c``)."""
    from pytest_vibecheck.verify.extract import parse_quietly
    from pytest_vibecheck.verify.nocode import code_status

    fin, fout = sys.stdin.fileno(), sys.stdout.fileno()
    poller = select.poll()
    poller.register(fin, select.POLLIN)
    while True:
        kind = _read_exact(fin, 1)
        if kind is None:
            return
        if kind != b"B":
            continue  # a cancel that came after the batch ended
        head = _read_exact(fin, 4)
        if head is None:
            return
        texts: list[tuple[str, bool]] = []
        for _ in range(int.from_bytes(head, "big")):
            meta = _read_exact(fin, 5)
            if meta is None:
                return
            data = _read_exact(fin, int.from_bytes(meta[1:], "big"))
            if data is None:
                return
            texts.append((data.decode("utf-8", "surrogatepass"), meta[:1] == b"w"))
        out = bytearray()
        for text, whole in texts:
            if poller.poll(0):  # a cancel (or the end of input): stop this batch
                break
            out += _ANSWERS[code_status(text, whole, parse_quietly)]
            if len(out) >= 8:
                os.write(fout, bytes(out))
                out.clear()
        os.write(fout, bytes(out) + b"E")
