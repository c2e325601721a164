"""The one registry of pytest-vibecheck: backends, instructions, checks, selectors, suite loaders.

The registry is filled through the pluggy hook ``pytest_vibecheck_register(registry)``
(:mod:`pytest_vibecheck.hookspecs`). The built-ins register through the same hook as any third
party (:mod:`pytest_vibecheck.builtin_plugin`), first (``tryfirst``), so a third party that reuses
a shipped id gets a clear :class:`~pytest_vibecheck.errors.DuplicateIdError`. Implementations
come from

- a module named by an entry point of the group ``pytest_vibecheck`` (:data:`ENTRY_POINT_GROUP`)::

      [project.entry-points.pytest_vibecheck]
      acme = "acme_vibe.plugin"

- a ``conftest.py`` or any pytest plugin (in pytest runs: the hook is one of pytest's hooks);
- the ``vibecheck`` command line loads the entry points and the repository's root
  ``conftest.py`` when it implements the hook (:func:`load_plugins`).

Team instructions as data: ``[tool.vibecheck] instruction_dirs = ["vibe/instructions"]`` holds
TOML files in the shipped schema (``docs/instructions.md``); their category is free (``acme``).

In a pytest run the registry built from ``config.hook`` is made the process's active registry
(:func:`activate`) for the session; elsewhere :func:`get_registry` builds one on first use from
the built-ins and the entry points. Unknown ids raise
:class:`~pytest_vibecheck.errors.UnknownIdError` with close-match suggestions.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pytest_vibecheck.errors import DataFileError, DuplicateIdError, ParameterError, UnknownIdError

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends.base import Backend, BackendSettings
    from pytest_vibecheck.suites.problem import Problem
    from pytest_vibecheck.suites.selectors.base import Selector
    from pytest_vibecheck.verify.instructions import Instruction, InstructionRegistry
    from pytest_vibecheck.verify.verdict import Violation

__all__ = [
    "ENTRY_POINT_GROUP",
    "BackendFactory",
    "Check",
    "Registry",
    "SelectorFactory",
    "SuiteLoader",
    "activate",
    "build_registry",
    "find_pyproject",
    "get_registry",
    "installed_registry",
    "instruction_dirs_from_pyproject",
    "load_plugins",
    "registry_for_project",
]

#: Entry-point group of pytest-vibecheck plugins (modules implementing the hook).
ENTRY_POINT_GROUP = "pytest_vibecheck"

#: ``(model, settings) -> Backend`` for specs ``provider:model``.
BackendFactory = Callable[[str, "BackendSettings"], "Backend"]
#: ``text -> violations`` (the reply or the extracted code, per the instruction's target).
Check = Callable[[str], "list[Violation]"]
#: ``(model, cache_path=..., settings=...) -> Selector`` for specs ``kind`` or ``kind:model``.
SelectorFactory = Callable[..., "Selector"]
#: ``(path, **options) -> problems`` for ``vibecheck augment SOURCE --source-format NAME``.
SuiteLoader = Callable[..., "list[Problem]"]

T = TypeVar("T")


def _resolve(target: object) -> Any:
    """An object, or the object named by ``"module:attribute"`` (imported on first use)."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass
class _Entry(Generic[T]):
    target: T | str
    origin: str
    options: Mapping[str, Any]

    def get(self) -> T:
        if isinstance(self.target, str):
            self.target = _resolve(self.target)
        return self.target  # type: ignore[return-value]


