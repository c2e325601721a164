"""The grading rules of execute/_child/compare.py on exact inputs (issue 14).

``paper`` is the Vibe Checker paper's released evaluator, ``lcb`` LiveCodeBench's official
one; each expected verdict below is what that upstream code returns for the same strings.
"""

from __future__ import annotations

import pytest

from pytest_vibecheck.execute._child import compare
from pytest_vibecheck.execute._child.compare import (
    lcb_entry_point,
    lcb_stdout_mismatch,
    lcb_value_mismatch,
    paper_entry_point,
    paper_stdout_mismatch,
    paper_value_mismatch,
)

# (got, expected, paper accepts, lcb accepts)
STDOUT_CASES = [
    # floats written with different precision
    ("0.5\n", "0.50\n", False, True),
    ("5e-1", "0.5", False, True),
    ("0.3333333333333333", "0.333333", False, False),  # no tolerance in either rule
    ("2.0000001", "2", False, False),
    ("1.0 2", "1 2.00", False, True),
    # trailing and leading spaces
    ("1 2 3  \n", "1 2 3", True, True),
    ("1 2 \n3", "1 2\n3", False, True),  # the paper strips the whole output only
    ("  7", "7", True, True),
    ("1  2", "1 2", False, True),  # same numbers, other spacing: lcb compares token lists
    ("a  b", "a b", False, False),  # words must match line for line, spacing included
    # blank lines
    ("6\n\n\n", "6\n", True, True),
    ("\n\n6", "6", True, True),
    ("1\n\n2", "1\n2", False, False),  # an inner blank line is a line
    ("", "", True, True),
    # big integers, digit for digit
    ("50000000000000001", "50000000000000000", False, False),
    ("9" * 5000, "9" * 5000, True, True),
    ("9" * 4999 + "8", "9" * 5000, False, False),
    ("007", "7", False, True),  # lcb reads numbers as decimals
    ("-0", "0", False, True),
    # several correct outputs: an answer other than the one recorded fails under both rules
    ("2 1", "1 2", False, False),
    ("Yes", "YES", False, False),
    # odd numbers
    ("nan", "nan", True, True),  # equal strings
    ("NaN", "nan", False, False),  # Decimal NaN never equals NaN
    ("sNaN", "snan", False, False),  # a signalling NaN refuses comparison
    ("inf", "Infinity", False, True),
]


@pytest.mark.parametrize(("got", "expected", "paper_ok", "lcb_ok"), STDOUT_CASES)
def test_stdout_rules(got: str, expected: str, paper_ok: bool, lcb_ok: bool) -> None:
    assert (paper_stdout_mismatch(got, expected) is None) is paper_ok
    assert (lcb_stdout_mismatch(got, expected) is None) is lcb_ok
    assert compare.stdout_mismatch("paper", got, expected) == paper_stdout_mismatch(got, expected)
    assert compare.stdout_mismatch("lcb", got, expected) == lcb_stdout_mismatch(got, expected)


def test_stdout_reasons_name_the_line() -> None:
    assert paper_stdout_mismatch("1\n5\n", "1\n4") == "line 2: got '5', expected '4'"
    assert paper_stdout_mismatch("1\n2", "1") == "expected 1 line(s), got 2"
    assert lcb_stdout_mismatch("1\n2.5", "1\n2.4") == "line 2: got '2.5', expected '2.4'"
    assert lcb_stdout_mismatch("1", "1\n2") == "expected 2 line(s), got 1"
    long = paper_stdout_mismatch("x" * 500, "y")
    assert long is not None and len(long) < 300


def test_value_rules() -> None:
    # (got, expected): paper accepts, lcb accepts
    cases = [
        ((0, 1), [0, 1], False, True),  # lcb turns a returned tuple into a list
        ([(0, 1)], [[0, 1]], False, False),  # ... at the top level only
        (1.0, 1, True, True),  # Python equality
        (0.1 + 0.2, 0.3, False, False),  # no tolerance
        (True, 1, True, True),
        (10**30 + 1, 10**30, False, False),
        ({"a": [1]}, {"a": [1]}, True, True),
        ("1", 1, False, False),
    ]
    for got, expected, paper_ok, lcb_ok in cases:
        assert (paper_value_mismatch(got, expected) is None) is paper_ok, (got, expected)
        assert (lcb_value_mismatch(got, expected) is None) is lcb_ok, (got, expected)
    assert paper_value_mismatch((0, 1), [0, 1]) == "got (0, 1), expected [0, 1]"


def test_value_comparison_that_raises_fails() -> None:
    class Weird:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no")

        def __ne__(self, other: object) -> bool:
            raise RuntimeError("no")

        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert paper_value_mismatch(Weird(), 1) == (
        "got <Weird object>; comparing it with the expected value raised RuntimeError"
    )
    assert lcb_value_mismatch(Weird(), 1) is not None


def test_paper_entry_point_rule() -> None:
    assert paper_entry_point("def helper():\n    pass\ndef solve(a):\n    return a\ndef main():\n    pass\n") == "solve"
    assert paper_entry_point("def a():\n    pass\nasync def b():\n    pass\n") == "b"
    assert paper_entry_point("class Solution:\n    def twoSum(self, nums, target):\n        return 0\n") == "twoSum"
    assert paper_entry_point("x = f(1)\n") == "f"  # no function: the word before the first '('
    assert paper_entry_point("def broken(:\n") == "broken"  # does not parse: same fallback
    assert paper_entry_point("") == ""
    assert compare.entry_point("paper", "def solve():\n    pass\n", "twoSum") == (False, "solve")


def test_lcb_entry_point_rule() -> None:
    assert lcb_entry_point("class Solution:\n    pass\n", "twoSum") == (True, "twoSum")
    assert lcb_entry_point("def twoSum(nums, target):\n    pass\n", "twoSum") == (False, "twoSum")
    assert compare.entry_point("lcb", "def f():\n    pass\n", "f") == (False, "f")


def test_prelude_and_unknown_rule() -> None:
    assert compare.uses_prelude("lcb") and not compare.uses_prelude("paper")
    assert (compare.int_max_str_digits("lcb"), compare.int_max_str_digits("paper")) == (50000, None)
    assert compare.LCB_PRELUDE.endswith("sys.setrecursionlimit(50000)\n")
    with pytest.raises(ValueError, match="unknown grading rule 'vibecheck'; expected one of paper, lcb"):
        compare.stdout_mismatch("vibecheck", "1", "1")
