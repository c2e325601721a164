"""Client side of the sandbox's fork server (``_child/zygote.py``)."""

# ruff: noqa: PTH118, PTH123
# (os.path/open on purpose: this low-level code runs at every sandbox start, where
#  importing pathlib costs time, and it works with raw file descriptors and mounts.)

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

from pytest_vibecheck.execute.limits import SandboxSettings, sandbox_env

#: Runs a script without putting its folder on ``sys.path`` (``python -P`` needs 3.11): the
#: package folder holds modules such as ``selectors`` that would shadow the standard library.
_RUN_SCRIPT = (
    "import sys, runpy; del sys.path[0]; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)



_ZYGOTE = Path(__file__).parent / "_child" / "zygote.py"


class _ForkServer:
    """Client side of ``_child/zygote.py``: one server process per (process, interpreter)."""

    def __init__(self, python: str, preload: tuple[str, ...] = ()) -> None:
        self.dir = tempfile.mkdtemp(prefix="vibecheck-fork-")
        self.sock = os.path.join(self.dir, "socket")
        self.owner = os.getpid()
        # the server's own home: a preloaded library that writes its caches at import
        # (matplotlib's font list) writes them here, never into the host's folders
        env = sandbox_env(self.dir, self.dir, SandboxSettings(), python)
        with open(os.path.join(self.dir, "log"), "wb") as log:
            self.proc = subprocess.Popen(
                [python, "-s", "-c", _RUN_SCRIPT, str(_ZYGOTE), self.sock, ",".join(preload)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd="/",
                start_new_session=True,
                close_fds=True,
            )
        assert self.proc.stdout is not None
        # poll, never select: select() refuses descriptors >= 1024 (FD_SETSIZE)
        poller = select.poll()
        poller.register(self.proc.stdout, select.POLLIN | select.POLLHUP)
        ready = poller.poll(60_000)
        line = self.proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.close()
            raise OSError(f"the sandbox fork server did not start: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            return Path(self.dir, "log").read_text(errors="replace")[-500:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def launch(self, cfg_path: str, fds: list[int]) -> tuple[socket.socket, int, bytes]:
        """Ask for one sandboxed run; returns ``(connection, pid, bytes read after the pid)``."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(60)
            conn.connect(self.sock)
            socket.send_fds(conn, [json.dumps({"config": cfg_path}).encode() + b"\n"], fds)
            buf = b""
            while b"\n" not in buf:
                chunk = conn.recv(4096)
                if not chunk:
                    raise OSError("the sandbox fork server closed the connection")
                buf += chunk
        except BaseException:
            conn.close()
            raise
        line, rest = buf.split(b"\n", 1)
        msg = json.loads(line)
        if not isinstance(msg, dict) or "pid" not in msg:
            conn.close()
            raise OSError(f"the sandbox fork server refused the run: {msg}")
        return conn, int(msg["pid"]), rest

    def close(self) -> None:
        if self.owner != os.getpid():
            return
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_servers_lock = threading.Lock()
_servers: dict[tuple[str, tuple[str, ...]], _ForkServer] = {}
_server_failed: dict[tuple[str, tuple[str, ...]], str] = {}


def _fork_server(python: str, preload: tuple[str, ...] = ()) -> _ForkServer | None:
    """The running fork server for ``python`` (started on first use), or None if it cannot start."""
    key = (python, preload)
    with _servers_lock:
        server = _servers.get(key)
        if server is not None and server.alive():
            return server
        if key in _server_failed:
            return None
        try:
            server = _ForkServer(python, preload)
        except OSError as exc:
            _server_failed[key] = str(exc)
            import warnings

            warnings.warn(
                f"sandbox: fork server unavailable, starting one interpreter per run ({exc})",
                RuntimeWarning,
                stacklevel=3,
            )
            return None
        _servers[key] = server
        return server


def _forget_fork_server(
    key: tuple[str, tuple[str, ...]], server: _ForkServer, exc: Exception
) -> None:
    import warnings

    with _servers_lock:
        if _servers.get(key) is server:
            del _servers[key]
    warnings.warn(
        f"sandbox: the fork server failed ({exc}); starting a new one on the next run",
        RuntimeWarning,
        stacklevel=3,
    )
    server.close()


def shutdown_fork_servers() -> None:
    """Stop this process's fork servers (also done at interpreter exit)."""
    with _servers_lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


atexit.register(shutdown_fork_servers)

