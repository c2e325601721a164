"""Fork server for the sandbox (standard library only; run as a script, as root).

``python -s _child/zygote.py SOCKET`` pre-imports the test harness once and then, for
each request on the UNIX socket, forks a child that enters fresh namespaces itself
(``unshare(2)``: mount, IPC, PID and, unless allowed, network), so each sandboxed run costs
a few forks instead of an interpreter start. The child then follows exactly the steps of
:mod:`~pytest_vibecheck.execute._child.boot` (PID 1 of the new PID namespace, private tmpfs, limits relative to its
own size, unprivileged user id, ``no_new_privs``).

Protocol, one connection per run: the client sends one JSON line
``{"config": PATH}`` with four to eight file descriptors (stdin, stdout, stderr, the result pipe,
then the job's extra pipes) attached (``SCM_RIGHTS``), which the child gets as descriptors 0, 1,
2, 3, 4, ...; the server answers ``{"pid": N}`` at once and ``{"exit": STATUS}`` when
that child has ended. The server exits when its standard input (a pipe from the client
process) reaches end of file.
"""

# ruff: noqa: PTH100, PTH101, PTH118, PTH119, PTH120, PTH123
# (os.path/open on purpose: this low-level code runs at every sandbox start, where
#  importing pathlib costs time, and it works with raw file descriptors and mounts.)

from __future__ import annotations

import builtins
import contextlib
import json
import os
import random
import selectors
import signal
import socket
import sys
from typing import Any

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_PR_SET_PDEATHSIG = 1

#: The job scripts preloaded once by the server (every file a run may name as its script).
JOB_SCRIPTS = ("harness.py", "runner.py", "judge.py")
#: Most descriptors a request may carry.
MAX_FDS = 8


def _load(path: str, name: str) -> dict[str, Any]:
    # a private copy of the builtins: code under test that patches ``builtins`` later does not
    # change what the harness calls
    namespace: dict[str, Any] = {
        "__name__": name,
        "__file__": path,
        "__builtins__": dict(builtins.__dict__),
    }
    with open(path, encoding="utf-8") as fh:
        exec(compile(fh.read(), path, "exec"), namespace)
    return namespace


def _child(
    boot: dict[str, Any],
    jobs: dict[str, dict[str, Any]],
    request: dict[str, Any],
    fds: list[int],
) -> None:
    """Runs in the forked child; never returns."""
    status = 121
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        import fcntl

        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, len(fds)) for fd in fds]
        for target, fd in enumerate(high):
            os.dup2(fd, target)
        os.closerange(len(fds), 1 << 16)
        cfg = boot["load_config"](request["config"])
        os.environ.clear()
        os.environ.update(cfg["env"])
        preloaded = jobs.get(os.path.realpath(cfg["script"])) if cfg.get("mode") != "exec" else None
        out, source = boot["open_job"](cfg, 3, need_source=preloaded is None)
        libc = boot["_libc"]()
        flags = _CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWPID
        if cfg.get("net_ns"):
            flags |= _CLONE_NEWNET
        if libc.unshare(flags) != 0:
            import ctypes

            raise OSError(ctypes.get_errno(), "unshare failed")
        boot["_mount"](libc, "none", "/", None, _MS_REC | _MS_PRIVATE, None)
        pid1 = os.fork()
        if pid1:
            _, wstatus = os.waitpid(pid1, 0)
            code = os.waitstatus_to_exitcode(wstatus)
            os._exit(code if code >= 0 else 128 - code)
        # PID 1 of the new namespace: die with the parent (killed on timeout), so the
        # kernel kills everything in the namespace.
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        boot["_mount"](libc, "proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)
        boot["enter"](cfg, out, True)
        random.seed()
        _reseed_preloaded()
        boot["run_job"](cfg, out, source, preloaded)
        status = 0
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(2, f"sandbox fork server: {type(exc).__name__}: {exc}\n".encode())
    finally:
        os._exit(status)


def _preload(names: str) -> None:
    """Import each comma-separated module now; a missing optional library is skipped."""
    import importlib

    for name in filter(None, names.split(",")):
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _reseed_preloaded() -> None:
    """In a forked run: what importing a preloaded library would have set from the run's own
    state is set afresh. numpy's global random state is reseeded (``random`` is reseeded
    above), so runs forked from one server never share a random sequence, and ``tempfile``
    forgets the temporary folder a library's import made it find (the server's, which the
    run cannot see), so it finds the run's own from ``TMPDIR``."""
    nprandom = sys.modules.get("numpy.random")
    if nprandom is not None:
        with contextlib.suppress(Exception):
            nprandom.seed()
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.__dict__["tempdir"] = None


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sock_path = sys.argv[1]
    boot = _load(os.path.join(here, "boot.py"), "_vibecheck_boot")
    # the job scripts, loaded once (code only: no run's data has reached this process)
    jobs = {
        os.path.realpath(os.path.join(here, name)): _load(
            os.path.realpath(os.path.join(here, name)), "_vibecheck_job"
        )
        for name in JOB_SCRIPTS
    }
    boot["_libc"]()  # import ctypes now
    _preload(sys.argv[2] if len(sys.argv) > 2 else "")
    for job in jobs.values():  # what a job builds once over the server's modules
        prepare = job.get("prepare")
        if callable(prepare):
            # a job whose preparation failed builds what it needs in each run instead
            with contextlib.suppress(Exception):
                prepare()

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    os.chmod(sock_path, 0o600)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    sel.register(0, selectors.EVENT_READ, "stdin")
    running: dict[int, socket.socket] = {}
    os.write(1, b"ready\n")

    while True:
        for key, _ in sel.select():
            what = key.data
            if what == "stdin":
                _on_control(running, sock_path)
            elif what == "wake":
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
                _reap(running)
            else:
                _on_request(listener, running, boot, jobs)


def _send(conn: socket.socket, msg: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall((json.dumps(msg) + "\n").encode())


def _on_control(jobs: dict[int, socket.socket], sock_path: str) -> None:
    """End of file on stdin: the client process is gone; kill every run, clean up, exit."""
    try:
        data = os.read(0, 4096)
    except OSError:
        data = b""
    if data:
        return
    for pid in list(jobs):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    folder = os.path.dirname(sock_path)
    if os.path.basename(folder).startswith("vibecheck-fork-"):  # the client may be gone
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)


def _reap(jobs: dict[int, socket.socket]) -> None:
    """Reap every ended child and report its exit status on its connection."""
    while True:
        try:
            pid, wstatus = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = jobs.pop(pid, None)
        if conn is not None:
            _send(conn, {"exit": os.waitstatus_to_exitcode(wstatus)})
            conn.close()


def _on_request(
    listener: socket.socket,
    running: dict[int, socket.socket],
    boot: dict[str, Any],
    jobs: dict[str, dict[str, Any]],
) -> None:
    try:
        conn, _ = listener.accept()
    except OSError:
        return
    try:
        conn.settimeout(10)
        msg, fds, _, _ = socket.recv_fds(conn, 1 << 16, MAX_FDS)
        request = json.loads(msg.decode())
        if not 4 <= len(fds) <= MAX_FDS:
            raise ValueError(f"expected 4 to {MAX_FDS} file descriptors, got {len(fds)}")
    except (OSError, ValueError) as exc:
        _send(conn, {"error": str(exc)})
        conn.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(boot, jobs, request, fds)
    for fd in fds:
        os.close(fd)
    running[pid] = conn
    _send(conn, {"pid": pid})


if __name__ == "__main__":
    main()
