"""What the tests resolve, by identity, around the candidate's import, its calls and each test
(inside the sandbox; loaded by ``harness.py``; standard library only).

Two kinds of snapshot:

- **hot** (:func:`take_hot`, around every call into the candidate, a fraction of a
  millisecond): the test module's namespace, ``builtins``, ``sys.modules`` and the hooks through
  which code runs later (``gc.callbacks``, ``sys.meta_path``, ``sys.path_hooks``). Any
  difference is the candidate's: the test thread waits while a call runs.
- **full** (:meth:`Index.take`, around the candidate's import and each test): the identity of
  every *behaviour* (function, class, method, descriptor) in every module's namespace
  and in the namespace of each of its classes Python code may change. The index of namespaces
  and their keys is built once (in the fork server, over what it preloaded:
  :meth:`Index.prebuild`; each run refreshes only the namespaces changed since) and grown as
  modules are imported, and kept flat as well (one
  list of namespaces, one of keys, a pair per behaviour), so a snapshot is one C-level
  ``map(getitem, namespaces, keys)`` and ``map(id, ...)`` over every pair, and so is the check
  that nothing changed (then the namespaces are gone through one by one only to name what
  did). :meth:`Index.retake` checks a snapshot and takes the next one in one such pass when
  nothing changed. Around a test, the test's own changes (its patches, which it undoes, or a
  library's it leaves, such as pyfakefs's) are not tampering, so :func:`changes` with ``only=``
  reports only values made by the candidate (its functions, classes, methods).

Module attributes the candidate *assigns* are seen as they happen (``harness.py``'s module
guard); functions changed in place (``__code__``, ``__defaults__``) are refused by the audit
hook (``audit.py``). Values are compared by ``id`` (each snapshot keeps its objects alive, so no
id is reused), never with ``==``; only C-level look-ups run while a snapshot is taken or
compared, so nothing of any object's code runs.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from itertools import compress
from operator import getitem as _getitem
from operator import is_ as _is
from operator import ne
from operator import or_ as _or
from typing import Any

# Pristine references, taken when this file is loaded (before any candidate code runs).
_modules = sys.modules
_sys_dict = sys.__dict__
_type_dict: Any = type.__dict__["__dict__"]
_type_mro: Any = type.__dict__["__mro__"]
_type_flags: Any = type.__dict__["__flags__"]
_type_qualname: Any = type.__dict__["__qualname__"]
_module_dict: Any = vars(type(sys))["__dict__"]
#: The candidate's own module (what it does to its own namespace is its own business).
_CANDIDATE = "__test__"
_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a class Python code cannot change
_gc_callbacks = gc.callbacks
_ModuleType = type(sys)
_DESCRIPTORS = frozenset({property, classmethod, staticmethod,
                          type(type.__dict__["__dict__"]), type(type.__dict__["__name__"])})
#: Special methods through which objects compare or answer the tests' checks.
_STEERING = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__len__",
    "__hash__", "__contains__", "__iter__", "__getitem__", "__getattr__", "__getattribute__",
    "__instancecheck__", "__subclasscheck__", "__array__", "__array_function__",
    "__array_ufunc__", "__index__", "__int__", "__float__", "__sub__", "__rsub__", "__abs__",
    "__round__", "__str__", "__repr__", "__class__", "__call__", "__enter__", "__exit__",
    "equals",
})
#: The label of a test class's namespace in a hot snapshot (every change there is named).
_TESTS_CLASS = "the tests' class "
#: Module attributes that change how every look-up in the module resolves.
_MODULE_HOOKS = ("__getattr__", "__dir__", "__class__")


class _Missing:
    pass


_MISSING = _Missing()


def _keys(space: Any) -> tuple[Any, ...]:
    """The keys of ``space`` whose values are behaviour (C-level checks only: ``callable``
    looks at a type slot; nothing of the value runs). Plain data a library keeps in its
    namespace (flags, caches, counters) changes as it runs and is left out, and so are
    modules (a submodule's name in its package): they are never the candidate's making, so
    :func:`changes` with ``only=`` never names them, and an assignment to a module's
    attribute is seen as it happens by ``harness.py``'s module guard."""
    desc = _DESCRIPTORS
    return tuple([k for k, v in list(space.items()) if callable(v) or type(v) in desc])


def _values(spaces: list[Any], keys: list[Any]) -> list[Any]:
    """The value of each ``(namespace, key)`` pair (``_MISSING`` for a key gone): one C-level
    pass, or one look-up each when a key is gone."""
    try:
        return list(map(_getitem, spaces, keys))
    except KeyError:
        return [space.get(k, _MISSING) for space, k in zip(spaces, keys, strict=True)]


def _behaviours(spaces: list[Any], keys: list[Any]) -> list[bool]:
    """Whether the value of each ``(namespace, key)`` pair is a behaviour, as :func:`_keys`
    decides (``False`` for a key gone): C-level passes only."""
    values = _values(spaces, keys)
    return list(map(_or, map(callable, values),
                    map(_DESCRIPTORS.__contains__, map(type, values))))


class Index:
    """The namespaces a full snapshot covers, with their keys, grown as modules are imported:
    ``(label, namespace, keys, owner class or None)``."""

    def __init__(self) -> None:
        self.spaces: list[tuple[str, Any, tuple[Any, ...], Any]] = []
        self._seen: set[int] = set()
        self._modules: set[str] = set()
        # flat: each behaviour's namespace and key, in the order of ``spaces``
        self._flat_spaces: list[Any] = []
        self._flat_keys: list[Any] = []
        self._space_list: list[Any] = []
        #: after :meth:`prebuild`: every (namespace, key) pair then, flat, whether its value was
        #: a behaviour, and each namespace's size (what :meth:`refresh` checks)
        self._then: tuple[list[Any], list[Any], list[bool], list[int]] | None = None

    def _add(self, label: str, space: Any, owner: Any = None) -> None:
        if id(space) in self._seen:
            return
        self._seen.add(id(space))
        keys = _keys(space)
        self.spaces.append((label, space, keys, owner))
        self._flatten(space, keys)
        self._space_list.append(space)

    def grow(self) -> None:
        """Add the modules imported since the last call, and their classes."""
        for name, module in list(_modules.items()):
            if name in self._modules:
                continue
            self._modules.add(name)
            if name == _CANDIDATE or not issubclass(type(module), _ModuleType):
                continue
            d = _module_dict.__get__(module)
            if type(d) is not dict:
                continue
            self._add(name, d)
            for value in list(d.values()):
                if issubclass(type(value), type) and not _type_flags.__get__(value) & _IMMUTABLE:
                    try:
                        self._add(f"{name}.{_type_qualname.__get__(value)}",
                                  _type_dict.__get__(value), value)
                    except Exception:
                        continue

    def prebuild(self) -> None:
        """Grow the index now, in a process that forks the runs (the fork server, after its
        preloading, before any run's data or code reaches it), and remember every key of
        every namespace and which of them held a behaviour, so that a run forked from it pays
        only :meth:`refresh` instead of reading each namespace's keys again (about 0.3 s with
        pandas and matplotlib imported)."""
        self.grow()
        spaces: list[Any] = []
        keys: list[Any] = []
        for space in self._space_list:
            space_keys = list(space)
            spaces += [space] * len(space_keys)
            keys += space_keys
        self._then = (spaces, keys, _behaviours(spaces, keys),
                      list(map(len, self._space_list)))

    def refresh(self) -> None:
        """After :meth:`prebuild` (in the forked run, before its first snapshot): read anew
        the keys of every namespace whose keys, or whose keys holding a behaviour, changed
        since, so the index is what :meth:`grow` would build now (what the run's own set-up
        imported or set: a lazily loaded submodule's name in its package, say). A few
        C-level passes when nothing changed; nothing of any value runs. A no-op without
        :meth:`prebuild`."""
        if self._then is None:
            return
        spaces, keys, then, sizes = self._then
        self._then = None
        count = len(sizes)
        now = list(map(len, self._space_list[:count]))
        flags = _behaviours(spaces, keys)
        if now == sizes and flags == then:
            return
        owner_of = []  # the namespace of each pair, by its number
        for n, size in enumerate(sizes):
            owner_of += [n] * size
        stale = {n for n in range(count) if now[n] != sizes[n]}
        stale.update(owner_of[at] for at in compress(range(len(flags)), map(ne, flags, then)))
        for n in stale:
            label, space, _space_keys, owner = self.spaces[n]
            self.spaces[n] = (label, space, _keys(space), owner)
        self._flat_spaces, self._flat_keys = [], []
        for _label, space, space_keys, _owner in self.spaces:
            self._flatten(space, space_keys)

    def _flatten(self, space: Any, keys: tuple[Any, ...]) -> None:
        """Append ``space``'s behaviours to the flat records."""
        self._flat_spaces += [space] * len(keys)
        self._flat_keys += keys

    def _records(self, count: int, start: int) -> tuple[list[Any], Any]:
        """The records of the namespaces from the ``count``-th on, whose behaviours start at
        the ``start``-th flat pair: ``(entries, flat)`` as :class:`Snapshot` holds them."""
        spaces, keys = self._flat_spaces[start:], self._flat_keys[start:]
        values = _values(spaces, keys)
        ids = list(map(id, values))
        every = self._space_list[count:]
        sizes = list(map(len, every))
        entries = []
        at = 0
        for (label, space, space_keys, owner), size in zip(self.spaces[count:], sizes,
                                                           strict=True):
            end = at + len(space_keys)
            entries.append((label, space, ids[at:end], values[at:end], space_keys, owner, size))
            at = end
        return entries, (spaces, keys, values, every, sizes)

    def take(self) -> Snapshot:
        """A full snapshot of now (the index refreshed and grown first)."""
        self.refresh()
        self.grow()
        snap = Snapshot()
        snap.spaces, snap.flat = self._records(0, 0)
        _hooks(snap)
        return snap

    def retake(self, snap: Snapshot, limit: int = 5,
               only: Callable[[Any], bool] | None = None) -> tuple[list[str], Snapshot]:
        """``changes(snap, limit, only)`` and a full snapshot of now, as :meth:`take` would
        take it right after (``snap``: this index's last full snapshot). When every behaviour
        in ``snap`` is still the same object, the new snapshot keeps ``snap``'s records (the
        same objects, alive in both) with the namespaces' sizes and the hooks read anew, and
        records only the namespaces of modules imported since: checking and taking cost
        about one pass."""
        count = len(snap.spaces)
        found, sizes = _diff(snap, limit, only)
        if sizes is None or snap.flat is None or count > len(self.spaces):
            return found, self.take()
        self.grow()
        spaces, keys, values, every, old_sizes = snap.flat
        again = Snapshot()
        if sizes == old_sizes:
            again.spaces = snap.spaces[:]
        else:
            again.spaces = [entry if entry[6] == size else (*entry[:6], size)
                            for entry, size in zip(snap.spaces, sizes, strict=True)]
        if len(self.spaces) > count:  # modules imported since: their namespaces, recorded now
            entries, (more, more_keys, more_values, more_every, more_sizes) = self._records(
                count, len(spaces))
            again.spaces += entries
            spaces, keys, values = spaces + more, keys + more_keys, values + more_values
            every, sizes = every + more_every, sizes + more_sizes
        again.flat = (spaces, keys, values, every, sizes)
        _hooks(again)
        return found, again


class Snapshot:
    """The recorded namespaces, ``(label, namespace, ids, values, keys, owner, size)``, and
    the hooks."""

    __slots__ = ("callbacks", "flat", "meta_path", "modules", "path_hooks", "spaces")

    def __init__(self) -> None:
        self.spaces: list[tuple[str, Any, list[int], list[object], tuple[Any, ...], Any, int]] = []
        #: full snapshots: (namespace per behaviour, key per behaviour, its value, every
        #: namespace, its size), the same records as ``spaces``, flat
        self.flat: tuple[list[Any], list[Any], list[int], list[Any], list[int]] | None = None
        self.modules: tuple[list[str], list[int], list[Any]] = ([], [], [])
        self.callbacks: list[object] = []
        self.meta_path: list[object] = []
        self.path_hooks: list[object] = []


def take_hot(test_namespace: dict[str, Any], test_classes: tuple[type, ...] = ()) -> Snapshot:
    """A hot snapshot: the test module, the namespaces of ``test_classes`` (the classes the
    test source defined: any attribute the candidate adds, replaces or deletes there is named),
    ``builtins``, ``sys.modules`` and the hooks."""
    snap = Snapshot()
    spaces: list[tuple[str, Any, Any]] = [
        ("the test module", test_namespace, None),
        ("builtins", _module_dict.__get__(_modules["builtins"]), None),
    ]
    spaces += [(_TESTS_CLASS + _type_qualname.__get__(klass), _type_dict.__get__(klass), klass)
               for klass in test_classes]
    for label, space, owner in spaces:
        keys = tuple(space)
        values = list(map(space.__getitem__, keys))
        snap.spaces.append((label, space, list(map(id, values)), values, keys, owner, len(space)))
    names = list(_modules)
    mods = list(map(_modules.get, names))
    snap.modules = (names, list(map(id, mods)), mods)
    _hooks(snap)
    return snap


def _hooks(snap: Snapshot) -> None:
    snap.callbacks = list(_gc_callbacks)
    snap.meta_path = list(sys.meta_path)
    snap.path_hooks = list(sys.path_hooks)


def _grown(label: str, space: Any, keys: tuple[Any, ...], owner: Any,
           only: Callable[[Any], bool] | None) -> str | None:
    """Why a behaviour added to a class namespace is suspect (a special method through which
    objects compare, or a name that shadows a behaviour of one of the class's bases), else
    None."""
    known = set(keys)
    desc = _DESCRIPTORS
    for key, value in list(space.items()):
        if key in known or not (callable(value) or type(value) in desc):
            continue
        if only is not None and not only(value):
            continue
        if key in _STEERING:
            return f"added {label}.{key}"
        for base in _type_mro.__get__(owner)[1:]:
            inherited = _type_dict.__get__(base).get(key, _MISSING)
            if inherited is not _MISSING and callable(inherited):
                return f"added {label}.{key} over {_type_qualname.__get__(base)}.{key}"
    return None


def changes(snap: Snapshot, limit: int = 5, only: Callable[[Any], bool] | None = None) -> list[str]:
    """Every difference between ``snap`` and now, at most ``limit`` (one line each).
    ``only``: report a replaced or added value only when ``only(value)`` (the candidate's)."""
    return _diff(snap, limit, only)[0]


def _same_objects(snap: Snapshot) -> list[int] | None:
    """For a full snapshot whose every behaviour is still the same object: the sizes of its
    namespaces now (one C-level pass over the flat records: ``operator.is_``, nothing of any
    value runs). None for a hot snapshot, or when a behaviour was replaced or deleted."""
    if snap.flat is None:
        return None
    spaces, keys, values, every, _sizes = snap.flat
    try:
        if not all(map(_is, map(_getitem, spaces, keys), values)):
            return None
    except KeyError:
        return None
    return list(map(len, every))


def _diff(snap: Snapshot, limit: int,
          only: Callable[[Any], bool] | None) -> tuple[list[str], list[int] | None]:
    """:func:`changes`, and the namespaces' sizes now when no behaviour of a full snapshot was
    replaced or deleted (:func:`_same_objects`; then only the namespaces whose size changed
    are gone through), else None."""
    found: list[str] = []
    sizes = _same_objects(snap)
    entries = snap.spaces
    if sizes is not None:
        entries = [e for e, size in zip(snap.spaces, sizes, strict=True) if e[6] != size]
    for label, space, ids, _values, keys, owner, size in entries:
        if len(found) >= limit:
            break
        try:
            now = list(map(id, map(space.__getitem__, keys)))
        except KeyError:
            now = []
        if now != ids:
            for key, old in zip(keys, ids, strict=True):
                value = space.get(key, _MISSING)
                if value is _MISSING:
                    if only is None:
                        found.append(f"deleted {label}.{key}")
                        break
                elif id(value) != old and (only is None or only(value)):
                    found.append(f"replaced {label}.{key}")
                    break
            continue
        if len(space) == size:
            continue
        if label.startswith(_TESTS_CLASS):
            new = [k for k in space if k not in keys]
            why = f"added {label}.{new[0]}" if new else None
        elif owner is not None:
            why = _grown(label, space, keys, owner, only)
        else:
            new = [k for k in _MODULE_HOOKS if k in space and k not in keys]
            why = f"added {label}.{new[0]}" if new and only is None else None
        if why is not None:
            found.append(why)
    names, mod_ids, _mods = snap.modules
    if names:
        now_mods: list[Any] = list(map(_modules.get, names))
        if list(map(id, now_mods)) != mod_ids:
            for name, old_id, module in zip(names, mod_ids, now_mods, strict=True):
                if id(module) != old_id and module is not None:
                    found.append(f"replaced sys.modules[{name!r}]")
                    break
    hooks: tuple[tuple[str, list[Any], list[Any]], ...] = (
        ("gc.callbacks", _gc_callbacks, snap.callbacks),
        ("sys.meta_path", sys.meta_path, snap.meta_path),
        ("sys.path_hooks", sys.path_hooks, snap.path_hooks),
    )
    for hook, now_items, then in hooks:
        if list(map(id, now_items)) != list(map(id, then)):
            new_items = [v for v in now_items if all(v is not w for w in then)]
            if only is None or any(map(only, new_items)):
                found.append(f"changed {hook}")
    return found[:limit], sizes
