"""Built-in checks: the verifiers that are not Ruff rules (doc_4, doc_5, doc_6, part of library_2).

Each check takes a text (the extracted code, or the whole reply for doc_4 and doc_6) and
returns the list of :class:`~pytest_vibecheck.verify.verdict.Violation` s it finds; an empty list
means the instruction is followed. Lines and columns are 1-based; columns count characters.
Code that does not parse gives one ``invalid-syntax`` violation (paper §2.2: code that does not
parse fails every instruction checked on it).

Definitions (Vibe Checker, arXiv 2510.07315, Table 1; ``reference/vericode.md`` §1):

``pure_code_reply`` (doc_4)
    The whole reply, after removing a reasoning block (``<think>…</think>``) and surrounding
    whitespace, is non-empty and parses as Python (:func:`ast.parse`). A Markdown fence line
    (```` ``` ```` or ``~~~``) cannot occur outside a string in code that parses, so the
    violations of a reply that does not parse name its fence lines, or else the syntax error.
``no_comments_or_docstrings`` (doc_5)
    No ``COMMENT`` token (:mod:`tokenize`; a shebang or encoding line is a comment too) and no
    docstring (a string literal as the first statement of the module, a class or a function).
``code_then_json_reply`` (doc_6)
    The reply is exactly one fenced Python block (```` ```python ````, ``py`` or ``python3``;
    the tag is required) followed by exactly one fenced JSON block (```` ```json ````),
    with only whitespace before, between and after them; the Python block is not blank and
    the JSON block parses (:func:`json.loads`).
``pandas_df_name`` (library_2, replacing Ruff's PD901, removed in Ruff 0.12)
    By default exactly Ruff's former PD901 (``pandas-df-variable-name``, as in Ruff 0.11.13,
    the version the paper pinned): an assignment statement with a single target that is the
    plain name ``df`` (``df = ...``), anywhere in the code; no suppression comment excuses it
    (Ruff's would: issue 23, as every verdict ignores them). Not flagged (as in PD901):
    tuple targets (``df, n = ...``), chained (``a = df = ...``), annotated (``df: T = ...``) and
    augmented assignments, ``for df in``, ``with ... as df``, ``(df := ...)`` and function
    parameters named ``df`` (BigCodeBench task signatures often impose ``def task_func(df)``).
    ``all_bindings=True`` also flags every other binding of the name ``df`` except
    parameters; the shipped instruction uses the default, so verdicts compare with the paper.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import io
import json
import operator
import re
import tokenize
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from pytest_vibecheck.verify.extract import known_to_parse, parse_shared
from pytest_vibecheck.verify.verdict import Violation

__all__ = [
    "CHECKS",
    "NOTHING_BUT_SYNTAX",
    "PARSES_CODE",
    "code_then_json_reply",
    "no_comments_or_docstrings",
    "pandas_df_name",
    "pure_code_reply",
    "run_check",
    "strip_reasoning",
]

SYNTAX_RULE = "invalid-syntax"

_THINK_PAIR = re.compile(r"<(think|thinking)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking)>", re.IGNORECASE)
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*?)[ \t]*$")
#: ``df`` followed by ``=`` (spaces, closing parentheses or a line continuation between): every
#: PD901 finding matches this, so code without a match has nothing to find.
_DF_ASSIGN = re.compile(r"\bdf\b[\s)\\]*=(?!=)")
_PYTHON_TAGS = frozenset({"python", "py", "python3"})
_JSON_TAGS = frozenset({"json"})


def _blank(match: re.Match[str]) -> str:
    return "\n" * match.group(0).count("\n")


def strip_reasoning(reply: str) -> str:
    """The reply with LF line endings and reasoning removed, line numbers kept.

    Removes every ``<think>…</think>`` (or ``<thinking>``) span, everything up to a closing
    tag that has no opening one, and everything from an opening tag that is never closed;
    each removed span is replaced by its newlines, so the remaining text keeps its line
    numbers. Same rules as :mod:`pytest_vibecheck.verify.extract`.
    """
    text = reply.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    text = _THINK_PAIR.sub(_blank, text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        end = closes[-1].end()
        text = "\n" * text[:end].count("\n") + text[end:]
    m = _THINK_OPEN.search(text)
    if m:
        text = text[: m.start()]
    return text


def _parse(code: str) -> ast.Module:
    """:func:`ast.parse` without printing SyntaxWarnings for the untrusted code; the tree is
    shared with the other checks of the same text (:func:`~pytest_vibecheck.verify.extract.parse_shared`):
    read it, never change it."""
    return parse_shared(code)


def _syntax_violation(exc: SyntaxError | ValueError, line_offset: int = 0, what: str = "code") -> Violation:
    if isinstance(exc, SyntaxError):
        line = (exc.lineno or 1) + line_offset
        col = max(exc.offset or 1, 1)
        msg = exc.msg
    else:  # ValueError: e.g. "source code string cannot contain null bytes"
        line, col, msg = 1 + line_offset, 1, str(exc)
    return Violation(SYNTAX_RULE, line, col, f"syntax error: the {what} does not parse as Python: {msg}")


def _char_col(lines: list[str], lineno: int, byte_offset: int) -> int:
    """1-based character column of an AST node (``col_offset`` counts UTF-8 bytes)."""
    if 1 <= lineno <= len(lines):
        prefix = lines[lineno - 1].encode("utf-8", "surrogatepass")[:byte_offset]
        return len(prefix.decode("utf-8", "replace")) + 1
    return byte_offset + 1


# ----------------------------------------------------------------------------- doc_4


def pure_code_reply(reply: str) -> list[Violation]:
    """doc_4: the whole reply is pure Python code (no Markdown, no prose).

    Returns ``[]`` if the reply (reasoning removed, surrounding whitespace stripped) is
    non-empty and parses; else an ``empty-reply`` violation, one ``markdown-fence`` violation
    per fence line, or one ``invalid-syntax`` violation. Lines count from the start of the
    reply.
    """
    text = strip_reasoning(reply)
    stripped = text.strip()
    if not stripped:
        return [Violation("empty-reply", 1, 1, "the reply is empty: it contains no code")]
    offset = text[: len(text) - len(text.lstrip())].count("\n")
    if known_to_parse(stripped + "\n"):  # a whole reply's code, as extraction gives it
        return _prose_strings(stripped, offset)
    try:
        _parse(stripped)
    except (SyntaxError, ValueError) as exc:
        fences = [
            Violation("markdown-fence", n + offset, len(ln) - len(ln.lstrip()) + 1,
                      f"Markdown code fence {ln.strip()[:20]!r}: reply with raw code only")
            for n, ln in enumerate(stripped.split("\n"), start=1)
            if _FENCE.match(ln)
        ]
        return fences or [_syntax_violation(exc, offset, "reply")]
    return _prose_strings(stripped, offset)


#: A line that starts with a string literal (after its indentation), or with ``NAME = "``.
_STRING_LINE = re.compile(r"^[ \t]*(?:[A-Za-z_]\w*[ \t]*=[ \t]*)?[rRbBuU]{0,2}['\"]", re.MULTILINE)


def _prose_strings(code: str, offset: int) -> list[Violation]:
    """doc_4's rule the paper did not have (docs/verifiers.md, "Replies a reviewer would not
    sign"): a string literal alone as a statement that is not a docstring (not the first
    statement of the module, a class or a function) does nothing, and so does a sentence (four
    words or more) assigned at module level to a name that nothing reads: prose kept in a
    string. One ``prose-string`` violation each. ``code`` parses."""
    if _STRING_LINE.search(code) is None or not _may_hold_prose(code):
        return []
    tree = parse_shared(code if code.endswith("\n") else code + "\n")
    docstrings = {id(n) for n in _docstring_nodes(tree)}
    out = [
        Violation("prose-string", node.lineno + offset, node.col_offset + 1,
                  "a string literal alone as a statement, not a docstring: prose kept in a string")
        for node in _statements(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str) and id(node) not in docstrings
    ]
    loaded: set[str] | None = None
    for node in tree.body:  # ``NOTE = "Sure! Here is ..."`` that nothing reads
        if (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and len(node.value.value.split()) >= _PROSE_WORDS
        ):
            if loaded is None:
                loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            if node.targets[0].id not in loaded:
                out.append(Violation("prose-string", node.lineno + offset, node.col_offset + 1,
                                     f"a sentence assigned to `{node.targets[0].id}`, which nothing reads: "
                                     "prose kept in a string"))
    return sorted(out, key=Violation.sort_key)


#: A line that opens a body whose first string is a docstring: a ``def`` or ``class`` header,
#: or the end of one that spans lines (``) -> int:``).
_HEADER = re.compile(r"(?:(?:async\s+)?def|class)\b|\)")
_TRIPLE = re.compile(r"\"\"\"|\'\'\'")


def _may_hold_prose(code: str) -> bool:
    """False when no string can be a prose statement: every line that starts with a string is
    the module's first code line, follows a ``def``/``class`` header, or is inside a
    triple-quoted string; True when only a parse can tell. (A ``NAME = "..."`` line at the
    margin is always a candidate.)"""
    prev: str | None = None
    inside = False
    for line in code.split("\n"):
        stripped = line.strip()
        if not stripped or (stripped[0] == "#" and not inside):
            continue
        if not inside and _STRING_LINE.match(line):
            assigned = line[:1].isalpha()  # NAME = "..." at the margin
            docstring = prev is None or (prev.endswith(":") and _HEADER.match(prev) is not None)
            if assigned or not docstring:
                return True
        if len(_TRIPLE.findall(line)) % 2:
            inside = not inside
        prev = stripped
    return False


#: Words from which an unread module-level string is taken for prose.
_PROSE_WORDS = 4


# ----------------------------------------------------------------------------- doc_5


#: Fields of statement nodes that hold statement lists (``handlers`` and ``cases`` hold
#: ``ExceptHandler`` / ``match_case`` nodes, whose ``body`` does).
_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.Module) -> list[ast.AST]:
    """Every statement of ``tree`` (and its ``except``/``case`` clauses), at any depth, in no
    particular order. Statements occur only in these lists (never inside an expression: a
    lambda's body is an expression), so walking them finds every ``def``, ``class`` and
    assignment without visiting the expressions, most of the tree."""
    found: list[ast.AST] = []
    stack: list[list[ast.AST]] = [tree.body]  # type: ignore[list-item]
    while stack:
        for node in stack.pop():
            found.append(node)
            for name in _BODY_FIELDS:
                sub = getattr(node, name, None)
                if sub:
                    stack.append(sub)
    return found


_DOCSTRING_OWNERS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _docstring_nodes(tree: ast.Module) -> list[ast.Expr]:
    found: list[ast.Expr] = []
    owners: list[ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] = [tree]
    owners.extend(n for n in _statements(tree) if isinstance(n, _DOCSTRING_OWNERS))
    for node in owners:
        body = node.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            found.append(body[0])
    return sorted(found, key=lambda e: (e.lineno, e.col_offset))


def _comments_tokenize(code: str) -> list[tuple[int, int, str]]:
    """(line, 0-based column, text) of every ``COMMENT`` token, by :mod:`tokenize`."""
    out: list[tuple[int, int, str]] = []
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    # A tokenize error is reported by ast.parse; the comments before it are kept (extend
    # appends one by one).
    with contextlib.suppress(tokenize.TokenError, SyntaxError):
        out.extend((t.start[0], t.start[1], t.string) for t in tokens if t.type == tokenize.COMMENT)
    return out


def _string_spans(tree: ast.Module, lines: Sequence[int] = ()) -> list[tuple[int, int, int, int]]:
    """(line, byte column, end line, end byte column) of the string literals of ``tree``:
    each ``Constant`` str/bytes and each f-string (``JoinedStr``, not entered), covering
    implicitly concatenated parts together. With ``lines`` (sorted line numbers), only the
    literals that touch one of them: a node whose lines hold none of them is not entered."""
    spans: list[tuple[int, int, int, int]] = []
    stack: list[ast.AST] = [tree]
    children = ast.iter_child_nodes
    prune = bool(lines)
    while stack:
        for child in children(stack.pop()):
            if prune:
                first = getattr(child, "lineno", None)
                decorators = getattr(child, "decorator_list", None)
                if decorators:  # a def's or class's line number is not its decorators'
                    first = None
                if first is not None:
                    k = bisect.bisect_left(lines, first)
                    if k == len(lines) or lines[k] > (getattr(child, "end_lineno", None) or first):
                        continue  # no line of interest inside this node
            kind = type(child)
            if kind is ast.JoinedStr or (kind is ast.Constant and isinstance(child.value, str | bytes)):  # type: ignore[attr-defined]
                spans.append((child.lineno, child.col_offset,  # type: ignore[attr-defined]
                              child.end_lineno or child.lineno, child.end_col_offset or 0))  # type: ignore[attr-defined]
            else:
                stack.append(child)
    return spans


def _comments_from_tree(code: str, tree: ast.Module) -> list[tuple[int, int, str]] | None:
    """The ``COMMENT`` tokens of code that parsed, found from its string literals, or None
    when that cannot decide (then :func:`_comments_tokenize` must).

    In code that parses, a ``#`` outside every string literal starts a comment running to the
    end of the line. A ``#`` inside a literal's span on the span's last line is string text (a
    comment there would swallow the literal's closing quote). A ``#`` on an earlier line of a
    multi-line span may be either (inside a triple-quoted string, or a comment between two
    implicitly concatenated parts, or inside an f-string's replacement field): undecided.
    Only the literals that touch a line with a ``#`` are looked at.
    """
    code_lines = code.split("\n")
    marked = [n for n, line in enumerate(code_lines, start=1) if "#" in line]
    spans = _string_spans(tree, marked)
    out: list[tuple[int, int, str]] = []
    for n in marked:
        line = code_lines[n - 1]
        idx = line.find("#")
        touching = [sp for sp in spans if sp[0] <= n <= sp[2]]
        ascii_line = line.isascii()
        while idx >= 0:
            col = idx if ascii_line else len(line[:idx].encode("utf-8"))
            in_string = False
            for l0, c0, l1, c1 in touching:
                if (n > l0 or col >= c0) and (n < l1 or col < c1):
                    if n != l1:
                        return None
                    in_string = True
                    break
            if not in_string:
                out.append((n, idx, line[idx:]))
                break
            idx = line.find("#", idx + 1)
    return out


def no_comments_or_docstrings(code: str) -> list[Violation]:
    """doc_5: the code has no comment (``COMMENT`` token) and no docstring.

    Returns one ``comment`` violation per comment and one ``docstring`` violation per
    module/class/function docstring; code that does not parse adds an ``invalid-syntax``
    violation (comments before the error are still reported). Comments are the ``COMMENT``
    tokens of :mod:`tokenize`, found from the tree's string literals where that decides
    (:func:`_comments_from_tree`, same result, without tokenizing).
    """
    code = code.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
    try:
        tree = _parse(code)
    except (SyntaxError, ValueError) as exc:
        out = [_comment_violation(c) for c in _comments_tokenize(code)] if "#" in code else []
        out.append(_syntax_violation(exc))
        return out
    comments: list[tuple[int, int, str]] = []
    if "#" in code:
        decided = _comments_from_tree(code, tree)
        comments = decided if decided is not None else _comments_tokenize(code)
    out = [_comment_violation(c) for c in comments]
    docstrings = _docstring_nodes(tree)
    if docstrings:
        lines = code.split("\n")
        out.extend(
            Violation("docstring", expr.lineno, _char_col(lines, expr.lineno, expr.col_offset), "Docstring found")
            for expr in docstrings
        )
    return out


def _comment_violation(comment: tuple[int, int, str]) -> Violation:
    line, col, text = comment
    shown = text if len(text) <= 40 else text[:37] + "..."
    return Violation("comment", line, col + 1, f"Comment found: {shown!r}")


# ----------------------------------------------------------------------------- doc_6


def code_then_json_reply(reply: str) -> list[Violation]:
    """doc_6: exactly one ```` ```python ```` block, then exactly one ```` ```json ```` block.

    Only whitespace may surround and separate the two blocks; the Python block must not be
    blank and the JSON block must parse and explain something (:func:`_explains`). Violations:
    ``text-outside-blocks`` (one per run of prose), ``unterminated-fence``, ``block-count``,
    ``block-language``, ``empty-block``, ``invalid-json``, ``empty-json``.
    """
    lines = strip_reasoning(reply).split("\n")
    out: list[Violation] = []
    blocks: list[tuple[str, int, list[str]]] = []  # (tag, fence line, content lines)
    prose_start: int | None = None
    n = 0
    while n < len(lines):
        m = _FENCE.match(lines[n])
        if m is None:
            if lines[n].strip() and prose_start is None:
                prose_start = n
                snippet = lines[n].strip()[:40]
                out.append(Violation("text-outside-blocks", n + 1, 1,
                                     f"text outside the two code blocks: {snippet!r}"))
            elif not lines[n].strip():
                prose_start = None
            n += 1
            continue
        prose_start = None
        fence, tag = m.group("fence"), m.group("info").strip().lower()
        start = n
        content: list[str] = []
        n += 1
        closed = False
        while n < len(lines):
            c = _FENCE.match(lines[n])
            if c and not c.group("info") and c.group("fence")[0] == fence[0] and len(c.group("fence")) >= len(fence):
                closed = True
                n += 1
                break
            content.append(lines[n])
            n += 1
        if not closed:
            out.append(Violation("unterminated-fence", start + 1, 1, "code fence is never closed"))
        blocks.append((tag, start + 1, content))
    if len(blocks) != 2:
        where = blocks[2][1] if len(blocks) > 2 else 1
        out.append(Violation("block-count", where, 1,
                             f"expected one python block then one json block, found {len(blocks)} "
                             f"fenced block{'s' if len(blocks) != 1 else ''}"))
    if blocks:
        tag, line, content = blocks[0]
        if tag not in _PYTHON_TAGS:
            out.append(Violation("block-language", line, 1,
                                 f"the first block must be ```python, found ```{tag}"))
        elif not "\n".join(content).strip():
            out.append(Violation("empty-block", line, 1, "the python block is empty"))
    if len(blocks) >= 2:
        tag, line, content = blocks[1]
        if tag not in _JSON_TAGS:
            out.append(Violation("block-language", line, 1,
                                 f"the second block must be ```json, found ```{tag or '(no tag)'}"))
        else:
            try:
                value = json.loads("\n".join(content))
            except ValueError as exc:
                jl = getattr(exc, "lineno", 1)
                jc = getattr(exc, "colno", 1)
                msg = getattr(exc, "msg", str(exc))
                out.append(Violation("invalid-json", line + jl, jc, f"the json block does not parse: {msg}"))
            else:
                if not _explains(value):
                    out.append(Violation("empty-json", line, 1,
                                         "the json block explains nothing: an object or array "
                                         "with some text is needed (it is empty or has no keys)"))
    return out


def _explains(value: object) -> bool:
    """doc_6's rule the paper did not have: the JSON block is an object or an array holding
    some text (a key or a string with a letter); ``{}``, ``[]``, ``null``, ``0``, ``"x"`` alone
    and ``{"": ""}`` explain nothing."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list[object] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if any(any(ch.isalpha() for ch in k) for k in v):
                return True
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str) and any(ch.isalpha() for ch in v):
            return True
    return False


# ----------------------------------------------------------------------------- library_2


def _df_candidate(code: str, all_bindings: bool = False) -> bool:
    if "df" not in code:
        return False
    if all_bindings:
        return re.search(r"\bdf\b", code) is not None
    return _DF_ASSIGN.search(code) is not None


def pandas_df_name(code: str, *, all_bindings: bool = False) -> list[Violation]:
    """library_2 (first part): no variable named ``df`` (Ruff's removed PD901, re-implemented).

    Default: PD901 as in Ruff 0.11.13, i.e. ``df = ...`` with a single plain-name target;
    ``all_bindings=True`` flags every binding of ``df`` except function parameters (see the
    module docstring). Violations have rule ``"PD901"``; code that does not parse gives one
    ``invalid-syntax`` violation.
    """
    code = code.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
    try:
        tree = _parse(code)
    except (SyntaxError, ValueError) as exc:
        return [_syntax_violation(exc)]
    if not _df_candidate(code, all_bindings):
        return []
    lines = code.split("\n")
    targets: list[ast.Name] = []
    # PD901 looks at assignment statements only: walking the statements is enough.
    for node in ast.walk(tree) if all_bindings else _statements(tree):
        if all_bindings:
            if isinstance(node, ast.Name) and node.id == "df" and isinstance(node.ctx, ast.Store):
                targets.append(node)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "df"
        ):
            targets.append(node.targets[0])
    return [
        Violation("PD901", name.lineno, _char_col(lines, name.lineno, name.col_offset),
                  "Avoid using the generic variable name `df` for DataFrames")
        for name in sorted(targets, key=lambda n: (n.lineno, n.col_offset))
    ]


