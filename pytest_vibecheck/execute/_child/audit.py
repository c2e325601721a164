"""The audit hook of a run and the guard's installation (inside the sandbox; loaded by
``harness.py``).

A PEP 578 audit hook (which Python code cannot remove) refuses what would reach the harness's
or the tests' frames and objects (``docs/sandbox.md``, "Verdict integrity"): ``sys._getframe`` /
``tb_frame`` / ``gi_frame`` on a stack that holds harness or test code, ``gc.get_referrers`` and
friends, ``sys._current_frames``, tracing and profiling hooks, new audit hooks, raw memory access
through ``ctypes``, ``/proc/*/mem``, changing the classes of ``unittest`` or of the tests,
swapping ``sys.unraisablehook``; each refused attempt is recorded as tampering.
:func:`install_guard` sets it up with the result pipes, ``sys.unraisablehook`` and
``sys._getframe`` of the run, protects and freezes the test framework's classes and may make
``ctypes`` unavailable.
"""

# ruff: noqa: PTH100, PTH118, PTH120
# (os.path, not pathlib: the harness keeps its imports to the minimum it needs.)

from __future__ import annotations

import _thread
import contextlib
import ctypes
import json
import linecache
import os
import sys
import traceback
import types
import unittest
from typing import Any

_parts: dict[str, Any] = globals()["_VIBECHECK_PARTS"]  # loaded before this file (harness.py)
guard = _parts["guard"]
_Encoder = _parts["values"].Encoder

#: Prefix of the line a forked stdin case writes to its stderr when the audit hook refused
#: something (the case's own harness state dies with it).
TAMPER_MARK = b"\0vibecheck-tamper: "

_HERE = os.path.dirname(os.path.abspath(__file__))

#: The files of the sandbox child (this folder; ``harness.CHILD_FILES``).
CHILD_FILES: tuple[str, ...] = globals()["_VIBECHECK_CHILD_FILES"]

# Pristine references, taken when this file is loaded (before any candidate code runs).
_write, _pipe, _set_blocking, _getcwd = os.write, os.pipe, os.set_blocking, os.getcwd
_get_ident = _thread.get_ident
_real_getframe = sys._getframe
_modules = sys.modules
_FunctionType = types.FunctionType
_normpath, _join = os.path.normpath, os.path.join
_Denied = guard.Denied

#: Files whose frames code under test may never see (the harness, its bootstrap, the tests).
PROTECTED_FILES = {os.path.join(_HERE, name) for name in CHILD_FILES} | {"tests.py"}
for _m in ("runpy",):
    with contextlib.suppress(Exception):
        PROTECTED_FILES.add(os.path.realpath(str(__import__(_m).__file__)))

#: Audit events refused outright (each is recorded as tampering).
_DENY = frozenset(
    {
        "sys.addaudithook",
        "sys._current_frames",
        "sys._current_exceptions",
        "gc.get_objects",
        "gc.get_referrers",
        "sys.monitoring.register_callback",
        "cpython._PySys_ClearAuditHooks",
        "ctypes.string_at",
        "ctypes.wstring_at",
        "ctypes.cdata",
        "ctypes.cdata/buffer",
    }
)
_WATCH = _DENY | frozenset(
    {
        "gc.get_referents",
        "sys._getframe",
        "object.__getattr__",
        "object.__setattr__",
        "object.__delattr__",
        "sys.settrace",
        "sys.setprofile",
        "sys.unraisablehook",
        "open",
        "os.symlink",
        "ctypes.call_function",
        "ctypes.dlsym",
        "ctypes.dlsym/handle",
        "import",
        "vibecheck.tamper",
    }
)
CHILD_HIDDEN = frozenset(PROTECTED_FILES)
#: Files whose frames ``sys._getframe`` never returns nor reaches through ``f_back``: the
#: protected ones less ``guard.py``. A candidate thread starts in ``guard.exec_code`` or
#: ``guard.run_one``, whose frames hold only the candidate's own code and namespace (or the
#: test, reached through ``tests.py`` frames, which stay refused), so a frame asked for while
#: the candidate module is imported is the real one: libraries that read their importer's
#: frame at import time (statsmodels' ``PytestTester``: ``sys._getframe(1).f_locals
#: ['__file__']``, reached by ``import seaborn``) get what they expect.
_GETFRAME_PROTECTED = PROTECTED_FILES - {os.path.join(_HERE, "guard.py")}
_FRAME_ATTRS = frozenset({"gi_frame", "cr_frame", "ag_frame"})

