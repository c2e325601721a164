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

stdout and stderr are captured and truncated to ``max_output_bytes`` each. The job's result
comes back on a pipe of its own as sealed lines (:mod:`pytest_vibecheck.execute.channel`).

The parts live in small modules: :mod:`~pytest_vibecheck.execute.limits` (settings and
environment), :mod:`~pytest_vibecheck.execute.isolation` (capabilities, folders, user ids),
:mod:`~pytest_vibecheck.execute.forkserver` (the zygote client),
:mod:`~pytest_vibecheck.execute.streams` (output pipes) and
:mod:`~pytest_vibecheck.execute.channel` (the result channel); this module runs one job.
"""

# ruff: noqa: PTH101, PTH109, PTH118, PTH120
# (os.path/open on purpose: this low-level code runs at every sandbox start, where
#  importing pathlib costs time, and it works with raw file descriptors and mounts.)

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_vibecheck.execute.channel import ChannelRead, case_line, read_channel
from pytest_vibecheck.execute.forkserver import (
    _RUN_SCRIPT,
    _forget_fork_server,
    _fork_server,
    _ForkServer,
    shutdown_fork_servers,
)
from pytest_vibecheck.execute.isolation import (
    TMP_DIRS,
    UID_BASE,
    UID_SLOTS,
    Capabilities,
    _count_own_processes,
    _expose_plan,
    _kill_uid,
    _UidLease,
    capabilities,
    interpreter_paths,
    view_plan,
)
from pytest_vibecheck.execute.limits import (
    SANDBOX_VERSION,
    SECRET_NAME,
    SandboxError,
    SandboxSettings,
    sandbox_env,
)
from pytest_vibecheck.execute.streams import _decode, _drain, _exited

__all__ = [
    "BOOT_FAILED",
    "SANDBOX_VERSION",
    "SECRET_NAME",
    "TMP_DIRS",
    "UID_BASE",
    "UID_SLOTS",
    "Capabilities",
    "SandboxError",
    "SandboxResult",
    "SandboxSettings",
    "capabilities",
    "interpreter_paths",
    "probe_network",
    "run_in_sandbox",
    "sandbox_env",
    "shutdown_fork_servers",
]

#: Exit status of the bootstrap when it could not set the sandbox up.
BOOT_FAILED = 121

NetworkState = Literal["blocked", "open"]
WriteGuard = Literal["prevented", "detected", "none"]

_BOOT = Path(__file__).parent / "_child" / "boot.py"

#: File descriptor of the result pipe inside a sandbox started by the fork server.
_SERVER_RESULT_FD = 3


@dataclass(frozen=True)
class SandboxResult:
    """What happened in one sandboxed run.

    ``status``: ``ok`` (the process ended by itself, whatever its exit status), ``timeout``
    (wall clock or CPU limit hit; the process group was killed) or ``error`` (the sandbox
    could not run the code: ``error`` says why). ``result`` is the job's JSON result (script
    mode; only a sealed line counts) or ``None``; ``channel_problems`` lists what else was on
    the result channel (bytes the harness did not write, too much data): evidence that the
    code under test tampered with it; ``started``: the harness said that candidate code ran;
    ``stopped``: the caller stopped the run (``watch`` or ``stop_fd`` of :func:`run_in_sandbox`)
    before it ended. ``duration_s`` is wall-clock seconds including process start.
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
    channel_problems: tuple[str, ...] = ()
    started: bool = False
    stopped: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        out = asdict(self)
        out["writes_outside"] = list(self.writes_outside)
        return out


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


def _rmtree(path: Path) -> None:
    def onerror(func: Any, p: str, exc: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)

    shutil.rmtree(path, onerror=onerror)


@dataclass
class _Plan:
    """Everything decided before a run starts (paths, user id, the config the child reads)."""

    base: Path
    caps: Capabilities
    settings: SandboxSettings
    python: str
    use_ns: bool
    uid: int | None
    private_tmp: bool
    cfg: dict[str, Any]
    cfg_path: Path
    env: dict[str, str]
    key: bytes
    watch: tuple[str, ...]


