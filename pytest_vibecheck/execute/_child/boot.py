"""Child-side bootstrap of the sandbox (standard library only; run as a script).

``python -s _child/boot.py CONFIG`` is what :func:`pytest_vibecheck.execute.sandbox.run_in_sandbox`
launches, usually inside ``unshare`` (new network, mount, PID and IPC namespaces). It runs
as trusted code *before* any candidate code and, in this order:

1. reads the JSON config (root-only file) and deletes it, so nothing run later can read the
   run's key; the result channel is the pipe on file descriptor 3 and a job's extra pipes follow
   it (4, 5, ...; argv[2] lists the numbers the launcher passed them under: :func:`arrange_fds`);
2. with a mount namespace: builds the sandbox's own root (:func:`_view`): an empty ``tmpfs``
   with only the system's and the interpreter's folders bound read-only, fresh ``/dev``,
   ``/proc``, ``/tmp``, ``/var/tmp`` and ``/dev/shm``, and a size-capped ``tmpfs`` as the
   work folder, then ``pivot_root`` into it: nothing else of the host (the project, the
   benchmark data, home folders, host sockets, other sandboxes) exists there;
3. as PID 1 of a new PID namespace: forks; PID 1 only reaps children, and when the worker
   exits the kernel kills every process left in the namespace;
4. sets the resource limits (address space relative to this process's own size *now*,
   CPU, process count, file size, open files, no core files);
5. drops to an unprivileged, per-sandbox user id (when started as root) with
   ``no_new_privs`` set, makes the process non-dumpable (so no other process of that user
   can ptrace it or open its ``/proc`` files), and changes to the work folder;
6. writes one sealed line of facts (network seen from inside, limits applied) to the result
   channel, then runs the job: a Python script's ``main(payload, channel)`` in this
   process, or ``exec`` of an argument vector.

Every line on the channel is *sealed*: ``MAC JSON`` where MAC is a keyed BLAKE2b of the JSON
text under the run's key (:class:`Channel`). The evaluator accepts only sealed lines, so bytes
that code under test writes to the pipe can never pass for a result.

Exit status 121 means the bootstrap itself failed (reported as a sandbox error, never as a
model failure).
"""

# ruff: noqa: PTH100, PTH102, PTH103, PTH106, PTH108, PTH110, PTH112, PTH114, PTH115, PTH118, PTH120, PTH123, PTH208, PTH211, SIM105
# (os.path/open on purpose: this low-level code runs at every sandbox start, where
#  importing pathlib costs time, and it works with raw file descriptors and mounts.)

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
from typing import Any

BOOT_FAILED = 121

#: Sources of the job script's sibling files, read before the folders are hidden (the
#: harness loads ``guard.py`` and ``compare.py`` from here).
SOURCES: dict[str, str] = {}

#: ``personal`` parameter of the BLAKE2b seal (the evaluator uses the same).
SEAL_PERSON = b"vibecheck-rc1"

_MS_NOSUID = 2
_MS_NODEV = 4
_MS_BIND = 4096
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_DUMPABLE = 4


class Channel:
    """The sealed result channel: every complete line written is sent as ``MAC JSON``.

    ``fd``: the write end of the pipe to the evaluator; ``key``: the run's secret key (bytes).
    References to the C functions used are taken when the class is created, before any code
    under test runs, so patching ``os`` or ``hashlib`` later changes nothing here.
    """

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd = fd
        self._key = key
        self._buf = ""

    def write(
        self, text: str, _mac: Any = hashlib.blake2b, _w: Any = os.write, _str: Any = str
    ) -> int:
        """Send every complete line of ``text`` (with what was buffered before), sealed."""
        data = self._buf + _str.__str__(text)
        *lines, self._buf = data.split("\n")
        for line in lines:
            raw = line.encode("utf-8", "replace")
            seal = _mac(raw, key=self._key, digest_size=16, person=SEAL_PERSON).hexdigest()
            out = seal.encode() + b" " + raw + b"\n"
            while out:
                try:
                    n = _w(self._fd, out)
                except InterruptedError:  # pragma: no cover
                    continue
                except OSError:
                    return 0  # the evaluator is gone
                out = out[n:]
        return len(text)

    def flush(self) -> None:
        """Lines are sent as soon as they are complete; nothing to do."""

    def close(self, _close: Any = os.close) -> None:
        """Close the pipe (in a process that must not write to it)."""
        if self._fd >= 0:
            try:
                _close(self._fd)
            except OSError:
                pass
            self._fd = -1