# The standard library's traceback summaries (traceback.format_exc, logging.exception,
# multiprocessing and concurrent.futures sending a worker's error back) read ``tb_frame``
# of tracebacks whose frames run on top of the tests' frames. They may, but only when the
# frames cannot leave the traceback module's own code: the reading generator (``walk_tb``,
# or ``_walk_tb_with_full_positions`` from Python 3.11) is advanced directly by
# ``StackSummary`` extraction without ``capture_locals``, both running the pristine code with
# the pristine module globals, and what that code hands the frames' data to (``linecache``
# and its ``lazycache``, ``FrameSummary``) is pristine too: it keeps only file names, line
# numbers and function names. Taken when this file is loaded, before any candidate code.
_TB_GLOBALS = traceback.__dict__
_TB_WALKERS = frozenset(
    f.__code__ for f in (getattr(traceback, "walk_tb", None), getattr(traceback, "_walk_tb_with_full_positions", None))
    if isinstance(f, types.FunctionType)
)
_TB_SUMMARIES = frozenset(
    m.__func__.__code__ for m in (
        traceback.StackSummary.__dict__.get("extract"),
        traceback.StackSummary.__dict__.get("_extract_from_extended_frame_gen"),
    )
    if isinstance(m, classmethod) and isinstance(m.__func__, types.FunctionType)
)
_TB_PRISTINE = (
    ("linecache", linecache),
    ("FrameSummary", traceback.FrameSummary),
)
_LINECACHE_GLOBALS = linecache.__dict__
_LAZYCACHE = linecache.lazycache


def _summary_only(reader: Any) -> bool:
    """True when ``reader`` (the frame reading ``tb_frame``) is the traceback module's walker
    advanced by its summary extraction, as described above (nothing of the frames can reach
    other code)."""
    if reader.f_code not in _TB_WALKERS or reader.f_globals is not _TB_GLOBALS:
        return False
    consumer = reader.f_back
    if consumer is None or consumer.f_code not in _TB_SUMMARIES or consumer.f_globals is not _TB_GLOBALS:
        return False
    if consumer.f_locals.get("capture_locals", True) is not False:
        return False
    if any(_TB_GLOBALS.get(name) is not value for name, value in _TB_PRISTINE):
        return False
    return _LINECACHE_GLOBALS.get("lazycache") is _LAZYCACHE
#: Types whose ``gc.get_referents`` are frames (none can be subclassed).
_FRAME_HOLDERS = frozenset(
    {
        types.FrameType,
        types.TracebackType,
        types.GeneratorType,
        types.CoroutineType,
        types.AsyncGeneratorType,
    }
)
_PROC_DENY = frozenset({"mem", "pagemap", "map_files", "fd", "fdinfo", "environ", "root", "cwd"})
_CTYPES_ADDRS = frozenset(
    int(a)
    for a in (
        getattr(ctypes, "_memmove_addr", 0),
        getattr(ctypes, "_memset_addr", 0),
        getattr(ctypes, "_string_at_addr", 0),
        getattr(ctypes, "_wstring_at_addr", 0),
    )
    if a
)
_CAST_ADDR = int(getattr(ctypes, "_cast_addr", 0) or 0)
_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE (3.10+): type.__setattr__ refuses
_memmove = ctypes.memmove


def _flags_offset() -> int | None:
    """Offset of ``tp_flags`` in a type object, found by looking for a known value."""
    probe = type("_Probe", (), {})
    want = probe.__flags__
    for off in range(0, 512, 8):
        if ctypes.c_ulong.from_address(id(probe) + off).value == want:
            return off
    return None


_FLAGS_OFFSET = _flags_offset()


def freeze(cls: type) -> bool:
    """Make ``cls`` immutable (as built-in types are): setting or deleting one of its
    attributes raises ``TypeError`` from then on, in every thread. True when done."""
    if _FLAGS_OFFSET is None or type(cls) is not type:
        return False
    if not cls.__flags__ & _IMMUTABLE:
        value = ctypes.c_ulong(cls.__flags__ | _IMMUTABLE)
        _memmove(id(cls) + _FLAGS_OFFSET, ctypes.addressof(value), ctypes.sizeof(value))
    return bool(cls.__flags__ & _IMMUTABLE)


