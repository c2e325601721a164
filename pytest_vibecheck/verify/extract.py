"""Code extraction from a model's reply (issue 2, item 8).

``extract_code(reply)`` finds the code a model meant as its answer. The default mode
``"first"`` matches the paper's pipeline (Vibe Checker, §3.2 / ``reference/vericode.md``):
the first non-empty fenced block, else the whole reply. Mode ``"best"`` picks the block that
defines the task's entry point, else the longest Python block.

Before any block is chosen the reply is cleaned:

1. line endings are normalised to LF (CRLF and lone CR);
2. reasoning is removed: every ``<think>…</think>`` (also ``<thinking>``) span; a closing
   ``</think>`` with no opening tag (templates that open the thinking in the prompt) removes
   everything up to and including it; an opening ``<think>`` that is never closed removes
   everything from it to the end (the reply was cut off while thinking).

Fences: a line whose first non-blank characters are three or more backticks or tildes opens a
block; the rest of the line is its *info string* (``python``, ``py``, ``python3``, ``PYTHON``,
``{.python}``, ``python title="x.py"``, or empty). It is closed by a line with the same fence
character repeated at least as often and nothing else, or by a code line that ends with the
opening fence (``    return x```), a frequent small-model slip. Content is de-indented by the
opening fence's indentation (as in CommonMark, for fences inside list items).

The methods recorded in :attr:`Extraction.method`:

``fenced-first``
    mode ``"first"``: the first fenced block whose content is not blank.
``fenced-best-entry-point``
    mode ``"best"``: a block that defines ``entry_point`` (``def``/``async def``/``class``).
``fenced-best-longest``
    mode ``"best"``: no block defines the entry point (or none was given): the longest
    Python-like block (info string empty or a Python tag), preferring blocks that parse.
``unterminated-fence``
    the chosen block is the last one and has no closing fence (e.g. the reply hit the token cap).
``stray-closing-fence``
    the fences cannot pair up (odd number), the first fence line is bare and the text before it
    looks like code (parses, or starts with ``def``/``class``/``import``/...): that text is the
    code (the model started with code and ended it with a closing fence).
``whole-reply``
    no non-empty fenced block: the whole cleaned reply.
``none``
    nothing left: an empty reply, or one that is only a ``<think>`` block. ``code`` is ``""``.

A "language tag" that is really code (```` ```def f(): ````, ```` ```import os ````): when the
info string's first word is a Python keyword, or it contains code punctuation such as ``(``,
``=``, ``[`` or a quote, it is kept as the block's first line.

The code returned is normalised: LF line endings, leading and trailing blank lines removed, and
exactly one final newline (empty code stays ``""``), so extraction never manufactures a W292
("no newline at end of file") or W391 ("blank line at end of file") failure.
"""

from __future__ import annotations

import ast
import itertools
import keyword
import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_vibecheck.types import ExtractMode as ExtractMode

__all__ = [
    "METHODS",
    "PYTHON_TAGS",
    "Extraction",
    "extract_code",
    "known_to_parse",
    "note_parses",
    "parse_quietly",
    "parse_shared",
]


#: Every value :attr:`Extraction.method` can take.
METHODS: tuple[str, ...] = (
    "fenced-first",
    "fenced-best-entry-point",
    "fenced-best-longest",
    "unterminated-fence",
    "stray-closing-fence",
    "whole-reply",
    "none",
)

#: Info strings (lower-cased) that mark a Python block; the empty string is a bare fence.
PYTHON_TAGS: frozenset[str] = frozenset(
    {"", "python", "py", "python3", "py3", "python2", "ipython", "ipython3"}
)


@dataclass(frozen=True)
class Extraction:
    """The code extracted from a reply.

    ``code``: the chosen code, LF line endings, one final newline (``""`` when there is none).
    ``method``: how it was chosen, one of :data:`METHODS` (see the module docstring).
    ``blocks``: the content of every fenced block found, in order of appearance (normalised
    like ``code``; blank blocks are kept, as ``""``).
    """

    code: str
    method: str
    blocks: tuple[str, ...]


@dataclass(frozen=True)
class _Block:
    text: str  # normalised content
    tag: str  # lower-cased language tag ("" for bare fences or a tag that is really code)
    terminated: bool
    index: int