# ----------------------------------------------------------------------------- logic_1


def _constant_truth(node: ast.expr) -> bool | None:
    """The truth of a test Python decides without running anything (``False``, ``0``, ``None``,
    ``""``, ``not True``), or None."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _constant_truth(node.operand)
        return None if inner is None else not inner
    if (  # ``1 > 2``, ``"a" == "b"``: one comparison of two numbers or two strings
        isinstance(node, ast.Compare) and len(node.ops) == 1
        and isinstance(node.left, ast.Constant) and isinstance(node.comparators[0], ast.Constant)
    ):
        a, b = node.left.value, node.comparators[0].value
        same = (isinstance(a, (int, float)) and isinstance(b, (int, float))) or (isinstance(a, str) and isinstance(b, str))
        compare = _COMPARE.get(type(node.ops[0]))
        if same and compare is not None:
            return bool(compare(a, b))
    return None


_COMPARE: Mapping[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}


def _bare(node: ast.expr) -> bool:
    """A name, an attribute chain on one, or a tuple of them: evaluating it does nothing."""
    if isinstance(node, ast.Tuple):
        return all(_bare(e) for e in node.elts)
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _decoy_parts(node: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """(the children that run, the children that never run or do nothing) of ``node``."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        truth = _constant_truth(node.test)
        body = node.body if isinstance(node.body, list) else [node.body]
        orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
        if truth is False:
            return [node.test, *orelse], list(body)
        if truth is True and not isinstance(node, ast.While):
            return [node.test, *body], list(orelse)
    elif isinstance(node, ast.BoolOp):
        for k, value in enumerate(node.values):
            truth = _constant_truth(value)
            if truth is (not isinstance(node.op, ast.And)):  # ``True or x``, ``False and x``
                return list(node.values[: k + 1]), list(node.values[k + 1:])
    elif isinstance(node, ast.Expr) and _bare(node.value):
        return [], [node.value]  # ``os`` alone on a line
    elif (
        isinstance(node, ast.Assign) and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "_"
        and (_bare(node.value) or isinstance(node.value, ast.Lambda))
    ):
        return [], [node.value]  # ``_ = os``, ``_ = lambda: os``
    elif isinstance(node, ast.Assert) and _bare(node.test):
        return [] if node.msg is None else [node.msg], [node.test]  # ``assert os``
    return list(ast.iter_child_nodes(node)), []


