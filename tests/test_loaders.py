"""Loaders: real benchmark files (counts, fields) and malformed input (file, line, field)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pytest_vibecheck.errors import DataFileError, UnknownIdError
from pytest_vibecheck.suites.jsonl import read_jsonl
from pytest_vibecheck.suites.loaders import (
    SkippedRecord,
    detect_format,
    load_bigcodebench,
    load_humaneval,
    load_livecodebench,
    load_mbppplus,
    load_source,
)
from pytest_vibecheck.suites.problem import Problem

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not found at {DATA}")
BCB = DATA / "bigcodebench"


@pytest.fixture(scope="module")
def bigcodebench() -> list[Problem]:
    return load_bigcodebench(
        BCB / "BigCodeBench-v0.1.0_hf.jsonl.gz",
        network_free=BCB / "network-free-set.txt",
        stdlib_only=BCB / "bigcodebench_v0.1.0_stdlib_only_task_ids.json",
    )


# ---------------------------------------------------------------- real data


@needs_data
def test_bigcodebench_counts_and_flags(bigcodebench: list[Problem]) -> None:
    assert len(bigcodebench) == 1140
    assert sum(p.metadata["network_free"] for p in bigcodebench) == 517
    assert sum(p.metadata["stdlib_only"] for p in bigcodebench) == 300
    both = [p for p in bigcodebench if p.metadata["network_free"] and p.metadata["stdlib_only"]]
    assert len(both) == 104
    assert {p.test.kind for p in bigcodebench} == {"bigcodebench-unittest"}
    assert {p.entry_point for p in bigcodebench} == {"task_func"}


@needs_data
def test_bigcodebench_fields_are_parsed(bigcodebench: list[Problem]) -> None:
    p0 = bigcodebench[0]
    assert p0.task_id == "BigCodeBench/0"
    assert p0.libs == ("itertools", "random")  # "['random', 'itertools']" parsed, sorted
    assert p0.metadata["doc_struct"]["reqs"] == ["itertools", "random.shuffle"]
    assert p0.prompt.startswith("Calculates the average of the sums of absolute differences")
    assert p0.canonical_solution is not None
    # canonical = code_prompt + canonical_solution: a full program defining task_func
    assert p0.canonical_solution.startswith(
        "import itertools\nfrom random import shuffle\ndef task_func("
    )
    assert "    permutations = list(itertools.permutations(numbers))" in p0.canonical_solution
    assert (
        p0.starter_code
        == "import itertools\nfrom random import shuffle\ndef task_func(numbers=list(range(1, 3))):\n"
    )
    assert bigcodebench[13].libs == ("ftplib", "os", "subprocess")
    assert "class TestCases(unittest.TestCase)" in p0.test.code


@needs_data
def test_bigcodebench_canonical_program_runs_its_own_tests(bigcodebench: list[Problem]) -> None:
    # BigCodeBench/2 is standard-library only and fast: the program + tests pass in-process.
    import unittest

    prob = next(p for p in bigcodebench if p.task_id == "BigCodeBench/2")
    assert prob.canonical_solution is not None
    namespace: dict[str, object] = {"__name__": "candidate"}
    exec(compile(prob.canonical_solution + "\n" + prob.test.code, "<bcb2>", "exec"), namespace)
    test_cases = namespace["TestCases"]
    assert isinstance(test_cases, type) and issubclass(test_cases, unittest.TestCase)
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(test_cases)
    result = unittest.TestResult()
    suite.run(result)
    assert result.testsRun == 5
    assert result.wasSuccessful()


@needs_data
def test_bigcodebench_hard() -> None:
    hard = load_bigcodebench(
        BCB / "BigCodeBench-Hard-derived-from-v0.1.0_hf.jsonl.gz", suite="hard"
    )
    assert len(hard) == 148
    assert hard[0].task_id == "BigCodeBench/13"
    assert {p.suite for p in hard} == {"hard"}
    assert "network_free" not in hard[0].metadata  # only when the file is given


@needs_data
def test_livecodebench_kinds_prompts_and_skipped() -> None:
    skipped: list[SkippedRecord] = []
    live = load_livecodebench(
        DATA / "livecodebench" / "lcb_v5_problems_with_public_tests.jsonl.gz", skipped=skipped
    )
    assert len(live) == 879
    assert skipped == [SkippedRecord("abc350_c", 462, "no public test cases")]
    kinds = [p.test.kind for p in live]
    assert kinds.count("stdin") == 498
    assert kinds.count("functional") == 381
    first = live[0]
    assert first.task_id == "2777"
    assert first.test.kind == "functional"
    assert first.entry_point == first.test.entry_point == "distinctDifferenceArray"
    assert first.starter_code is not None
    assert first.starter_code.startswith("class Solution:\n    def distinctDifferenceArray(")
    # the statement alone: the profile words the query (generate/protocols.py)
    assert first.prompt.startswith("You are given a 0-indexed array nums")
    assert first.prompt.endswith("1 <= nums[i] <= 50")
    assert first.metadata == {
        "difficulty": "easy",
        "platform": "leetcode",
        "contest_date": "2023-05-07T00:00:00",
        "contest_id": "weekly-contest-344",
        "question_title": "find-the-distinct-difference-array",
    }
    assert first.canonical_solution is None
    multi = next(p for p in live if p.task_id == "2779")
    assert (
        multi.test.cases[0].input == "4\n[[0, 2], [1, 2], [3, 1], [1, 1], [2, 1]]"
    )  # newline-separated JSON args
    assert multi.test.cases[0].output == "[0, 1, 1, 0, 2]"
    stdin = next(p for p in live if p.task_id == "abc301_a")
    assert stdin.test.kind == "stdin"
    assert stdin.entry_point is None
    assert stdin.prompt.startswith("Takahashi and Aoki played N games.")
    assert stdin.test.cases[0].input == "5\nTTAAT\n"
    assert stdin.test.cases[0].output == "T\n"


@needs_data
def test_humaneval_and_plus() -> None:
    he = load_humaneval(DATA / "humaneval" / "HumanEval.jsonl.gz")
    plus = load_humaneval(
        DATA / "humaneval" / "HumanEvalPlus-v0.1.10.jsonl.gz", suite="humanevalplus"
    )
    assert len(he) == len(plus) == 164
    p0 = he[0]
    assert p0.test.kind == "humaneval"
    assert p0.entry_point == "has_close_elements"
    assert p0.prompt.startswith(
        "Please provide a self-contained Python script that solves the following problem"
    )
    assert "def has_close_elements(numbers: List[float], threshold: float) -> bool:" in p0.prompt
    assert p0.libs == ("typing",)
    assert p0.canonical_solution is not None
    namespace: dict[str, object] = {}
    exec(compile(p0.canonical_solution + p0.test.code, "<he0>", "exec"), namespace)
    check = namespace["check"]
    assert callable(check)
    check(namespace["has_close_elements"])


@needs_data
def test_mbppplus_assertions_become_check() -> None:
    mbpp = load_mbppplus(DATA / "mbpp" / "MbppPlus-v0.2.0.jsonl.gz")
    assert len(mbpp) == 378
    by_id = {p.task_id: p for p in mbpp}
    p2 = by_id["Mbpp/2"]
    assert p2.test.kind == "humaneval"
    assert p2.test.code.startswith(
        "def check(candidate):\n    similar_elements = candidate\n    assert "
    )
    assert "Write a function to find the shared elements from the given two lists." in p2.prompt
    p82 = by_id["Mbpp/82"]
    assert p82.test.code.startswith(
        "import math\n\n\ndef check(candidate):\n    volume_sphere = candidate\n"
    )
    # every canonical solution passes its check, run as the sandbox does (take the entry
    # point, then exec the tests in the same namespace: Mbpp/56's entry point is named check)
    for prob in [*mbpp[:40], by_id["Mbpp/56"]]:
        assert prob.canonical_solution is not None and prob.entry_point is not None
        ns: dict[str, object] = {}
        exec(compile(prob.canonical_solution, prob.task_id, "exec"), ns)
        fn = ns[prob.entry_point]
        exec(compile(prob.test.code, prob.task_id, "exec"), ns)
        check = ns["check"]
        assert callable(check)
        check(fn)
    ns = {}
    exec(compile(p2.test.code, "check", "exec"), ns)
    check = ns["check"]
    assert callable(check)
    with pytest.raises(AssertionError):
        check(lambda a, b: ())


@needs_data
def test_detect_format_on_real_files() -> None:
    assert detect_format(BCB / "BigCodeBench-v0.1.0_hf.jsonl.gz") == "bigcodebench"
    assert (
        detect_format(DATA / "livecodebench" / "lcb_v5_problems_with_public_tests.jsonl.gz")
        == "livecodebench"
    )
    assert detect_format(DATA / "humaneval" / "HumanEval.jsonl.gz") == "humaneval"
    assert detect_format(DATA / "mbpp" / "MbppPlus-v0.2.0.jsonl.gz") == "mbppplus"


# ---------------------------------------------------------------- malformed input

BCB_ROW = {
    "task_id": "BigCodeBench/900",
    "instruct_prompt": "Add two numbers.",
    "code_prompt": "def task_func(a, b):\n",
    "canonical_solution": "    return a + b\n",
    "test": "import unittest\nclass TestCases(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(task_func(1, 2), 3)\n",
    "entry_point": "task_func",
    "doc_struct": '{"description": ["Add two numbers."], "raises": []}',
    "libs": "[]",
}


def _write(path: Path, rows: list[object]) -> Path:
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_small_bigcodebench_file_loads(tmp_path: Path) -> None:
    path = _write(tmp_path / "bcb.jsonl.gz", [BCB_ROW])
    (prob,) = load_bigcodebench(path)
    assert prob.canonical_solution == "def task_func(a, b):\n    return a + b\n"
    assert prob.libs == ()
    assert prob.metadata == {"doc_struct": {"description": ["Add two numbers."], "raises": []}}


def test_bad_json_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "bcb.jsonl", [BCB_ROW, '{"task_id": "x", '])
    with pytest.raises(DataFileError) as err:
        load_bigcodebench(path)
    assert err.value.line == 2
    assert str(err.value).startswith(f"{path}:2: not valid JSON")


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"instruct_prompt": None}, "instruct_prompt", "required field is missing"),
        ({"libs": "['os'"}, "libs", "expected a Python list literal"),
        ({"libs": "[1, 2]"}, "libs", "expected a list of library names"),
        ({"doc_struct": "{not json"}, "doc_struct", "not a valid JSON string"),
        ({"canonical_solution": "  return (\n"}, "canonical_solution", "is not valid Python"),
        ({"test": 42}, "test", "expected a string, got int"),
    ],
)
def test_bigcodebench_field_errors(tmp_path: Path, change: dict[str, object], field: str, message: str) -> None:
    row = {**BCB_ROW, **change}
    row = {k: v for k, v in row.items() if v is not None}
    path = _write(tmp_path / "bcb.jsonl", [BCB_ROW | {"task_id": "BigCodeBench/899"}, row])
    with pytest.raises(DataFileError) as err:
        load_bigcodebench(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 2, field)
    assert message in str(err.value)
    assert str(err.value).startswith(f"{path}:2: field {field!r}: ")


def test_duplicate_task_id(tmp_path: Path) -> None:
    path = _write(tmp_path / "bcb.jsonl", [BCB_ROW, BCB_ROW])
    with pytest.raises(DataFileError, match="task id 'BigCodeBench/900' appears twice"):
        load_bigcodebench(path)


def test_missing_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="file does not exist"):
        load_humaneval(tmp_path / "nope.jsonl")
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(DataFileError, match="cannot read"):
        list(read_jsonl(bad))


LCB_ROW = {
    "question_id": "q1",
    "question_content": "Print the sum of A and B.",
    "platform": "atcoder",
    "difficulty": "easy",
    "contest_date": "2024-01-01T00:00:00",
    "starter_code": "",
    "public_test_cases": [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}],
}


def test_livecodebench_errors_and_hf_layout(tmp_path: Path) -> None:
    # Hugging Face layout: tests as a JSON string, func_name inside metadata
    hf = {
        **LCB_ROW,
        "question_id": "q2",
        "starter_code": "class Solution:\n    def add(self, a: int, b: int) -> int:\n        ",
        "public_test_cases": json.dumps(
            [{"input": "1\n2", "output": "3", "testtype": "functional"}]
        ),
        "metadata": json.dumps({"func_name": "add"}),
    }
    ok = load_livecodebench(_write(tmp_path / "ok.jsonl", [LCB_ROW, hf]))
    assert [p.test.kind for p in ok] == ["stdin", "functional"]
    assert ok[1].test.entry_point == "add"

    mixed = {
        **LCB_ROW,
        "public_test_cases": [
            *LCB_ROW["public_test_cases"],
            {"input": "1", "output": "1", "testtype": "functional"},
        ],
    }
    with pytest.raises(DataFileError) as err:
        load_livecodebench(
            _write(tmp_path / "mixed.jsonl", [LCB_ROW | {"question_id": "q0"}, mixed])
        )
    assert (err.value.line, err.value.field) == (2, "public_test_cases")
    assert "expected all 'stdin' or all 'functional'" in str(err.value)

    no_name = {**hf, "metadata": "{}"}
    with pytest.raises(DataFileError) as err:
        load_livecodebench(_write(tmp_path / "noname.jsonl", [no_name]))
    assert (err.value.line, err.value.field) == (1, "func_name")

    bad_case = {**LCB_ROW, "public_test_cases": [{"input": 1, "output": "3", "testtype": "stdin"}]}
    with pytest.raises(DataFileError) as err:
        load_livecodebench(_write(tmp_path / "badcase.jsonl", [bad_case]))
    assert err.value.field == "public_test_cases[0].input"


def test_mbpp_assertion_errors(tmp_path: Path) -> None:
    row = {
        "task_id": "Mbpp/1",
        "prompt": '"""\nAdd.\n"""\n',
        "entry_point": "add",
        "canonical_solution": "def add(a, b):\n    return a + b\n",
        "assertion": "print(add(1, 2))\n",
    }
    with pytest.raises(DataFileError) as err:
        load_mbppplus(_write(tmp_path / "m.jsonl", [row]))
    assert err.value.field == "assertion"
    assert "expected only imports and assert statements, got Expr" in str(err.value)


def test_unknown_format_and_undetectable(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.jsonl", [{"foo": 1}])
    with pytest.raises(DataFileError, match="cannot tell the source format"):
        detect_format(path)
    with pytest.raises(UnknownIdError, match="did you mean 'humaneval'"):
        load_source(path, "humanevl")
