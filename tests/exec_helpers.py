"""Tiny hand-made problems for the sandbox and execution tests (one per test kind)."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

from pytest_vibecheck.execute.spec import TestCase, TestSpec
from pytest_vibecheck.suites.problem import Problem


def load_file_module(path: Path, name: str) -> types.ModuleType:
    """The module in file ``path``, run under ``name`` (not put in ``sys.modules``): the
    sandbox's child scripts and data modules are files, not importable package modules."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

BCB_TEST = """
import unittest

class TestCases(unittest.TestCase):
    def test_small(self):
        self.assertEqual(task_func(2), 4)

    def test_negative(self):
        self.assertEqual(task_func(-3), 9)
"""

HUMANEVAL_TEST = """
def check(candidate):
    assert candidate(2, 3) == 5
    assert candidate(-1, 1) == 0
"""


def bcb_problem(test_code: str = BCB_TEST, libs: tuple[str, ...] = ()) -> Problem:
    return Problem(
        suite="t",
        task_id="t/bcb",
        prompt="square",
        test=TestSpec(kind="bigcodebench-unittest", code=test_code, entry_point="task_func"),
        entry_point="task_func",
        canonical_solution="def task_func(x):\n    return x * x\n",
        libs=libs,
    )


def humaneval_problem(test_code: str = HUMANEVAL_TEST, libs: tuple[str, ...] = ()) -> Problem:
    return Problem(
        suite="t",
        task_id="t/he",
        prompt="add",
        test=TestSpec(kind="humaneval", code=test_code, entry_point="add"),
        entry_point="add",
        canonical_solution="def add(a, b):\n    return a + b\n",
        libs=libs,
    )


def stdin_problem(cases: list[tuple[str, str]]) -> Problem:
    return Problem(
        suite="t",
        task_id="t/stdin",
        prompt="io",
        test=TestSpec(kind="stdin", cases=tuple(TestCase(i, o) for i, o in cases)),
    )


def functional_problem(cases: list[tuple[str, str]], method: str = "twoSum") -> Problem:
    return Problem(
        suite="t",
        task_id="t/func",
        prompt="fn",
        test=TestSpec(
            kind="functional", cases=tuple(TestCase(i, o) for i, o in cases), entry_point=method
        ),
        entry_point=method,
        starter_code=f"class Solution:\n    def {method}(self, nums: List[int], target: int) -> List[int]:\n        ",
    )


TWO_SUM = """
class Solution:
    def twoSum(self, nums: List[int], target: int) -> List[int]:
        seen = {}
        for i, x in enumerate(nums):
            if target - x in seen:
                return (seen[target - x], i)
            seen[x] = i
        return []
"""