def _libc() -> object:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _mount(
    libc: object, source: str, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    import ctypes

    fn = libc.mount  # type: ignore[attr-defined]
    rc = fn(
        source.encode(),
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


_MS_RDONLY = 1
_MS_REMOUNT = 32
_MS_REC = 16384
_MNT_DETACH = 2
#: ``pivot_root`` system call numbers (no C library wraps it).
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def _bind_ro(libc: object, source: str, target: str) -> None:
    if os.path.isdir(source):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        with open(target, "a", encoding="utf-8"):
            pass
    _mount(libc, source, target, None, _MS_BIND | _MS_REC, None)
    _mount(libc, "none", target, None,
           _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, None)


def _view(cfg: dict[str, Any], libc: object) -> list[str]:
    """Build the sandbox's own root and move into it: an empty ``tmpfs`` with only the
    ``view`` folders bound read-only (the system and the interpreter's own folders), a fresh
    ``/dev`` with the harmless devices, this run's ``/proc``, private ``tmpfs`` for ``/tmp``,
    ``/var/tmp`` and ``/dev/shm``, the work folder (a size-capped ``tmpfs``), and the masked
    folders hidden again. ``pivot_root`` then leaves nothing else of the host reachable.
    Returns the visible folders."""
    import platform

    view = cfg["view"]
    root = str(view["root"])
    os.makedirs(root, mode=0o755, exist_ok=True)
    _mount(libc, "tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=755,size=16m")
    size = int(cfg.get("tmpfs_bytes") or 256 * 1024 * 1024)
    for folder in ("/tmp", "/var/tmp"):
        os.makedirs(root + folder, mode=0o755, exist_ok=True)
        _mount(libc, "tmpfs", root + folder, "tmpfs", _MS_NOSUID | _MS_NODEV,
               f"mode=1777,size={size}")
    shown: list[str] = []
    for path in view["ro"]:
        if not os.path.lexists(path):
            continue
        if os.path.islink(path) and os.path.dirname(path) == "/":
            os.symlink(os.readlink(path), root + path)  # /bin -> usr/bin on merged /usr
        else:
            _bind_ro(libc, path, root + path)
        shown.append(path)
    dev = root + "/dev"
    os.makedirs(dev, mode=0o755, exist_ok=True)
    _mount(libc, "tmpfs", dev, "tmpfs", _MS_NOSUID, "mode=755,size=64k")
    for name in _DEVICES:
        if os.path.exists("/dev/" + name):
            with open(dev + "/" + name, "a", encoding="utf-8"):
                pass
            _mount(libc, "/dev/" + name, dev + "/" + name, None, _MS_BIND, None)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, dev + "/" + name)
    os.makedirs(dev + "/shm", mode=0o755)
    _mount(libc, "tmpfs", dev + "/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777,size={size}")
    os.makedirs(root + "/proc", mode=0o555, exist_ok=True)
    _mount(libc, "/proc", root + "/proc", None, _MS_BIND | _MS_REC, None)
    work = root + cfg["workdir"]
    os.makedirs(work, mode=0o700, exist_ok=True)
    opts = f"mode=0700,size={int(cfg.get('work_bytes') or size)}"
    if cfg.get("uid") is not None:
        opts += f",uid={int(cfg['uid'])},gid={int(cfg.get('gid', cfg['uid']))}"
    _mount(libc, "tmpfs", work, "tmpfs", _MS_NOSUID | _MS_NODEV, opts)
    for path in view.get("masks", []):
        if os.path.isdir(root + path):
            _mount(libc, "tmpfs", root + path, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_RDONLY,
                   "mode=0,size=4k")
    os.chdir(root)
    os.mkdir(".old-root")
    number = _SYS_PIVOT_ROOT.get(platform.machine())
    if number is not None and libc.syscall(number, b".", b".old-root") == 0:  # type: ignore[attr-defined]
        os.chroot(".")
        os.chdir("/")
        libc.umount2(b"/.old-root", _MNT_DETACH)  # type: ignore[attr-defined]
        os.rmdir("/.old-root")
    else:  # no pivot_root here: chroot, which an unprivileged process cannot leave
        os.rmdir(".old-root")
        os.chroot(".")
        os.chdir("/")
    return shown


def _loopback_up() -> None:
    """Bring ``lo`` up in the new network namespace (``SIOCSIFFLAGS``).

    Tests that run a server and a client on ``localhost`` inside the sandbox then work; the
    host's own ``127.0.0.1`` stays unreachable (it belongs to another namespace).
    """
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, siocgifflags, req))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


