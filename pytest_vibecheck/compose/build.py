"""The composition root: builds the registry from the built-ins, the entry-point plugins, a
project's root ``conftest.py`` and its team instruction folders.

The container itself (:class:`pytest_vibecheck.registry.Registry`) sits at the bottom of the
package, so every layer can hold one; building it imports every layer's built-ins
(:mod:`pytest_vibecheck.compose.builtins`), so it happens here, at the top. A pytest session
builds its registry from ``config.hook`` (:mod:`pytest_vibecheck.compose.session`); the
``vibecheck`` command line uses :func:`registry_for_project`; anything else gets
:func:`installed_registry`, which the package makes the default
(:func:`pytest_vibecheck.registry.set_default_registry`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError
from pytest_vibecheck.registry import ENTRY_POINT_GROUP, Registry, activate
from pytest_vibecheck.verify.instructions import InstructionCatalog

__all__ = [
    "build_registry",
    "config_file_registry",
    "find_pyproject",
    "installed_registry",
    "instruction_dirs_from_pyproject",
    "load_plugins",
    "registry_for_project",
]


def build_registry(
    call_hook: Callable[[Registry], object], instruction_dirs: Iterable[str | Path] = ()
) -> Registry:
    """A registry filled by ``call_hook(registry)`` (the ``pytest_vibecheck_register`` hook
    of a plugin manager), plus the team instructions of ``instruction_dirs``; finalized here,
    so a bad file or an unknown check fails now, before anything runs."""
    registry = Registry(InstructionCatalog())
    call_hook(registry)
    for folder in instruction_dirs:
        registry.add_instruction_dir(folder)
    registry.instructions()
    return registry


_default: tuple[Registry, tuple[str, ...] | None] | None = None
_default_lock = threading.Lock()


def _entry_point_signature() -> tuple[str, ...]:
    from importlib.metadata import entry_points

    return tuple(sorted(f"{ep.name}={ep.value}" for ep in entry_points(group=ENTRY_POINT_GROUP)))


def installed_registry(*, refresh: bool = False) -> Registry:
    """The built-ins and the entry-point plugins (:func:`load_plugins`), built on first use.
    ``refresh`` rebuilds it when the installed entry points changed since it was built.

    The first build does not list the entry points a second time for their signature
    (pluggy's loader lists them; each listing reads every installed distribution's metadata,
    a good part of a one-file ``vibecheck verify``): the signature is taken at the first
    refresh after it, which rebuilds the registry once."""
    global _default
    with _default_lock:
        if _default is not None and refresh:
            signature = _entry_point_signature()
            if _default[1] != signature:
                _default = (_build_installed(), signature)
        elif _default is None:
            _default = (_build_installed(), None)
        return _default[0]


def _build_installed() -> Registry:
    pm = load_plugins()
    return build_registry(lambda reg: pm.hook.pytest_vibecheck_register(registry=reg))


def _plugin_manager() -> Any:
    import pluggy

    from pytest_vibecheck import hookspecs

    class _Manager(pluggy.PluginManager):
        # As pytest: a module's ``pytest_vibecheck_*`` functions are hook implementations
        # without a marker.
        def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
            opts = super().parse_hookimpl_opts(plugin, name)
            if opts is None and name.startswith("pytest_vibecheck_") and callable(
                getattr(plugin, name, None)
            ):
                return {}
            return opts

    pm = _Manager("pytest")
    pm.add_hookspecs(hookspecs)
    return pm


def load_plugins(conftest: Path | None = None) -> Any:
    """A plugin manager (pluggy) with the built-ins, every ``pytest_vibecheck`` entry point and,
    when given and it implements the hook, ``conftest`` (the command line passes the
    repository's root ``conftest.py``). Its ``hook.pytest_vibecheck_register`` fills a
    registry."""
    from pytest_vibecheck.compose import builtins as builtin_plugin

    pm = _plugin_manager()
    pm.register(builtin_plugin, "vibecheck-builtins")
    pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    if conftest is not None and conftest.is_file():
        text = conftest.read_text(encoding="utf-8", errors="replace")
        if "pytest_vibecheck_register" in text:
            pm.register(_import_file(conftest), f"conftest:{conftest}")
    return pm


def _import_file(path: Path) -> object:
    import importlib.util

    name = f"_vibecheck_conftest_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has a loader
        raise DataFileError(path, "cannot import")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 only
        import tomli as tomllib
    return tomllib


def instruction_dirs_from_pyproject(pyproject: Path) -> list[Path]:
    """``[tool.vibecheck] instruction_dirs`` of ``pyproject`` as absolute folders (relative ones
    are relative to the file's folder); ``[]`` when the file or the key is absent.

    Raises DataFileError for unreadable TOML or a value that is not a list of strings.
    """
    if not pyproject.is_file():
        return []
    tomllib = _tomllib()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DataFileError(pyproject, f"cannot read: {exc}") from None
    value = data.get("tool", {}).get("vibecheck", {}).get("instruction_dirs", [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataFileError(
            pyproject, f"expected a list of folders, got {value!r}", field="tool.vibecheck.instruction_dirs"
        )
    return [p if p.is_absolute() else pyproject.parent / p for p in map(Path, value)]


def registry_for_project(start: Path, extra_dirs: Iterable[Path] = ()) -> Registry:
    """The registry the ``vibecheck`` command line uses in the project around ``start``: the
    built-ins, the entry points, the root ``conftest.py`` when it implements the hook, and the
    ``instruction_dirs`` of the nearest ``pyproject.toml`` plus ``extra_dirs`` (those of a gate
    config file given with ``--config``; the default registry when the project adds none of
    these). Raises VibecheckError for a bad file or a clash."""
    pyproject = find_pyproject(start)
    extra = list(extra_dirs)
    if pyproject is None and not extra:
        return installed_registry(refresh=True)
    mine = instruction_dirs_from_pyproject(pyproject) if pyproject is not None else []
    dirs = list(dict.fromkeys([*mine, *extra]))
    conftest = pyproject.parent / "conftest.py" if pyproject is not None else None
    hooked = conftest is not None and conftest.is_file() and "pytest_vibecheck_register" in (
        conftest.read_text(encoding="utf-8", errors="replace")
    )
    if not dirs and not hooked:
        return installed_registry(refresh=True)
    pm = load_plugins(conftest if hooked else None)
    return build_registry(lambda reg: pm.hook.pytest_vibecheck_register(registry=reg), dirs)


def config_file_registry(config_file: Path | None, start: Path) -> AbstractContextManager[object]:
    """A ``with`` block in which the active registry also holds the team instructions of
    ``config_file``'s ``[tool.vibecheck] instruction_dirs`` (a gate config given with
    ``--config``; relative folders are relative to that file); a block that changes nothing when
    ``config_file`` is None, missing or names no folders. Raises VibecheckError for a bad file
    or a clash."""
    dirs = instruction_dirs_from_pyproject(config_file) if config_file is not None else []
    if not dirs:
        return nullcontext()
    return activate(registry_for_project(start, dirs))


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``, or None."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None
