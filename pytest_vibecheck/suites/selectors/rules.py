"""The ``rules`` selector: deterministic, offline relevance judgements (paper §3.1).

The paper asks an LLM whether each instruction "would add meaningful constraints that
require code or response modifications for this specific user query". This selector asks
the same question of the task itself:

*An instruction is relevant when following it would plausibly change the implementation.*

For each instruction a rule sorts the task into an *evidence bucket* (a short rule code,
with a human-readable reason) from

1. the reference program (the canonical solution; else the starter code), measured by
   :mod:`~pytest_vibecheck.suites.selectors.features`: either the reference itself breaks the
   instruction (``ref:branches``: "task_func has 4 branches > 2") -- a *violation*, always
   relevant -- or it shows the context the instruction governs ("opens files", "2
   branches, at the limit");
2. what the task demands: required libraries (pandas), documented exceptions
   (BigCodeBench's ``doc_struct.raises``), the task's documentation;
3. for tasks without reference code (LiveCodeBench stdin problems), the statement, the
   starter code and the difficulty.

For a context bucket, "plausibly" is measured, not guessed: :mod:`.calibration` holds, per
(instruction, bucket), the share of tasks in which a real model's *unconstrained* solution
breaks the instruction (Ruff with the instruction's rules and default parameters;
Qwen2.5-Coder-7B-Instruct on BigCodeBench, o1-mini on LiveCodeBench; see
``benchmarks/rules_calibration.py``). The bucket is relevant when that share is at least
``threshold`` (default :data:`DEFAULT_THRESHOLD`: one task in ten). Buckets without
measurements use the rule's stated prior (reply-format instructions such as ``doc_4``
change every default reply: prior 1.0) or are not relevant.

An instruction without a rule of its own (a team instruction of ``instruction_dirs`` or a
plugin) is judged by its verifier, as a shipped rule's violation bucket: the canonical solution
checked against it at its default parameters (``ref:verifier``: the reference breaks it,
relevant; ``ref:verifier-ok``: it follows it, not relevant: there is no measurement of model
code for it). Without a canonical solution, or for an instruction on the reply rather than the
code, there is no evidence and it is not relevant (``no-rule``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.selectors.base import Judgement, TaskJudgements
from pytest_vibecheck.suites.selectors.calibration import PLAUSIBILITY
from pytest_vibecheck.suites.selectors.features import Features, extract
from pytest_vibecheck.verify.instructions import Instruction, InstructionRegistry

#: Bump when any rule or the calibration changes: recorded in every problem's provenance.
RULES_VERSION = "rules-2"

#: A context bucket is relevant when real model code breaks the instruction in at least
#: this share of its tasks.
DEFAULT_THRESHOLD = 0.10


@dataclass(frozen=True)
class Evidence:
    """What a rule found: a bucket code, a reason, and whether the reference itself breaks
    the instruction (``violation``). ``prior`` is the plausibility to use when the bucket
    has no calibration (None: not relevant)."""

    rule: str
    reason: str
    violation: bool = False
    prior: float | None = None


def _v(rule: str, reason: str) -> Evidence:
    return Evidence(rule, reason, violation=True)


def _c(rule: str, reason: str, prior: float | None = None) -> Evidence:
    return Evidence(rule, reason, prior=prior)


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


def _hard(p: Problem) -> bool:
    return _difficulty(p) in ("medium", "hard")


# Text cues for tasks without a reference solution (LiveCodeBench statements).
_CAPS_VARS = re.compile(r"(?<![\w\\])(?:[A-Z](?:_\{?[a-zA-Z0-9,]+\}?)?)(?![\w(])")
_STRING_OUTPUT = re.compile(r"\b(Yes|No|YES|NO|Takahashi|Aoki|Alice|Bob|First|Second)\b")
_THRESHOLD = re.compile(
    r"(modulo|mod|at least|at most|more than|less than|greater than|exactly|divisible by)\s*\$?\\?(?:[2-9]|[1-9]\d+)\b",
    re.IGNORECASE,
)
_MULTI_VALUES = re.compile(r"^[A-Z]_?\w* [A-Z]_?\w*", re.MULTILINE)
_PAIRS = re.compile(r"List\[List\[int\]\]|edges|queries|intervals|pairs|points", re.IGNORECASE)
_COMPOUND = re.compile(
    r"\b(both|either|and also|neither|grid|within the bounds|inclusive)\b", re.IGNORECASE
)
_COLLECTION_OUT = re.compile(
    r"return (an? )?(array|list)|-> List\[|separated by spaces|in order", re.IGNORECASE
)
_PANDAS_IDIOMS = re.compile(r"^\s*df\s*=|inplace\s*=\s*True|\.values\b", re.MULTILINE)

Rule = Callable[[Problem, Features], Evidence]


# ---------------------------------------------------------------- Coding Style


def _style_1(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.pep8_issues:
            return _v("ref:pep8", "reference breaks PEP 8: " + "; ".join(f.pep8_issues[:2]))
        return _c("ref:pep8-clean", "reference follows PEP 8 (blank lines, spacing, 88 columns)")
    return _c("text:any-program", "PEP 8 layout governs every program; no reference to check")


def _style_2(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.imports_unsorted:
            return _v(
                "ref:imports-unsorted",
                f"reference imports {len(f.imports)} modules out of isort order",
            )
        if len(f.imports) >= 2:
            return _c(
                "ref:imports",
                f"solution imports {len(f.imports)} modules whose order and grouping isort fixes",
            )
        return _c("ref:few-imports", f"reference imports {len(f.imports)} module(s)")
    if _hard(p):
        return _c(
            "text:imports",
            f"{_difficulty(p)} problem: solutions import several modules (sys, collections, heapq)",
        )
    return _c("text:few-imports", "easy problem: solutions need few imports")


def _style_3(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        longest = max((len(line) for line in (p.canonical_solution or "").splitlines()), default=0)
        if f.lines_over_79:
            return _v(
                "ref:long-lines",
                f"reference has {f.lines_over_79} line(s) over 79 characters (longest {longest})",
            )
        if longest > 72:
            return _c(
                "ref:near-limit",
                f"reference's longest line is {longest} characters, near the 79 limit",
            )
        if any(len(line) > 75 for line in _doc_lines(p)):
            return _c(
                "doc:long-lines",
                "the task's documentation, which solutions copy into docstrings, has long lines",
            )
        return _c("ref:short-lines", f"reference's longest line is {longest} characters")
    if _hard(p):
        return _c("text:long-expressions", f"{_difficulty(p)} problem: long expressions and calls")
    return _c("text:short", "easy problem: short statements")


def _style_4(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.multiline_brackets:
            return _c(
                "ref:multiline",
                f"reference has {f.multiline_brackets} multi-line call(s) or literal(s)",
            )
        return _c("ref:single-line", "reference has no multi-line call, literal or signature")
    return _c("text:single-line", "competitive solutions seldom span calls or literals over lines")


def _style_5(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.single_quoted:
            return _v(
                "ref:single-quotes",
                f"reference has {f.single_quoted} single-quoted string literal(s)",
            )
        if f.string_literals:
            return _c("ref:strings", f"solution has {f.string_literals} string literal(s)")
        return _c("ref:no-strings", "reference has no string literals")
    if _STRING_OUTPUT.search(p.prompt) or "-> str" in (p.starter_code or ""):
        return _c(
            "text:string-output",
            "the answer is a string (e.g. Yes/No): the code has string literals",
        )
    return _c("text:numeric-output", "the answer is numeric")


def _style_6(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.non_snake_locals:
            return _v(
                "ref:non-snake", f"reference names locals {', '.join(f.non_snake_locals[:3])}"
            )
        return _c("ref:snake", "reference locals are all snake_case")
    names = sorted(set(_CAPS_VARS.findall(p.prompt.split("Constraints")[0])))
    if names and p.test.kind == "stdin":
        return _c(
            "text:caps-vars",
            f"the statement names values {', '.join(names[:3])}, tempting N/A-style locals",
        )
    if re.search(r"\(self, [^)]*[a-z][A-Z]", p.starter_code or ""):
        return _c(
            "text:camel-params", "starter code uses camelCase parameters, tempting camelCase locals"
        )
    return _c("text:snake", "statement and starter code use lowercase names")


def _style_7(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.open_redundant_mode:
            return _v(
                "ref:open-mode",
                f"reference passes a redundant mode to open() {f.open_redundant_mode} time(s)",
            )
        if f.open_calls:
            return _c("ref:open", f"solution opens files ({f.open_calls} open() call(s))")
        return _c("ref:no-open", "reference does not call open()")
    return _c("text:no-files", "input comes from stdin or arguments: no open() calls")


def _style_8(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.magic_comparisons:
            return _v(
                "ref:magic",
                f"reference compares with magic number(s) {', '.join(f.magic_comparisons[:3])}",
            )
        return _c("ref:no-magic", "reference compares with no constants other than 0 and 1")
    m = _THRESHOLD.search(p.prompt)
    if m:
        return _c(
            "text:threshold",
            f"the statement fixes a constant ({m.group(0)!r}) a solution compares against",
        )
    return _c("text:no-threshold", "the statement fixes no constant threshold")


def _style_9(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.unused_unpacked:
            return _v(
                "ref:unused-unpacked",
                f"reference unpacks unused name(s) {', '.join(f.unused_unpacked[:3])}",
            )
        if f.unpacking:
            return _c("ref:unpacking", f"solution unpacks tuples {f.unpacking} time(s)")
        return _c("ref:no-unpacking", "reference does no tuple unpacking")
    if p.test.kind == "stdin" and _MULTI_VALUES.search(p.prompt):
        return _c("text:multi-values", "input lines hold several values, read by tuple unpacking")
    if _PAIRS.search(p.starter_code or "") or (
        p.test.kind == "functional" and _PAIRS.search(p.prompt)
    ):
        return _c("text:pairs", "arguments are lists of pairs, iterated by tuple unpacking")
    return _c("text:no-unpacking", "inputs are single values")


# ---------------------------------------------------------------- Logic & Patterns


def _logic_1(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        found = [
            *(f"unused import {n}" for n in f.unused_imports),
            *(f"unused variable {n}" for n in f.unused_locals[:2]),
            *(f"undefined name {n}" for n in f.undefined_names[:2]),
        ]
        if found:
            return _v("ref:pyflakes", "reference has " + ", ".join(found[:3]))
        return _c(
            "ref:imports",
            f"the required code imports {len(f.imports)} module(s) a solution may leave unused",
        )
    if re.search(r"\b(List|Optional|Dict|Tuple)\[", p.starter_code or ""):
        return _c(
            "starter:undefined",
            "starter code uses typing names (List ...) that are undefined without an import",
        )
    if _hard(p):
        return _c(
            "text:imports",
            f"{_difficulty(p)} problem: helper imports and variables may be left unused",
        )
    return _c("text:small", "easy problem with no starter code: few names")


#: id: (FunctionMeasures attribute, noun, default limit) for the per-function limits.
_LIMITS: Mapping[str, tuple[str, str, int]] = {
    "logic_2": ("nesting", "nested block level(s)", 1),
    "logic_3": ("branches", "branches", 2),
    "logic_4": ("statements", "statements", 6),
    "logic_5": ("locals", "local variables", 2),
    "logic_7": ("complexity", "cyclomatic complexity", 2),
}


def _limit_rule(iid: str) -> Rule:
    attr, what, default = _LIMITS[iid]

    def rule(p: Problem, f: Features) -> Evidence:
        if _has_code(f):
            value, name = _fn_max(f, attr)
            if value > default:
                return _v(f"ref:{attr}", f"{name} has {value} {what} > {default}")
            if value == default:
                return _c(
                    f"ref:{attr}-at-limit", f"{name} has {value} {what}, at the limit of {default}"
                )
            return _c(
                f"ref:{attr}-ok",
                f"reference's largest function has {value} {what}, under {default}",
            )
        if _hard(p):
            return _c(
                f"text:{attr}",
                f"{_difficulty(p)} problem: solutions have loops, conditions and helpers",
            )
        return _c(
            f"text:{attr}-small", "easy problem: a short solution with a loop and a condition"
        )

    return rule


def _logic_6(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.else_after_exit or f.assign_then_return:
            return _v(
                "ref:ret",
                f"reference has {f.else_after_exit} else after return/raise and {f.assign_then_return} assign-then-return",
            )
        if _fn_max(f, "branches")[0] and "return" in (p.canonical_solution or ""):
            return _c("ref:if-return", "solution returns from branching code")
        return _c("ref:straight", "reference returns once from straight-line code")
    if p.test.kind == "functional":
        return _c("text:returns", "the method returns a computed value")
    if _hard(p):
        return _c(
            "text:branches", f"{_difficulty(p)} problem: helper functions return from branches"
        )
    return _c("text:script", "easy stdin script")


def _logic_8(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.append_loops:
            return _v(
                "ref:append-loop",
                f"reference builds collections with {f.append_loops} append/copy loop(s)",
            )
        code = p.canonical_solution or ""
        if re.search(r"\[[^\[\]]+ for [^\[\]]+ in ", code) or re.search(
            r"\{[^{}]+ for [^{}]+ in ", code
        ):
            return _c("ref:comprehension", "solution builds collections (here with comprehensions)")
        return _c("ref:no-collections", "reference builds no collections in loops")
    if _COLLECTION_OUT.search(p.prompt) or "-> List[" in (p.starter_code or ""):
        return _c("text:collection", "the answer is a list or sequence built element by element")
    return _c("text:scalar", "the answer is a scalar")


def _logic_9(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.bool_conditions:
            return _v(
                "ref:bool-ops",
                f"reference has {f.bool_conditions} condition(s) combining tests with and/or",
            )
        if f.declared_raises and any(m.branches for m in f.functions):
            return _c(
                "ref:validation", "the task documents exceptions: input checks may combine tests"
            )
        return _c("ref:simple-conditions", "reference's conditions are single tests")
    if _COMPOUND.search(p.prompt):
        return _c("text:compound", "the statement combines conditions (bounds, both/either)")
    return _c("text:simple", "the statement has no compound conditions")


# ---------------------------------------------------------------- Documentation


def _doc_1(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        missing, name = _fn_max(f, "unannotated")
        if missing:
            return _v("ref:unannotated", f"{name} lacks {missing} annotation(s)")
        return _c("ref:annotated", "the reference is fully annotated")
    if p.starter_code and "->" in p.starter_code:
        if _hard(p):
            return _c(
                "starter:helpers",
                "starter code is annotated; helper functions need annotations too",
            )
        return _c("starter:annotated", "starter code is already annotated")
    return _c("text:functions", "a program written from scratch defines unannotated functions")


def _doc_2(p: Problem, f: Features) -> Evidence:
    if f.long_doc_lines:
        return _v(
            "ref:long-doc",
            f"reference has {f.long_doc_lines} comment or docstring line(s) over 72 characters",
        )
    if any(len(line) > 68 for line in _doc_lines(p)):
        return _c(
            "doc:long-lines",
            "the task's documentation, which solutions copy into docstrings, has long lines",
        )
    if _has_code(f):
        return _c("ref:short-doc", "reference and task documentation have short lines")
    return _c("text:docstrings", "no task documentation to copy")


def _doc_3(p: Problem, f: Features) -> Evidence:
    if _has_code(f) and not f.docstrings:
        return _v("ref:undocumented", "reference has no docstrings (module or function)")
    if _has_code(f):
        return _c("ref:docstrings", f"reference has {f.docstrings} docstring(s)")
    return _c("text:undocumented", "solutions written from scratch carry no module docstring")


def _doc_4(p: Problem, f: Features) -> Evidence:
    return _c("reply:format", "a default reply wraps code in Markdown fences with prose", prior=1.0)


def _doc_5(p: Problem, f: Features) -> Evidence:
    if _has_code(f) and (f.comments or f.docstrings):
        return _v(
            "ref:comments", f"reference has {f.comments} comment(s) and {f.docstrings} docstring(s)"
        )
    return _c("reply:comments", "solutions carry comments or docstrings by default")


def _doc_6(p: Problem, f: Features) -> Evidence:
    return _c("reply:format", "a default reply has no JSON explanation block", prior=1.0)


# ---------------------------------------------------------------- Error Handling


def _error_1(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.raise_in_except:
            return _v(
                "ref:raise-in-except",
                f"reference raises inside {f.raise_in_except} except clause(s)",
            )
        if f.try_blocks and (f.raises or f.declared_raises):
            return _c("ref:try+raise", "solution catches exceptions and raises its own")
        return _c("ref:no-reraise", "reference does not raise inside except clauses")
    return _c("text:no-exceptions", "the task raises no exceptions")


def _error_2(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.raise_with_message:
            return _v(
                "ref:raise-msg",
                f"reference passes literal messages to {f.raise_with_message} exception(s)",
            )
        if f.declared_raises:
            return _c("doc:raises", f"the task documents exceptions: {f.declared_raises[0][:60]}")
        return _c("ref:no-raise", "reference raises no exceptions with messages")
    return _c("text:no-exceptions", "the task raises no exceptions")


def _error_3(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.oserror_aliases:
            return _v(
                "ref:alias",
                f"reference uses OSError alias(es) {', '.join(sorted(set(f.oserror_aliases)))}",
            )
        if f.oserror_handling and (f.fs_calls or f.open_calls or "socket" in f.libs):
            return _c("ref:io-errors", "solution handles I/O errors")
        return _c("ref:no-alias", "reference handles no OSError-family exceptions")
    return _c("text:no-io", "no file or socket I/O")


def _error_4(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.raise_with_message:
            return _v(
                "ref:raise-msg",
                f"reference builds {f.raise_with_message} exception message(s) at the raise site",
            )
        if f.declared_raises:
            return _c("doc:raises", f"the task documents exceptions: {f.declared_raises[0][:60]}")
        return _c("ref:no-raise", "reference raises no exceptions with messages")
    return _c("text:no-exceptions", "the task raises no exceptions")


# ---------------------------------------------------------------- Library & API


def _library_1(p: Problem, f: Features) -> Evidence:
    if _has_code(f):
        if f.fs_calls:
            return _v(
                "ref:fs-calls",
                f"reference uses {', '.join(sorted(set(f.fs_calls))[:3])} (pathlib replaces them)",
            )
        return _c("ref:no-fs", "reference makes no os/os.path/glob/open file-system calls")
    return _c("text:no-fs", "no file-system access")


def _library_2(p: Problem, f: Features) -> Evidence:
    if f.pandas and _has_code(f) and _PANDAS_IDIOMS.search(p.canonical_solution or ""):
        return _v(
            "ref:pandas-idioms", "reference names a DataFrame df, uses inplace=True or .values"
        )
    if f.pandas:
        return _c("lib:pandas", "the task uses pandas")
    return _c("lib:no-pandas", "the task does not use pandas")


RULES: Mapping[str, Rule] = {
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
    "logic_2": _limit_rule("logic_2"),
    "logic_3": _limit_rule("logic_3"),
    "logic_4": _limit_rule("logic_4"),
    "logic_5": _limit_rule("logic_5"),
    "logic_6": _logic_6,
    "logic_7": _limit_rule("logic_7"),
    "logic_8": _logic_8,
    "logic_9": _logic_9,
    "doc_1": _doc_1,
    "doc_2": _doc_2,
    "doc_3": _doc_3,
    "doc_4": _doc_4,
    "doc_5": _doc_5,
    "doc_6": _doc_6,
    "error_1": _error_1,
    "error_2": _error_2,
    "error_3": _error_3,
    "error_4": _error_4,
    "library_1": _library_1,
    "library_2": _library_2,
}


def evidence(problem: Problem, features: Features, instruction_id: str) -> Evidence | None:
    """The evidence bucket of one instruction for a task (None: no rule for this id)."""
    rule = RULES.get(instruction_id)
    return None if rule is None else rule(problem, features)


class RulesSelector:
    """Deterministic relevance from the task itself; see the module docstring.

    ``threshold`` (a fraction in [0, 1]) is the minimum measured share of tasks in which
    real model code breaks an instruction for a context bucket to count as relevant.
    Instructions without a rule (team ones) are judged by their verifier on the reference
    (:meth:`judge_by_verifier`).
    """

    name = "rules"
    version = RULES_VERSION

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLD,
        plausibility: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        self.threshold = threshold
        self.plausibility = PLAUSIBILITY if plausibility is None else plausibility
        self._cache: tuple[Problem, Features] | None = None

    def features(self, problem: Problem) -> Features:
        """The features of ``problem`` (the last task's are cached)."""
        if self._cache is not None and self._cache[0] is problem:
            return self._cache[1]
        feats = extract(problem)
        self._cache = (problem, feats)
        return feats

    def judge(self, problem: Problem, instruction: Instruction) -> Judgement:
        """Judge one instruction's relevance to ``problem``."""
        ev = evidence(problem, self.features(problem), instruction.id)
        if ev is None:
            return self.judge_by_verifier(problem, instruction)
        if ev.violation:
            return Judgement(True, ev.rule, ev.reason)
        share = self.plausibility.get(instruction.id, {}).get(ev.rule)
        if share is not None:
            verdict = "relevant" if share >= self.threshold else "not relevant"
            reason = (
                f"{ev.reason}; model code breaks it in {100 * share:.0f}% of such tasks: {verdict}"
            )
            return Judgement(share >= self.threshold, ev.rule, reason)
        if ev.prior is not None:
            return Judgement(ev.prior >= self.threshold, ev.rule, ev.reason)
        return Judgement(False, ev.rule, f"{ev.reason}; no evidence it would change the code")

    def judge_by_verifier(self, problem: Problem, instruction: Instruction) -> Judgement:
        """Judge an instruction without a rule: relevant when the canonical solution breaks it
        at its default parameters (see the module docstring). Not relevant (rule ``no-rule``)
        without a canonical solution, for a reply-target instruction, or when the verifier
        cannot judge (Ruff missing: the reason says why)."""
        from pytest_vibecheck.verify.api import verify

        no_rule = f"the rules selector has no rule for {instruction.id}"
        code = problem.canonical_solution
        if not code or instruction.verifier.target != "code":
            return Judgement(False, "no-rule", f"{no_rule} and no reference code to verify")
        verdict = verify(
            code,
            instruction.id,
            instruction.defaults(),
            entry_point=problem.entry_point,
            registry=InstructionRegistry([instruction]),
        )
        if verdict.passed is None:
            return Judgement(False, "no-rule", f"{no_rule}; its verifier failed: {verdict.error}")
        if verdict.passed:
            return Judgement(
                False, "ref:verifier-ok", "the reference follows it: no evidence it would change the code"
            )
        first = verdict.violations[0]
        return Judgement(
            True,
            "ref:verifier",
            f"the reference breaks it ({len(verdict.violations)} violation(s); line {first.line}: "
            f"{first.rule} {first.message})",
        )

    def judge_task(self, problem: Problem, order: Sequence[Instruction], k: int) -> TaskJudgements:
        """Judge every instruction of ``order`` (cheap: the features are computed once)."""
        return TaskJudgements(
            judgements={inst.id: self.judge(problem, inst) for inst in order},
            extra={"reference": self.features(problem).reference},
        )