#: Modules whose classes are frozen before the candidate runs.
_FROZEN_MODULES = (
    "unittest.case",
    "unittest.loader",
    "unittest.suite",
    "unittest.result",
    "unittest.runner",
    "unittest.util",
    "json.encoder",
    "json.decoder",
)
_ADDRESS_MIN = 1 << 32


def _chain_protected(frame: Any, files: set[str] = PROTECTED_FILES) -> bool:
    n = 0
    while frame is not None and n < 2000:
        if frame.f_code.co_filename in files:
            return True
        frame = frame.f_back
        n += 1
    return False


def _proc_path(path: Any) -> bool:
    """True for a path under ``/proc`` naming memory, file descriptors or roots of a process."""
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    if not isinstance(path, str):
        return False
    full = _normpath(_join(_getcwd(), path)) if not path.startswith("/") else _normpath(path)
    parts = full.split("/")
    return len(parts) > 2 and parts[1] == "proc" and any(p in _PROC_DENY for p in parts[2:])


def _ctypes_call_denied(args: Any) -> bool:
    """A foreign call that reads or writes raw memory: ``memmove``/``memset``/``string_at``,
    ``cast`` of a plain address, or any call passing an address-sized integer."""
    func, params = args[0], args[1]
    if func in _CTYPES_ADDRS:
        return True
    if not isinstance(params, tuple):
        return False
    if func == _CAST_ADDR and params and type(params[0]) is int:
        return True
    for p in params:
        value = p
        if isinstance(p, ctypes._SimpleCData):
            value = p.value
        if type(value) is int and value >= _ADDRESS_MIN:
            return True
    return False


def _audit_reason(
    st: Any, event: str, args: tuple[Any, ...], formatter: types.CodeType
) -> str | None:
    """Why the audit event is refused (``-`` first: refused but not tampering; ``+`` first: a
    module this run does without), or None when it is allowed."""
    if event in _DENY:
        return f"called {event}"
    if event == "gc.get_referents":
        # refused (and recorded) on frames, tracebacks, generators and coroutines, whose
        # referents are the frames the audit hook guards; allowed on anything else, whose
        # referents the caller can reach anyway: pandas < 3 calls it on every chained
        # assignment (NDFrame._check_setitem_copy, on a DataFrame or on None).
        objs = args[0] if args and type(args[0]) is tuple else args
        if any(type(o) in _FRAME_HOLDERS for o in objs):
            return f"called {event}"
        return None
    if event == "sys._getframe":
        if _chain_protected(args[0], _GETFRAME_PROTECTED):
            return "-sys._getframe on the harness's or the tests' frames"
        return None
    if event == "object.__getattr__":
        name = args[1]
        if name == "tb_frame":
            reader = _real_getframe(2)
            if reader.f_code is formatter or _summary_only(reader):
                return None
            if _chain_protected(args[0].tb_frame):
                return "-tb_frame of the harness's or the tests' frames"
        elif name in _FRAME_ATTRS:
            frame = getattr(args[0], name, None)
            if frame is not None and _chain_protected(frame):
                return f"-{name} of the harness's or the tests' frames"
        return None
    if event in ("object.__setattr__", "object.__delattr__"):
        target, name = args[0], args[1]
        if id(target) in st.protected_ids:
            return f"changed {getattr(target, '__qualname__', '?')}.{name}"
        if (
            type(target) is _FunctionType
            and name in ("__code__", "__defaults__", "__kwdefaults__")
            and target.__code__.co_filename in PROTECTED_FILES
        ):
            return f"changed {name} of {target.__qualname__}"
        return None
    if event in ("sys.settrace", "sys.setprofile"):
        return f"called {event}"
    if event == "import":
        name = args[0] if args else ""
        if st.block_ctypes and isinstance(name, str) and (
            name in ("ctypes", "_ctypes") or name.startswith("ctypes.")
        ):
            return "+" + name
        return None
    if event == "sys.unraisablehook":
        return None if args[0] is st.unraisable else "replaced sys.unraisablehook"
    if event == "open":
        return "opened a /proc file of a process" if _proc_path(args[0]) else None
    if event == "os.symlink":
        return "made a link into /proc" if "proc" in str(args[0]) else None
    if event == "ctypes.call_function":
        return "read or wrote raw memory with ctypes" if _ctypes_call_denied(args) else None
    if event in ("ctypes.dlsym", "ctypes.dlsym/handle"):
        name = args[1] if len(args) > 1 else ""
        if isinstance(name, str) and name.startswith(("Py", "_Py", "process_vm", "ptrace")):
            return f"looked up {name} with ctypes"
        return None
    if event == "vibecheck.tamper":
        st.flag(str(args[0]) if args else "tampered")
    return None


