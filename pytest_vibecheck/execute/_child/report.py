"""Short tracebacks and what a failure says about the environment (standard library only).

Loaded by path by the sandbox's job scripts (``runner.py``, ``judge.py``, ``harness.py``).
:func:`describe` builds a short traceback from strings only: it reads no attribute of the
exception but its class name and plain ``args``, so no code of the candidate runs while it is
described. :func:`missing_name` and :func:`missing_data` name the module, or the NLTK data, a
failure reports missing; the evaluator decides whether that is the environment's fault (it
checks, in a process that never ran candidate code, that it is really absent).
"""

from __future__ import annotations

import re
import types
from typing import Any

MAX_MESSAGE = 2000


def format_tb(
    tb: Any, _tbtype: type = types.TracebackType, _type: Any = type
) -> list[tuple[str, int, str]]:
    """``(file, line, function)`` of each frame of ``tb`` (at most 60)."""
    out: list[tuple[str, int, str]] = []
    while _type(tb) is _tbtype and len(out) < 60:
        code = tb.tb_frame.f_code
        filename = code.co_filename
        out.append((filename if _type(filename) is str else "?", int(tb.tb_lineno),
                    str(code.co_name)))
        tb = tb.tb_next
    return out


def describe(
    exc: BaseException,
    hidden: frozenset[str] = frozenset(),
    lines: dict[str, list[str]] | None = None,
) -> str:
    """A short traceback of ``exc``: frames of the files in ``hidden`` (or under a folder
    there, written with a trailing ``/``) left out; source lines from ``lines`` (file ->
    lines) when given, never from ``linecache``."""
    exc_type = type(exc)
    name = exc_type.__name__ if type(exc_type.__name__) is str else "exception"
    args = BaseException.__dict__["args"].__get__(exc)
    if type(args) is tuple and all(type(a) in (str, int, float) for a in args):
        text = BaseException.__str__(exc)
    else:
        text = "<message not shown>"
    out = ["Traceback (most recent call last):"]
    prefixes = tuple(h for h in hidden if h.endswith("/"))
    frames = [
        f
        for f in format_tb(BaseException.__dict__["__traceback__"].__get__(exc))
        if f[0] not in hidden and not f[0].startswith(prefixes)
    ]
    for filename, lineno, func in frames[-6:]:
        out.append(f'  File "{filename}", line {lineno}, in {func}')
        src = (lines or {}).get(filename)
        if src is not None and 0 < lineno <= len(src):
            out.append(f"    {src[lineno - 1].strip()}")
    out.append(f"{name}: {text}" if text else name)
    return short("\n".join(out))


def short(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to about ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    return text[: limit // 4] + "\n[...]\n" + text[-(3 * limit) // 4 :]


def missing_name(exc: BaseException) -> str:
    """The module name of a ``ModuleNotFoundError`` (a plain ``str``), else ``""``."""
    if type(exc) is ModuleNotFoundError and type(exc.name) is str:
        return str(exc.name)
    return ""


#: NLTK's ``LookupError`` text names the resource (``nltk.download`` id) and the path it
#: looked for, each between terminal colour codes.
_NLTK_RESOURCE = r"Resource (?:\x1b\[\d+m)?([\w.-]+)(?:\x1b\[0m)? not found"
_NLTK_PATH = r"Attempted to load (?:\x1b\[\d+m)?([\w./-]+)"


def missing_data(exc: BaseException) -> str:
    """``nltk_data:ID=PATH@FILE`` for NLTK's ``LookupError`` for missing data (raised in
    ``FILE``, an ``nltk/data.py``: the last frame of its traceback), else ``""``. The evaluator
    checks that ``FILE`` is the environment's own ``nltk/data.py`` and that the data is really
    absent before it calls this the environment's fault."""
    if type(exc) is not LookupError:
        return ""
    frames = format_tb(BaseException.__dict__["__traceback__"].__get__(exc))
    if not frames or not frames[-1][0].replace("\\", "/").endswith("/nltk/data.py"):
        return ""
    args = exc.args
    text = args[0] if len(args) == 1 and type(args[0]) is str else ""
    ident = re.search(_NLTK_RESOURCE, text)
    path = re.search(_NLTK_PATH, text)
    if ident is None:
        return ""
    where = "=" + path.group(1) if path else ""
    return "nltk_data:" + ident.group(1) + where + "@" + str(frames[-1][0])


def missing(exc: BaseException) -> str:
    """What ``exc`` says is missing (:func:`missing_name`, else :func:`missing_data`)."""
    return missing_name(exc) or missing_data(exc)
