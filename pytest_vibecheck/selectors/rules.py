"""The ``rules`` selector: deterministic, offline relevance judgements (paper §3.1).

The paper asks an LLM whether each instruction "would add meaningful constraints that
require code or response modifications for this specific user query". This selector
answers the same question from the task itself, with one rule per instruction:

*An instruction is relevant when it governs something a solution of this task contains,
so that following it would plausibly change the implementation.*

Evidence comes, in this order, from

1. the reference program (the canonical solution; else the starter code) measured with
   :mod:`~pytest_vibecheck.selectors.features`: a violation of the instruction's Ruff rule
   ("reference has 4 branches > max_branches=2") or the construct it governs ("opens
   files", "raises exceptions with messages");
2. what the task demands: required libraries (pandas makes ``library_2`` relevant),
   documented exceptions (BigCodeBench's ``doc_struct.raises``), the query text;
3. for tasks without reference code (LiveCodeBench stdin problems), the problem text and
   difficulty: e.g. an AtCoder statement naming ``N`` and ``A_i`` makes ``style_6``
   (snake_case variables) relevant.

Response-format and documentation instructions (``doc_1`` … ``doc_6``) govern every reply
that contains code, and are always relevant; conflicts among them are handled by the scan.
Every judgement carries a short rule code and a human-readable reason, recorded in the
problem's provenance.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from ..instructions import Instruction
from ..problem import Problem
from .base import Judgement, TaskJudgements
from .features import Features, extract

#: Bump when any rule changes: recorded in every problem's provenance.
RULES_VERSION = "rules-1"


def _yes(rule: str, reason: str) -> Judgement:
    return Judgement(True, rule, reason)


def _no(rule: str, reason: str) -> Judgement:
    return Judgement(False, rule, reason)


def _fn_max(f: Features, attr: str) -> tuple[int, str]:
    best, name = 0, ""
    for m in f.functions:
        value = int(getattr(m, attr))
        if value > best:
            best, name = value, m.name
    return best, name


def _difficulty(problem: Problem) -> str:
    return str(problem.metadata.get("difficulty", "")).lower()


def _has_code(f: Features) -> bool:
    return f.reference == "canonical" and not f.parse_error


def _doc_lines(p: Problem) -> list[str]:
    """Lines of the task's own documentation (BigCodeBench ``doc_struct``), if any."""
    doc = p.metadata.get("doc_struct")
    if not isinstance(doc, dict):
        return []
    return [
        str(line)
        for key in ("description", "notes", "params", "returns", "raises")
        for line in doc.get(key, []) or []
    ]


# Text cues for tasks without a reference solution (LiveCodeBench statements).
_CAPS_VARS = re.compile(r"(?<![\w\\])(?:[A-Z](?:_\{?[a-zA-Z0-9,]+\}?)?)(?![\w(])")
_STRING_OUTPUT = re.compile(r"\b(Yes|No|YES|NO|Takahashi|Aoki|Alice|Bob|First|Second|print -1)\b")
_THRESHOLD = re.compile(
    r"(modulo|mod|at least|at most|more than|less than|greater than|exactly|divisible by)\s*\$?\\?"
    r"(?:[2-9]|[1-9]\d+)\b",
    re.IGNORECASE,
)
_MULTI_VALUES = re.compile(r"^[A-Z]_?\w* [A-Z]_?\w*", re.MULTILINE)
_PAIRS = re.compile(r"List\[List\[int\]\]|edges|queries|intervals|pairs|points", re.IGNORECASE)
_COMPOUND = re.compile(
    r"\b(both|either|and also|neither|grid|0 \\leq i|within the bounds|inclusive)\b", re.IGNORECASE
)
_COLLECTION_OUT = re.compile(
    r"return (an? )?(array|list)|-> List\[|output .* separated by spaces|print .* in order",
    re.IGNORECASE,
)


# ---------------------------------------------------------------- Coding Style


