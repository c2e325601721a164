"""Score a batch of completions: unit tests in the sandbox plus VeriCode verdicts, one reward each.

The reward of a completion is, by default, the paper's composite (Vibe Checker, arXiv
2510.07315, §4.5) gated by the tests (``RewardConfig.composite``)::

    reward = func * (alpha * IF + 1 - alpha)        # "gated" (default)
    reward = alpha * IF + (1 - alpha) * func        # "blend", the paper's

- ``func`` (functional outcome) is 1.0 when every unit test passes in the sandbox and 0.0 for
  a model failure: ``failed``, ``timeout``, ``tampered`` (the candidate interfered with its
  grader) or a reply without code;
- ``IF`` is the completion's instruction-level IF (passed / judged instructions, paper §3.2),
  or its task-level IF (1.0 only when every instruction passes) with ``if_level="task"``.

A sandbox or verifier failure (``error``, ``skipped`` because a library is missing, Ruff not
running, an executor that crashed) is an **infrastructure failure**: the reward is ``None`` and
``status`` is ``"infra_error"``, never 0, so a training loop can drop the sample instead of
punishing the policy for the grader's fault.

Batching: every distinct (completion, problem) pair is scored once (RL batches repeat
completions); the extracted code of all of them is verified in one
:func:`~pytest_vibecheck.verify.api.verify_batch` call (one Ruff process per batch, see
:mod:`pytest_vibecheck.verify.ruff_engine`), and every distinct (code, problem) is run once
through the executor, by default :func:`pytest_vibecheck.execute.pool.run_many` (several
sandboxes at once, optional result cache).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pytest_vibecheck import _gc
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings
from pytest_vibecheck.report.metrics import instruction_level_if, task_level_if
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.types import ParamValue
from pytest_vibecheck.verify.api import BatchVerification, VerifyItem
from pytest_vibecheck.verify.extract import Extraction, ExtractMode, extract_code, note_parses
from pytest_vibecheck.verify.nocode import code_status, no_code_reason, parse_free_length
from pytest_vibecheck.verify.verdict import Verdict, Violation, ViolationRecord

from .problems import ProblemRef, problem_ref_text, resolve_problem

if TYPE_CHECKING:
    from pytest_vibecheck.verify.parse_helper import Pending

__all__ = [
    "FUNC_STATUSES",
    "Executor",
    "InstructionOutcome",
    "OutcomeRecord",
    "RewardConfig",
    "RewardRecord",
    "RewardResult",
    "RewardScorer",
    "completion_text",
    "score_batch",
    "scorer_for",
]

#: The functional outcome of each execution status (1.0 pass, 0.0 model failure, None: infra).
#: ``tampered`` (the candidate tried to write, change or hide its verdict) is a model failure.
FUNC_STATUSES: Mapping[str, float | None] = {
    "passed": 1.0,
    "failed": 0.0,
    "timeout": 0.0,
    "tampered": 0.0,
    "no_code": 0.0,
    "error": None,
    "skipped": None,
}


#: Runs ``(code, problem)`` pairs and returns one result per pair, in order. The default is
#: :func:`pytest_vibecheck.execute.pool.run_many` with the scorer's settings; any callable with
#: this shape (a Ray-backed runner, a remote service) can replace it.
Executor = Callable[[Sequence[tuple[str, Problem]]], Sequence[ExecResult]]

#: Code longer than this (characters) is guarded (:meth:`RewardScorer._guard`) before Ruff
#: starts: code deep enough to crash Ruff's parser (about 7,000 nested levels, measured with
#: Ruff 0.17) cannot be shorter. Shorter code is guarded while Ruff runs. Only speed depends
#: on it: a file that crashes Ruff is isolated by the engine either way.
_GUARD_BEFORE_RUFF = 4096

IfLevel = Literal["instruction", "task"]
Composite = Literal["blend", "gated"]
#: Which assistant messages of a conversational completion are judged (:func:`completion_text`).
MessageMode = Literal["last", "all"]


@dataclass(frozen=True)
class RewardConfig:
    """How rewards are computed.

    - ``alpha``: weight of IF in the composite, in [0, 1] (default 0.4, the paper's best alpha for
      BigVibeBench by Pearson correlation with human preference, §4.5);
    - ``if_level``: ``"instruction"`` (instruction-level IF, the paper's composite) or
      ``"task"`` (task-level IF: 1 only if every instruction passes);
    - ``composite``: ``"gated"`` (default) = ``func * (alpha * IF + 1 - alpha)``: instruction
      credit only for code that passes its tests, so code that fails them, and a reply with
      no code, earn 0 (a policy cannot be paid for style alone; issue 23), or ``"blend"`` =
      ``alpha * IF + (1 - alpha) * func``, the paper's composite (§4.5), which pays
      ``alpha * IF`` to code that fails its tests;
    - ``functional``: run the unit tests (False: IF only, reward = IF);
    - ``instructions``: judge the instructions (False: tests only, reward = func); a problem
      with no instruction always gets reward = func;
    - ``k``: judge only each problem's first k instructions (the single-turn prompt at k
      shows those); None = all;
    - ``extract_mode``: how code is taken from a reply (:func:`~pytest_vibecheck.verify.extract.extract_code`;
      ``"first"`` is the paper's pipeline);
    - ``messages``: which assistant messages of a conversational completion are the reply:
      ``"last"`` (the final one with text) or ``"all"`` (joined); see :func:`completion_text`;
    - ``exec_settings``: sandbox settings (:class:`~pytest_vibecheck.execute.tests.ExecSettings`);
    - ``workers``: sandboxes at a time (None: CPU count / xdist workers);
    - ``exec_cache``: path of a SQLite result cache shared by processes (None: no cache);
    - ``executor``: where the sandboxes run, as an executor spec of the execution layer
      (``"local"``, ``"ray"``, ``"ray://HOST:PORT"``). None (default): the Ray executor when
      this process is connected to a Ray cluster (``ray.is_initialized()``, as in verl's
      reward-loop workers and any Ray task or actor), else the local sandbox pool. A spec,
      unlike an object, travels in framework configs (verl ``reward_kwargs``) to fresh workers.

    Raises :class:`~pytest_vibecheck.errors.VibecheckError` for a value out of range.
    """

    alpha: float = 0.4
    if_level: IfLevel = "instruction"
    composite: Composite = "gated"
    functional: bool = True
    instructions: bool = True
    k: int | None = None
    extract_mode: ExtractMode = "first"
    messages: MessageMode = "last"
    exec_settings: ExecSettings | None = None
    workers: int | None = None
    exec_cache: str | None = None
    executor: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float) or not (
            0.0 <= float(self.alpha) <= 1.0
        ):
            raise VibecheckError(f"reward alpha must be a number in [0, 1], got {self.alpha!r}")
        if self.if_level not in ("instruction", "task"):
            raise VibecheckError(f"reward if_level must be 'instruction' or 'task', got {self.if_level!r}")
        if self.composite not in ("blend", "gated"):
            raise VibecheckError(f"reward composite must be 'blend' or 'gated', got {self.composite!r}")
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 0):
            raise VibecheckError(f"reward k must be an int >= 0 or None, got {self.k!r}")
        if self.extract_mode not in ("first", "best"):
            raise VibecheckError(f"reward extract_mode must be 'first' or 'best', got {self.extract_mode!r}")
        if self.messages not in ("last", "all"):
            raise VibecheckError(f"reward messages must be 'last' or 'all', got {self.messages!r}")
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1):
            raise VibecheckError(f"reward workers must be an int >= 1 or None, got {self.workers!r}")
        if not (self.functional or self.instructions):
            raise VibecheckError("reward: functional and instructions are both off; nothing to score")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> RewardConfig:
        """A config from plain options (framework config files: verl ``reward_kwargs``).

        Keys: the fields above, plus ``time_limit_s`` (fixed sandbox time limit in seconds).
        Unknown keys are an error naming them.
        """
        names = set(cls.__dataclass_fields__) - {"exec_settings"}
        opts = dict(options)
        time_limit = opts.pop("time_limit_s", None)
        unknown = sorted(set(opts) - names)
        if unknown:
            raise VibecheckError(
                f"unknown reward option(s) {unknown}; known: {sorted(names | {'time_limit_s'})}"
            )
        settings = ExecSettings(time_limit_s=float(time_limit)) if time_limit is not None else None
        return cls(**opts, exec_settings=settings)

    def key(self) -> str:
        """The options that change a reward, as text (a scorer per distinct key)."""
        settings = self.exec_settings or ExecSettings()
        return json.dumps(
            [self.alpha, self.if_level, self.composite, self.functional, self.instructions, self.k,
             self.extract_mode, self.messages, self.workers, self.exec_cache, self.executor, repr(settings)],
            default=str,
        )


class OutcomeRecord(TypedDict):
    """An :class:`InstructionOutcome` as JSON (:meth:`InstructionOutcome.to_dict`)."""

    id: str
    params: dict[str, ParamValue]
    passed: bool | None
    error: str | None
    violations: list[ViolationRecord]


class RewardRecord(TypedDict):
    """A :class:`RewardResult` as JSON (:meth:`RewardResult.to_dict`); ``details`` stay free
    JSON (problem id, extraction method, failed tests, the sandbox's message, cache use)."""

    reward: float | None
    status: Literal["ok", "infra_error"]
    func: float | None
    exec_status: str
    instruction_if: float | None
    task_level_if: float | None
    verdicts: list[OutcomeRecord]
    error: str | None
    details: dict[str, Any]


@dataclass(frozen=True)
class InstructionOutcome:
    """The verdict on one instruction: ``passed`` is None when the verifier could not judge
    (``error`` says why); ``violations`` are the verifier's findings (rule, line, column,
    message)."""

    id: str
    params: Mapping[str, ParamValue]
    passed: bool | None
    error: str | None = None
    violations: tuple[Violation, ...] = ()

    def to_dict(self) -> OutcomeRecord:
        """JSON-ready dict with every field (violations as ``{"rule", "line", "column",
        "message"}`` dicts)."""
        return {"id": self.id, "params": dict(self.params), "passed": self.passed,
                "error": self.error, "violations": [v.to_dict() for v in self.violations]}


@dataclass(frozen=True)
class RewardResult:
    """The reward of one completion, with its parts.

    - ``reward``: the composite in [0, 1], or None for an infrastructure failure;
    - ``status``: ``"ok"`` or ``"infra_error"`` (``error`` says what failed);
    - ``func``: 1.0 / 0.0 / None (not run, or infrastructure failure); ``exec_status``: the
      sandbox's status (``passed``, ``failed``, ``timeout``, ``tampered``, ``error``,
      ``skipped``), ``no_code`` or ``not_run``;
    - ``instruction_if`` / ``task_level_if``: fractions in [0, 1], None when no instruction was
      judged or a verifier failed;
    - ``verdicts``: one :class:`InstructionOutcome` per judged instruction, in order;
    - ``details``: problem id, extraction method, failed tests, the sandbox's message, whether
      the result came from the cache or was shared with an identical pair in the batch.
    """

    reward: float | None
    status: Literal["ok", "infra_error"]
    func: float | None
    exec_status: str
    instruction_if: float | None
    task_level_if: float | None
    verdicts: tuple[InstructionOutcome, ...] = ()
    error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_infra_error(self) -> bool:
        """True when the grader, not the completion, failed (``reward`` is None)."""
        return self.status == "infra_error"

    def to_dict(self) -> RewardRecord:
        """JSON-ready dict with every field."""
        return {
            "reward": self.reward, "status": self.status, "func": self.func,
            "exec_status": self.exec_status, "instruction_if": self.instruction_if,
            "task_level_if": self.task_level_if, "verdicts": [v.to_dict() for v in self.verdicts],
            "error": self.error, "details": dict(self.details),
        }


def completion_text(completion: object, messages: MessageMode = "last") -> str:
    """The reply text of a completion: a string, or a conversational completion (a list of
    message dicts, as TRL passes them: ``[{"role": "assistant", "content": "..."}]``; content
    given as text parts is joined).

    ``messages``: which assistant messages make the reply. ``"last"`` (default): the final
    assistant message that has text (a completion with tool calls, or a draft and then the
    answer, is judged on its answer; a last message that only calls a tool, ``content=None``,
    is passed over); ``"all"``: every assistant message's text, joined by newlines in order
    (with extraction mode ``first``, an earlier draft's code is then the one judged). Messages
    of other roles (``tool``, ``user``) are never part of the reply.

    Raises :class:`~pytest_vibecheck.errors.VibecheckError` for anything else.
    """
    if messages not in ("last", "all"):
        raise VibecheckError(f"completion messages must be 'last' or 'all', got {messages!r}")
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if isinstance(completion, Sequence):
        texts: list[str] = []  # per assistant message with text content, in order
        for msg in completion:
            if not isinstance(msg, Mapping):
                break
            if msg.get("role", "assistant") != "assistant":
                continue
            content = msg.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, Sequence):
                texts.append("\n".join(
                    str(p.get("text", "")) for p in content
                    if isinstance(p, Mapping) and p.get("type", "text") == "text"
                ))
            elif content is not None:
                break
        else:
            if messages == "all":
                return "\n".join(texts)
            return next((t for t in reversed(texts) if t.strip()), texts[-1] if texts else "")
    raise VibecheckError(
        "completion: expected a string or a list of {'role', 'content'} messages, got "
        f"{type(completion).__name__}"
    )


@dataclass
class _Unit:
    """One distinct (completion, problem) pair being scored."""

    reply: str
    problem: Problem
    judged: tuple[tuple[str, dict[str, ParamValue]], ...]
    code: str = ""
    method: str = ""
    no_code: bool = False
    extraction: Extraction | None = None
    guarded: bool = False  # no_code_reason (one parse, the parser guard) is done
    parse_free: int = 0  # shorter fenced code needs no parse for the guard (parse_free_length)
    deferred: bool = False  # its guard's parse went to the parse helper
    verdicts: list[InstructionOutcome] = field(default_factory=list)
    verify_error: str | None = None
    exec_result: ExecResult | None = None
    exec_error: str | None = None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _problem_key(prob: Problem, judged: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """What identifies a problem for scoring (its tests, entry points, libraries and the
    judged instructions), as a SHA-256 hex digest. Each text is hashed with its length in
    front, so no two different problems give the same sequence of bytes; only the small
    parts are JSON-encoded (the test code, often kilobytes, would cost more to escape than
    to hash)."""
    digest = hashlib.sha256()

    def part(text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)

    test = prob.test
    part(json.dumps([test.kind, test.entry_point, prob.entry_point, list(prob.libs), len(test.cases),
                     [[i, dict(p)] for i, p in judged]], sort_keys=True, default=str))
    part(test.code)
    for case in test.cases:
        part(case.input)
        part(case.output)
    return digest.hexdigest()


class RewardScorer:
    """Scores batches of completions with one configuration; reusable and thread-safe.

    ``executor``: a callable with the :data:`Executor` shape, called instead of the sandbox
    pool, or an executor object of the execution layer (one with ``submit``, e.g. a Ray
    executor), which the pool's ``run_many`` runs on; default: ``config.executor``, else the
    local sandbox pool. ``engine`` is a
    :class:`~pytest_vibecheck.verify.ruff_engine.RuffEngine` (default: the shared one).
    Nothing is set up until the first batch, so a scorer can be made anywhere, including in a
    fresh worker process.
    """

    def __init__(
        self,
        config: RewardConfig | None = None,
        *,
        executor: Executor | Any | None = None,
        engine: Any = None,
    ) -> None:
        self.config = config or RewardConfig()
        self._executor = executor
        self._engine = engine
        self._lock = threading.Lock()
        self._cache: Any = None
        self._made: Any = None
        #: Completions scored and infrastructure failures among them, over this scorer's life.
        self.scored = 0
        self.infra_errors = 0

    # ------------------------------------------------------------ execution

    def _exec_cache(self) -> Any:
        if self.config.exec_cache is None:
            return None
        with self._lock:
            if self._cache is None:
                from pytest_vibecheck.execute.cache import ExecCache

                self._cache = ExecCache(Path(self.config.exec_cache))
            return self._cache

    def _pool_executor(self) -> object | None:
        """The execution layer's executor object (``submit``) to hand to ``run_many``: the
        scorer's own, or one made once from ``config.executor`` (``local``, ``ray``,
        ``ray://HOST:PORT``)."""
        if self._executor is not None and not callable(getattr(self._executor, "submit", None)):
            return None  # a plain callable, called directly
        if self._executor is not None:
            return self._executor
        spec = self.config.executor
        if spec is None:
            spec = _cluster_spec()
            if spec is None:
                return None
        with self._lock:
            if self._made is None:
                try:
                    module = importlib.import_module("pytest_vibecheck.execute.executor")
                except ImportError:
                    raise VibecheckError(
                        f"reward executor {spec!r}: this installation has no executor layer "
                        "(pytest_vibecheck.execute.executor); leave executor unset for the "
                        "local sandbox pool"
                    ) from None
                self._made = module.make_executor(spec, slots=self.config.workers)
            made: object = self._made
            return made

    def _run(self, pairs: Sequence[tuple[str, Problem]]) -> Sequence[ExecResult]:
        pool_executor = self._pool_executor()
        if self._executor is not None and pool_executor is None:
            return self._executor(pairs)
        from pytest_vibecheck.execute.pool import run_many
        from pytest_vibecheck.suites.durations import expected_for

        extra: dict[str, Any] = {} if pool_executor is None else {"executor": pool_executor}
        return run_many(pairs, self.config.exec_settings, self._exec_cache(),
                        workers=self.config.workers, shipped=expected_for, **extra)

    # ------------------------------------------------------------ scoring

    def score(self, completions: Sequence[object], problems: Sequence[ProblemRef]) -> list[RewardResult]:
        """One :class:`RewardResult` per completion, in order.

        ``completions[i]`` (a reply string or a conversational completion, see
        :func:`completion_text`) answers ``problems[i]`` (a suite task id ``"SUITE::TASK_ID"``,
        an inline problem or a :class:`~pytest_vibecheck.suites.problem.Problem`; see
        :mod:`pytest_vibecheck.reward.problems`).

        Raises :class:`~pytest_vibecheck.errors.VibecheckError` for bad input (lengths differ, an
        unknown suite, task or instruction id, a malformed inline problem) before anything
        runs. Never raises for what a completion contains or for a failing grader: those come
        back as results.
        """
        if len(completions) != len(problems):
            raise VibecheckError(
                f"reward: {len(completions)} completions but {len(problems)} problems; give one "
                "problem per completion"
            )
        cfg = self.config
        with _gc.paused():  # many small objects, no cycles; a full collection walks the suites
            units, order = self._units(completions, problems)
        todo = list(units.values())
        parse_free = parse_free_length()  # once: the stack's depth does not change below
        for u in todo:
            u.parse_free = parse_free
        if cfg.functional:
            self._pool_executor()  # a bad executor spec is bad input: raise before running
        with warnings.catch_warnings():  # warnings about the model's code are not the run's
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            with _gc.paused():  # many small objects, no cycles (not while sandboxes run)
                self._extract(todo)
                if any(u.judged for u in todo):
                    self._verify(todo)
            if cfg.functional:
                self._guard_all(todo)
                self._execute(todo)
        seen: set[str] = set()
        out: list[RewardResult] = []
        with _gc.paused():
            for key in order:
                res = self._result(units[key], shared=key in seen)
                seen.add(key)
                out.append(res)
        self._count(out)
        return out

    def _count(self, results: Sequence[RewardResult]) -> None:
        """Count the batch's infrastructure failures and log them (logger
        ``pytest_vibecheck.reward``, one warning per batch that has any, with the first error
        and the running totals)."""
        failed = [r for r in results if r.is_infra_error]
        with self._lock:
            self.scored += len(results)
            self.infra_errors += len(failed)
            total, scored = self.infra_errors, self.scored
        if failed:
            _log.warning(
                "vibecheck reward: %d of %d completions in this batch were infrastructure "
                "failures, not model failures (%d of %d so far); first: %s",
                len(failed), len(results), total, scored, failed[0].error,
            )

    def _units(
        self, completions: Sequence[object], problems: Sequence[ProblemRef]
    ) -> tuple[dict[str, _Unit], list[str]]:
        """The distinct (completion, problem) pairs by key, and each completion's key in order.
        Raises :class:`~pytest_vibecheck.errors.VibecheckError` for bad input (see :meth:`score`)."""
        cfg = self.config
        resolved: dict[object, Problem] = {}
        problem_keys: dict[int, str] = {}  # by id() of a problem in ``resolved``
        units: dict[str, _Unit] = {}
        order: list[str] = []
        for i, (completion, ref) in enumerate(zip(completions, problems, strict=True)):
            reply = completion_text(completion, cfg.messages)
            ref_key: object = ref if isinstance(ref, str) else id(ref)
            prob = resolved.get(ref_key)
            if prob is None:
                prob = resolved[ref_key] = resolve_problem(ref, where=f"problem {i}")
            refs = prob.instructions if cfg.k is None else prob.instructions[: cfg.k]
            judged = tuple((r.id, dict(r.params)) for r in refs) if cfg.instructions else ()
            if not judged and not cfg.functional:
                raise VibecheckError(
                    f"problem {i} ({problem_ref_text(prob)}): no instruction to judge and "
                    "functional=False: nothing to score; give it instructions or run its tests"
                )
            pkey = problem_keys.get(id(prob))
            if pkey is None:
                pkey = problem_keys[id(prob)] = _problem_key(prob, judged)
            key = _sha(reply) + pkey
            if key not in units:
                units[key] = _Unit(reply, prob, judged)
            order.append(key)
        return units, order

    def _extract(self, units: Sequence[_Unit]) -> None:
        """Extract each unit's code; a reply with nothing to extract is no code at once. What
        needs a parse of the code waits for :meth:`_guard`."""
        for u in units:
            ex = extract_code(u.reply, self.config.extract_mode, u.problem.entry_point)
            u.code, u.method, u.extraction = ex.code, ex.method, ex
            if ex.method == "none" or not ex.code.strip():
                u.no_code = u.guarded = True

    def _guard(self, u: _Unit) -> None:
        """The plugin's no-code rule, and the parser guard: code nested so deep that CPython's
        parser gives up (a few hundred thousand unary operators, say) would crash the
        verifiers and the batch, so it is no code, a model failure. One parse, shared with the
        verifiers of the same code (:func:`~pytest_vibecheck.verify.extract.parse_shared`)."""
        if u.guarded:
            return
        assert u.extraction is not None
        self._apply(u, no_code_reason(u.extraction, u.parse_free))

    @staticmethod
    def _apply(u: _Unit, reason: str | None) -> None:
        u.guarded, u.deferred = True, False
        u.no_code = reason is not None
        if reason == "unparseable":
            u.method = u.method + "+unparseable"

    def _defer(self, units: Sequence[_Unit]) -> tuple[list[_Unit], Pending] | None:
        """Send the guards' parses of whole replies that no built-in check on the code will
        parse again (:mod:`pytest_vibecheck.verify.parse_helper`); None when there are too
        few, or the helper cannot take them. Only texts shorter than the parse-free length
        go: their answer cannot depend on the process."""
        from pytest_vibecheck.verify.parse_helper import MIN_BATCH, shared_helper

        parses: dict[str, bool] = {}

        def parses_code(iid: str) -> bool:
            found = parses.get(iid)
            if found is None:
                found = parses[iid] = _parses_code(iid)
            return found

        eligible = [
            u for u in units
            if not u.guarded and u.method == "whole-reply" and len(u.code) < u.parse_free
            and not any(parses_code(iid) for iid, _p in u.judged)
        ]
        if len(eligible) < MIN_BATCH:
            return None
        pending = shared_helper().submit([(u.code, True) for u in eligible])
        if pending is None:
            return None
        for u in eligible:
            u.deferred = True
        return eligible, pending

    def _settle(self, sent: tuple[list[_Unit], Pending] | None) -> None:
        """The deferred guards' answers (parsing here what the helper has not reached)."""
        if sent is None:
            return
        eligible, pending = sent
        try:
            statuses = pending.settle(code_status)
        finally:
            pending.close()
        parsed: list[str] = []
        for u, (reason, ok) in zip(eligible, statuses, strict=True):
            if u.deferred:
                self._apply(u, reason)
                if ok:
                    parsed.append(u.code)
        note_parses(parsed)  # doc_4 on a whole reply then needs no parse of its own

    def _guard_all(self, units: Sequence[_Unit]) -> None:
        sent = self._defer(units)
        try:
            for u in units:
                if not u.deferred:
                    self._guard(u)
        finally:
            self._settle(sent)

    def _verify(self, units: Sequence[_Unit]) -> None:
        """Verify the units' code in one batch. Ruff starts first; each unit is then guarded
        (:meth:`_guard`) and its built-in checks run on the same parse while Ruff lints. Code
        longer than :data:`_GUARD_BEFORE_RUFF` characters is guarded before Ruff starts (code
        too deep for CPython's parser can crash Ruff too)."""
        from pytest_vibecheck.verify.nocode import NO_CODE_RULE

        for u in units:
            if u.judged and len(u.code) > _GUARD_BEFORE_RUFF:
                self._guard(u)
        batch: list[VerifyItem] = []
        targets: list[_Unit] = []
        for u in units:
            if u.judged and not u.no_code:
                batch.append(VerifyItem(instructions=list(u.judged), reply=u.reply, code=u.code,
                                        entry_point=u.problem.entry_point))
                targets.append(u)
        results: list[list[Verdict]] = []
        if batch:
            sent = self._defer(targets)
            try:
                with BatchVerification(batch, engine=self._engine) as run:
                    later: list[int] = []
                    for i, u in enumerate(targets):
                        if u.deferred:  # its guard's answer comes from the parse helper
                            later.append(i)
                            continue
                        self._guard(u)
                        if u.no_code:
                            run.drop(i)
                        else:
                            run.check_item(i)
                    self._settle(sent)
                    sent = None
                    for i in later:
                        if targets[i].no_code:
                            run.drop(i)
                        else:
                            run.check_item(i)
                    results = run.finish()
            except Exception as exc:  # a verifier failure is the grader's, never the model's
                self._settle(sent)
                for u in targets:
                    self._guard(u)
                    u.verify_error = f"verifier: {type(exc).__name__}: {exc}"
                results = []
        for u, verdicts in zip(targets, results, strict=True):
            if not u.no_code:
                u.verdicts = [
                    InstructionOutcome(v.instruction, dict(v.params), v.passed, v.error, v.violations)
                    for v in verdicts
                ]
        for u in units:
            if u.judged and u.no_code:
                u.verify_error = None
                u.verdicts = [
                    InstructionOutcome(iid, params, False, None, (
                        Violation(NO_CODE_RULE, 1, 1, "the reply contains no code"),))
                    for iid, params in u.judged
                ]

    def _execute(self, units: Sequence[_Unit]) -> None:
        index: dict[tuple[str, str], int] = {}
        pairs: list[tuple[str, Problem]] = []
        wanted: list[tuple[_Unit, int]] = []
        problem_keys: dict[int, str] = {}
        for u in units:
            if u.no_code:
                continue
            pkey = problem_keys.get(id(u.problem))
            if pkey is None:
                pkey = problem_keys[id(u.problem)] = _problem_key(u.problem, ())
            key = (u.code, pkey)
            j = index.get(key)
            if j is None:
                j = index[key] = len(pairs)
                pairs.append((u.code, u.problem))
            wanted.append((u, j))
        if not pairs:
            return
        try:
            results = list(self._run(pairs))
            if len(results) != len(pairs):
                raise VibecheckError(f"the executor returned {len(results)} results for {len(pairs)} programs")
        except Exception as exc:  # a sandbox or executor failure is never the model's
            for u, _j in wanted:
                u.exec_error = f"executor: {type(exc).__name__}: {exc}"
            return
        for u, j in wanted:
            u.exec_result = results[j]

    def _result(self, u: _Unit, *, shared: bool) -> RewardResult:
        cfg = self.config
        details: dict[str, Any] = {
            "problem": problem_ref_text(u.problem),
            "extraction": u.method,
            "code_sha256": _sha(u.code),
            "shared": shared,
        }
        errors: list[str] = []
        # functional outcome
        func: float | None = None
        exec_status = "not_run"
        if cfg.functional:
            if u.no_code:
                exec_status, func = "no_code", 0.0
            elif u.exec_error is not None:
                exec_status = "error"
                errors.append(u.exec_error)
            elif u.exec_result is not None:
                res = u.exec_result
                exec_status = str(res.status)
                details.update({"failed_tests": list(res.failed_tests), "cached": res.cached,
                                "duration_s": res.duration_s, "message": res.message[-2000:]})
                if exec_status not in FUNC_STATUSES:
                    errors.append(f"sandbox: unknown execution status {exec_status!r}")
                else:
                    func = FUNC_STATUSES[exec_status]
                    if func is None:
                        errors.append(f"sandbox {exec_status}: {res.message.strip()[:500]}")
        # instruction following
        verdicts = tuple(u.verdicts)
        inst_if: float | None = None
        task_if: float | None = None
        if u.verify_error is not None:
            errors.append(u.verify_error)
        elif verdicts:
            failed_to_judge = [v for v in verdicts if v.passed is None]
            if failed_to_judge:
                errors.extend(f"verifier: {v.id} could not be judged: {v.error}" for v in failed_to_judge)
            else:
                outcomes = [[bool(v.passed) for v in verdicts]]
                inst_if = instruction_level_if(outcomes)
                task_if = task_level_if(outcomes)
        if errors:
            return RewardResult(None, "infra_error", func, exec_status, inst_if, task_if,
                                verdicts, "; ".join(errors), details)
        if_value = inst_if if cfg.if_level == "instruction" else task_if
        reward = _composite(cfg, func, if_value)
        return RewardResult(reward, "ok", func, exec_status, inst_if, task_if, verdicts, None, details)


def _cluster_spec() -> str | None:
    """``"ray"`` when this process is connected to a Ray cluster (a Ray driver, task or actor,
    such as verl's reward-loop workers), else None. Ray is not imported here: a process that
    has not imported it is not connected."""
    ray = sys.modules.get("ray")
    is_initialized = getattr(ray, "is_initialized", None)
    try:
        return "ray" if callable(is_initialized) and is_initialized() else None
    except Exception:  # a half-imported or broken Ray: the local pool
        return None


def _parses_code(iid: str) -> bool:
    """True if instruction ``iid`` has a built-in check that parses the code (doc_5,
    library_2: :data:`~pytest_vibecheck.verify.checks.PARSES_CODE`): the guard's parse is then
    better shared with it here than made in the parse helper."""
    from pytest_vibecheck.verify.checks import PARSES_CODE
    from pytest_vibecheck.verify.instructions import default_registry

    verifier = default_registry().get(iid).verifier
    return verifier.target == "code" and any(check in PARSES_CODE for check in verifier.checks)


def _composite(cfg: RewardConfig, func: float | None, if_value: float | None) -> float:
    if func is None:  # IF only
        if if_value is None:  # score() refuses such a problem before running anything
            raise VibecheckError("reward: neither tests nor instructions were scored")
        return float(if_value)
    if if_value is None:  # tests only, or a problem without instructions
        return float(func)
    a = float(cfg.alpha)
    if cfg.composite == "gated":
        value = func * (a * if_value + (1.0 - a))
    else:
        value = a * if_value + (1.0 - a) * func
    return 0.0 if math.isclose(value, 0.0, abs_tol=1e-12) else value


_log = logging.getLogger("pytest_vibecheck.reward")

_scorers: dict[tuple[int, str], RewardScorer] = {}
_scorers_lock = threading.Lock()


def scorer_for(config: RewardConfig) -> RewardScorer:
    """The process's scorer for ``config`` (made on first use, one per process and config:
    safe after ``fork`` and in a fresh worker)."""
    key = (os.getpid(), config.key())
    with _scorers_lock:
        found = _scorers.get(key)
        if found is None:
            found = _scorers[key] = RewardScorer(config)
        return found


def score_batch(
    completions: Sequence[object],
    problems: Sequence[ProblemRef],
    config: RewardConfig | None = None,
    *,
    executor: Executor | Any | None = None,
    **options: Any,
) -> list[RewardResult]:
    """Score ``completions[i]`` against ``problems[i]``; one :class:`RewardResult` each.

    ``config`` or ``options`` (the :class:`RewardConfig` fields, e.g. ``alpha=0.4``,
    ``functional=False``) set how; ``executor`` replaces the local sandbox pool (a callable, or
    an executor object such as a Ray executor; see :class:`RewardScorer`). See
    :meth:`RewardScorer.score` for shapes and errors.
    """
    if config is not None and options:
        raise VibecheckError("score_batch: give either config or options, not both")
    cfg = config if config is not None else RewardConfig.from_options(options) if options else RewardConfig()
    scorer = RewardScorer(cfg, executor=executor) if executor is not None else scorer_for(cfg)
    return scorer.score(completions, problems)