#: Text without a match of any of these, without a constant that short-cuts ``and``/``or``
#: (:func:`_short_cut_hint`) and without a line of names alone (:data:`_BARE_LINE`) has no
#: decoy use (:func:`decoy_uses`), so it is not parsed: a test on a constant (``if False``,
#: ``while 0``, ``x if 1 > 2 else``, ``if ""``), an assignment to ``_``, ``assert``,
#: ``__all__``, a private ``def``, a statement of names after ``;`` or ``:`` (``x = 1; os``,
#: ``if x: os``). Spaces, brackets, line continuations and comments may stand between the
#: words. Each starts with a literal, so ``re`` scans for it fast (one alternation of them, or
#: a leading ``\b``, made it try every position).
_GAP = r"(?:[\s(\\]|#[^\n]*\n)*"
#: Names separated by commas, with spaces and brackets on one line (``os``, ``(os.path)``,
#: ``os, sys``); group 1 is the first name. A bracket that opens may stand only before a name
#: and one that closes only after it: a name followed by ``(`` is called (``plt.show()``), and
#: a call is no decoy. The spaces are those Python's tokenizer takes between tokens (any other
#: space outside a string or comment is a syntax error, and such code has no decoy use).
_NAMES = (r"[ \t\f\v\r(]*((?:[^\W\d]|\.)[\w.]*)"
          r"(?:[ \t\f\v\r)]*,[ \t\f\v\r(]*(?:[^\W\d]|\.)[\w.]*)*")