class _Table(Generic[T]):
    """Named entries of one kind; unknown names raise UnknownIdError with suggestions."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, _Entry[T]] = {}
        self._lock = threading.Lock()

    def add(
        self, name: str, target: T | str, origin: str, *, replace: bool = False, **options: Any
    ) -> None:
        if not name or not isinstance(name, str):
            raise ParameterError(f"{self.kind} name {name!r} must be a non-empty string")
        with self._lock:
            old = self._entries.get(name)
            if old is not None and not replace:
                raise DuplicateIdError(
                    f"{self.kind} {name!r} is already registered (by {old.origin}); "
                    f"{origin} cannot register it again: pick another name"
                )
            self._entries[name] = _Entry(target, origin, dict(options))

    def remove(self, name: str) -> None:
        with self._lock:
            self._entries.pop(name, None)

    def entry(self, name: str) -> _Entry[T]:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownIdError(self.kind, name, self._entries) from None

    def get(self, name: str) -> T:
        return self.entry(name).get()

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        return sorted(self._entries)


class Registry:
    """What a run can use, by id. Built-ins and plugins fill it in ``pytest_vibecheck_register``.

    Every ``add_*`` method raises :class:`DuplicateIdError` for a taken id (``replace=True``
    overrides, for backends, checks, selectors and loaders) and takes either the object or a
    ``"module:attribute"`` string imported on first use (so registering costs no import).
    ``origin`` names who registered (shown in a clash).
    """

    def __init__(self) -> None:
        self.backends: _Table[BackendFactory] = _Table("backend provider")
        self.checks: _Table[Check] = _Table("built-in check")
        self.selectors: _Table[SelectorFactory] = _Table("selector")
        self.suite_loaders: _Table[SuiteLoader] = _Table("source format")
        self._instructions: dict[str, Instruction] = {}
        self._shipped: set[str] = set()
        self._finalized: InstructionRegistry | None = None
        self._lock = threading.Lock()

    # -- registering ------------------------------------------------------------

    def add_backend(
        self,
        provider: str,
        factory: BackendFactory | str,
        *,
        model_optional: bool = False,
        origin: str = "a plugin",
        replace: bool = False,
    ) -> None:
        """Make ``provider:MODEL`` specs build backends with ``factory(model, settings)``.

        ``model_optional``: the bare spec ``provider`` is valid (as ``reference``). Raises
        ParameterError for a provider name containing ``:``.
        """
        if not provider or ":" in provider:
            raise ParameterError(
                f"backend provider name {provider!r} must be non-empty and contain no ':'"
            )
        self.backends.add(provider, factory, origin, replace=replace, model_optional=model_optional)

    def add_check(
        self,
        name: str,
        check: Check | str,
        *,
        nothing_but_syntax: Callable[[str], bool] | None = None,
        origin: str = "a plugin",
        replace: bool = False,
    ) -> None:
        """A built-in check ``check(text) -> list[Violation]`` that instructions name in
        ``verifier.checks``. ``nothing_but_syntax(text)`` may say cheaply that the check can
        find nothing but a syntax error in ``text`` (then it is skipped when Ruff parsed it)."""
        self.checks.add(name, check, origin, replace=replace, nothing_but_syntax=nothing_but_syntax)

    def add_selector(
        self,
        kind: str,
        factory: SelectorFactory | str,
        *,
        needs_model: bool = False,
        origin: str = "a plugin",
        replace: bool = False,
    ) -> None:
        """An augmentation selector: spec ``kind`` (or ``kind:MODEL`` when ``needs_model``)
        builds ``factory(model, cache_path=..., settings=...)`` (``settings``: the model
        backends' ``BackendSettings`` or None, for selectors that call a model)."""
        self.selectors.add(kind, factory, origin, replace=replace, needs_model=needs_model)

    def add_suite_loader(
        self, name: str, loader: SuiteLoader | str, *, origin: str = "a plugin", replace: bool = False
    ) -> None:
        """A source format for ``vibecheck augment --source-format`` (``loader(path, **options)``)."""
        self.suite_loaders.add(name, loader, origin, replace=replace)

    def add_instruction(self, instruction: Instruction, *, shipped: bool = False) -> None:
        """Add one instruction. Raises DuplicateIdError when the id is taken (a team
        instruction may never reuse a shipped id)."""
        with self._lock:
            old = self._instructions.get(instruction.id)
            if old is not None:
                what = "the shipped instruction" if old.id in self._shipped else "instruction"
                raise DuplicateIdError(
                    f"instruction id {instruction.id!r} in {instruction.source} clashes with "
                    f"{what} {old.id!r} ({old.source}); give it another id"
                )
            self._instructions[instruction.id] = instruction
            if shipped:
                self._shipped.add(instruction.id)
            self._finalized = None

    def add_instruction_dir(self, folder: str | Path, *, shipped: bool = False) -> None:
        """Add every ``*.toml`` instruction file of ``folder`` (the shipped schema).

        Raises DataFileError for a missing folder or a malformed file (naming file and field).
        """
        from pytest_vibecheck.verify.instructions import load_instruction_file

        path = Path(folder)
        if not path.is_dir():
            raise DataFileError(path, "instruction folder does not exist (instruction_dirs)")
        for file in sorted(path.glob("*.toml")):
            self.add_instruction(load_instruction_file(file, known_checks=()), shipped=shipped)

    # -- looking up -------------------------------------------------------------

    def instructions(self) -> InstructionRegistry:
        """Every instruction, finalized (conflicts symmetric; each ``verifier.checks`` name
        registered). Raises DataFileError naming the file of a bad reference."""
        with self._lock:
            if self._finalized is None:
                from pytest_vibecheck.verify.instructions import InstructionRegistry

                for inst in self._instructions.values():
                    for check in inst.verifier.checks:
                        if check not in self.checks:
                            unknown = UnknownIdError("built-in check", check, self.checks.names())
                            raise DataFileError(inst.source, str(unknown), field="verifier.checks")
                self._finalized = InstructionRegistry(self._instructions.values()).finalize()
            return self._finalized

    def is_shipped(self, instruction_id: str) -> bool:
        """True for an instruction of the shipped VeriCode taxonomy."""
        return instruction_id in self._shipped

    def check(self, name: str) -> Check:
        """The built-in check ``name``; UnknownIdError with suggestions."""
        return self.checks.get(name)

    def nothing_but_syntax(self, name: str) -> Callable[[str], bool] | None:
        """The check's quick "only a syntax error could be found" test, if it has one."""
        quick: Callable[[str], bool] | None = self.checks.entry(name).options["nothing_but_syntax"]
        return quick

    def backend_factory(self, provider: str) -> BackendFactory:
        """The factory of ``provider``; UnknownIdError with suggestions."""
        return self.backends.get(provider)

    def model_optional(self, provider: str) -> bool:
        """True when ``provider`` needs no model (``reference``)."""
        return bool(self.backends.entry(provider).options["model_optional"])

    def selector(self, spec: str) -> tuple[SelectorFactory, str]:
        """``(factory, model)`` for a selector spec ``kind`` or ``kind:MODEL``."""
        kind, sep, model = spec.partition(":")
        kinds = [k + (":MODEL" if self.selectors.entry(k).options["needs_model"] else "")
                 for k in self.selectors.names()]
        if kind not in self.selectors:
            raise UnknownIdError("selector", spec, kinds)
        needs = bool(self.selectors.entry(kind).options["needs_model"])
        if needs != bool(sep and model):
            raise UnknownIdError("selector", spec, kinds)
        return self.selectors.get(kind), model

    def suite_loader(self, name: str) -> SuiteLoader:
        """The loader of source format ``name``; UnknownIdError with suggestions."""
        return self.suite_loaders.get(name)


# ---------------------------------------------------------------- building and activating


def build_registry(
    call_hook: Callable[[Registry], object], instruction_dirs: Iterable[str | Path] = ()
) -> Registry:
    """A registry filled by ``call_hook(registry)`` (the ``pytest_vibecheck_register`` hook
    of a plugin manager), plus the team instructions of ``instruction_dirs``; finalized here,
    so a bad file or an unknown check fails now, before anything runs."""
    registry = Registry()
    call_hook(registry)
    for folder in instruction_dirs:
        registry.add_instruction_dir(folder)
    registry.instructions()
    return registry


_active: list[activate] = []
_default: tuple[Registry, tuple[str, ...]] | None = None
_default_lock = threading.Lock()


def _entry_point_signature() -> tuple[str, ...]:
    from importlib.metadata import entry_points

    return tuple(sorted(f"{ep.name}={ep.value}" for ep in entry_points(group=ENTRY_POINT_GROUP)))


def get_registry() -> Registry:
    """The process's active registry: the pytest session's while one runs (or the command
    line's), else :func:`installed_registry`. A lazy activation is built here, on first use
    (raising what its builder raises, such as :class:`~pytest_vibecheck.errors.DataFileError`)."""
    if _active:
        return _active[-1].registry
    return installed_registry()


def installed_registry(*, refresh: bool = False) -> Registry:
    """The built-ins and the entry-point plugins (:func:`load_plugins`), built on first use.
    ``refresh`` rebuilds it when the installed entry points changed since it was built."""
    global _default
    with _default_lock:
        signature = _entry_point_signature() if refresh or _default is None else _default[1]
        if _default is None or _default[1] != signature:
            pm = load_plugins()
            _default = (build_registry(lambda reg: pm.hook.pytest_vibecheck_register(registry=reg)), signature)
        return _default[0]


class activate:
    """Make ``registry`` the active one until :meth:`close` (or the ``with`` block ends).

    ``registry`` is a :class:`Registry`, or a function building one: then it is built on first
    use (:attr:`registry`, :func:`get_registry`), once, so a process that never looks anything
    up never pays for the build (a pytest session that does not use the plugin)."""

    def __init__(self, registry: Registry | Callable[[], Registry]) -> None:
        self._registry = registry if isinstance(registry, Registry) else None
        self._build = None if isinstance(registry, Registry) else registry
        self._lock = threading.Lock()
        _active.append(self)

    @property
    def built(self) -> bool:
        """True once the registry exists (given, or built by a first use)."""
        return self._registry is not None

    @property
    def registry(self) -> Registry:
        """The registry, built now if this is its first use (a failed build is tried again at
        the next use)."""
        with self._lock:
            if self._registry is None:
                assert self._build is not None
                self._registry = self._build()
            return self._registry

    def close(self) -> None:
        """Restore the registry active before (idempotent)."""
        if self in _active:
            _active.remove(self)

    def __enter__(self) -> Registry:
        return self.registry

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    from pytest_vibecheck import builtin_plugin

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


def registry_for_project(start: Path) -> Registry:
    """The registry the ``vibecheck`` command line uses in the project around ``start``: the
    built-ins, the entry points, the root ``conftest.py`` when it implements the hook, and the
    ``instruction_dirs`` of the nearest ``pyproject.toml`` (the default registry when the
    project adds neither). Raises VibecheckError for a bad file or a clash."""
    pyproject = find_pyproject(start)
    if pyproject is None:
        return installed_registry(refresh=True)
    dirs = instruction_dirs_from_pyproject(pyproject)
    conftest = pyproject.parent / "conftest.py"
    hooked = conftest.is_file() and "pytest_vibecheck_register" in conftest.read_text(
        encoding="utf-8", errors="replace"
    )
    if not dirs and not hooked:
        return installed_registry(refresh=True)
    pm = load_plugins(conftest if hooked else None)
    return build_registry(lambda reg: pm.hook.pytest_vibecheck_register(registry=reg), dirs)


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``, or None."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None
