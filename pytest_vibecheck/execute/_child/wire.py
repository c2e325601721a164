"""Values and frames that cross between the candidate's process and its judge (standard library
only).

The sandbox loads this file by path (inside the candidate's process and the judge's); the host
imports it as ``pytest_vibecheck.execute._child.wire``. Nothing here trusts what it reads:

- :func:`dumps` / :func:`loads`: a value as JSON text with tags for what JSON lacks, so a
  tuple stays a tuple and a set a set on the other side: ``{"$t": [...]}`` tuple,
  ``{"$s": [...]}`` set, ``{"$fs": [...]}`` frozenset, ``{"$d": [[key, value], ...]}`` dict
  (any keys, in order), ``{"$b": "base64"}`` bytes, ``{"$ba": "base64"}`` bytearray,
  ``{"$c": [re, im]}`` complex, ``{"$i": "hex"}`` an integer of 64 bits or more,
  ``{"$r": [start, stop, step]}`` range, ``{"$o": [type name, repr]}`` a value that cannot
  cross (an :class:`Opaque` on the other side, equal only to itself). Floats keep their exact
  value (``repr``; ``NaN``, ``Infinity``). A ``str``, ``int``, ``float``, ``list`` or ``dict``
  subclass crosses as its base type's content (what the base type's own methods see), numpy
  scalars as their ``item()``.
- :func:`loads` only ever builds plain values: it bounds the text's size, the nesting depth
  and the size of integers, and raises :class:`WireError` for anything else.
- :func:`mark_tuples` / :func:`loads_marked`: the plain JSON of LiveCodeBench's call-based
  tests (what its graders compare), with the tuples the candidate returned marked
  (``{TUPLE_MARK: [...]}``) so the grading rule still sees them.
- :func:`send` / :func:`recv`: one frame (4-byte big-endian length, then UTF-8 text) on a
  file descriptor, at most :data:`MAX_FRAME` bytes; :func:`recv` waits until a deadline.

The encoding runs in the candidate's process, so the candidate can make it say anything:
what it says is only ever the candidate's own answer. The decoding runs where verdicts are
made, so it is the part that must hold against any bytes.
"""

from __future__ import annotations

import base64
import json
import os
import select
import time
from typing import Any

#: Largest frame either side reads (bytes).
MAX_FRAME = 16 << 20
#: Deepest nesting :func:`loads` accepts (containers inside containers).
MAX_DEPTH = 100
#: Most digits of a decimal integer :func:`loads` accepts (larger ones travel as hex).
MAX_DIGITS = 4000

_SMALL = 1 << 63


class WireError(ValueError):
    """A frame or a value that does not follow this module's format."""


class Opaque:
    """A value of the candidate's that cannot cross the process boundary (a generator, an
    object of its own class, a numpy array, ...): equal only to itself, shown as
    ``<TYPE value: REPR>``."""

    __slots__ = ("text", "type_name")

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text

    def __repr__(self) -> str:
        return f"<{self.type_name} value: {self.text}>"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


# ------------------------------------------------------------------------------ encoding


