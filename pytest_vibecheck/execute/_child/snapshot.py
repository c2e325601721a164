"""Snapshots of the test framework and of the modules the tests import (inside the sandbox;
loaded by ``harness.py``): references taken before the candidate runs (:func:`take`) and
compared after its import and after every test (:func:`verify`); every difference is recorded
as tampering.
"""

from __future__ import annotations

import sys
import types
from typing import Any

# Pristine references, taken when this file is loaded (before any candidate code runs).
_sys_dict = sys.__dict__
_modules = sys.modules
_FunctionType, _ModuleType = types.FunctionType, types.ModuleType
_BuiltinType, _MethodType = types.BuiltinFunctionType, types.MethodType
_dict_get, _dict_items = dict.get, dict.items

_KEEP = (_FunctionType, _BuiltinType, _MethodType, _ModuleType)


def _kept(value: object) -> bool:
    # type(), never isinstance(): isinstance reads ``__class__``, which a lazy proxy computes
    # (django.conf.settings: ImproperlyConfigured before the tests configure it)
    kind = type(value)
    return issubclass(kind, (*_KEEP, type)) or kind.__name__ == "ufunc"


def take(names: list[str]) -> list[tuple[str, object, dict[str, Any], dict[str, object]]]:
    """Identity of every function, class and module in ``builtins``, ``unittest.*`` and the
    modules the tests import (with their module attributes, e.g. ``numpy.testing``)."""
    mod: Any
    wanted: dict[str, Any] = {
        name: mod
        for name, mod in list(_modules.items())
        if name in ("builtins", "unittest") or name.startswith("unittest.")
    }
    for name in (*names, "json", "json.encoder", "json.decoder"):
        mod = _modules.get(name)
        if type(mod) is not _ModuleType or name == "sys":
            continue
        wanted[name] = mod
        for attr, value in list(vars(mod).items()):
            if type(value) is _ModuleType and not attr.startswith("_") and value is not sys:
                wanted.setdefault(f"{name}.{attr}", value)
    out: list[tuple[str, object, dict[str, Any], dict[str, object]]] = []
    for name, mod in wanted.items():
        d = vars(mod)
        private_ok = name == "builtins" or name.startswith("unittest")
        entries = {
            k: v for k, v in list(d.items()) if (private_ok or not k.startswith("_")) and _kept(v)
        }
        out.append((name, mod, d, entries))
    return out


def verify(st: Any, when: str) -> None:
    """Compare the snapshot with now; every difference is recorded as tampering."""
    if _sys_dict.get("modules") is not _modules:
        st.flag(f"replaced sys.modules {when}")
    for name, mod, d, entries in st.snapshot:
        if name in st.in_sys and _dict_get(_modules, name) is not mod:
            st.flag(f"replaced sys.modules[{name!r}] {when}")
        for key, value in _dict_items(entries):
            if _dict_get(d, key) is not value:
                st.flag(f"replaced {name}.{key} {when}")
                break
