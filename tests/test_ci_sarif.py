"""SARIF 2.1.0 from the gate (``--vibe-sarif``) and from a benchmark run, validated against the
OASIS schema and against the copy GitHub's upload action validates with (tests/data/sarif)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ci_helpers import commit_all, git, init_repo, write
from plugin_helpers import write_tiny_suite

from pytest_vibecheck.ci import sarif
from pytest_vibecheck.verify.params import render_prompt

pytest.importorskip("pytest_vibecheck.verify.api")
jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = Path(__file__).parent / "data" / "sarif"
LONG = "    return value + '" + "y" * 70 + "'"  # 91 characters

GATE_TOML = """
[tool.vibecheck.gate]
instructions = ["style_3", { id = "logic_3", params = { max_branches = 3 } }, "logic_1"]
"""
BASE = "import os\n\n\ndef old(value):\n    return value\n"


def _schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return data


def validate(log: Any) -> None:
    """Validate ``log`` against the OASIS schema (draft-04) and GitHub's copy (draft 2020-12),
    each with format checks; raises jsonschema.ValidationError."""
    oasis = _schema("sarif-schema-2.1.0.json")
    jsonschema.Draft4Validator(oasis, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)
    github = _schema("codeql-action-sarif-schema-2.1.0.json")
    jsonschema.Draft202012Validator(
        github, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(log)


def test_the_vendored_schemas_are_the_published_files() -> None:
    import hashlib

    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SCHEMAS.glob("*.json")}
    assert digests == {
        "sarif-schema-2.1.0.json": "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e",
        "codeql-action-sarif-schema-2.1.0.json": "46d4203e43b978a433943881354db1e40e81437d4b46c00f05016110c6b14693",
    }
    assert (SCHEMAS / "NOTICE.oasis").is_file() and (SCHEMAS / "LICENSE.codeql-action").is_file()


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_BASE_REF"):
        monkeypatch.delenv(var, raising=False)
    root = pytester.path
    init_repo(root, {"pyproject.toml": GATE_TOML, ".gitignore": "*.sarif\n__pycache__/\n",
                     "mod.py": BASE})
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {
        "mod.py": BASE + f"\n\ndef new(value: str) -> str:\n{LONG}\n",
        "extra.py": "import sys\n",
        "broken.py": "def broken(:\n",
    })
    commit_all(root)
    return root


def _run_gate(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider",
                                "--vibe-sarif", "out/gate.sarif", *args)
    log: dict[str, Any] = json.loads((pytester.path / "out" / "gate.sarif").read_text(encoding="utf-8"))
    return result, log


def test_gate_sarif_is_valid_and_carries_instruction_rule_file_line(
    pytester: pytest.Pytester, repo: Path
) -> None:
    result, log = _run_gate(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["vibecheck: SARIF log out/gate.sarif: 3 result(s)"])
    validate(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "pytest-vibecheck"
    assert [r["id"] for r in driver["rules"]] == ["style_3", "logic_3:max_branches=3", "logic_1",
                                                 "syntax-error"]
    style = driver["rules"][0]
    assert style["help"]["text"] == render_prompt("style_3", {"line_length": 79}) == (
        "Write code ensuring all lines are no longer than 79 characters.")
    assert style["shortDescription"]["text"] == "Every line is at most 79 characters long."
    assert style["properties"]["instruction"] == "style_3"
    assert style["properties"]["parameters"] == {"line_length": 79}
    assert style["properties"]["ruffRules"] == ["E501"]
    logic3 = driver["rules"][1]
    assert logic3["help"]["text"] == "Ensure each function has at most 3 branches."
    assert "`max_branches` = `3` (from [tool.vibecheck.gate])" in logic3["help"]["markdown"]
    assert run["tool"]["extensions"][0]["name"] == "ruff"
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["invocations"] == [{"executionSuccessful": True}]
    got = [
        (r["ruleId"], r["ruleIndex"], r["level"], r["message"]["text"],
         r["locations"][0]["physicalLocation"]["artifactLocation"],
         r["locations"][0]["physicalLocation"]["region"], r["properties"])
        for r in run["results"]
    ]
    assert got == [
        ("syntax-error", 3, "error", "SyntaxError: invalid syntax (the file cannot be checked "
         "against any instruction)", {"uri": "broken.py", "uriBaseId": "%SRCROOT%"},
         {"startLine": 1, "startColumn": 12, "snippet": {"text": "def broken(:"}},
         {"instruction": None}),
        ("logic_1", 2, "error", "F401 `sys` imported but unused",
         {"uri": "extra.py", "uriBaseId": "%SRCROOT%"},
         {"startLine": 1, "startColumn": 8, "snippet": {"text": "import sys"}},
         {"instruction": "logic_1", "parameters": {}, "rule": "F401"}),
        ("style_3", 0, "error", "E501 Line too long (91 > 79)",
         {"uri": "mod.py", "uriBaseId": "%SRCROOT%"},
         {"startLine": 9, "startColumn": 80, "snippet": {"text": LONG}},
         {"instruction": "style_3", "parameters": {"line_length": 79}, "rule": "E501"}),
    ]
    # `import os` (F401) on an unchanged line is not counted, so it is no result either
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    props = run["properties"]["vibecheck"]
    assert props["mode"] == "gate" and props["base"] == "main" and props["linesCounted"] == "changed"
    assert props["mergeBase"] == git(repo, "merge-base", "main", "HEAD").strip()
    assert props["config"] == "pyproject.toml"


def test_fingerprints_are_stable_when_lines_move_and_new_when_the_line_changes(
    pytester: pytest.Pytester, repo: Path
) -> None:
    def prints(log: dict[str, Any]) -> dict[tuple[str, str], tuple[str, int]]:
        return {
            (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]):
            (r["partialFingerprints"]["vibecheck/v1"],
             r["locations"][0]["physicalLocation"]["region"]["startLine"])
            for r in log["runs"][0]["results"]
        }

    _, first = _run_gate(pytester)
    before = prints(first)
    # the next commit adds lines above both findings and re-indents nothing
    write(repo, {"mod.py": "# header\n# more\n" + BASE + f"\n\ndef new(value: str) -> str:\n{LONG}\n",
                 "extra.py": '"""Docs."""\n\nimport sys\n'})
    commit_all(repo)
    _, second = _run_gate(pytester)
    after = prints(second)
    assert after[("style_3", "mod.py")] == (before[("style_3", "mod.py")][0], 11)
    assert after[("logic_1", "extra.py")] == (before[("logic_1", "extra.py")][0], 3)
    # a change to the flagged line is a new finding
    write(repo, {"extra.py": '"""Docs."""\n\nimport sys, json\n'})
    commit_all(repo)
    _, third = _run_gate(pytester)
    changed = [r for r in third["runs"][0]["results"] if r["ruleId"] == "logic_1"]
    assert {r["message"]["text"] for r in changed} == {"F401 `sys` imported but unused",
                                                       "F401 `json` imported but unused"}
    assert before[("logic_1", "extra.py")][0] not in {r["partialFingerprints"]["vibecheck/v1"] for r in changed}


def test_fingerprints_tell_repeated_lines_apart() -> None:
    a = sarif.fingerprint("style_3", "E501", "x = 1  # long", 0)
    assert a == sarif.fingerprint("style_3", "E501", "    x = 1  # long   ", 0)  # indentation
    assert a != sarif.fingerprint("style_3", "E501", "x = 1  # long", 1)  # the second such line
    assert a != sarif.fingerprint("logic_1", "E501", "x = 1  # long", 0)
    assert len(a) == 32 and int(a, 16) >= 0


def test_advisory_gate_writes_warnings_also_under_xdist(pytester: pytest.Pytester, repo: Path) -> None:
    result, log = _run_gate(pytester, "--vibe-no-fail-items", "-n", "2")
    assert result.ret == pytest.ExitCode.OK
    validate(log)
    assert len(log["runs"][0]["results"]) == 3  # the workers' records reach the controller
    assert {r["level"] for r in log["runs"][0]["results"]} == {"warning"}
    assert {r["defaultConfiguration"]["level"] for r in log["runs"][0]["tool"]["driver"]["rules"]} == {"warning"}


def test_verifier_errors_are_notifications_not_results(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_vibecheck.verify import api as verify
    from pytest_vibecheck.verify.verdict import Verdict

    def broken(items: list[verify.VerifyItem], **kw: object) -> list[list[Verdict]]:
        return [[Verdict.failed_to_judge(i, "ruff crashed (exit 2)") for i, _ in it.instructions]
                for it in items]

    monkeypatch.setattr(verify, "verify_batch", broken)
    result, log = _run_gate(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    validate(log)
    (run,) = log["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["syntax-error"]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    assert len(notes) == 6
    assert notes[0]["message"]["text"] == (
        "logic_1: verifier error: ruff crashed (exit 2) (not a violation: the verifier could not "
        "judge this file)")
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "extra.py"


def test_an_unwritable_sarif_path_is_a_usage_error(pytester: pytest.Pytester, repo: Path) -> None:
    (repo / "afile").write_text("x", encoding="utf-8")
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider",
                                "--vibe-sarif", "afile/gate.sarif")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: vibecheck: --vibe-sarif */afile/gate.sarif: *"])
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider",
                                "--vibe-sarif", "same.xml", "--junitxml", "same.xml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the same file as --junitxml*"])


def test_the_schemas_reject_a_broken_log() -> None:
    """A control: the validation above can fail."""
    log: Any = sarif.gate_log([], [], text_of=lambda p: None, tool_version="0.1.0")
    validate(log)
    log["runs"][0]["results"] = [{"ruleId": "x", "locations": []}]  # no message
    with pytest.raises(jsonschema.ValidationError, match="'message' is a required property"):
        validate(log)


def test_results_beyond_githubs_limit_are_dropped_with_a_notification(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_vibecheck.ci.gate import GateInstruction

    monkeypatch.setattr(sarif, "RESULTS_PER_RUN", 3)
    rec: Any = {"file": "a.py", "instruction": "logic_1", "label": "logic_1", "params": {},
                "status": "failed", "error": None, "line": None, "column": None,
                "violations": [{"rule": "F401", "line": n, "column": 1, "message": "m",
                                "counted": True} for n in range(1, 6)]}
    log = sarif.gate_log([rec], [GateInstruction("logic_1", {})], text_of=lambda p: None,
                         tool_version="0.1.0")
    validate(log)
    (run,) = log["runs"]
    assert len(run["results"]) == 3
    assert run["invocations"][0]["toolExecutionNotifications"] == [{"level": "warning", "message": {
        "text": "2 more result(s) left out: GitHub code scanning accepts at most 3 results per run"}}]


def test_benchmark_run_sarif(pytester: pytest.Pytester) -> None:
    write_tiny_suite(pytester.path / "suite")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    result = pytester.runpytest(
        "--vibe-model", "reference", "--vibe-suite", "suite", "-p", "no:randomly",
        "-p", "no:cacheprovider", "--vibe-protocol", "single", "--vibe-k", "1",
        "--vibe-no-fail-items", "--vibe-sarif", "bench.sarif",
    )
    assert result.ret == pytest.ExitCode.OK
    log = json.loads((pytester.path / "bench.sarif").read_text(encoding="utf-8"))
    validate(log)
    (run,) = log["runs"]
    # single k=1: t/add breaks doc_1 (unannotated), t/squares logic_8, t/sign follows logic_3
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["doc_1", "logic_8"]
    assert run["tool"]["driver"]["rules"][0]["help"]["text"] == render_prompt("doc_1", {})
    uris = [a["location"]["uri"] for a in run["artifacts"]]
    assert uris == ["tiny/t/add/reference/single-k1.py", "tiny/t/squares/reference/single-k1.py"]
    assert run["artifacts"][0]["contents"]["text"] == "def add(a, b):\n    return a + b\n"
    first = run["results"][0]
    assert first["ruleId"] == "doc_1" and first["level"] == "warning"
    assert first["message"]["text"] == "ANN201 Missing return type annotation for public function `add`"
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "tiny/t/add/reference/single-k1.py", "index": 0},
        "region": {"startLine": 1, "startColumn": 5, "snippet": {"text": "def add(a, b):"}},
    }
    assert first["properties"]["task"] == "t/add" and first["properties"]["model"] == "reference"
    assert [(r["ruleId"], r["message"]["text"].split()[0]) for r in run["results"][1:]] == [
        ("doc_1", "ANN001"), ("doc_1", "ANN001"), ("logic_8", "PERF401")]
    last = run["results"][-1]["locations"][0]["physicalLocation"]
    assert last["artifactLocation"]["index"] == 1
    assert last["region"]["snippet"]["text"] == "        out.append(i * i)"