def _tagged(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise WireError(f"nested more than {MAX_DEPTH} levels")
    t = type(value)
    if value is None or t is bool:
        return value
    if t is str:
        return value
    if t is int:
        return value if -_SMALL < value < _SMALL else {"$i": hex(value)}
    if t is float:
        return value
    if t is list:
        return [_tagged(v, depth + 1) for v in value]
    if t is tuple:
        return {"$t": [_tagged(v, depth + 1) for v in value]}
    if t is dict:
        return {"$d": [[_tagged(k, depth + 1), _tagged(v, depth + 1)] for k, v in value.items()]}
    if t is set:
        return {"$s": [_tagged(v, depth + 1) for v in value]}
    if t is frozenset:
        return {"$fs": [_tagged(v, depth + 1) for v in value]}
    if t is bytes:
        return {"$b": base64.b64encode(value).decode("ascii")}
    if t is bytearray:
        return {"$ba": base64.b64encode(bytes(value)).decode("ascii")}
    if t is complex:
        return {"$c": [value.real, value.imag]}
    if t is range:
        return {"$r": [value.start, value.stop, value.step]}
    return _other(value, t, depth)


def _other(value: Any, t: type, depth: int) -> Any:
    """Subclasses of the plain types (their base type's content), numpy scalars, the rest
    opaque."""
    if isinstance(value, bool):
        return bool(int.__int__(value))
    if isinstance(value, int):
        return _tagged(int.__int__(value), depth)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, tuple):
        return _tagged(tuple.__getitem__(value, slice(None)), depth)
    if isinstance(value, list):
        return _tagged(list.copy(value), depth)
    if isinstance(value, dict):
        return _tagged(dict(dict.items(value)), depth)
    if getattr(t, "__module__", "") == "numpy" and getattr(value, "ndim", None) == 0:
        item = getattr(value, "item", None)
        if callable(item):
            got = item()
            if type(got) is not t:
                return _tagged(got, depth)
    try:
        text = repr(value)
    except Exception:
        text = "?"
    return {"$o": [str(getattr(t, "__qualname__", "?"))[:100], str(text)[:300]]}


def dumps(value: Any) -> str:
    """``value`` as this module's JSON text. Raises :class:`WireError` when it is nested too
    deeply, or is a container that holds itself."""
    try:
        return json.dumps(_tagged(value, 0), allow_nan=True, ensure_ascii=False)
    except RecursionError:
        raise WireError(f"nested more than {MAX_DEPTH} levels") from None
    except (TypeError, ValueError) as exc:
        raise WireError(str(exc)) from None


# ------------------------------------------------------------------------------ decoding


def _int(text: str) -> int:
    if len(text) > MAX_DIGITS:
        raise WireError(f"an integer of {len(text)} digits")
    return int(text)