@dataclass
class _Outcome:
    """What a run produced, before it is interpreted."""

    out: bytes = b""
    err: bytes = b""
    out_total: int = 0
    err_total: int = 0
    result: bytes = b""
    result_total: int = 0
    timed_out: bool = False
    exit_status: int | None = None
    launcher: str = "subprocess"
    error: str | None = None
    stopped: bool = False


def run_in_sandbox(
    *,
    script: str | os.PathLike[str] | None = None,
    payload: Any = None,
    argv: Sequence[str] | None = None,
    stdin: bytes | None = None,
    settings: SandboxSettings | None = None,
    extra_fds: Sequence[int] = (),
    watch: Callable[[dict[str, Any]], bool] | None = None,
    stop_fd: int | None = None,
    job_is_init: bool = False,
) -> SandboxResult:
    """Run one job in a fresh sandbox and clean up after it.

    Give either ``script`` (a standard-library-only Python file defining
    ``main(payload, channel)``; it runs inside the sandboxed interpreter and writes one JSON
    line to ``channel``, returned as :attr:`SandboxResult.result`) or ``argv`` (a command run
    with ``exec`` inside the sandbox). ``stdin`` is fed to the process.

    ``extra_fds``: descriptors the job gets as 4, 5, ... (at most four); this function owns
    them and closes them once the job has them (or when it could not start). ``watch``: called with each ``{"case": ...}`` line of the job as it
    arrives (sealed lines only); when it returns True the run is stopped at once
    (:attr:`SandboxResult.stopped`). ``stop_fd``: the run is stopped as soon as this descriptor
    becomes readable (another thread's decision). ``job_is_init``: the job runs as PID 1 of its
    PID namespace, so no process it starts can signal it (for a job that runs untrusted code
    only in processes it forks).

    Never raises for anything the code does; sandbox failures come back as
    ``status="error"``. Raises :class:`SandboxError` only for invalid arguments.
    """
    pending = list(extra_fds)
    try:
        if len(pending) > 4:
            raise SandboxError("at most four extra descriptors")
        return _run(script, payload, argv, stdin, settings, pending, watch, stop_fd, job_is_init)
    finally:
        for fd in pending:
            with contextlib.suppress(OSError):
                os.close(fd)


def _run(
    script: str | os.PathLike[str] | None,
    payload: Any,
    argv: Sequence[str] | None,
    stdin: bytes | None,
    settings: SandboxSettings | None,
    pending: list[int],
    watch: Callable[[dict[str, Any]], bool] | None,
    stop_fd: int | None,
    job_is_init: bool = False,
) -> SandboxResult:
    if (script is None) == (argv is None):
        raise SandboxError("give exactly one of script= or argv=")
    settings = settings or SandboxSettings()
    caps = capabilities()
    if not settings.namespaces:
        caps = Capabilities(
            caps.root, (), (), "process", "namespaces disabled in settings", caps.expose
        )
    python = settings.python or sys.executable
    mount_ns = caps.mode != "process" and "--mount" in caps.unshare_args
    # Without a mount namespace, an interpreter under a root-only folder (e.g. pyenv in
    # /root) would be unreadable after dropping privileges: keep the user id then.
    expose = (
        caps.expose if python == sys.executable else (_expose_plan(python) if caps.root else ())
    )
    drop_uid = caps.root and settings.isolate_user and (mount_ns or not expose)
    lease = _UidLease() if drop_uid else None
    base = Path(tempfile.mkdtemp(prefix="vibecheck-sbx-"))
    try:
        plan = _plan(base, caps, settings, python, lease, expose, script, payload, argv,
                     job_is_init)
        before = _snapshot(plan.watch) if plan.watch else {}
        start = time.monotonic()
        outcome = _launch_and_wait(plan, stdin, start, pending, watch, stop_fd)
        if outcome.error is not None:
            return _error_result(settings, caps, outcome.error, start)
        duration = time.monotonic() - start
        writes = _diff(before, _snapshot(plan.watch)) if plan.watch else []
        return _assemble(plan, outcome, duration, writes)
    finally:
        with contextlib.suppress(OSError):
            _rmtree(base)
        if lease is not None:
            lease.release()