_DECOY_HINTS = tuple(re.compile(pattern) for pattern in (
    r"(?:if|while)" + _GAP + r"(?:not\b" + _GAP + r")*(?:False|True|None|[0-9.]|[bruBRUfF]*['\"])",
    r"_(?:[ \t)\]]|\\\n)*=(?!=)",
    r"assert\b",
    r"__all__",
    r"def\s+_",
    r"[;:]" + _NAMES + r"[ \t\f\v\r)]*(?:[;#\n]|\Z)",
))
#: A line that is only names, as a statement that does nothing is (``os``, ``(os.path)``,
#: ``os, sys``, ``(os,``). Group 1: the first name.
_BARE_LINE = re.compile(r"^" + _NAMES + r"[ \t\f\v\r),]*(?:#.*)?$", re.MULTILINE)
_KEYWORD_LINES = frozenset({"pass", "break", "continue", "return", "else", "try", "finally", "raise", "yield"})


#: What may stand between a constant and the ``and``/``or`` it short-cuts, besides comments.
_SHORT_CUT_GAP = frozenset(")\\")


def _short_cut_hint(code: str) -> bool:
    """True if an ``and``/``or`` of ``code`` may follow a constant (``False and x``,
    ``"" and x``, ``1 or x``): the word, and before it, past spaces, closing brackets and line
    continuations, the end of ``False``, ``True`` or ``None``, a digit, a dot or a quote; or a
    line with a ``#`` (a comment may stand between them). Each word is found with
    ``str.find`` (a pattern for this tried every digit and quote of the text)."""
    end = len(code)
    for word in ("and", "or"):
        at = code.find(word)
        while at != -1:
            after = at + len(word)
            before = code[at - 1] if at else " "
            if (not (before.isalnum() or before in "_.")
                    and (after == end or not (code[after].isalnum() or code[after] == "_"))):
                k, crossed = at - 1, False
                while k >= 0 and (code[k].isspace() or code[k] in _SHORT_CUT_GAP):
                    crossed = crossed or code[k] == "\n"
                    k -= 1
                if k >= 0 and (code[k] in "0123456789.'\"" or code.endswith(("False", "True", "None"), 0, k + 1)):
                    return True
                if crossed and "#" in code[code.rfind("\n", 0, k + 1) + 1:k + 1]:
                    return True
            at = code.find(word, after)
    return False


