"""The one registry of pytest-vibecheck: backends, instructions, checks, selectors, suite loaders.

The registry is filled through the pluggy hook ``pytest_vibecheck_register(registry)``
(:mod:`pytest_vibecheck.hookspecs`). The built-ins register through the same hook as any third
party (:mod:`pytest_vibecheck.compose.builtins`), first (``tryfirst``), so a third party that reuses
a shipped id gets a clear :class:`~pytest_vibecheck.errors.DuplicateIdError`. Implementations
come from

- a module named by an entry point of the group ``pytest_vibecheck`` (:data:`ENTRY_POINT_GROUP`)::

      [project.entry-points.pytest_vibecheck]
      acme = "acme_vibe.plugin"

- a ``conftest.py`` or any pytest plugin (in pytest runs: the hook is one of pytest's hooks);
- the ``vibecheck`` command line loads the entry points and the repository's root
  ``conftest.py`` when it implements the hook (:func:`pytest_vibecheck.compose.build.load_plugins`).

Team instructions as data: ``[tool.vibecheck] instruction_dirs = ["vibe/instructions"]`` holds
TOML files in the shipped schema (``instructions/*.toml``; CONTRIBUTING.md, "Add an instruction",
shows one; :func:`pytest_vibecheck.verify.instructions.load_instruction_file` reads them); their
category is free (``acme``). The registry keeps them in the :class:`InstructionTable` it is built
with (the verification layer's catalog, given by the composition root).

In a pytest run the registry built from ``config.hook`` is made the process's active registry
(:func:`activate`) for the session; elsewhere :func:`get_registry` builds one on first use from
the built-ins and the entry points. Unknown ids raise
:class:`~pytest_vibecheck.errors.UnknownIdError` with close-match suggestions.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pytest_vibecheck.errors import DuplicateIdError, ParameterError, UnknownIdError

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
    "InstructionTable",
    "Registry",
    "SelectorFactory",
    "SuiteLoader",
    "activate",
    "get_registry",
    "set_default_registry",
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


class InstructionTable(Protocol):
    """Where a :class:`Registry` keeps its instructions until they are finalized: the
    verification layer parses and finalizes them
    (:class:`pytest_vibecheck.verify.instructions.InstructionCatalog`, which the composition
    root gives every registry it builds)."""

    def add(self, instruction: Instruction, *, shipped: bool = False) -> None:
        """Add one instruction (DuplicateIdError for a taken id)."""
        ...

    def add_folder(self, folder: str | Path, *, shipped: bool = False) -> None:
        """Add every ``*.toml`` instruction file of ``folder`` (DataFileError)."""
        ...

    def is_shipped(self, instruction_id: str) -> bool:
        """True for an instruction of the shipped taxonomy."""
        ...

    def finalized(self, checks: Collection[str]) -> InstructionRegistry:
        """Every instruction, finalized against the registered built-in ``checks``."""
        ...


class Registry:
    """What a run can use, by id. Built-ins and plugins fill it in ``pytest_vibecheck_register``.

    ``instructions``: where its instructions are kept and finalized (:class:`InstructionTable`;
    :func:`pytest_vibecheck.compose.build.build_registry` gives each registry a
    :class:`~pytest_vibecheck.verify.instructions.InstructionCatalog`).

    Every ``add_*`` method raises :class:`DuplicateIdError` for a taken id (``replace=True``
    overrides, for backends, checks, selectors and loaders) and takes either the object or a
    ``"module:attribute"`` string imported on first use (so registering costs no import).
    ``origin`` names who registered (shown in a clash).
    """

    def __init__(self, instructions: InstructionTable) -> None:
        self.backends: _Table[BackendFactory] = _Table("backend provider")
        self.checks: _Table[Check] = _Table("built-in check")
        self.selectors: _Table[SelectorFactory] = _Table("selector")
        self.suite_loaders: _Table[SuiteLoader] = _Table("source format")
        self._instructions = instructions

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
        self._instructions.add(instruction, shipped=shipped)

    def add_instruction_dir(self, folder: str | Path, *, shipped: bool = False) -> None:
        """Add every ``*.toml`` instruction file of ``folder`` (the shipped schema).

        Raises DataFileError for a missing folder or a malformed file (naming file and field).
        """
        self._instructions.add_folder(folder, shipped=shipped)

    # -- looking up -------------------------------------------------------------

    def instructions(self) -> InstructionRegistry:
        """Every instruction, finalized (conflicts symmetric; each ``verifier.checks`` name
        registered). Raises DataFileError naming the file of a bad reference."""
        return self._instructions.finalized(self.checks.names())

    def is_shipped(self, instruction_id: str) -> bool:
        """True for an instruction of the shipped VeriCode taxonomy."""
        return self._instructions.is_shipped(instruction_id)

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


_active: list[activate] = []
#: ``"module:function"`` (or a function) giving the registry when none is active: the
#: composition root's (:func:`pytest_vibecheck.compose.build.installed_registry`), set by the
#: package (``pytest_vibecheck/__init__.py``) through :func:`set_default_registry`.
_default_provider: list[object] = []


def set_default_registry(provider: Callable[[], Registry] | str) -> None:
    """Name what :func:`get_registry` returns when no registry is active: a function, or
    ``"module:function"`` resolved on first use. The composition root sets it; lower layers
    only ever read the registry they are given or the active one."""
    _default_provider[:] = [provider]


def get_registry() -> Registry:
    """The process's active registry: the pytest session's while one runs (or the command
    line's), else the default one (:func:`set_default_registry`: the built-ins and the
    entry-point plugins). A lazy activation is built here, on first use (raising what its
    builder raises, such as :class:`~pytest_vibecheck.errors.DataFileError`)."""
    if _active:
        return _active[-1].registry
    if not _default_provider:  # pragma: no cover - the package's __init__ always sets one
        raise RuntimeError("no registry is active and no default registry is set")
    provider = _resolve(_default_provider[0])
    registry: Registry = provider()
    return registry


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