def _vm_size_bytes() -> int:
    with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _set_limits(cfg: dict[str, Any], facts: dict[str, Any]) -> None:
    lim = cfg["limits"]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = lim.get("cpu_s")
    if cpu:
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu) + 1))
    fsize = lim.get("fsize_bytes")
    if fsize:
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(fsize), int(fsize)))
    nofile = lim.get("nofile")
    if nofile:
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(nofile), int(nofile)))
    nproc = lim.get("nproc")
    if nproc:
        # Absolute value computed by the parent (it adds the evaluator's own processes when
        # the sandbox keeps the evaluator's user id).
        resource.setrlimit(resource.RLIMIT_NPROC, (int(nproc), int(nproc)))
    headroom = lim.get("as_headroom_bytes")
    if headroom:
        baseline = _vm_size_bytes()
        value = baseline + int(headroom)
        resource.setrlimit(resource.RLIMIT_AS, (value, value))
        facts["baseline_bytes"] = baseline
        facts["address_space_bytes"] = value


def _drop_privileges(cfg: dict[str, Any], libc: object) -> None:
    uid = cfg.get("uid")
    if uid is None:
        return
    gid = cfg.get("gid", uid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:  # pragma: no cover - kernel guarantees
        raise OSError("could not drop privileges")


def _no_new_privs(libc: object) -> bool:
    try:
        rc = libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # type: ignore[attr-defined]
    except Exception:
        return False
    return bool(rc == 0)


def _not_dumpable(libc: object) -> bool:
    """``PR_SET_DUMPABLE`` 0: processes of the same user cannot ptrace this one or open its
    ``/proc/PID`` files (``mem``, ``fd``); True when that took effect."""
    try:
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)  # type: ignore[attr-defined]
    except Exception:
        return False


