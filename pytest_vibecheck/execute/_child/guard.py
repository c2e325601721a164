"""The harness's code that runs on the candidate's threads (standard library only).

Loaded by path by ``harness.py`` before any candidate code runs. Everything here can be
reached by the code under test (``sys.unraisablehook``, the wrapped entry point, the
replacement ``sys._getframe``), so nothing here holds a secret or a way to report a verdict:

- :func:`run_one` runs one ``unittest`` test method (``setUp``, the test, ``tearDown``,
  cleanups) and raises when it failed. The harness calls it as the first step of a C-level
  chain whose second step writes the test's one-time token; the candidate never holds that
  chain, so the token is written only when :func:`run_one` returned normally;
- :func:`scan` flags a value that compares equal to a fresh sentinel (an object whose
  ``__eq__`` is always true) with the ``vibecheck.tamper`` audit event;
- :func:`on_unraisable` receives the exception of a failed test thread and sends a short
  traceback (strings only) to the harness;
- :func:`safe_getframe` replaces ``sys._getframe``: it returns ``None`` instead of raising
  where the audit hook refuses the frame (the harness's or the tests' own frames).

Functions bind what they use as default arguments (setting ``__defaults__`` of these
functions is refused by the audit hook), so rebinding names in this module changes nothing.
"""

from __future__ import annotations

import builtins
import contextlib
import sys
import types
from typing import Any

MAX_MESSAGE = 2000


class Denied(RuntimeError):
    """Raised by the sandbox's audit hook for an operation the tests' integrity forbids."""


def run_one(
    cls: Any,
    name: str,
    _getattr: Any = getattr,
    _ae: type[BaseException] = AssertionError,
) -> None:
    """Run test method ``name`` of ``cls`` as ``unittest`` does; raise when it did not pass."""
    case = cls(name)
    ok = True
    try:
        case.setUp()
        try:
            _getattr(case, name)()
        finally:
            case.tearDown()
    finally:
        ok = case.doCleanups()
    if ok is False:
        raise _ae("a cleanup function of the test failed")


def exec_code(code: types.CodeType, namespace: dict[str, Any], _exec: Any = exec) -> None:
    """Execute ``code`` in ``namespace`` (the candidate's import, the test source)."""
    _exec(code, namespace)


def _always_equal(
    value: object,
    _object: Any = object,
    _true: Any = True,
    _false: Any = False,
) -> bool:
    sentinel = _object()
    try:
        if (value == sentinel) is _true or (sentinel == value) is _true:
            return True
        if (value != sentinel) is _false:
            return True
    except Exception:
        return False
    return False


def scan(
    value: object,
    depth: int = 0,
    _type: Any = type,
    _plain: tuple[type, ...] = (int, float, str, bytes, bool, type(None), complex),
    _seq: tuple[type, ...] = (list, tuple, set, frozenset),
    _audit: Any = sys.audit,
    _always_equal: Any = _always_equal,
) -> None:
    """Flag ``value`` (or an element of a list, tuple, set or dict in it, 4 levels, 200
    elements each) that compares equal to a fresh ``object()``: ``vibecheck.tamper``."""
    t = _type(value)
    if t in _plain:
        return
    if _always_equal(value):
        _audit("vibecheck.tamper", f"returned an object of type {t.__name__!s:.80} that compares "
               "equal to anything")
        return
    if depth >= 4:
        return
    items: Any = ()
    if t in _seq:
        items = value
    elif t is dict:
        items = [*list(value.keys())[:200], *list(value.values())[:200]]  # type: ignore[attr-defined]
    for n, item in enumerate(items):
        if n >= 200:
            break
        scan(item, depth + 1)


