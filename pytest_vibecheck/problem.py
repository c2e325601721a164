"""The problem record: one augmented benchmark task (paper §3.1).

A suite is a JSONL file of these records (see ``docs/suites.md`` for the versioned schema);
loaders turn the source benchmarks into them, the augmenter fills ``instructions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TestKind = Literal["bigcodebench-unittest", "stdin", "functional", "humaneval"]
TEST_KINDS: tuple[str, ...] = ("bigcodebench-unittest", "stdin", "functional", "humaneval")

#: Version of the suite JSONL schema; bump on any incompatible change.
SCHEMA_VERSION = 1


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


@dataclass(frozen=True)
class InstructionRef:
    """An instruction selected for a problem, with validated parameters."""

    id: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Problem:
    """One (augmented) benchmark problem.

    ``prompt`` is the query given to the model (BigCodeBench ``instruct_prompt``, or the
    LiveCodeBench question with its format instructions). ``canonical_solution`` is a full
    runnable program that passes the tests, when the source has one. ``libs`` are the
    top-level import names the task needs. ``instructions`` are ordered (position 1..k).
    """

    suite: str
    task_id: str
    prompt: str
    test: TestSpec
    entry_point: str | None = None
    canonical_solution: str | None = None
    starter_code: str | None = None
    libs: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    instructions: tuple[InstructionRef, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
