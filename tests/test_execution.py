"""Test kinds, outcomes and comparisons of execution.run_tests (exact statuses)."""

from __future__ import annotations

import dataclasses

import pytest
from exec_helpers import TWO_SUM, bcb_problem, functional_problem, humaneval_problem, stdin_problem

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.execute import envcheck
from pytest_vibecheck.execute._child.harness import compare_stdout, values_equal
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings, run_tests

FAST = ExecSettings(time_limit_s=10)


# ----------------------------------------------------------------------------- BigCodeBench


def test_bigcodebench_reference_passes() -> None:
    prob = bcb_problem()
    res = run_tests(prob.canonical_solution or "", prob, FAST)
    assert res.status == "passed"
    assert res.failed_tests == ()
    assert res.network in ("blocked", "open")
    assert res.limits["time_limit_s"] == 10.0
    assert res.limits["time_limit_source"] == "fixed"
    assert res.test_time_s is not None and res.test_time_s < res.duration_s


def test_bigcodebench_failing_test_is_named_with_traceback() -> None:
    code = "def task_func(x):\n    return x * x if x >= 0 else -x * x\n"
    res = run_tests(code, bcb_problem(), FAST)
    assert res.status == "failed"
    assert res.failed_tests == ("test_negative",)
    assert res.message.startswith("test_negative:\nTraceback")
    assert "AssertionError: -9 != 9" in res.message


def test_bigcodebench_candidate_that_fails_to_import_is_a_model_failure() -> None:
    res = run_tests("raise ValueError('boom')\n", bcb_problem(), FAST)
    assert res.status == "failed"
    assert res.failed_tests == ("<import>",)
    assert "ValueError: boom" in res.message


def test_syntax_error_is_failed() -> None:
    res = run_tests("def task_func(x:\n", bcb_problem(), FAST)
    assert res.status == "failed"
    assert res.failed_tests == ("<import>",)
    assert "SyntaxError" in res.message


def test_candidate_ending_the_process_is_failed() -> None:
    res = run_tests("import os\nos._exit(3)\n", bcb_problem(), FAST)
    assert res.status == "failed"
    assert res.failed_tests == ("<process>",)
    assert "exit status 3" in res.message


# ----------------------------------------------------------------------------- HumanEval


def test_humaneval_pass_and_fail() -> None:
    prob = humaneval_problem()
    assert run_tests("def add(a, b):\n    return a + b\n", prob, FAST).status == "passed"
    res = run_tests("def add(a, b):\n    return a - b\n", prob, FAST)
    assert res.status == "failed"
    assert res.failed_tests == ("check",)
    assert "assert candidate(2, 3) == 5" in res.message


def test_humaneval_missing_entry_point_is_failed() -> None:
    res = run_tests("def plus(a, b):\n    return a + b\n", humaneval_problem(), FAST)
    assert res.status == "failed"
    assert res.message == "the candidate does not define 'add'"


# ----------------------------------------------------------------------------- stdin


def test_stdin_pass_ignores_trailing_whitespace() -> None:
    prob = stdin_problem([("3\n1 2 3\n", "6\n"), ("1\n5\n", "5")])
    code = "n = int(input())\nprint(sum(map(int, input().split())), '  ')\nprint()\n"
    res = run_tests(code, prob, FAST)
    assert res.status == "passed", res.message


def test_stdin_fail_names_the_case() -> None:
    prob = stdin_problem([("2 3\n", "5\n"), ("2 2\n", "4\n")])
    res = run_tests("a, b = map(int, input().split())\nprint(a + b + (a == b))\n", prob, FAST)
    assert res.status == "failed"
    assert res.failed_tests == ("case 1",)
    assert res.message == "case 1: line 1: got '5', expected '4'"


def test_stdin_integers_compare_exactly() -> None:
    prob = stdin_problem([("", "50000000000000000\n")])
    res = run_tests("print(50000000000000001)\n", prob, FAST)
    assert res.status == "failed"
    assert res.message == "case 0: line 1: got '50000000000000001', expected '50000000000000000'"
    assert run_tests("print(50000000000000000)\n", prob, FAST).status == "passed"


def test_stdin_floats_within_tolerance() -> None:
    prob = stdin_problem([("", "0.333333 2.5\n")])
    assert run_tests("print(1/3, 2.5000000001)\n", prob, FAST).status == "passed"
    res = run_tests("print(0.3334, 2.5)\n", prob, FAST)
    assert res.status == "failed"


def test_stdin_runtime_error_and_main_guard() -> None:
    prob = stdin_problem([("4\n", "16\n")])
    guarded = "import sys\ndef main():\n    n = int(sys.stdin.readline())\n    print(n * n)\nif __name__ == '__main__':\n    main()\n"
    assert run_tests(guarded, prob, FAST).status == "passed"
    res = run_tests("x = 1 / 0\n", prob, FAST)
    assert res.status == "failed"
    assert res.failed_tests == ("case 0",)
    assert "ZeroDivisionError" in res.message


def test_stdin_case_timeout() -> None:
    prob = stdin_problem([("1\n", "1\n")])
    res = run_tests("while True:\n    pass\n", prob, ExecSettings(time_limit_s=1, startup_s=5))
    assert res.status == "timeout"
    assert res.failed_tests == ("case 0",)


