"""The audit hook of an in-process test run and what it guards (inside the sandbox; loaded by
``harness.py``; standard library only).

The tests of the ``bigcodebench-unittest`` kind share the candidate's interpreter, so the run's
threads are of two kinds: *trusted* ones (the harness's main thread and the test threads, on
which no candidate code ever runs: ``calls.py``'s tracer reports any that does) and the
candidate's (its import, every call into it, and any thread it starts). A PEP 578 audit hook,
which Python code cannot remove, refuses on the candidate's threads what would reach the tests'
or the harness's objects, and each refusal is recorded as tampering:

- frames of the tests or of the harness: ``tb_frame``, ``gi_frame``, ``cr_frame``,
  ``ag_frame`` and ``sys._getframe`` whose frame chain holds test or harness code (the
  candidate's own frames, its own exceptions' tracebacks included, are always allowed: a call
  thread's stack holds nothing else), the code and defaults of test or harness functions;
- ``gc.get_objects`` / ``get_referrers`` (and ``get_referents`` of frames, tracebacks,
  generators and coroutines), ``sys._current_frames``, ``sys._current_exceptions``;
- changing ``__code__``, ``__defaults__`` or ``__kwdefaults__`` of a function that is not the
  candidate's, giving a module a class of the candidate's, adding an audit hook;
- ``/proc/*/mem``, ``fd``, ``environ`` and the like, links into ``/proc``, raw memory through
  ``ctypes`` (and ``ctypes`` altogether when the task does not need it).

On trusted threads the hook refuses only new audit hooks: library code there (``logging``,
``typing``, ``traceback``, pandas) reads frames as it does anywhere. Alarms go to the alarm
pipe at once (``Alarm``): a record the candidate can add to but never take back.
"""

# ruff: noqa: PTH100, PTH118, PTH120
# (os.path, not pathlib: the sandbox's scripts keep their imports to the minimum they need.)

from __future__ import annotations

import _thread
import contextlib
import ctypes
import os
import sys
import types
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))

#: The files of the sandbox child (``harness.CHILD_FILES``).
CHILD_FILES: tuple[str, ...] = globals().get("_VIBECHECK_CHILD_FILES", ())
#: The file name the test source is compiled under.
TEST_FILE = "tests.py"
#: The file name the candidate is compiled under.
CANDIDATE_FILE = "candidate.py"

# Pristine references, taken when this file is loaded (before any candidate code runs).
_write = os.write
_get_ident = _thread.get_ident
_modules = sys.modules
_FunctionType, _ModuleType = types.FunctionType, types.ModuleType
_normpath, _join, _getcwd = os.path.normpath, os.path.join, os.getcwd

#: Files whose frames and functions the candidate may never reach: the harness and the tests.
PROTECTED_FILES = frozenset({os.path.join(_HERE, name) for name in CHILD_FILES}
                            | {TEST_FILE, "<vibecheck-proxy>", "<vibecheck-tracer>",
                               "<vibecheck-guard>"})

