"""Run untrusted code in a limited subprocess (see ``docs/sandbox.md``).

:func:`run_in_sandbox` starts ``python -s _child/boot.py CONFIG`` with:

- a fresh temporary work folder as working folder and ``HOME``, removed afterwards;
- an environment built from scratch (``PATH``, ``LANG``, ``HOME``, ``TMPDIR``,
  ``MPLBACKEND=Agg``, ``TZ=UTC``, thread counts of numeric libraries set to 1); no variable
  named like a key, token, secret, password or credential and no proxy setting can get in;
- limits on CPU time, address space (*relative* to the child's own size when the limits are
  applied, so a large interpreter never fails every answer), process count, file size and
  open files; a wall-clock timeout that kills the whole process group;
- where the OS allows it (Linux with ``unshare``): new network, mount, PID and IPC
  namespaces. The network namespace has only a loopback device that is down, so the network
  is *blocked*; the child reports what it sees and :attr:`SandboxResult.network` says
  ``blocked`` or ``open`` honestly. When PID 1 of the namespace exits, the kernel kills every
  process the candidate left behind (even ones that called ``setsid``);
- when started as root: a per-sandbox unprivileged user id (so the process limit bounds a
  fork bomb, and the code cannot write the project or read root-only files), private
  ``tmpfs`` over ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run/lock``, and
  ``no_new_privs``. Otherwise, writes to watched folders are *detected* and reported.

stdout and stderr are captured and truncated to ``max_output_bytes`` each.
"""

# ruff: noqa: PTH100, PTH101, PTH109, PTH112, PTH116, PTH118, PTH120, PTH123, PTH208
# (os.path/open on purpose: this low-level code runs at every sandbox start, where
#  importing pathlib costs time, and it works with raw file descriptors and mounts.)

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import functools
import json
import math
import os
import random
import re
import select
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_vibecheck.errors import VibecheckError

#: Bump whenever a change to the sandbox can change a verdict (part of the result-cache key).
SANDBOX_VERSION = 1

#: Exit status of the bootstrap when it could not set the sandbox up.
BOOT_FAILED = 121

NetworkState = Literal["blocked", "open"]
WriteGuard = Literal["prevented", "detected", "none"]

#: Environment variable names that are never passed to sandboxed code (case-insensitive).
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|PROXY", re.IGNORECASE
)

#: World-writable folders hidden behind a private tmpfs when a mount namespace is available.
TMP_DIRS: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")

#: Range of user ids handed out to sandboxes (one per concurrent sandbox) when run as root.
UID_BASE = 1_800_000
UID_SLOTS = 4096

_BOOT = Path(__file__).parent / "_child" / "boot.py"