def test_stdin_threaded_recursion_pattern_is_waited_for() -> None:
    prob = stdin_problem([("5\n", "120\n")])
    code = (
        "import sys, threading\n"
        "def main():\n"
        "    n = int(sys.stdin.read())\n"
        "    f = lambda k: 1 if k <= 1 else k * f(k - 1)\n"
        "    print(f(n))\n"
        "threading.stack_size(1 << 25)\n"
        "threading.Thread(target=main).start()\n"
    )
    assert run_tests(code, prob, FAST).status == "passed"


@pytest.mark.parametrize(
    ("got", "expected", "ok"),
    [
        ("50000000000000001", "50000000000000000", False),
        ("1 2 3  \n\n", "1 2 3", True),
        ("1.0000001", "1", True),
        ("1.01", "1", False),
        ("123456789.1234", "123456789.1235", True),  # relative above 1
        ("YES", "yes", False),
        ("1\n2", "1\n2\n3", False),
        ("007", "7", True),
        ("nan", "nan", True),
        ("inf", "1e999", False),
    ],
)
def test_compare_stdout(got: str, expected: str, ok: bool) -> None:
    assert (compare_stdout(got, expected, 1e-6) is None) is ok


def test_values_equal() -> None:
    assert values_equal([1, [2.0000000001]], [1, [2.0]], 1e-6)
    assert not values_equal(50000000000000001, 50000000000000000, 1e-6)
    assert not values_equal([1, 2], [1, 2, 3], 1e-6)
    assert values_equal({"a": 0.1 + 0.2}, {"a": 0.3}, 1e-9)


# ----------------------------------------------------------------------------- functional


def test_functional_pass_with_tuple_result() -> None:
    prob = functional_problem([("[2, 7, 11, 15]\n9", "[0, 1]"), ("[3, 3]\n6", "[0, 1]")])
    res = run_tests(TWO_SUM, prob, FAST)
    assert res.status == "passed", res.message


def test_functional_wrong_answer() -> None:
    prob = functional_problem([("[2, 7, 11, 15]\n9", "[1, 0]")])
    res = run_tests(TWO_SUM, prob, FAST)
    assert res.status == "failed"
    assert res.failed_tests == ("case 0",)
    assert res.message == "case 0: got (0, 1), expected [1, 0]"


def test_functional_bad_test_data_is_a_harness_error() -> None:
    prob = functional_problem([("[2, 7\n9", "[0, 1]")])
    res = run_tests(TWO_SUM, prob, FAST)
    assert res.status == "error"
    assert res.message.startswith("case 0: bad test data")


def test_functional_case_timeout() -> None:
    prob = functional_problem([("[1]\n1", "[]")])
    code = "class Solution:\n    def twoSum(self, nums, target):\n        while True:\n            pass\n"
    res = run_tests(code, prob, ExecSettings(time_limit_s=1, startup_s=5))
    assert res.status == "timeout"
    assert res.failed_tests == ("case 0",)


# ----------------------------------------------------------------------------- environment


def _a_missing_known_library() -> str:
    for name in ("tensorflow", "librosa", "gensim", "pytesseract", "wordninja", "blake3"):
        if not envcheck.available([name]):
            return name
    pytest.skip("every candidate library is installed here")


def test_missing_library_is_skipped_before_running() -> None:
    lib = _a_missing_known_library()
    prob = bcb_problem(libs=(lib,))
    res = run_tests(prob.canonical_solution or "", prob, FAST)
    assert res.status == "skipped"
    assert (
        res.message == f"environment: missing module {lib} (pip install {envcheck.pypi_name(lib)})"
    )
    assert not res.is_verdict


def test_missing_library_at_run_time_is_an_error_not_a_failure() -> None:
    lib = _a_missing_known_library()
    settings = FAST.replace(check_env=False)
    res = run_tests(f"import {lib}\ndef task_func(x):\n    return x * x\n", bcb_problem(), settings)
    assert res.status == "error"
    assert res.message == f"environment: missing module {lib}"
    assert res.missing_module == lib
    inside = f"def task_func(x):\n    import {lib}\n    return x * x\n"
    res = run_tests(inside, bcb_problem(), settings)
    assert res.status == "error"
    assert res.message == f"environment: missing module {lib}"


def test_hallucinated_module_is_a_model_failure() -> None:
    res = run_tests("import surely_not_a_real_module_xyz\n", bcb_problem(), FAST)
    assert res.status == "failed"
    assert "No module named 'surely_not_a_real_module_xyz'" in res.message


def test_unknown_test_kind_is_rejected() -> None:
    prob = bcb_problem()
    bad = dataclasses.replace(prob, test=dataclasses.replace(prob.test, kind="nope"))  # type: ignore[arg-type]
    with pytest.raises(VibecheckError, match="unknown test kind 'nope'"):
        run_tests("", bad, FAST)


def test_settings_are_validated() -> None:
    with pytest.raises(VibecheckError, match="time_limit_s"):
        ExecSettings(time_limit_s=0)


def test_result_round_trips_through_dict() -> None:
    res = run_tests("def add(a, b):\n    return a + b\n", humaneval_problem(), FAST)
    again = ExecResult.from_dict(res.to_dict())
    assert again == res
    d = res.to_dict()
    for key in ("status", "failed_tests", "duration_s", "network", "limits", "cached"):
        assert key in d