def _may_have_decoys(code: str) -> bool:
    """False for code that holds none of the shapes of a decoy use (:data:`_DECOY_HINTS`,
    :func:`_short_cut_hint`, a line of names alone), which :func:`decoy_uses` then does not
    parse; docs/verifiers.md names the shapes this does not look for."""
    if any(hint.search(code) for hint in _DECOY_HINTS) or _short_cut_hint(code):
        return True
    if any(m.group(1) not in _KEYWORD_LINES for m in _BARE_LINE.finditer(code)):
        return True
    if code.isascii():
        return False
    for line in code.split("\n"):  # identifiers beyond what ``\w`` spells
        word = line.split("#", 1)[0].strip().lstrip("(").rstrip(")").strip()
        if word and word.replace(".", "_").isidentifier() and word not in _KEYWORD_LINES:
            return True
    return False


#: The nodes :func:`_decoy_parts` may split into code that runs and code that never does (or
#: does nothing), and the assignments that may be to ``__all__``; every other node runs all
#: its children.
_DECOY_SHAPES = frozenset({ast.If, ast.While, ast.IfExp, ast.BoolOp, ast.Expr, ast.Assign, ast.Assert,
                           ast.AnnAssign, ast.AugAssign})
_ASSIGNS = (ast.Assign, ast.AnnAssign, ast.AugAssign)