def _make_hook(st: Any, formatter: types.CodeType) -> Any:
    """The audit hook of the run (closure over ``st``; referenced by nothing Python can see)."""
    busy: set[int] = set()
    getpid = os.getpid
    get_ident = _get_ident
    denied = _Denied

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in _WATCH:
            return
        tid = get_ident()
        if tid in busy:
            return
        busy.add(tid)
        try:
            reason = _audit_reason(st, event, args, formatter)
        except Exception:
            reason = None
        finally:
            busy.discard(tid)
        if reason is None:
            return
        if reason.startswith("-"):
            raise denied(f"vibecheck sandbox: {reason[1:]} is not allowed")
        if reason.startswith("+"):  # a module this run does without (ctypes)
            raise ModuleNotFoundError(
                f"No module named {reason[1:]!r} (not available in this sandbox)", name=reason[1:]
            )
        st.flag(reason)
        if getpid() != st.pid:  # a forked LiveCodeBench case: tell the harness on stderr
            with contextlib.suppress(OSError):
                _write(2, b"\n" + TAMPER_MARK + reason.encode("utf-8", "replace") + b"\n")
        raise denied(f"vibecheck sandbox: {reason} is not allowed (recorded as tampering)")

    return hook


def _block_ctypes(st: Any) -> None:
    """Make ``ctypes`` unavailable to this run (the evaluator decided the task does not need
    it): raw memory access is the one thing an audit hook cannot follow. Removed from
    ``sys.modules`` and from the modules that hold it; importing it again is refused."""
    names = [n for n in _modules if n in ("ctypes", "_ctypes") or n.startswith("ctypes.")]
    gone = [_modules.pop(n) for n in names]
    for module in list(_modules.values()):
        d = getattr(module, "__dict__", None)
        if type(d) is not dict:
            continue
        for key, value in list(d.items()):
            if any(value is g for g in gone):
                d[key] = None
    st.block_ctypes = True


def install_guard(st: Any, allow_ctypes: bool = True, module: str = "__main__") -> None:
    """Pipes, the audit hook, ``sys.unraisablehook`` and ``sys._getframe`` of this run."""
    st.decoy = guard.make_decoy(module)
    st.tok_r, st.tok_w = _pipe()
    st.done_r, st.done_w = _pipe()
    st.msg_r, st.msg_w = _pipe()
    for fd in (st.tok_r, st.done_r, st.msg_r):
        _set_blocking(fd, False)
    hidden = frozenset(PROTECTED_FILES - {"tests.py"}) | {os.path.dirname(unittest.__file__) + "/"}
    st.unraisable = guard.make_unraisable(st.msg_w, hidden)
    sys.unraisablehook = st.unraisable
    for module_name in list(_modules):
        if module_name == "unittest" or module_name.startswith("unittest."):
            for value in list(vars(_modules[module_name]).values()):
                if isinstance(value, type):
                    st.protect(value)
    for cls in (guard.Denied, json.JSONEncoder, json.JSONDecoder, _Encoder):
        st.protect(cls)
    for module_name in _FROZEN_MODULES:
        frozen = _modules.get(module_name)
        for value in list(vars(frozen).values()) if frozen is not None else ():
            if type(value) is type and getattr(value, "__module__", "") == module_name:
                freeze(value)
    for cls in (_Encoder, guard.Denied):
        freeze(cls)
    if not allow_ctypes:
        _block_ctypes(st)
    sys.addaudithook(_make_hook(st, guard.format_tb.__code__))
    sys._getframe = guard.make_safe_getframe(_real_getframe, st.decoy)