_THINK_PAIR = re.compile(r"<(think|thinking)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking)>", re.IGNORECASE)
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_CODE_START = re.compile(
    r"^\s*(?:def|class|async\s+def|import|from\s+\S+\s+import|@\w|if\s+__name__)\b"
)
#: A language tag: ``python``, ``Python3``, ``{.python}``, ``c++``, ``python:main.py``.
_TAG_WORD = re.compile(r"^\{?\.?[A-Za-z0-9_+#.\-]+(?::[\w./\-]+)?\}?$")
_ASSIGN = re.compile(r"^(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)")


def _strip_think(text: str) -> str:
    text = _THINK_PAIR.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    m = _THINK_OPEN.search(text)
    if m:
        text = text[: m.start()]
    return text


def _normalise(code: str) -> str:
    lines = code.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


def _info_is_code(info: str) -> bool:
    """True when a fence's info string is really the first line of code."""
    words = info.split()
    if not words:
        return False
    first = words[0]
    if keyword.iskeyword(first) or first.startswith(("@", "#")):
        return True
    if not _TAG_WORD.match(first):
        return True  # code punctuation: print(x), x=1, f"...", [1, 2]
    # ``x = 1`` / ``total += n``: a name followed by an assignment operator
    return len(words) > 1 and _ASSIGN.match(words[1]) is not None


def _tag_of(info: str) -> str:
    words = info.split()
    if not words:
        return ""
    return words[0].strip("{}").lstrip(".").split(":", 1)[0].lower()


def _dedent(line: str, indent: str) -> str:
    n = len(indent)
    i = 0
    while i < n and i < len(line) and line[i] in " \t":
        i += 1
    return line[i:]


@dataclass(frozen=True)
class _Parse:
    blocks: tuple[_Block, ...]
    stray_code: str | None  # code before a stray closing fence


def _parse(text: str) -> _Parse:
    if "```" not in text and "~~~" not in text:  # no fence line can match: no block
        return _Parse((), None)
    lines = text.split("\n")
    fence_lines = [i for i, ln in enumerate(lines) if _FENCE.match(ln)]
    stray_code: str | None = None
    start = 0
    if fence_lines and len(fence_lines) % 2 == 1:
        first = fence_lines[0]
        m = _FENCE.match(lines[first])
        assert m is not None
        before = "\n".join(lines[:first])
        if not m.group("info").strip() and before.strip() and _looks_like_code(before):
            stray_code = _normalise(before)
            start = first + 1

    blocks: list[_Block] = []
    i = start
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent, info = m.group("fence"), m.group("indent"), m.group("info").strip()
        body: list[str] = []
        tag = _tag_of(info)
        if _info_is_code(info):
            body.append(info)
            tag = ""
        i += 1
        terminated = False
        while i < len(lines):
            ln = lines[i]
            stripped = ln.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                terminated = True
                i += 1
                break
            if ln.rstrip().endswith(fence) and stripped != fence:
                body.append(_dedent(ln.rstrip()[: -len(fence)], indent))
                terminated = True
                i += 1
                break
            body.append(_dedent(ln, indent))
            i += 1
        blocks.append(_Block(_normalise("\n".join(body)), tag, terminated, len(blocks)))
    return _Parse(tuple(blocks), stray_code)


def parse_quietly(code: str) -> ast.Module:
    """:func:`ast.parse` of untrusted code without letting its SyntaxWarnings or
    DeprecationWarnings (``invalid escape sequence``) reach the user's pytest output. Raises
    what :func:`ast.parse` raises (``SyntaxError``, ``ValueError`` for NUL bytes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(code)


#: The last few texts parsed by :func:`parse_shared`, with their tree or exception.
_SHARED: OrderedDict[str, ast.Module | BaseException] = OrderedDict()
_SHARED_SIZE = 4
_SHARED_LOCK = threading.Lock()


def parse_shared(code: str) -> ast.Module:
    """:func:`parse_quietly` that remembers the last few texts, so that the verifiers and
    the reward's checks that read the same code parse it once. The tree is shared: never
    change it. Raises what :func:`parse_quietly` raises (a new exception each time)."""
    with _SHARED_LOCK:
        hit = _SHARED.get(code)
        if hit is not None:
            _SHARED.move_to_end(code)
    if hit is None:
        try:
            hit = parse_quietly(code)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            hit = exc
        with _SHARED_LOCK:
            _SHARED[code] = hit
            while len(_SHARED) > _SHARED_SIZE:
                _SHARED.popitem(last=False)
    if isinstance(hit, BaseException):
        raise type(hit)(*hit.args)
    return hit


#: Texts known to parse (:func:`note_parses`: answers of the parse helper), newest last.
_KNOWN: dict[str, None] = {}
_KNOWN_SIZE = 8192


def note_parses(texts: Iterable[str]) -> None:
    """Remember that ``texts`` parse (:func:`ast.parse` succeeded on them, in a process with
    this interpreter): :func:`known_to_parse` then answers without parsing. Keeps the last
    8,192."""
    with _SHARED_LOCK:
        for text in texts:
            _KNOWN[text] = None
        if len(_KNOWN) > _KNOWN_SIZE:
            for old in list(itertools.islice(_KNOWN, len(_KNOWN) - _KNOWN_SIZE // 2)):
                del _KNOWN[old]


def known_to_parse(text: str) -> bool:
    """True when ``text`` is known to parse without parsing it again: the tree is among
    :func:`parse_shared`'s last few, or :func:`note_parses` was told. False means unknown."""
    with _SHARED_LOCK:
        return text in _KNOWN or isinstance(_SHARED.get(text), ast.Module)