def _network_state() -> str:
    """``blocked`` when this process sees no network interface except loopback.

    ``/proc/net/dev`` lists the interfaces of the reader's own network namespace.
    """
    try:
        with open("/proc/net/dev", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()[2:]
    except OSError:
        return "unknown"
    names = {line.split(":", 1)[0].strip() for line in lines if ":" in line}
    return "blocked" if names <= {"lo"} else "open"


def _reap_as_init(worker: int) -> None:
    """PID 1 of the namespace: reap every child; exit with the worker's status."""
    status = 0
    while True:
        try:
            pid, wstatus = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:  # pragma: no cover
            continue
        if pid == worker:
            code = os.waitstatus_to_exitcode(wstatus)
            status = code if code >= 0 else 128 - code
            break
    os._exit(status)


def enter(cfg: dict[str, Any], out: object, pid1: bool) -> None:
    """Steps 2-6 of the module docstring; writes the facts line (or ``boot_error`` and exits).

    ``pid1``: this process is PID 1 of a new PID namespace (fork a worker, reap as init).
    """
    facts: dict[str, Any] = {"pid_ns": False, "private_tmp": [], "uid": None, "no_new_privs": False}
    try:
        libc = _libc()
        if cfg.get("mount_ns") and cfg.get("view"):
            facts["view"] = _view(cfg, libc)
            facts["hidden"] = list(cfg["view"].get("masks", []))
            facts["private_tmp"] = ["/tmp", "/var/tmp", "/dev/shm"]
            facts["work_bytes"] = int(cfg.get("work_bytes") or 0)
        if cfg.get("net_ns"):
            _loopback_up()
        if pid1:
            facts["pid_ns"] = True
            sys.stdout.flush()
            sys.stderr.flush()
            # a job that runs the candidate only in processes it forks (``runner.py``) is PID 1
            # itself: no process of its namespace can then signal it (the kernel drops
            # SIGKILL and SIGSTOP sent to a namespace's init from inside)
            worker = 0 if cfg.get("job_is_init") else os.fork()
            if worker:
                _reap_as_init(worker)
        _set_limits(cfg, facts)
        _drop_privileges(cfg, libc)
        if cfg.get("uid") is not None:
            facts["uid"] = os.getuid()
        facts["no_new_privs"] = _no_new_privs(libc)
        facts["dumpable"] = not _not_dumpable(libc)
        os.chdir(cfg["workdir"])
        facts["network"] = _network_state()
    except BaseException as exc:
        out.write(json.dumps({"boot_error": f"{type(exc).__name__}: {exc}"}) + "\n")  # type: ignore[attr-defined]
        out.flush()  # type: ignore[attr-defined]
        os._exit(BOOT_FAILED)
    out.write(json.dumps({"boot": facts}) + "\n")  # type: ignore[attr-defined]
    out.flush()  # type: ignore[attr-defined]


def run_job(
    cfg: dict[str, Any], out: object, source: str | None, namespace: dict[str, Any] | None = None
) -> None:
    """Run the job: ``exec`` an argument vector, or call the script's ``main(payload, out)``."""
    if cfg["mode"] == "exec":
        out.close()  # type: ignore[attr-defined]
        argv = cfg["argv"]
        os.execvpe(argv[0], argv, dict(os.environ))
    sys.path.insert(0, cfg["workdir"])
    sys.argv = ["candidate.py"]
    if namespace is None:
        import builtins

        namespace = {
            "__name__": "_vibecheck_job",
            "__file__": cfg["script"],
            "__builtins__": dict(builtins.__dict__),
            "_VIBECHECK_SOURCES": dict(SOURCES),
        }
        exec(compile(source or "", cfg["script"], "exec"), namespace)
    namespace["main"](cfg.get("payload"), out)


def load_config(path: str) -> dict[str, Any]:
    """Read the run's config and delete the file: its key must not outlive this read."""
    with open(path, encoding="utf-8") as fh:
        cfg: dict[str, Any] = json.load(fh)
    try:
        os.unlink(path)
    except OSError:
        pass
    return cfg


def open_job(
    cfg: dict[str, Any], result_fd: int, need_source: bool = True
) -> tuple[Channel, str | None]:
    """The sealed result channel on ``result_fd``, and the job script read while still
    privileged."""
    source = None
    if cfg["mode"] != "exec" and need_source:
        # read now: the script's folder may be hidden by the private tmpfs or unreadable later
        with open(cfg["script"], encoding="utf-8") as fh:
            source = fh.read()
        folder = os.path.dirname(os.path.abspath(cfg["script"]))
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    SOURCES[name] = fh.read()
    return Channel(result_fd, bytes.fromhex(cfg["key"])), source


def arrange_fds(fds: list[int]) -> None:
    """Put ``fds`` (the result pipe, then the job's extra pipes) at descriptors 3, 4, ... as the
    fork server's children have them, whatever numbers the launcher passed them under."""
    import fcntl

    base = 3 + len(fds)
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, base) for fd in fds]
    for fd in fds:
        if fd not in high:
            try:
                os.close(fd)
            except OSError:
                pass
    for target, fd in enumerate(high, start=3):
        os.dup2(fd, target)
        os.close(fd)


def main() -> None:
    cfg = load_config(sys.argv[1])
    arrange_fds([int(x) for x in sys.argv[2].split(",")])
    out, source = open_job(cfg, 3)
    enter(cfg, out, pid1=bool(cfg.get("pid_ns")) and os.getpid() == 1)
    run_job(cfg, out, source)


if __name__ == "__main__":
    main()