_DENY = frozenset(
    {
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
        "sys.addaudithook",
        "gc.get_referents",
        "sys._getframe",
        "object.__getattr__",
        "object.__setattr__",
        "object.__delattr__",
        "open",
        "os.symlink",
        "ctypes.call_function",
        "ctypes.dlsym",
        "ctypes.dlsym/handle",
        "import",
    }
)
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_FUNC_ATTRS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
_FRAME_HOLDERS = frozenset(
    {types.FrameType, types.TracebackType, types.GeneratorType, types.CoroutineType,
     types.AsyncGeneratorType}
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
_ADDRESS_MIN = 1 << 32
_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE (3.10+): type.__setattr__ refuses
_memmove = ctypes.memmove


class Denied(RuntimeError):
    """Raised by the sandbox's audit hook for an operation the tests' integrity forbids."""


class Alarm:
    """Where tampering is reported: one line per reason on a pipe the harness's main thread
    reads. Writing is all it can do; what is written stays written."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __call__(self, reason: str, _w: Any = _write) -> None:
        with contextlib.suppress(OSError):
            _w(self.fd, (reason.replace("\n", " ")[:300] + "\n").encode("utf-8", "replace"))


# ------------------------------------------------------------------------------ freezing


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
FROZEN_MODULES = (
    "unittest.case",
    "unittest.loader",
    "unittest.suite",
    "unittest.result",
    "unittest.runner",
    "unittest.util",
)


def freeze_framework() -> None:
    """Freeze the classes of the test framework (``unittest``)."""
    for name in FROZEN_MODULES:
        module = _modules.get(name)
        for value in list(vars(module).values()) if module is not None else ():
            if type(value) is type and getattr(value, "__module__", "") == name:
                freeze(value)


# ------------------------------------------------------------------------------ the policy


#: The harness's files alone (:data:`PROTECTED_FILES` without the tests').
HARNESS_FILES = PROTECTED_FILES - {TEST_FILE}


def _chain_protected(frame: Any, files: frozenset[str] = PROTECTED_FILES) -> bool:
    """True when ``frame`` or a frame it leads to (``f_back``) runs code of ``files``."""
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
        value = p.value if isinstance(p, ctypes._SimpleCData) else p
        if type(value) is int and value >= _ADDRESS_MIN:
            return True
    return False


def candidate_function(fn: Any, namespace: dict[str, Any]) -> bool:
    """True for a function of the candidate's (its code or its globals are the candidate's)."""
    code = fn.__code__
    return code.co_filename == CANDIDATE_FILE or fn.__globals__ is namespace


def candidate_class(cls: Any, namespace: dict[str, Any]) -> bool:
    """True for a class any of whose methods (in its MRO) is a function of the candidate's."""
    try:
        mro = type.__dict__["__mro__"].__get__(cls)
    except Exception:
        return False
    for klass in mro:
        for value in type.__dict__["__dict__"].__get__(klass).values():
            fn = getattr(value, "__func__", value)
            if type(fn) is _FunctionType and candidate_function(fn, namespace):
                return True
    return False


class Policy:
    """What the run's audit hook decides (see the module docstring)."""

    def __init__(self, alarm: Alarm, namespace: dict[str, Any], trusted: set[int]) -> None:
        self.alarm = alarm
        self.namespace = namespace
        self.trusted = trusted
        self.block_ctypes = False
        self.guard: Any = None
        #: id -> function of the test source the tests handed to the candidate as an
        #: argument (``calls.Calls.handed``): its code and defaults are the candidate's to read
        self.handed: dict[int, Any] = {}

    def reason(self, event: str, args: tuple[Any, ...]) -> str | None:
        """Why ``event`` is refused on this thread (``+``: a module this run does without,
        refused but not tampering), or None when it is allowed."""
        if event == "sys.addaudithook":
            return "added an audit hook"
        if event == "import":
            name = args[0] if args else ""
            if self.block_ctypes and isinstance(name, str) and (
                name in ("ctypes", "_ctypes") or name.startswith("ctypes.")
            ):
                return "+" + name
            return None
        if _get_ident() in self.trusted:
            return None
        return self._candidate(event, args)

    def _candidate(self, event: str, args: tuple[Any, ...]) -> str | None:
        if event in _DENY:
            return f"called {event}"
        if event == "gc.get_referents":
            objs = args[0] if args and type(args[0]) is tuple else args
            if any(type(o) in _FRAME_HOLDERS for o in objs):
                return f"called {event} on frames"
            return None
        if event == "sys._getframe":
            # a frame of the thread asking, which is never a test thread here: the tests' code
            # on its stack is a callback the candidate called (a mock's ``side_effect``), whose
            # frame holds what a handed function does (BigCodeBench/388: pandas reads the
            # stack under the tests' lambda); a frame of the harness's is refused
            return ("reached the harness's frames (sys._getframe)"
                    if _chain_protected(args[0], HARNESS_FILES) else None)
        if event == "object.__getattr__":
            target, name = args[0], args[1]
            if name in _FRAME_ATTRS:
                frame = getattr(target, name, None)
                if frame is not None and _chain_protected(frame):
                    return f"reached the tests' frames ({name})"
            elif (name in _FUNC_ATTRS and type(target) is _FunctionType
                  and target.__code__.co_filename in PROTECTED_FILES
                  and id(target) not in self.handed):
                return f"read {name} of {target.__qualname__} (the tests' code)"
            return None
        if event in ("object.__setattr__", "object.__delattr__"):
            target, name = args[0], args[1]
            if name in _FUNC_ATTRS and type(target) is _FunctionType:
                filename = target.__code__.co_filename
                # a library's or the tests' function; functions generated at run time
                # (``<string>``: namedtuple's __new__, whose defaults it sets) are left alone
                if (filename.startswith("/") or filename in PROTECTED_FILES) and not (
                    candidate_function(target, self.namespace)
                ) and not _importing(target) and not _own_package_writes(target):
                    return f"changed {name} of {target.__module__}.{target.__qualname__}"
            elif name == "__class__" and isinstance(target, _ModuleType):
                new = args[2] if len(args) > 2 else None
                if new is not None and candidate_class(new, self.namespace):
                    return f"gave module {target.__name__} a class of its own"
                if self.guard is not None and type(target) is self.guard:
                    return f"took the guard off module {target.__name__}"
            return None
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


