"""Whether a reply has code: the no-code rule of the plugin and the reward layer.

A reply without code is a model failure (every instruction fails, the tests are not run).
:func:`no_code_reason` decides it from the extraction (:mod:`pytest_vibecheck.verify.extract`);
:func:`code_reason` is its core for one text, shared with the parse helper
(:mod:`pytest_vibecheck.verify.parse_helper`), which runs it in another process.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from pytest_vibecheck.verify.extract import parse_shared
from pytest_vibecheck.verify.substance import inert_module, nothing_to_run

if TYPE_CHECKING:
    from pytest_vibecheck.verify.extract import Extraction

__all__ = ["NO_CODE_RULE", "PARSER_GIVES_UP_AT", "code_reason", "code_status", "no_code_reason", "parse_free_length"]

#: Fewest characters of code that CPython's parser can give up on (MemoryError or
#: RecursionError), measured with the densest nesting, one unary operator per level
#: (``"-" * n + "1"``): 5,971 characters on CPython 3.10, 2,990 on 3.11, 2,995 on 3.12, 5,970
#: on 3.13 (every other construct needs more characters per level). On 3.11 the tree's
#: conversion also stops at 3 levels per frame left below :func:`sys.getrecursionlimit`, so
#: :func:`parse_free_length` lowers the bound where the stack is deep or the limit low.
#: Violation rule used when a reply has no code (every instruction counts as not followed).
NO_CODE_RULE = "NO-CODE"

PARSER_GIVES_UP_AT = 2_900


def parse_free_length() -> int:
    """Code shorter than this many characters cannot be too deep for CPython's parser: the
    fewer of :data:`PARSER_GIVES_UP_AT` and twice the frames left below the recursion limit
    of the calling thread (CPython 3.11 stops the tree's conversion at three levels per frame
    left), at most 2,000 and at least 0."""
    depth = 0
    frame = inspect.currentframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    left = sys.getrecursionlimit() - depth
    return max(0, min(2_000, PARSER_GIVES_UP_AT, 2 * left))


def code_status(
    code: str, whole_reply: bool, parse: Callable[[str], ast.Module] = parse_shared
) -> tuple[str | None, bool]:
    """The no-code reason of one extracted text (see :func:`no_code_reason`) and whether it
    parsed, by parsing it with ``parse`` (default
    :func:`~pytest_vibecheck.verify.extract.parse_shared`, whose tree the verifiers reuse).
    The reason is ``"prose"``, ``"unparseable"``, ``"empty"`` (nothing to run:
    :func:`~pytest_vibecheck.verify.substance.inert_module`) or None (it has code).
    ``whole_reply``: the text is the whole reply (no fenced block was found)."""
    try:
        tree = parse(code)
    except (SyntaxError, ValueError):
        return ("prose" if whole_reply else None), False
    except (MemoryError, RecursionError):
        return "unparseable", False
    if whole_reply and all(
        isinstance(node, ast.Expr) and isinstance(node.value, (ast.Name, ast.Constant))
        for node in tree.body
    ):
        return "prose", True
    return ("empty" if inert_module(tree) else None), True


def code_reason(
    code: str, whole_reply: bool, parse: Callable[[str], ast.Module] = parse_shared
) -> str | None:
    """The no-code reason of one extracted text: :func:`code_status` without the parse flag."""
    return code_status(code, whole_reply, parse)[0]


def no_code_reason(extraction: Extraction, parse_free: int | None = None) -> str | None:
    """Why a reply counts as having no code (a model failure), or None when it has code:

    - ``"none"``: extraction found nothing (method ``none``) or only whitespace;
    - ``"prose"``: no fenced block, and the whole reply does not parse as Python or is only bare
      names and constants (prose such as ``"Sorry"`` parses as a name);
    - ``"empty"``: the code has nothing to run (only imports, docstrings and other constants,
      ``pass``, ``...``, stubs: :func:`~pytest_vibecheck.verify.substance.nothing_to_run`;
      issue 23), fenced or not;
    - ``"unparseable"``: code nested so deep that CPython's parser gives up (``MemoryError`` or
      ``RecursionError`` from :func:`~pytest_vibecheck.verify.extract.parse_quietly`, e.g. a few
      hundred thousand unary operators), fenced or not: it would crash the in-process verifiers.

    A fenced block with a syntax error has code (the verifiers and the tests judge it). Used by
    the plugin and the reward layer alike.

    Fenced code shorter than ``parse_free`` characters (default :func:`parse_free_length`;
    a caller judging many replies computes it once) cannot be too deep for the parser: it is
    parsed only when it may have nothing to run (a statement keyword such as ``return``
    outside its strings rules that out without a parse).
    """
    if extraction.method == "none" or not extraction.code.strip():
        return "none"
    whole_reply = extraction.method == "whole-reply"
    if not whole_reply:
        if parse_free is None:
            parse_free = parse_free_length()
        if len(extraction.code) < parse_free:
            return "empty" if nothing_to_run(extraction.code) else None
    return code_reason(extraction.code, whole_reply)