def _parses(code: str) -> bool:
    try:
        parse_quietly(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _looks_like_code(text: str) -> bool:
    first = next((ln for ln in text.split("\n") if ln.strip()), "")
    return _CODE_START.match(first) is not None or (_parses(text) and "\n" in text.strip())


def _defines(code: str, name: str) -> bool:
    try:
        tree = parse_quietly(code)
    except (SyntaxError, ValueError):
        pattern = rf"^[ \t]*(?:async[ \t]+def|def|class)[ \t]+{re.escape(name)}\b"
        return re.search(pattern, code, re.MULTILINE) is not None
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.name == name
        for node in ast.walk(tree)
    )


def _best(cands: list[_Block], entry_point: str | None) -> tuple[_Block, str] | None:
    nonblank = [b for b in cands if b.text.strip()]
    if not nonblank:
        return None

    def rank(b: _Block) -> tuple[bool, bool, int, int]:
        # parses, python-like tag, length, earlier first (negated index)
        return (_parses(b.text), b.tag in PYTHON_TAGS, len(b.text), -b.index)

    if entry_point:
        defining = [b for b in nonblank if _defines(b.text, entry_point)]
        if defining:
            return max(defining, key=rank), "fenced-best-entry-point"
    pythonish = [b for b in nonblank if b.tag in PYTHON_TAGS] or nonblank
    return max(pythonish, key=rank), "fenced-best-longest"


def extract_code(
    reply: str, mode: ExtractMode = "first", entry_point: str | None = None
) -> Extraction:
    """Extract the code from a model ``reply``.

    ``mode="first"`` (default, the paper's pipeline): the first non-blank fenced block, else
    the whole reply. ``mode="best"``: the block that defines ``entry_point`` (found with
    :mod:`ast` where the block parses, else a ``def``/``class`` regex), else the longest
    Python-like block; ties go to blocks that parse, then to the earlier block. See the module
    docstring for the cleaning steps, the fence rules and the ``method`` ids.

    Returns an :class:`Extraction`; ``code`` ends with exactly one newline or is ``""``.
    Raises :class:`ValueError` for an unknown ``mode`` and :class:`TypeError` when ``reply``
    is not a string.
    """
    if not isinstance(reply, str):
        raise TypeError(f"extract_code: reply must be a str, got {type(reply).__name__}")
    if mode not in ("first", "best"):
        raise ValueError(f"extract_code: unknown mode {mode!r}; use 'first' or 'best'")
    text = reply.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    text = _strip_think(text)
    if not text.strip():
        return Extraction("", "none", ())
    parsed = _parse(text)
    blocks = tuple(b.text for b in parsed.blocks)

    def method_for(b: _Block, default: str) -> str:
        last = b.index == len(parsed.blocks) - 1
        return "unterminated-fence" if last and not b.terminated else default

    if parsed.stray_code is not None:
        if mode == "best":
            stray = _Block(parsed.stray_code, "", True, -1)
            cands = [stray, *parsed.blocks]
            picked = _best(cands, entry_point)
            if picked is not None and picked[0] is not stray:
                b, how = picked
                return Extraction(b.text, method_for(b, how), blocks)
        return Extraction(parsed.stray_code, "stray-closing-fence", blocks)

    if mode == "first":
        for b in parsed.blocks:
            if b.text.strip():
                return Extraction(b.text, method_for(b, "fenced-first"), blocks)
    else:
        picked = _best(list(parsed.blocks), entry_point)
        if picked is not None:
            b, how = picked
            return Extraction(b.text, method_for(b, how), blocks)
    return Extraction(_normalise(text), "whole-reply", blocks)