#: Runs a script without putting its folder on ``sys.path`` (``python -P`` needs 3.11): the
#: package folder holds modules such as ``selectors`` that would shadow the standard library.
_RUN_SCRIPT = (
    "import sys, runpy; del sys.path[0]; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


class SandboxError(VibecheckError):
    """The sandbox was configured wrongly (e.g. a secret-like name in ``extra_env``)."""


@dataclass(frozen=True)
class SandboxSettings:
    """Limits and isolation of one sandboxed run.

    - ``timeout_s``: wall-clock seconds before the whole process group is killed.
    - ``cpu_s``: CPU seconds per process (``RLIMIT_CPU``); default ``ceil(timeout_s) + 1``.
    - ``memory_headroom_mb``: address space (MiB) allowed *above* the child's own size when
      the limits are applied (``RLIMIT_AS`` = that size + headroom).
    - ``nproc``: processes and threads (``RLIMIT_NPROC``) of the sandbox's user.
    - ``fsize_mb``: largest file the code may write (``RLIMIT_FSIZE``), MiB.
    - ``nofile``: open file descriptors (``RLIMIT_NOFILE``).
    - ``max_output_bytes``: bytes of stdout and of stderr kept (the rest is counted, dropped).
    - ``network``: ``block`` (new network namespace when possible) or ``allow``.
    - ``require_network_block``: report an error instead of running when the network cannot
      be blocked.
    - ``isolate_user``: when root, run as a per-sandbox unprivileged user id.
    - ``private_tmp``: private tmpfs over world-writable folders (needs a mount namespace).
    - ``namespaces``: use ``unshare`` when available (``False`` forces a plain process).
    - ``watch_paths``: folders whose files are compared before and after the run to detect
      writes; ``None`` = the current folder when writes cannot be prevented, else none.
    - ``extra_env``: more environment variables (names must not look like secrets).
    - ``python``: interpreter for the child (default: this one).
    - ``fork_server``: start sandboxes by forking a pre-started, pre-imported server process
      (root with namespaces only; same isolation, no interpreter start per run).
    - ``preload``: modules the fork server imports once (e.g. ``("numpy", "pandas",
      "matplotlib.pyplot")``) so runs inherit them already imported, as BigCodeBench's own
      harness inherits numpy; modules that are not installed are ignored.
    """

    timeout_s: float = 60.0
    cpu_s: float | None = None
    memory_headroom_mb: int = 4096
    nproc: int = 64
    fsize_mb: int = 256
    nofile: int = 256
    max_output_bytes: int = 65536
    network: Literal["block", "allow"] = "block"
    require_network_block: bool = False
    isolate_user: bool = True
    private_tmp: bool = True
    namespaces: bool = True
    watch_paths: tuple[str, ...] | None = None
    extra_env: tuple[tuple[str, str], ...] = ()
    python: str | None = None
    fork_server: bool = True
    preload: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise SandboxError(f"timeout_s must be > 0 seconds, got {self.timeout_s!r}")
        for name in ("memory_headroom_mb", "nproc", "fsize_mb", "nofile", "max_output_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise SandboxError(f"{name} must be a positive integer, got {value!r}")
        if self.network not in ("block", "allow"):
            raise SandboxError(f"network must be 'block' or 'allow', got {self.network!r}")
        for name, _ in self.extra_env:
            if SECRET_NAME.search(name):
                raise SandboxError(
                    f"extra_env: {name!r} looks like a secret or proxy setting; sandboxed code "
                    "must not see it (rename the variable if it is harmless)"
                )

    @property
    def cpu_limit_s(self) -> int:
        """The ``RLIMIT_CPU`` soft limit in seconds."""
        return int(self.cpu_s) if self.cpu_s else math.ceil(self.timeout_s) + 1

    def fingerprint(self) -> dict[str, Any]:
        """The settings that can change a verdict (for cache keys); excludes paths and output caps."""
        return {
            "sandbox_version": SANDBOX_VERSION,
            "cpu_s": self.cpu_limit_s,
            "memory_headroom_mb": self.memory_headroom_mb,
            "nproc": self.nproc,
            "fsize_mb": self.fsize_mb,
            "nofile": self.nofile,
            "network": self.network,
            "python": sys.version.split()[0] if self.python is None else self.python,
        }


@dataclass(frozen=True)
class SandboxResult:
    """What happened in one sandboxed run.

    ``status``: ``ok`` (the process ended by itself, whatever its exit status), ``timeout``
    (wall clock or CPU limit hit; the process group was killed) or ``error`` (the sandbox
    could not run the code: ``error`` says why). ``result`` is the job's JSON result (script
    mode) or ``None``. ``duration_s`` is wall-clock seconds including process start.
    """

    status: Literal["ok", "timeout", "error"]
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    network: NetworkState
    limits: dict[str, Any]
    isolation: dict[str, Any]
    result: Any = None
    error: str | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    writes_outside: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        out = asdict(self)
        out["writes_outside"] = list(self.writes_outside)
        return out


# --------------------------------------------------------------------------- capabilities


@dataclass(frozen=True)
class Capabilities:
    """What isolation this host allows (probed once per process by :func:`capabilities`)."""

    root: bool
    unshare_args: tuple[str, ...]
    unshare_args_net: tuple[str, ...]
    mode: Literal["namespaces-root", "namespaces-user", "process"]
    reason: str
    expose: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


_caps_lock = threading.Lock()
_caps: Capabilities | None = None


def _try(cmd: Sequence[str]) -> bool:
    try:
        done = subprocess.run(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def capabilities() -> Capabilities:
    """Probe (once, thread-safe) whether ``unshare`` works and whether we are root.

    Tries, in order: network + mount + PID + IPC namespaces as root; the same inside a user
    namespace (``--map-root-user``) when not root; a plain process group otherwise.
    """
    global _caps
    with _caps_lock:
        if _caps is None:
            _caps = _probe_capabilities()
        return _caps


def _probe_capabilities() -> Capabilities:
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    unshare = shutil.which("unshare") if sys.platform.startswith("linux") else None
    expose = _expose_plan() if root else ()
    if unshare is None:
        return Capabilities(root, (), (), "process", "unshare not found (Linux util-linux)", expose)
    base = [unshare] if root else [unshare, "--user", "--map-root-user"]
    rest = ["--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc"]
    for extra in (rest, ["--mount", "--pid", "--fork", "--mount-proc", "--ipc"], ["--mount"]):
        args = (*base, *extra)
        if _try([*args, "--net", "true"]):
            mode: Literal["namespaces-root", "namespaces-user"] = (
                "namespaces-root" if root else "namespaces-user"
            )
            return Capabilities(root, args, ("--net",), mode, "ok", expose)
    return Capabilities(root, (), (), "process", "unshare is present but refused to run", expose)


def _others_can_enter(path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return True  # nothing to expose
    return bool(st.st_mode & stat.S_IXOTH)


_PATHS_CODE = (
    "import json, os, sys, sysconfig\n"
    "p = sysconfig.get_paths()\n"
    "print(json.dumps([sys.base_prefix, sys.base_exec_prefix, sys.prefix,\n"
    "    os.path.dirname(os.path.realpath(sys.executable)),\n"
    "    p.get('stdlib'), p.get('platstdlib'), p.get('purelib'), p.get('platlib')]))\n"
)


@functools.lru_cache(maxsize=8)
def interpreter_paths(python: str | None = None) -> tuple[str, ...]:
    """Real paths of the folders an interpreter needs (prefixes, stdlib, site-packages).

    ``python``: the interpreter (default: this one; another one is asked in a subprocess).
    Only the interpreter's own folders: not ``sys.path`` entries such as the current
    project or a test folder, which candidate code must not depend on.
    """
    if python is None or python == sys.executable:
        paths = sysconfig.get_paths()
        found: list[str | None] = [
            sys.base_prefix,
            sys.base_exec_prefix,
            sys.prefix,
            os.path.dirname(os.path.realpath(sys.executable)),
            paths.get("stdlib"),
            paths.get("platstdlib"),
            paths.get("purelib"),
            paths.get("platlib"),
        ]
    else:
        try:
            done = subprocess.run(
                [python, "-s", "-c", _PATHS_CODE],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
                cwd="/",
            )
            found = json.loads(done.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            found = []
    needed = {os.path.realpath(p) for p in found if p and os.path.isdir(p)}
    # a path inside another needed path is covered by it
    return tuple(
        sorted(p for p in needed if not any(p != q and p.startswith(q + "/") for q in needed))
    )


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


@functools.lru_cache(maxsize=8)
def _expose_plan(python: str | None = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Folders the interpreter needs that an unprivileged user cannot enter.

    Returns ``((blocked_ancestor, (needed_path, ...)), ...)``: the bootstrap hides each
    blocked ancestor behind an empty tmpfs and binds only the needed paths back (e.g.
    ``/root`` hidden, ``/root/.pyenv/versions/3.11.7`` visible). Paths under the private
    tmp folders are handled there instead (they are bound back into the private tmpfs).
    """
    plan: dict[str, set[str]] = {}
    for p in interpreter_paths(python):
        if _under(p, TMP_DIRS):
            continue
        parts = Path(p).parts
        for i in range(1, len(parts) + 1):
            anc = str(Path(*parts[:i]))
            if not _others_can_enter(anc):
                plan.setdefault(anc, set()).add(p)
                break
    return tuple((anc, tuple(sorted(paths))) for anc, paths in sorted(plan.items()))


# --------------------------------------------------------------------------- user ids


class _UidLease:
    """An exclusive user id for one sandbox, held with ``flock`` across processes."""

    def __init__(self) -> None:
        folder = Path(tempfile.gettempdir()) / f"pytest-vibecheck-uids-{os.geteuid()}"
        folder.mkdir(mode=0o700, exist_ok=True)
        self.fd = -1
        self.uid = -1
        start = random.randrange(UID_SLOTS)
        for k in range(UID_SLOTS):
            slot = (start + k) % UID_SLOTS
            fd = os.open(folder / f"{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.fd, self.uid = fd, UID_BASE + slot
            return
        raise SandboxError(f"all {UID_SLOTS} sandbox user ids are in use")

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _kill_uid(uid: int) -> None:
    """Kill every process of ``uid`` and wait (up to ~5 s) until none is left."""
    for _ in range(500):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as fh:
                    for line in fh:
                        if line.startswith("Uid:"):
                            if int(line.split()[1]) == uid:
                                found = True
                                with contextlib.suppress(OSError):
                                    os.kill(int(name), signal.SIGKILL)
                            break
            except OSError:
                continue
        if not found:
            return
        time.sleep(0.01)


def _count_own_processes() -> int:
    uid = os.getuid()
    n = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    n += 1
            except OSError:
                continue
    return n


# --------------------------------------------------------------------------- environment


def sandbox_env(home: str, tmpdir: str, settings: SandboxSettings, python: str) -> dict[str, str]:
    """The child's whole environment: a safe minimum, never a secret or proxy variable."""
    bin_dir = os.path.dirname(os.path.abspath(python))
    env = {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": home,
        "TMPDIR": tmpdir,
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "TZ": "UTC",
        "MPLBACKEND": "Agg",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    env.update(dict(settings.extra_env))
    for name in list(env):
        if SECRET_NAME.search(name):  # pragma: no cover - rejected in SandboxSettings
            del env[name]
    return env


# --------------------------------------------------------------------------- write detection


def _snapshot(paths: Sequence[str], limit: int = 200_000) -> dict[str, tuple[int, int]]:
    snap: dict[str, tuple[int, int]] = {}
    for root in paths:
        for folder, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                p = os.path.join(folder, name)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                snap[p] = (st.st_mtime_ns, st.st_size)
                if len(snap) >= limit:
                    return snap
    return snap


def _diff(before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]]) -> list[str]:
    changed = [p for p, v in after.items() if before.get(p) != v]
    changed += [p for p in before if p not in after]
    return sorted(changed)


# --------------------------------------------------------------------------- running


def _drain(
    out_fd: int,
    err_fd: int,
    deadline: float,
    cap: int,
    exited: Callable[[], bool],
    control: socket.socket | None = None,
    early: bytes = b"",
) -> tuple[bytes, bytes, int, int, bool, int | None]:
    """Drain stdout/stderr until EOF or ``deadline``; keep ``cap`` bytes of each.

    ``exited()`` tells whether the main process has ended; when it has but a background
    process keeps the pipes open, stops after 0.5 s. ``control`` is the fork server's
    connection, which delivers ``{"exit": status}``.
    Returns ``(stdout, stderr, stdout_total, stderr_total, timed_out, exit_status)``.
    """
    sel = selectors.DefaultSelector()
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    totals = dict.fromkeys(bufs, 0)
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    control_buf = early
    exit_status: int | None = None
    for line in early.split(b"\n"):
        with contextlib.suppress(ValueError):
            msg = json.loads(line)
            if isinstance(msg, dict) and "exit" in msg:
                exit_status = int(msg["exit"])
    if control is not None:
        control.setblocking(False)
        sel.register(control, selectors.EVENT_READ)
    timed_out = False
    grace_end: float | None = None
    open_pipes = set(bufs)
    waiting_exit = control is not None and exit_status is None
    try:
        while open_pipes or waiting_exit:
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
                    try:
                        data = control.recv(4096)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(control)
                        waiting_exit = False
                        continue
                    control_buf += data
                    for line in control_buf.split(b"\n"):
                        with contextlib.suppress(ValueError):
                            msg = json.loads(line)
                            if isinstance(msg, dict) and "exit" in msg:
                                exit_status = int(msg["exit"])
                                waiting_exit = False
                    continue
                fd = int(key.fd)
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(fd)
                    open_pipes.discard(fd)
                    continue
                totals[fd] += len(data)
                room = cap - len(bufs[fd])
                if room > 0:
                    bufs[fd] += data[:room]
    finally:
        sel.close()
    return (
        bytes(bufs[out_fd]),
        bytes(bufs[err_fd]),
        totals[out_fd],
        totals[err_fd],
        timed_out,
        exit_status,
    )


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


def _rmtree(path: Path) -> None:
    def onerror(func: Any, p: str, exc: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)

    shutil.rmtree(path, onerror=onerror)


_ZYGOTE = Path(__file__).parent / "_child" / "zygote.py"


class _ForkServer:
    """Client side of ``_child/zygote.py``: one server process per (process, interpreter)."""

    def __init__(self, python: str, preload: tuple[str, ...] = ()) -> None:
        self.dir = tempfile.mkdtemp(prefix="vibecheck-fork-")
        self.sock = os.path.join(self.dir, "socket")
        self.owner = os.getpid()
        env = sandbox_env("/", "/tmp", SandboxSettings(), python)
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
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
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


def run_in_sandbox(
    *,
    script: str | os.PathLike[str] | None = None,
    payload: Any = None,
    argv: Sequence[str] | None = None,
    stdin: bytes | None = None,
    settings: SandboxSettings | None = None,
) -> SandboxResult:
    """Run one job in a fresh sandbox and clean up after it.

    Give either ``script`` (a standard-library-only Python file defining
    ``main(payload, result_file)``; it runs inside the sandboxed interpreter and writes
    one JSON line to ``result_file``, returned as :attr:`SandboxResult.result`) or ``argv``
    (a command run with ``exec`` inside the sandbox). ``stdin`` is fed to the process.

    Never raises for anything the code does; sandbox failures come back as
    ``status="error"``. Raises :class:`SandboxError` only for invalid arguments.
    """
    if (script is None) == (argv is None):
        raise SandboxError("give exactly one of script= or argv=")
    settings = settings or SandboxSettings()
    caps = capabilities()
    if not settings.namespaces:
        caps = Capabilities(
            caps.root, (), (), "process", "namespaces disabled in settings", caps.expose
        )
    python = settings.python or sys.executable
    use_ns = caps.mode != "process"
    mount_ns = use_ns and "--mount" in caps.unshare_args
    # Without a mount namespace, an interpreter under a root-only folder (e.g. pyenv in
    # /root) would be unreadable after dropping privileges: keep the user id then.
    expose = (
        caps.expose if python == sys.executable else (_expose_plan(python) if caps.root else ())
    )
    drop_uid = caps.root and settings.isolate_user and (mount_ns or not expose)
    private_tmp = mount_ns and settings.private_tmp
    lease = _UidLease() if drop_uid else None
    base = Path(tempfile.mkdtemp(prefix="vibecheck-sbx-"))
    try:
        return _run(
            base,
            caps,
            settings,
            python,
            use_ns,
            lease,
            private_tmp,
            expose,
            script,
            payload,
            argv,
            stdin,
        )
    finally:
        with contextlib.suppress(OSError):
            _rmtree(base)
        if lease is not None:
            lease.release()


def _run(
    base: Path,
    caps: Capabilities,
    settings: SandboxSettings,
    python: str,
    use_ns: bool,
    lease: _UidLease | None,
    private_tmp: bool,
    expose: tuple[tuple[str, tuple[str, ...]], ...],
    script: str | os.PathLike[str] | None,
    payload: Any,
    argv: Sequence[str] | None,
    stdin: bytes | None,
) -> SandboxResult:
    os.chmod(base, 0o711)
    work = base / "work"
    work.mkdir(mode=0o700)
    tmpdir = base / "tmp"
    tmpdir.mkdir(mode=0o700)
    uid = lease.uid if lease is not None else None
    if uid is not None:
        os.chown(work, uid, uid)
        os.chown(tmpdir, uid, uid)
    headroom = settings.memory_headroom_mb * 1024 * 1024
    nproc = settings.nproc
    if uid is None and not caps.root:
        nproc += _count_own_processes()
    limits_cfg = {
        "cpu_s": settings.cpu_limit_s,
        "as_headroom_bytes": headroom,
        "nproc": nproc if (uid is not None or not caps.root) else None,
        "fsize_bytes": settings.fsize_mb * 1024 * 1024,
        "nofile": settings.nofile,
    }
    cfg: dict[str, Any] = {
        "workdir": str(work),
        "result_path": str(base / "result.jsonl"),
        "mount_ns": use_ns and "--mount" in caps.unshare_args,
        "pid_ns": use_ns and "--pid" in caps.unshare_args,
        "tmp_dirs": list(TMP_DIRS) if private_tmp else [],
        "tmpfs_bytes": settings.fsize_mb * 1024 * 1024,
        "expose": [[a, list(ps)] for a, ps in expose] if uid is not None else [],
        "keep_paths": [p for p in interpreter_paths(python) if _under(p, TMP_DIRS)],
        "uid": uid,
        "gid": uid,
        "limits": limits_cfg,
        "mode": "script" if script is not None else "exec",
        "script": str(script) if script is not None else None,
        "argv": list(argv) if argv is not None else None,
        "payload": payload,
    }
    env = sandbox_env(str(work), "/tmp" if private_tmp else str(tmpdir), settings, python)
    cfg["env"] = env
    cfg["net_ns"] = use_ns and settings.network == "block"
    cfg_path = base / "config.json"
    fd = os.open(cfg_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(cfg, fh)
    cmd: list[str] = []
    if use_ns:
        cmd += list(caps.unshare_args)
        if settings.network == "block":
            cmd += list(caps.unshare_args_net)
        cmd.append("--")
    cmd += [python, "-s", "-c", _RUN_SCRIPT, str(_BOOT), str(cfg_path)]

    watch: tuple[str, ...] = ()
    if settings.watch_paths is not None:
        watch = settings.watch_paths
    elif uid is None or not private_tmp:
        watch = (os.getcwd(),)
    before = _snapshot(watch) if watch else {}

    stdin_fd = os.open(os.devnull, os.O_RDONLY)
    if stdin is not None:
        os.close(stdin_fd)
        with tempfile.TemporaryFile() as fh:
            fh.write(stdin)
            fh.flush()
            stdin_fd = os.dup(fh.fileno())
        os.lseek(stdin_fd, 0, os.SEEK_SET)
    server = (
        _fork_server(python, settings.preload)
        if settings.fork_server
        and caps.mode == "namespaces-root"
        and cfg["pid_ns"]
        and cfg["mount_ns"]
        else None
    )
    start = time.monotonic()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid: int | None = None
    proc: subprocess.Popen[bytes] | None = None
    conn: socket.socket | None = None
    early = b""
    launcher = "fork-server" if server is not None else "subprocess"
    timed_out = False
    exit_status: int | None = None
    try:
        try:
            if server is not None:
                try:
                    conn, pid, early = server.launch(str(cfg_path), [stdin_fd, out_w, err_w])
                except OSError as exc:  # the server died: start an interpreter instead
                    _forget_fork_server((python, settings.preload), server, exc)
                    server = None
                    launcher = "subprocess"
            if server is None:
                proc = subprocess.Popen(
                    cmd,
                    stdin=stdin_fd,
                    stdout=out_w,
                    stderr=err_w,
                    cwd=str(work),
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                )
                pid = proc.pid
        except OSError as exc:
            return _error_result(settings, caps, f"cannot start the sandbox: {exc}", start)
        finally:
            for fd in (stdin_fd, out_w, err_w):
                os.close(fd)
        proc_pid = pid if pid is not None else -1
        out, err, out_total, err_total, timed_out, exit_status = _drain(
            out_r,
            err_r,
            start + settings.timeout_s,
            settings.max_output_bytes,
            (lambda: _exited(proc_pid)) if proc is not None else (lambda: False),
            conn,
            early,
        )
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            if proc is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if proc is not None:
            proc.wait()
            exit_status = proc.returncode
        if conn is not None:
            conn.close()
        os.close(out_r)
        os.close(err_r)
        if uid is not None and (
            "--pid" not in caps.unshare_args or timed_out or exit_status is None
        ):
            # A killed namespace dies asynchronously; make sure nothing of this user id is
            # left before the id is handed to the next sandbox.
            _kill_uid(uid)
    duration = time.monotonic() - start
    writes = _diff(before, _snapshot(watch)) if watch else []

    boot: dict[str, Any] = {}
    boot_error: str | None = None
    job: Any = None
    try:
        lines = (base / "result.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "boot" in obj and not boot:
            boot = obj["boot"]
        elif isinstance(obj, dict) and "boot_error" in obj:
            boot_error = str(obj["boot_error"])
        else:
            job = obj

    stdout, out_trunc = _decode(out, out_total, settings.max_output_bytes)
    stderr, err_trunc = _decode(err, err_total, settings.max_output_bytes)
    network: NetworkState = "blocked" if boot.get("network") == "blocked" else "open"
    guard: WriteGuard = (
        "prevented"
        if (uid is not None and boot.get("uid") == uid and private_tmp)
        else ("detected" if watch else "none")
    )
    limits = {
        "timeout_s": settings.timeout_s,
        "cpu_s": settings.cpu_limit_s,
        "memory_headroom_mb": settings.memory_headroom_mb,
        "address_space_mb": round(boot["address_space_bytes"] / 2**20, 1)
        if "address_space_bytes" in boot
        else None,
        "baseline_mb": round(boot["baseline_bytes"] / 2**20, 1)
        if "baseline_bytes" in boot
        else None,
        "nproc": settings.nproc if limits_cfg["nproc"] is not None else None,
        "fsize_mb": settings.fsize_mb,
        "nofile": settings.nofile,
        "max_output_bytes": settings.max_output_bytes,
    }
    isolation = {
        "mode": caps.mode,
        "reason": caps.reason,
        "uid": boot.get("uid"),
        "pid_namespace": bool(boot.get("pid_ns")),
        "private_tmp": list(boot.get("private_tmp", [])),
        "no_new_privs": bool(boot.get("no_new_privs")),
        "write_guard": guard,
        "watched": list(watch),
        "launcher": launcher,
    }
    rc = exit_status
    status: Literal["ok", "timeout", "error"] = "ok"
    error = None
    if timed_out:
        status = "timeout"
    elif boot_error is not None:
        status, error = "error", f"sandbox setup failed: {boot_error}"
    elif not boot:
        status = "error"
        error = f"sandbox did not start (exit status {rc}): {stderr.strip()[-500:]}"
    elif (
        job is None
        and rc is not None
        and (
            -rc in (signal.SIGXCPU, signal.SIGKILL) or rc - 128 in (signal.SIGXCPU, signal.SIGKILL)
        )
    ):
        status = "timeout"  # CPU limit: SIGXCPU at the soft limit, SIGKILL at the hard one
    if (
        status != "error"
        and settings.network == "block"
        and settings.require_network_block
        and network != "blocked"
    ):
        status, error = "error", f"the network could not be blocked here ({caps.reason})"
    return SandboxResult(
        status=status,
        returncode=rc,
        stdout=stdout,
        stderr=stderr,
        duration_s=duration,
        network=network,
        limits=limits,
        isolation=isolation,
        result=job,
        error=error,
        stdout_truncated=out_trunc,
        stderr_truncated=err_trunc,
        writes_outside=tuple(writes[:100]),
    )


def _error_result(
    settings: SandboxSettings, caps: Capabilities, message: str, start: float
) -> SandboxResult:
    return SandboxResult(
        status="error",
        returncode=None,
        stdout="",
        stderr="",
        duration_s=time.monotonic() - start,
        network="open",
        limits={"timeout_s": settings.timeout_s},
        isolation={"mode": caps.mode, "reason": caps.reason},
        error=message,
    )


# --------------------------------------------------------------------------- probes


def probe_network(settings: SandboxSettings | None = None) -> dict[str, Any]:
    """End-to-end check: can sandboxed code connect to a port listening on 127.0.0.1 here?

    Returns ``{"network": "blocked"|"open", "connected": bool, "detail": str}``; ``network``
    is ``open`` when the connection succeeded.
    """
    import socket

    settings = settings or SandboxSettings(timeout_s=30)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    code = (
        "import socket,sys\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=3).close()\n"
        "    print('CONNECTED')\n"
        "except OSError as e:\n"
        "    print('REFUSED', type(e).__name__, e.errno)\n"
    )
    try:
        res = run_in_sandbox(
            argv=[settings.python or sys.executable, "-c", code], settings=settings
        )
    finally:
        srv.close()
    connected = "CONNECTED" in res.stdout
    return {
        "network": "open" if connected else "blocked",
        "connected": connected,
        "detail": (res.stdout.strip() or res.error or res.stderr.strip())[:300],
        "reported": res.network,
    }


def _errno_name(code: int) -> str:  # pragma: no cover - used in docs examples
    return errno.errorcode.get(code, str(code))