def _plan(
    base: Path,
    caps: Capabilities,
    settings: SandboxSettings,
    python: str,
    lease: _UidLease | None,
    expose: tuple[tuple[str, tuple[str, ...]], ...],
    script: str | os.PathLike[str] | None,
    payload: Any,
    argv: Sequence[str] | None,
    job_is_init: bool = False,
) -> _Plan:
    """Folders, limits and the config file of one run (written root-only; the child deletes
    it once read, with the run's key in it)."""
    use_ns = caps.mode != "process"
    mount_ns = use_ns and "--mount" in caps.unshare_args
    private_tmp = mount_ns  # the sandbox's own root has its own /tmp
    os.chmod(base, 0o711)
    work = base / "work"
    work.mkdir(mode=0o700)
    tmpdir = base / "tmp"
    tmpdir.mkdir(mode=0o700)
    uid = lease.uid if lease is not None else None
    if uid is not None:
        os.chown(work, uid, uid)
        os.chown(tmpdir, uid, uid)
    nproc = settings.nproc
    if uid is None and not caps.root:
        nproc += _count_own_processes()
    visible, masked = view_plan(python, tuple(settings.visible_paths))
    key = os.urandom(32)
    cfg: dict[str, Any] = {
        "workdir": str(work),
        "key": key.hex(),
        "mount_ns": mount_ns,
        "pid_ns": use_ns and "--pid" in caps.unshare_args,
        "tmpfs_bytes": settings.fsize_mb * 1024 * 1024,
        "work_bytes": settings.work_mb * 1024 * 1024 if mount_ns else None,
        "view": {"root": str(base / "root"), "ro": list(visible), "masks": list(masked)}
        if mount_ns else None,
        "uid": uid,
        "gid": uid,
        "limits": {
            "cpu_s": settings.cpu_limit_s,
            "as_headroom_bytes": settings.memory_headroom_mb * 1024 * 1024,
            "nproc": nproc if (uid is not None or not caps.root) else None,
            "fsize_bytes": settings.fsize_mb * 1024 * 1024,
            "nofile": settings.nofile,
        },
        "mode": "script" if script is not None else "exec",
        "script": str(script) if script is not None else None,
        "argv": list(argv) if argv is not None else None,
        "payload": payload,
        "net_ns": use_ns and settings.network == "block",
        "job_is_init": job_is_init,
    }
    env = sandbox_env(str(work), "/tmp" if private_tmp else str(tmpdir), settings, python)
    cfg["env"] = env
    cfg_path = base / "config.json"
    fd = os.open(cfg_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(cfg, fh)
    watch: tuple[str, ...] = ()
    if settings.watch_paths is not None:
        watch = settings.watch_paths
    elif not mount_ns:  # with its own root the run cannot even see the host's folders
        watch = (os.getcwd(),)
    return _Plan(
        base, caps, settings, python, use_ns, uid, private_tmp, cfg, cfg_path, env, key, watch
    )


def _stdin_fd(stdin: bytes | None) -> int:
    if stdin is None:
        return os.open(os.devnull, os.O_RDONLY)
    with tempfile.TemporaryFile() as fh:
        fh.write(stdin)
        fh.flush()
        fd = os.dup(fh.fileno())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _server_for(plan: _Plan) -> _ForkServer | None:
    s = plan.settings
    if (
        s.fork_server
        and plan.caps.mode == "namespaces-root"
        and plan.cfg["pid_ns"]
        and plan.cfg["mount_ns"]
    ):
        return _fork_server(plan.python, s.preload)
    return None


def _launch_and_wait(
    plan: _Plan,
    stdin: bytes | None,
    start: float,
    pending: list[int] | None = None,
    watch: Callable[[dict[str, Any]], bool] | None = None,
    stop_fd: int | None = None,
) -> _Outcome:
    """Start the child (fork server, else ``unshare ... python boot.py``), drain its pipes
    until it ends, the wall clock runs out or the run is stopped (``watch``, ``stop_fd``), and
    make sure nothing of it is left."""
    settings = plan.settings
    extra_fds = tuple(pending or ())
    stdin_fd = _stdin_fd(stdin)
    server = _server_for(plan)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    got = _Outcome(launcher="fork-server" if server is not None else "subprocess")
    pid: int | None = None
    proc: subprocess.Popen[bytes] | None = None
    conn = None
    early = b""
    try:
        try:
            if server is not None:
                try:
                    conn, pid, early = server.launch(
                        str(plan.cfg_path), [stdin_fd, out_w, err_w, res_w, *extra_fds]
                    )
                except OSError as exc:  # the server died: start an interpreter instead
                    _forget_fork_server((plan.python, settings.preload), server, exc)
                    server = None
                    got.launcher = "subprocess"
            if server is None:
                proc = subprocess.Popen(
                    _command(plan, (res_w, *extra_fds)),
                    stdin=stdin_fd,
                    stdout=out_w,
                    stderr=err_w,
                    cwd=plan.cfg["workdir"],
                    env=plan.env,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=(res_w, *extra_fds),
                )
                pid = proc.pid
        except OSError as exc:
            got.error = f"cannot start the sandbox: {exc}"
            return got
        finally:
            for fd in (stdin_fd, out_w, err_w, res_w, *extra_fds):
                os.close(fd)
            if pending is not None:
                pending.clear()
        proc_pid = pid if pid is not None else -1
        drained = _drain(
            out_r,
            err_r,
            start + settings.timeout_s,
            settings.max_output_bytes,
            (lambda: _exited(proc_pid)) if proc is not None else (lambda: False),
            conn,
            early,
            result_fd=res_r,
            result_cap=settings.max_result_bytes,
            on_result=_watcher(plan.key, watch) if watch is not None else None,
            stop_fd=stop_fd,
        )
        (got.out, got.err, got.out_total, got.err_total, got.timed_out, got.exit_status,
         got.result, got.result_total, got.stopped) = drained
    finally:
        _reap(plan, pid, proc, got)
        if conn is not None:
            conn.close()
        for fd in (out_r, err_r, res_r):
            os.close(fd)
    return got


def _command(plan: _Plan, fds: tuple[int, ...]) -> list[str]:
    cmd: list[str] = []
    if plan.use_ns:
        cmd += list(plan.caps.unshare_args)
        if plan.settings.network == "block":
            cmd += list(plan.caps.unshare_args_net)
        cmd.append("--")
    return [*cmd, plan.python, "-s", "-c", _RUN_SCRIPT, str(_BOOT), str(plan.cfg_path),
            ",".join(map(str, fds))]


def _watcher(key: bytes, watch: Callable[[dict[str, Any]], bool]) -> Callable[[bytes], bool]:
    """Feeds ``watch`` each sealed ``{"case": ...}`` line of the result pipe as it arrives;
    True (stop the run) as soon as ``watch`` says so. Unsealed bytes are left to
    :func:`~pytest_vibecheck.execute.channel.read_channel`, which reports them."""
    buf = bytearray()

    def feed(data: bytes) -> bool:
        buf.extend(data)
        while True:
            end = buf.find(b"\n")
            if end < 0:
                return False
            line = bytes(buf[:end])
            del buf[: end + 1]
            case = case_line(line, key)
            if case is not None and watch(case):
                return True

    return feed


def _reap(
    plan: _Plan, pid: int | None, proc: subprocess.Popen[bytes] | None, got: _Outcome
) -> None:
    """Kill the child's process group (and namespace) and wait for it."""
    if pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        if proc is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait()
        got.exit_status = proc.returncode
    if plan.uid is not None and (
        "--pid" not in plan.caps.unshare_args or got.timed_out or got.exit_status is None
    ):
        # A killed namespace dies asynchronously; make sure nothing of this user id is
        # left before the id is handed to the next sandbox.
        _kill_uid(plan.uid)


def _limits_and_isolation(
    plan: _Plan, boot: Mapping[str, Any], launcher: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    settings = plan.settings
    guard: WriteGuard = (
        "prevented"
        if (plan.uid is not None and boot.get("uid") == plan.uid and plan.private_tmp)
        else ("detected" if plan.watch else "none")
    )

    def mib(name: str) -> float | None:
        value = boot.get(name)
        return round(value / 2**20, 1) if isinstance(value, (int, float)) else None

    limits = {
        "timeout_s": settings.timeout_s,
        "cpu_s": settings.cpu_limit_s,
        "memory_headroom_mb": settings.memory_headroom_mb,
        "address_space_mb": mib("address_space_bytes"),
        "baseline_mb": mib("baseline_bytes"),
        "nproc": settings.nproc if plan.cfg["limits"]["nproc"] is not None else None,
        "fsize_mb": settings.fsize_mb,
        "nofile": settings.nofile,
        "work_mb": settings.work_mb if boot.get("work_bytes") else None,
        "max_output_bytes": settings.max_output_bytes,
    }
    isolation = {
        "mode": plan.caps.mode,
        "reason": plan.caps.reason,
        "uid": boot.get("uid"),
        "pid_namespace": bool(boot.get("pid_ns")),
        "private_tmp": list(boot.get("private_tmp") or []),
        "view": list(boot.get("view") or []),
        "hidden": list(boot.get("hidden") or []),
        "no_new_privs": bool(boot.get("no_new_privs")),
        "dumpable": bool(boot.get("dumpable", True)),
        "write_guard": guard,
        "watched": list(plan.watch),
        "launcher": launcher,
    }
    return limits, isolation


def _status(
    plan: _Plan, got: _Outcome, channel: ChannelRead, network: NetworkState, stderr: str
) -> tuple[Literal["ok", "timeout", "error"], str | None]:
    rc = got.exit_status
    if got.timed_out and not got.stopped:
        return "timeout", None
    if channel.boot_error is not None:
        return "error", f"sandbox setup failed: {channel.boot_error}"
    if channel.boot is None:
        return "error", f"sandbox did not start (exit status {rc}): {stderr.strip()[-500:]}"
    s = plan.settings
    if s.network == "block" and s.require_network_block and network != "blocked":
        return "error", f"the network could not be blocked here ({plan.caps.reason})"
    killed = (signal.SIGXCPU, signal.SIGKILL)
    if channel.job is None and rc is not None and (-rc in killed or rc - 128 in killed):
        return "timeout", None  # CPU limit: SIGXCPU at the soft limit, SIGKILL at the hard one
    return "ok", None


def _assemble(plan: _Plan, got: _Outcome, duration: float, writes: list[str]) -> SandboxResult:
    channel = read_channel(
        got.result, got.result_total, plan.key, plan.settings.max_result_bytes
    )
    boot = channel.boot or {}
    cap = plan.settings.max_output_bytes
    stdout, out_trunc = _decode(got.out, got.out_total, cap)
    stderr, err_trunc = _decode(got.err, got.err_total, cap)
    network: NetworkState = "blocked" if boot.get("network") == "blocked" else "open"
    limits, isolation = _limits_and_isolation(plan, boot, got.launcher)
    status, error = _status(plan, got, channel, network, stderr)
    return SandboxResult(
        status=status,
        returncode=got.exit_status,
        stdout=stdout,
        stderr=stderr,
        duration_s=duration,
        network=network,
        limits=limits,
        isolation=isolation,
        result=channel.job,
        error=error,
        stdout_truncated=out_trunc,
        stderr_truncated=err_trunc,
        writes_outside=tuple(writes[:100]),
        channel_problems=channel.problems,
        started=channel.started,
        stopped=got.stopped,
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