def _private_unnamed(tree: ast.Module) -> set[int]:
    """The ids of the module-level functions of ``tree`` that never run: private (one leading
    underscore), undecorated and named nowhere (no ``Name`` load of theirs at any depth)."""
    private = [node for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list
               and node.name.startswith("_") and not node.name.startswith("__")]
    if not private:
        return set()
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return {id(node) for node in private if node.name not in loaded}


def _decoy_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names loaded where the code runs, names used only as decoys) of ``tree``: a ``Name``
    load in a child :func:`_decoy_parts` puts among those that never run (at any depth below
    it), or in a private function that never runs (:func:`_private_unnamed`), is a decoy use;
    so is a string in an assignment to ``__all__`` that runs (whose names count as neither).
    One pass over the tree, the live part first; then the dead part's names."""
    live: set[str] = set()
    decoy: set[str] = set()
    never = _private_unnamed(tree)
    dead: list[ast.AST] = [node for node in tree.body if id(node) in never]
    stack: list[ast.AST] = [node for node in tree.body if id(node) not in never]
    name_t, load_t, base = ast.Name, ast.Load, ast.AST
    shapes, assigns = _DECOY_SHAPES, _ASSIGNS
    pop, push, park = stack.pop, stack.append, dead.extend
    while stack:
        node = pop()
        t = type(node)
        if t is name_t:
            if type(node.ctx) is load_t:  # type: ignore[attr-defined]
                live.add(node.id)  # type: ignore[attr-defined]
            continue
        if t in shapes:
            if t in assigns and any(
                    isinstance(target, ast.Name) and target.id == "__all__"
                    for target in (node.targets if t is ast.Assign else [node.target])):  # type: ignore[attr-defined]
                decoy.update(c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str))
                continue
            runs, nothing = _decoy_parts(node)
            stack.extend(runs)
            park(nothing)
            continue
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, base):
                        push(item)
            elif isinstance(value, base):
                push(value)
    for root in dead:  # below a decoy everything is: every Name load is a decoy use
        decoy.update(n.id for n in ast.walk(root) if isinstance(n, ast.Name) and type(n.ctx) is load_t)
    return live, decoy