def _style_1(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.pep8_issues:
            return _yes(
                "ref:pep8", "reference program breaks PEP 8: " + "; ".join(f.pep8_issues[:2])
            )
        return _no(
            "ref:pep8-clean",
            "reference program already follows PEP 8 (blank lines, spacing, 88 columns)",
        )
    return _yes(
        "text:any-program", "PEP 8 layout governs every program and there is no reference to check"
    )


def _style_2(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.imports_unsorted:
            return _yes(
                "ref:imports-unsorted",
                f"reference imports {len(f.imports)} modules out of isort order",
            )
        if len(f.imports) >= 2:
            return _yes(
                "ref:imports",
                f"solution imports {len(f.imports)} modules whose order and grouping isort fixes",
            )
        return _no(
            "ref:few-imports", f"reference imports {len(f.imports)} module(s): nothing to sort"
        )
    if _difficulty(p) in ("medium", "hard"):
        return _yes(
            "text:imports",
            f"{_difficulty(p)} problem: solutions import several modules (sys, collections, heapq ...)",
        )
    return _no("text:few-imports", "easy problem: a solution needs at most one import")


def _style_3(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        code = p.canonical_solution or ""
        longest = max((len(line) for line in code.splitlines()), default=0)
        if f.lines_over_79:
            return _yes(
                "ref:long-lines",
                f"reference has {f.lines_over_79} line(s) over 79 characters (longest {longest})",
            )
        if longest > 72:
            return _yes(
                "ref:near-limit",
                f"reference's longest line is {longest} characters, near the 79 limit",
            )
        doc = _doc_lines(p)
        if any(len(line) > 75 for line in doc):
            return _yes(
                "doc:long-lines",
                "the task's documentation, which solutions copy into docstrings, has lines over 75 characters",
            )
        return _no("ref:short-lines", f"reference's longest line is {longest} characters")
    if _difficulty(p) in ("medium", "hard"):
        return _yes(
            "text:long-expressions",
            f"{_difficulty(p)} problem: solutions have long expressions and calls",
        )
    return _no("text:short", "easy problem: short statements")


def _style_4(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.multiline_brackets:
            return _yes(
                "ref:multiline",
                f"reference has {f.multiline_brackets} multi-line call(s) or literal(s)",
            )
        return _no("ref:single-line", "reference has no multi-line call, literal or signature")
    return _no(
        "text:single-line",
        "no reference code: competitive solutions seldom span calls or literals over lines",
    )


def _style_5(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.single_quoted:
            return _yes(
                "ref:single-quotes",
                f"reference has {f.single_quoted} single-quoted string literal(s)",
            )
        return _yes(
            "ref:strings",
            f"solution has {f.string_literals} string literal(s); model code adds more (docstrings, messages)",
        )
    if _STRING_OUTPUT.search(p.prompt) or "-> str" in (p.starter_code or ""):
        return _yes(
            "text:string-output",
            "the answer is a string (e.g. Yes/No), so the code has string literals",
        )
    return _yes(
        "text:strings",
        "programs have string literals (input parsing, messages) even for numeric answers",
    )


def _style_6(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.non_snake_locals:
            return _yes(
                "ref:non-snake", f"reference names locals {', '.join(f.non_snake_locals[:3])}"
            )
        return _no("ref:snake", "reference locals are all snake_case")
    names = _CAPS_VARS.findall(p.prompt.split("Constraints")[0])
    if len(set(names)) >= 1 and p.test.kind == "stdin":
        return _yes(
            "text:caps-vars",
            f"the statement names values {', '.join(sorted(set(names))[:3])}, tempting N/A-style locals",
        )
    if re.search(r"\(self, [^)]*[a-z][A-Z]", p.starter_code or ""):
        return _yes(
            "text:camel-params", "starter code uses camelCase parameters, tempting camelCase locals"
        )
    return _no("text:snake", "statement and starter code use lowercase names")


def _style_7(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.open_redundant_mode:
            return _yes(
                "ref:open-mode",
                f"reference passes a redundant mode to open() {f.open_redundant_mode} time(s)",
            )
        return _no("ref:no-redundant-mode", "reference passes no redundant mode to open()")
    return _no("text:no-files", "input comes from stdin or arguments: no open() calls")


def _style_8(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.magic_comparisons:
            return _yes(
                "ref:magic",
                f"reference compares with magic number(s) {', '.join(f.magic_comparisons[:3])}",
            )
        return _no("ref:no-magic", "reference compares with no constants other than 0 and 1")
    return _no(
        "text:no-reference",
        "without reference code the magic numbers of a solution cannot be foreseen",
    )


def _style_9(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.unused_unpacked:
            return _yes(
                "ref:unused-unpacked",
                f"reference unpacks unused name(s) {', '.join(f.unused_unpacked[:3])}",
            )
        if f.unpacking:
            return _yes(
                "ref:unpacking",
                f"solution unpacks tuples {f.unpacking} time(s), where unused names appear",
            )
        return _no("ref:no-unpacking", "reference does no tuple unpacking")
    return _no(
        "text:no-reference", "without reference code unused unpacked names cannot be foreseen"
    )


# ---------------------------------------------------------------- Logic & Patterns


def _limit(
    attr: str, what: str, default: int, *, near: int | None
) -> Callable[[Problem, Features], Judgement | None]:
    """A code-based rule for a per-function limit: relevant when the reference exceeds the
    default, or comes within ``near`` of it (None: never), where real model code crosses
    it often (see ``benchmarks/rules_calibration.py``)."""

    def rule(p: Problem, f: Features) -> Judgement | None:
        if not _has_code(f):
            return None
        value, name = _fn_max(f, attr)
        if value > default:
            return _yes(f"ref:{attr}", f"{name} has {value} {what} > {default}")
        if near is not None and value >= default - near:
            return _yes(
                f"ref:{attr}-at-limit",
                f"{name} has {value} {what}, at the limit of {default}: a slightly fuller solution exceeds it",
            )
        return _no(
            f"ref:{attr}-ok", f"reference's largest function has {value} {what}, under {default}"
        )

    return rule


def _logic_1(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        found = [
            *(f"unused import {n}" for n in f.unused_imports),
            *(f"unused variable {n}" for n in f.unused_locals[:2]),
            *(f"undefined name {n}" for n in f.undefined_names[:2]),
        ]
        if found:
            return _yes("ref:pyflakes", "reference has " + ", ".join(found[:3]))
        return _yes(
            "ref:imports",
            f"the required code imports {len(f.imports)} module(s); model code leaves imports or variables unused in about 3 tasks in 10",
        )
    if re.search(r"\b(List|Optional|Dict|Tuple)\[", p.starter_code or ""):
        return _yes(
            "starter:undefined",
            "starter code uses typing names (List ...) that are undefined without an import",
        )
    if _difficulty(p) in ("medium", "hard"):
        return _yes(
            "text:imports",
            f"{_difficulty(p)} problem: helper imports and variables may be left unused",
        )
    return _no("text:small", "easy problem with no starter code: few names to leave unused")


_LOGIC_LIMITS: Mapping[str, tuple[str, str, int, int | None]] = {
    # id: (FunctionMeasures attribute, noun, default limit, margin under the limit that
    # still counts as relevant, or None)
    "logic_2": ("nesting", "nested block level(s)", 1, None),
    "logic_3": ("branches", "branches", 2, 0),
    "logic_4": ("statements", "statements", 6, 1),
    "logic_5": ("locals", "local variables", 2, 0),
    "logic_7": ("complexity", "cyclomatic complexity", 2, 0),
}


def _logic_limit(iid: str) -> Callable[[Problem, Features], Judgement]:
    attr, what, default, near = _LOGIC_LIMITS[iid]
    code_rule = _limit(attr, what, default, near=near)

    def rule(p: Problem, f: Features) -> Judgement:
        judged = code_rule(p, f)
        if judged is not None:
            return judged
        _difficulty(p)
        return _yes(
            f"text:{attr}",
            f"any algorithmic solution (a loop with a condition) exceeds {what} <= {default}",
        )

    return rule


def _logic_6(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.else_after_exit or f.assign_then_return:
            return _yes(
                "ref:ret",
                f"reference has {f.else_after_exit} else after return/raise and {f.assign_then_return} assign-then-return",
            )
        return _no(
            "ref:no-ret", "reference has no else after return/raise and no assign-then-return"
        )
    return _no(
        "text:no-reference",
        "without reference code redundant else/return patterns cannot be foreseen",
    )


def _logic_8(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.append_loops:
            return _yes(
                "ref:append-loop",
                f"reference builds collections with {f.append_loops} append/copy loop(s)",
            )
        return _no(
            "ref:no-append-loop", "reference builds no collection with an append or copy loop"
        )
    return _no("text:no-reference", "without reference code append loops cannot be foreseen")


def _logic_9(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.bool_conditions:
            return _yes(
                "ref:bool-ops",
                f"reference has {f.bool_conditions} condition(s) combining tests with and/or",
            )
        return _no("ref:simple-conditions", "reference's conditions are single tests")
    if _COMPOUND.search(p.prompt):
        return _yes("text:compound", "the statement combines conditions (bounds, both/either)")
    return _no("text:simple", "the statement has no compound conditions")


# ---------------------------------------------------------------- Documentation


def _doc_1(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        missing, name = _fn_max(f, "unannotated")
        if missing:
            return _yes("ref:unannotated", f"{name} lacks {missing} annotation(s)")
        return _no("ref:annotated", "the reference is fully annotated")
    if p.starter_code and "->" in p.starter_code:
        if _difficulty(p) in ("medium", "hard"):
            return _yes(
                "starter:helpers",
                "starter code is annotated, but helper functions need annotations too",
            )
        return _no(
            "starter:annotated",
            "starter code is already annotated and an easy solution adds no functions",
        )
    return _yes(
        "text:functions", "a program written from scratch defines unannotated functions by default"
    )


def _doc_2(p: Problem, f: Features) -> Judgement:
    long_ref = f.long_doc_lines
    if long_ref:
        return _yes(
            "ref:long-doc",
            f"reference has {long_ref} comment or docstring line(s) over 72 characters",
        )
    doc = _doc_lines(p)
    if any(len(line) > 68 for line in doc):
        return _yes(
            "doc:long-lines",
            "the task's documentation, which solutions copy into docstrings, has lines over 72 characters",
        )
    if _has_code(f):
        return _no("ref:short-doc", "reference and task documentation have short lines")
    return _no("text:no-doc", "no task documentation to copy: solutions' comments are short")


def _always_doc(what: str) -> Callable[[Problem, Features], Judgement]:
    def rule(p: Problem, f: Features) -> Judgement:
        return _yes("reply:any", what)

    return rule


# ---------------------------------------------------------------- Error Handling


def _error_1(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.raise_in_except:
            return _yes(
                "ref:raise-in-except",
                f"reference raises inside {f.raise_in_except} except clause(s)",
            )
        if f.try_blocks and (f.raises or f.declared_raises):
            return _yes(
                "ref:try+raise",
                "solution catches exceptions and raises its own, often inside the except",
            )
        return _no("ref:no-reraise", "reference does not raise inside except clauses")
    return _no("text:no-exceptions", "the task raises no exceptions")


def _error_2(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.raise_with_message:
            return _yes(
                "ref:raise-msg",
                f"reference passes literal messages to {f.raise_with_message} exception(s)",
            )
        if f.declared_raises:
            return _yes("doc:raises", f"the task documents exceptions: {f.declared_raises[0][:60]}")
        return _no("ref:no-raise", "reference raises no exceptions with messages")
    return _no("text:no-exceptions", "the task raises no exceptions")


def _error_3(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.oserror_aliases:
            return _yes(
                "ref:alias",
                f"reference uses OSError alias(es) {', '.join(sorted(set(f.oserror_aliases)))}",
            )
        return _no("ref:no-alias", "reference uses no OSError aliases")
    return _no("text:no-io", "no file or socket I/O")


def _error_4(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.raise_with_message:
            return _yes(
                "ref:raise-msg",
                f"reference builds {f.raise_with_message} exception message(s) at the raise site",
            )
        if f.declared_raises:
            return _yes("doc:raises", f"the task documents exceptions: {f.declared_raises[0][:60]}")
        return _no("ref:no-raise", "reference raises no exceptions with messages")
    return _no("text:no-exceptions", "the task raises no exceptions")


# ---------------------------------------------------------------- Library & API


def _library_1(p: Problem, f: Features) -> Judgement:
    if _has_code(f):
        if f.fs_calls:
            calls = sorted(set(f.fs_calls))
            return _yes(
                "ref:fs-calls", f"reference uses {', '.join(calls[:3])} (pathlib replaces them)"
            )
        return _no("ref:no-fs", "reference makes no os/os.path/glob/open file-system calls")
    return _no("text:no-fs", "no file-system access")


def _library_2(p: Problem, f: Features) -> Judgement:
    if f.pandas:
        return _yes("lib:pandas", "the task uses pandas")
    return _no("lib:no-pandas", "the task does not use pandas")


RULES: Mapping[str, Callable[[Problem, Features], Judgement]] = {
    "style_1": _style_1,
    "style_2": _style_2,
    "style_3": _style_3,
    "style_4": _style_4,
    "style_5": _style_5,
    "style_6": _style_6,
    "style_7": _style_7,
    "style_8": _style_8,
    "style_9": _style_9,
    "logic_1": _logic_1,
    "logic_2": _logic_limit("logic_2"),
    "logic_3": _logic_limit("logic_3"),
    "logic_4": _logic_limit("logic_4"),
    "logic_5": _logic_limit("logic_5"),
    "logic_6": _logic_6,
    "logic_7": _logic_limit("logic_7"),
    "logic_8": _logic_8,
    "logic_9": _logic_9,
    "doc_1": _doc_1,
    "doc_2": _doc_2,
    "doc_3": _always_doc("every solution defines functions that the docstring convention governs"),
    "doc_4": _always_doc("governs the reply format of every task"),
    "doc_5": _always_doc("solutions carry comments and docstrings by default"),
    "doc_6": _always_doc("governs the reply format of every task"),
    "error_1": _error_1,
    "error_2": _error_2,
    "error_3": _error_3,
    "error_4": _error_4,
    "library_1": _library_1,
    "library_2": _library_2,
}


class RulesSelector:
    """Deterministic relevance from the task itself; see the module docstring.

    ``judge(problem, instruction)`` never calls the network. Instructions without a rule
    (user-registered ones) are judged not relevant, with that reason.
    """

    name = "rules"
    version = RULES_VERSION

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Problem, Features]] = {}

    def features(self, problem: Problem) -> Features:
        """The (cached) features of ``problem``."""
        hit = self._cache.get(id(problem))
        if hit is not None and hit[0] is problem:
            return hit[1]
        feats = extract(problem)
        self._cache = {id(problem): (problem, feats)}
        return feats

    def judge_task(self, problem: Problem, order: Sequence[Instruction], k: int) -> TaskJudgements:
        """Judge every instruction of ``order`` (cheap: the features are computed once)."""
        return TaskJudgements(
            judgements={inst.id: self.judge(problem, inst) for inst in order},
            extra={"reference": self.features(problem).reference},
        )

    def judge(self, problem: Problem, instruction: Instruction) -> Judgement:
        """Judge one instruction's relevance to ``problem``."""
        rule = RULES.get(instruction.id)
        if rule is None:
            return _no("no-rule", f"the rules selector has no rule for {instruction.id}")
        return rule(problem, self.features(problem))
