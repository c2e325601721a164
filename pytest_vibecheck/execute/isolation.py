"""What isolation the host allows, the folders a run needs or must not see, and user ids."""

# ruff: noqa: PTH110, PTH112, PTH114, PTH116, PTH118, PTH120, PTH123, PTH208
# (os.path/open on purpose: this low-level code runs at every sandbox start, where
#  importing pathlib costs time, and it works with raw file descriptors and mounts.)

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pytest_vibecheck.execute.limits import SandboxError

#: World-writable folders hidden behind a private tmpfs when a mount namespace is available.
TMP_DIRS: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


#: Range of user ids handed out to sandboxes (one per concurrent sandbox) when run as root.
UID_BASE = 1_800_000
UID_SLOTS = 4096



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




#: System folders every sandbox sees, read-only, when they exist (the interpreter's own folders
#: are added by :func:`view_plan`).
SYSTEM_PATHS: tuple[str, ...] = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys",
)

_SITE_CODE = (
    "import json, sysconfig\n"
    "p = sysconfig.get_paths()\n"
    "print(json.dumps([p.get('purelib'), p.get('platlib')]))\n"
)


@functools.lru_cache(maxsize=8)
def site_dirs(python: str | None = None) -> tuple[str, ...]:
    """Real paths of an interpreter's ``site-packages`` folders."""
    if python is None or python == sys.executable:
        paths = sysconfig.get_paths()
        found: list[str | None] = [paths.get("purelib"), paths.get("platlib")]
    else:
        try:
            done = subprocess.run([python, "-s", "-c", _SITE_CODE], capture_output=True,
                                  text=True, timeout=60, check=True, cwd="/")
            found = json.loads(done.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            found = []
    return tuple(sorted({os.path.realpath(p) for p in found if p and os.path.isdir(p)}))


@functools.lru_cache(maxsize=32)
def view_plan(
    python: str | None, extra: tuple[str, ...] = ()
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a sandbox with a mount namespace sees: ``(visible, masked)``.

    ``visible``: the folders bound read-only into its otherwise empty root, outermost first:
    the system folders (:data:`SYSTEM_PATHS`), the interpreter's own folders (prefixes,
    standard library, ``site-packages``: :func:`interpreter_paths`) and ``extra``. Nothing
    else of the host exists there: not the project or its caches, not the benchmark data, not
    home folders, ``/run`` (host sockets), ``/mnt``, ``/srv`` or another sandbox's folders.
    ``masked``: folders inside those that are hidden again behind an empty ``tmpfs``: this
    package where an interpreter has it installed (its shipped suites hold expected outputs).
    """
    wanted = {p for p in SYSTEM_PATHS if os.path.lexists(p)}
    wanted.update(interpreter_paths(python))
    wanted.update(os.path.realpath(p) for p in extra if os.path.exists(p))
    ordered = sorted(wanted, key=lambda p: (p.count("/"), p))
    visible: list[str] = []
    for path in ordered:
        top_link = os.path.islink(path) and os.path.dirname(path) == "/"
        real = path if top_link else os.path.realpath(path)
        if any(_under(real, (v,)) for v in visible if not os.path.islink(v)):
            continue  # already inside a visible folder
        visible.append(path)
    masked = [os.path.join(site, "pytest_vibecheck") for site in site_dirs(python)]
    return tuple(visible), tuple(m for m in masked if os.path.isdir(m))