def _importing(target: Any) -> bool:
    """True while the package of library function ``target`` is still being imported (its
    top-level module's spec is ``_initializing``): a library that sets its own functions'
    ``__code__`` as it loads (numpy 1.23's ``empty_like`` and the like) is not tampering, even
    when the candidate's import of it is what loads it."""
    top = sys.modules.get(str(getattr(target, "__module__", "") or "").split(".")[0])
    spec = getattr(top, "__spec__", None) if top is not None else None
    return getattr(spec, "_initializing", False) is True


def _package_of(filename: str) -> str | None:
    """The top-level package (or module file) of ``filename`` under an entry of ``sys.path``
    (``pyparsing`` for ``.../site-packages/pyparsing/util.py``), else None."""
    best = ""
    for entry in sys.path:
        if isinstance(entry, str) and entry and filename.startswith(entry.rstrip("/") + "/") \
                and len(entry) > len(best):
            best = entry.rstrip("/")
    return filename[len(best) + 1:].split("/")[0] if best else None


def _own_package_writes(target: Any) -> bool:
    """True when the Python code changing ``__code__`` / ``__defaults__`` /
    ``__kwdefaults__`` of library function ``target`` is code of the same package as
    ``target`` (pyparsing setting its own functions' keyword defaults when first used under a
    candidate's call, as matplotlib's text layout does): the first frame above the audit hook's
    own. A write from the candidate's code, from a builtin it called (``setattr``) or from
    another library (``unittest.mock``) is not."""
    here = sys._getframe(0)  # the audit event it raises is this hook's own: not watched
    own, frame = here.f_code.co_filename, here.f_back
    while frame is not None and frame.f_code.co_filename == own:
        frame = frame.f_back
    if frame is None:
        return False
    writer = _package_of(frame.f_code.co_filename)
    return writer is not None and writer == _package_of(target.__code__.co_filename)


def make_hook(policy: Policy) -> Any:
    """The run's audit hook (a closure over ``policy``; nothing Python can see refers to it)."""
    busy: set[int] = set()
    get_ident = _get_ident
    denied = Denied
    alarm = policy.alarm
    watch = _WATCH

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in watch:
            return
        tid = get_ident()
        if tid in busy:
            return
        busy.add(tid)
        try:
            reason = policy.reason(event, args)
        except Exception:
            reason = None
        finally:
            busy.discard(tid)
        if reason is None:
            return
        if reason.startswith("+"):  # a module this run does without (ctypes)
            raise ModuleNotFoundError(
                f"No module named {reason[1:]!r} (not available in this sandbox)", name=reason[1:]
            )
        alarm(reason)
        raise denied(f"vibecheck sandbox: {reason} is not allowed (recorded as tampering)")

    return hook


def block_ctypes(policy: Policy) -> None:
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
    policy.block_ctypes = True