def wrap_entry(
    namespace: dict[str, Any],
    name: str,
    _callable: Any = callable,
    _scan: Any = scan,
) -> None:
    """Replace ``namespace[name]`` (the candidate's entry point) by a function that calls it
    and :func:`scan` s what it returns."""
    fn: Any = namespace.get(name)
    if not _callable(fn) or isinstance(fn, type):
        return

    def entry(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        _scan(result)
        return result

    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        with contextlib.suppress(Exception):
            setattr(entry, attr, getattr(fn, attr))
    entry.__wrapped__ = fn  # type: ignore[attr-defined]
    namespace[name] = entry


def format_tb(
    tb: Any,
    _tbtype: type = types.TracebackType,
    _type: Any = type,
    _getline: Any = None,
) -> list[tuple[str, int, str, str]]:
    """``(file, line, function, source line)`` of each frame of ``tb`` (at most 60)."""
    import linecache

    getline: Any = _getline or linecache.getline
    out: list[tuple[str, int, str, str]] = []
    while _type(tb) is _tbtype and len(out) < 60:
        frame = tb.tb_frame
        code = frame.f_code
        filename = code.co_filename
        line = ""
        if _type(filename) is str:
            try:
                line = str(getline(filename, tb.tb_lineno)).strip()
            except Exception:
                line = ""
        out.append((str(filename), int(tb.tb_lineno), str(code.co_name), line))
        tb = tb.tb_next
    return out


def describe(exc_type: Any, exc: Any, tb: Any, hidden: frozenset[str] = frozenset()) -> str:
    """A short traceback of ``exc`` from strings only (no code of the candidate runs):
    frames of the files in ``hidden`` are left out."""
    name = exc_type.__name__ if type(exc_type) is type else "exception"
    args = getattr(exc, "args", ()) if isinstance(exc, BaseException) else ()
    if type(args) is tuple and all(type(a) in (str, int, float) for a in args):
        text = BaseException.__str__(exc) if isinstance(exc, BaseException) else ""
    else:
        text = "<message not shown>"
    lines = ["Traceback (most recent call last):"]
    prefixes = tuple(h for h in hidden if h.endswith("/"))
    frames = [f for f in format_tb(tb) if f[0] not in hidden and not f[0].startswith(prefixes)]
    for filename, lineno, func, line in frames[-6:]:
        lines.append(f'  File "{filename}", line {lineno}, in {func}')
        if line:
            lines.append(f"    {line}")
    lines.append(f"{name}: {text}" if text else name)
    out = "\n".join(lines)
    if len(out) > MAX_MESSAGE:
        out = out[: MAX_MESSAGE // 4] + "\n[...]\n" + out[-(3 * MAX_MESSAGE) // 4 :]
    return out


def missing_name(exc: Any) -> str | None:
    """The module name of a ``ModuleNotFoundError`` (a plain ``str``), else None."""
    if type(exc) is ModuleNotFoundError and type(exc.name) is str:
        return str(exc.name)
    return None


#: NLTK's ``LookupError`` text names the resource (``nltk.download`` id) and the path it
#: looked for, each between terminal colour codes.
_NLTK_RESOURCE = r"Resource (?:\x1b\[\d+m)?([\w.-]+)(?:\x1b\[0m)? not found"
_NLTK_PATH = r"Attempted to load (?:\x1b\[\d+m)?([\w./-]+)"


def missing_data(exc: Any, tb: Any, _format: Any = format_tb) -> str | None:
    """``nltk_data:ID=PATH@FILE`` for NLTK's ``LookupError`` for missing data (raised in
    ``FILE``, an ``nltk/data.py``: the last frame of ``tb``), else None. The evaluator checks
    that ``FILE`` is the environment's own ``nltk/data.py`` and that the data is really absent
    before it calls this the environment's fault."""
    import re

    if type(exc) is not LookupError:
        return None
    frames = _format(tb)
    if not frames or not frames[-1][0].replace("\\", "/").endswith("/nltk/data.py"):
        return None
    args = exc.args
    text = args[0] if len(args) == 1 and type(args[0]) is str else ""
    ident = re.search(_NLTK_RESOURCE, text)
    path = re.search(_NLTK_PATH, text)
    if ident is None:
        return None
    where = "=" + path.group(1) if path else ""
    return "nltk_data:" + ident.group(1) + where + "@" + str(frames[-1][0])


def make_unraisable(msg_fd: int, hidden: frozenset[str]) -> Any:
    """The ``sys.unraisablehook`` of the run: a failed test thread's exception is sent as one
    framed message (``4-byte length`` + ``missing\\0traceback``: the missing module, or the
    missing NLTK data of :func:`missing_data`) on ``msg_fd``."""
    import os

    def on_unraisable(
        unraisable: Any,
        _w: Any = os.write,
        _describe: Any = describe,
        _missing: Any = missing_name,
        _data: Any = missing_data,
    ) -> None:
        try:
            text = _describe(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback,
                             hidden)
            missing = (
                _missing(unraisable.exc_value)
                or _data(unraisable.exc_value, unraisable.exc_traceback)
                or ""
            )
            data = (missing + "\0" + text).encode("utf-8", "replace")[:8000]
            _w(msg_fd, len(data).to_bytes(4, "big") + data)
        except Exception:
            pass

    return on_unraisable


_DECOY_SOURCE = (
    "def _decoy(n, box, lock, getframe):\n"
    "    if n:\n"
    "        return _decoy(n - 1, box, lock, getframe)\n"
    "    box.append(getframe(0))\n"
    "    lock.acquire()\n"
)


def make_decoy(module_name: str, depth: int = 8) -> Any:
    """A real frame, ``depth`` frames deep, of a thread that only waits: what
    :func:`make_safe_getframe` returns instead of a refused frame (libraries such as
    pyparsing walk ``f_back`` a few levels; its globals name the candidate's module, as the
    real frame's would, for ``namedtuple`` and friends)."""
    import _thread
    import time

    namespace: dict[str, Any] = {"__name__": module_name}
    exec(compile(_DECOY_SOURCE, "<vibecheck-decoy>", "exec"), namespace)
    box: list[Any] = []
    lock = _thread.allocate_lock()
    lock.acquire()
    _thread.start_new_thread(namespace["_decoy"], (depth, box, lock, sys._getframe))
    for _ in range(5000):
        if box:
            return box[0]
        time.sleep(0.001)
    return None


def make_safe_getframe(real: Any, decoy: Any = None) -> Any:
    """``sys._getframe`` that returns ``decoy`` (a harmless real frame) where the audit hook
    refuses the frame."""

    def _getframe(depth: int = 0, _real: Any = real, _denied: Any = Denied, _decoy: Any = decoy) -> Any:
        try:
            return _real(depth + 1)
        except _denied:
            return _decoy

    return _getframe


def noop(*args: Any) -> None:
    """Placeholder callable."""


__all__ = [
    "Denied",
    "builtins",
    "describe",
    "exec_code",
    "format_tb",
    "make_safe_getframe",
    "make_unraisable",
    "missing_data",
    "missing_name",
    "noop",
    "run_one",
    "scan",
    "wrap_entry",
]