def decoy_uses(code: str) -> list[Violation]:
    """logic_1 (beside Ruff's F rules): an import whose every use is a decoy, which Ruff's F401
    counts as a use: a name used only in code that never runs (``if False:``, ``if 1 > 2:``,
    ``while 0:``, ``x if False else y``, ``False and x``, a private module-level function that
    nothing names), alone as a statement (``os``, ``assert os``), or assigned to ``_``
    (``_ = os``, ``_ = lambda: os``), or listed in ``__all__`` (a solution exports nothing). One
    ``F401``
    violation per such import, at the imported name as Ruff reports it; ``[]`` for code that
    does not parse (Ruff reports the syntax error). A rule the paper did not have
    (docs/verifiers.md, "Replies a reviewer would not sign")."""
    if "import" not in code or not _may_have_decoys(code):
        return []
    try:
        tree = parse_shared(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    imported: dict[str, ast.alias] = {}
    for node in _statements(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            for alias in node.names:
                if alias.name != "*":
                    imported[(alias.asname or alias.name).split(".")[0]] = alias
    if not imported:
        return []
    live, decoy = _decoy_names(tree)
    lines = code.split("\n")
    out = []
    for name, alias in imported.items():
        if name in decoy and name not in live:
            line = getattr(alias, "lineno", 1)
            col = _char_col(lines, line, getattr(alias, "col_offset", 0))
            out.append(Violation("F401", line, col, f"`{alias.name}` imported but used only in code that "
                                 "never runs or does nothing (a decoy use)"))
    return out


#: Built-in checks by the name used in ``instructions/*.toml`` (``verifier.checks``).
CHECKS: Mapping[str, Callable[[str], list[Violation]]] = MappingProxyType(
    {
        "pure_code_reply": pure_code_reply,
        "no_comments_or_docstrings": no_comments_or_docstrings,
        "code_then_json_reply": code_then_json_reply,
        "pandas_df_name": pandas_df_name,
        "decoy_uses": decoy_uses,
    }
)


#: For each check, a fast test that is True only when the check cannot find anything in the
#: text except a syntax error; :mod:`pytest_vibecheck.verify.api` skips the check then if Ruff
#: has already parsed the same text.
#: The built-in checks that parse the extracted code as Python through
#: :func:`~pytest_vibecheck.verify.extract.parse_shared`, so a caller that has parsed that code
#: just before (the reward's no-code rule) shares the tree with them. (pure_code_reply parses
#: the reply, which for a whole reply is the code as extraction gives it: it asks
#: :func:`~pytest_vibecheck.verify.extract.known_to_parse` first.)
PARSES_CODE: frozenset[str] = frozenset({"no_comments_or_docstrings", "pandas_df_name", "decoy_uses"})

NOTHING_BUT_SYNTAX: Mapping[str, Callable[[str], bool]] = MappingProxyType(
    {"pandas_df_name": lambda text: not _df_candidate(text), "decoy_uses": lambda text: "import" not in text}
)


def run_check(name: str, text: str) -> list[Violation]:
    """Run the built-in check ``name`` of the active registry (the four above plus any a plugin
    registered) on ``text``; :class:`UnknownIdError` with suggestions for an unknown name."""
    from pytest_vibecheck.registry import get_registry

    return get_registry().check(name)(text)