def _plain(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise WireError(f"nested more than {MAX_DEPTH} levels")
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is list:
        return [_plain(v, depth + 1) for v in value]
    if t is not dict:
        raise WireError(f"unexpected {t.__name__}")
    if len(value) != 1:
        raise WireError("an untagged object")
    (tag, body), = value.items()
    if tag == "$t":
        return tuple(_plain(v, depth + 1) for v in _list(body))
    if tag == "$d":
        out = {}
        for pair in _list(body):
            if type(pair) is not list or len(pair) != 2:
                raise WireError("a dict entry that is not a pair")
            out[_key(_plain(pair[0], depth + 1))] = _plain(pair[1], depth + 1)
        return out
    if tag == "$s":
        return {_key(_plain(v, depth + 1)) for v in _list(body)}
    if tag == "$fs":
        return frozenset(_key(_plain(v, depth + 1)) for v in _list(body))
    if tag in ("$b", "$ba"):
        if type(body) is not str:
            raise WireError("bytes that are not base64 text")
        try:
            raw = base64.b64decode(body.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise WireError("bytes that are not base64 text") from None
        return raw if tag == "$b" else bytearray(raw)
    if tag == "$c":
        parts = _list(body)
        if len(parts) != 2 or not all(type(p) in (int, float) for p in parts):
            raise WireError("a complex number that is not two numbers")
        return complex(parts[0], parts[1])
    if tag == "$i":
        if type(body) is not str or len(body) > 4 * MAX_FRAME:
            raise WireError("a large integer that is not hex text")
        try:
            return int(body, 16)
        except ValueError:
            raise WireError("a large integer that is not hex text") from None
    if tag == "$r":
        parts = _list(body)
        if len(parts) != 3 or not all(type(p) is int for p in parts) or parts[2] == 0:
            raise WireError("a range that is not three integers")
        return range(parts[0], parts[1], parts[2])
    if tag == "$o":
        parts = _list(body)
        if len(parts) != 2 or not all(type(p) is str for p in parts):
            raise WireError("an opaque value that is not two strings")
        return Opaque(parts[0][:100], parts[1][:300])
    raise WireError(f"an unknown tag {tag[:20]!r}")


def _list(body: Any) -> list[Any]:
    if type(body) is not list:
        raise WireError("a tag whose body is not a list")
    return body


def _key(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        raise WireError(f"an unhashable {type(value).__name__} as a key") from None
    return value


def loads(text: str | bytes) -> Any:
    """The value of ``text`` (this module's JSON), built of plain values only (and
    :class:`Opaque`). Raises :class:`WireError` for anything that does not follow the format
    or exceeds a bound."""
    if len(text) > MAX_FRAME:
        raise WireError(f"a value of {len(text)} bytes, more than {MAX_FRAME}")
    try:
        raw = json.loads(text, parse_int=_int)
    except RecursionError:
        raise WireError(f"nested more than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise WireError(f"not valid JSON: {str(exc)[:200]}") from None
    try:
        return _plain(raw, 0)
    except RecursionError:
        raise WireError(f"nested more than {MAX_DEPTH} levels") from None


# ------------------------------------------------------------------------------ plain JSON

#: Key of a marked tuple in the plain JSON of call-based results.
TUPLE_MARK = "\0vibecheck-tuple"


def mark_tuples(value: Any) -> Any:
    """``value`` with every tuple turned into ``{TUPLE_MARK: [...]}`` (JSON has no tuples).
    Lists and dicts are copied."""
    if isinstance(value, tuple):
        return {TUPLE_MARK: [mark_tuples(v) for v in value]}
    if isinstance(value, list):
        return [mark_tuples(v) for v in value]
    if isinstance(value, dict):
        return {k: mark_tuples(v) for k, v in value.items()}
    return value


def _unmark(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and TUPLE_MARK in obj and isinstance(obj[TUPLE_MARK], list):
        return tuple(obj[TUPLE_MARK])
    return obj


def loads_marked(text: str, max_digits: int = MAX_DIGITS, max_bytes: int = 4 << 20) -> Any:
    """The value of plain JSON ``text`` with marked tuples restored; integers up to
    ``max_digits`` digits (above CPython's own 4,300 too). Raises :class:`WireError` for text
    over ``max_bytes``, not JSON, nested too deeply, or an integer over the bound."""
    if len(text) > max_bytes:
        raise WireError(f"a value of {len(text)} bytes, more than {max_bytes}")

    def parse_int(s: str) -> int:
        if len(s.lstrip("-")) > max_digits:
            raise WireError(f"an integer of {len(s)} digits")
        if len(s) <= 4000:
            return int(s)
        import decimal

        return int(decimal.Decimal(s))

    try:
        return json.loads(text, object_hook=_unmark, parse_int=parse_int)
    except RecursionError:
        raise WireError("nested too deeply") from None
    except ValueError as exc:
        raise WireError(f"not valid JSON: {str(exc)[:200]}") from None


# ------------------------------------------------------------------------------ frames


def send(fd: int, text: str) -> None:
    """Write one frame holding ``text``. Raises OSError when the other side is gone and
    :class:`WireError` for a frame over :data:`MAX_FRAME`."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > MAX_FRAME:
        raise WireError(f"a frame of {len(data)} bytes, more than {MAX_FRAME}")
    out = len(data).to_bytes(4, "big") + data
    while out:
        n = os.write(fd, out)
        out = out[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes from ``fd``; None at end of file; raises TimeoutError at ``deadline``."""
    chunks: list[bytes] = []
    got = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer in time")
            if not poller.poll(max(1, int(left * 1000) + 1)):
                continue
        data = os.read(fd, min(n - got, 1 << 20))
        if not data:
            return None
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def recv(fd: int, deadline: float | None = None) -> str | None:
    """The text of the next frame on ``fd``, or None at end of file. Raises
    :class:`WireError` for a frame over :data:`MAX_FRAME` or not UTF-8, TimeoutError when
    ``deadline`` (``time.monotonic()`` seconds) passes first."""
    head = _read_exact(fd, 4, deadline)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes, more than {MAX_FRAME}")
    body = _read_exact(fd, size, deadline)
    if body is None:
        raise WireError("the frame ended early")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("a frame that is not UTF-8 text") from None
