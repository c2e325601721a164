"""What the sandbox layer runs: a task's tests and the little it needs to know of the task.

``execute`` takes these, never a suite record: :class:`TestSpec` (how correctness is tested),
:class:`TestCase` (one input/output pair) and :class:`Task`, the read-only view of a task that
running, caching and timing need. The suites layer's
:class:`~pytest_vibecheck.suites.problem.Problem` is one (structurally); :class:`ExecTask` is
the plain one, for running tests without a suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["TEST_KINDS", "ExecTask", "Task", "TestCase", "TestKind", "TestSpec"]

TestKind = Literal["bigcodebench-unittest", "stdin", "functional", "humaneval"]
TEST_KINDS: tuple[str, ...] = ("bigcodebench-unittest", "stdin", "functional", "humaneval")


@dataclass(frozen=True)
class TestCase:
    """One input/output pair (LiveCodeBench ``stdin`` or ``functional`` tests).

    For ``functional`` tests, ``input`` is newline-separated JSON arguments and
    ``output`` is JSON.
    """

    __test__ = False  # not a pytest test class

    input: str
    output: str


@dataclass(frozen=True)
class TestSpec:
    """How a problem's functional correctness is tested.

    - ``bigcodebench-unittest``: ``code`` defines ``class TestCases(unittest.TestCase)``
      run against the candidate imported as a module.
    - ``humaneval``: ``code`` defines ``check(candidate)``; ``entry_point`` names the function.
    - ``stdin``: ``cases`` compared line by line with the program's stdout.
    - ``functional``: ``cases`` call ``entry_point`` (the starter code's method) with JSON args.
    """

    __test__ = False

    kind: TestKind
    code: str = ""
    cases: tuple[TestCase, ...] = ()
    entry_point: str | None = None


class Task(Protocol):
    """A task as the sandbox layer sees it (read-only).

    ``suite`` and ``task_id`` name it (cache and calibration keys, messages); ``test`` is how it
    is tested; ``entry_point`` the function under test, when the kind has one;
    ``canonical_solution`` the reference program that times the task (None: no reference);
    ``libs`` the top-level import names the task declares; ``requires`` the third-party modules
    its tests need (None: derived from the test code).
    """

    @property
    def suite(self) -> str: ...
    @property
    def task_id(self) -> str: ...
    @property
    def test(self) -> TestSpec: ...
    @property
    def entry_point(self) -> str | None: ...
    @property
    def canonical_solution(self) -> str | None: ...
    @property
    def libs(self) -> tuple[str, ...]: ...
    @property
    def requires(self) -> tuple[str, ...] | None: ...


@dataclass(frozen=True)
class ExecTask:
    """A :class:`Task` of its own, for running tests without a suite record."""

    suite: str
    task_id: str
    test: TestSpec
    entry_point: str | None = None
    canonical_solution: str | None = None
    libs: tuple[str, ...] = ()
    requires: tuple[str, ...] | None = None
