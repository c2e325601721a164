"""Limits and environment of a sandboxed run: :class:`SandboxSettings`, :func:`sandbox_env`."""

# ruff: noqa: PTH100, PTH120
# (os.path/open on purpose: this low-level code runs at every sandbox start, where
#  importing pathlib costs time, and it works with raw file descriptors and mounts.)

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Literal

from pytest_vibecheck.errors import VibecheckError

#: Bump whenever a change to the sandbox can change a verdict (part of the result-cache key).
SANDBOX_VERSION = 7

NetworkState = Literal["blocked", "open"]
WriteGuard = Literal["prevented", "detected", "none"]

#: Environment variable names that are never passed to sandboxed code (case-insensitive).
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|PROXY", re.IGNORECASE
)

#: World-writable folders hidden behind a private tmpfs when a mount namespace is available.
TMP_DIRS: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


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
    - ``namespaces``: use ``unshare`` when available (``False`` forces a plain process).
    - ``watch_paths``: folders whose files are compared before and after the run to detect
      writes; ``None`` = the current folder when writes cannot be prevented, else none.
    - ``extra_env``: more environment variables (names must not look like secrets).
    - ``python``: interpreter for the child (default: this one).
    - ``fork_server``: start sandboxes by forking a pre-started, pre-imported server process
      (root with namespaces only; same isolation, no interpreter start per run).
    - ``work_mb``: size of the work folder (a ``tmpfs`` of its own when a mount namespace is
      available), MiB.
    - ``visible_paths``: host folders the code may read besides the system's and the
      interpreter's own (with a mount namespace the sandbox has a root of its own that holds
      nothing else of the host: :func:`pytest_vibecheck.execute.isolation.view_plan`).
    - ``max_result_bytes``: bytes of the result channel read (a result that needs more is
      reported as tampering).
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
    namespaces: bool = True
    watch_paths: tuple[str, ...] | None = None
    extra_env: tuple[tuple[str, str], ...] = ()
    python: str | None = None
    fork_server: bool = True
    preload: tuple[str, ...] = ()
    work_mb: int = 256
    visible_paths: tuple[str, ...] = ()
    max_result_bytes: int = 16 << 20

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise SandboxError(f"timeout_s must be > 0 seconds, got {self.timeout_s!r}")
        for name in (
            "memory_headroom_mb",
            "nproc",
            "fsize_mb",
            "nofile",
            "max_output_bytes",
            "work_mb",
            "max_result_bytes",
        ):
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
            "work_mb": self.work_mb,
            "network": self.network,
            "python": sys.version.split()[0] if self.python is None else self.python,
        }



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


