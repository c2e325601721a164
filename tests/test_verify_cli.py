"""``vibecheck verify``: single mode (PASS/FAIL lines, exit 0/1/2) and batch JSONL mode."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_vibecheck.cli import main as cli
from pytest_vibecheck.verify.ruff_engine import RuffEngine

CODE = "import os\n\n\ndef f(x):\n    if x == 1:\n        return 1\n    elif x == 2:\n        return 2\n    else:\n        return 3\n"


@pytest.fixture
def code_file(tmp_path: Path) -> Path:
    path = tmp_path / "sample.py"
    path.write_text(CODE, encoding="utf-8")
    return path


def test_all_pass_exit_0(code_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["verify", str(code_file), "-i", "logic_3:max_branches=3", "-i", "style_7"])
    out = capsys.readouterr().out
    assert status == 0
    assert out == "PASS logic_3 (max_branches=3)\nPASS style_7\n"


def test_a_failure_exit_1_with_violation_lines(code_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(
        ["verify", str(code_file), "-i", "logic_3:max_branches=3", "-i", "doc_3:convention=google", "-i", "logic_1"]
    )
    out = capsys.readouterr().out
    assert status == 1
    assert out.splitlines() == [
        "PASS logic_3 (max_branches=3)",
        "FAIL doc_3 (convention=google)",
        f"  {code_file}:1:1 D100 Missing docstring in public module",
        f"  {code_file}:4:5 D103 Missing docstring in public function",
        "FAIL logic_1",
        f"  {code_file}:1:8 F401 `os` imported but unused",
    ]


def test_stdin_and_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("x = 'a'\n"))
    status = cli.main(["verify", "-", "-i", "style_5", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert status == 1
    assert data == [
        {
            "instruction": "style_5",
            "params": {},
            "passed": False,
            "error": None,
            "violations": [
                {"rule": "Q000", "line": 1, "column": 5, "message": "Single quotes found but double quotes preferred"}
            ],
            "ruff_version": data[0]["ruff_version"],
            "warnings": [],
        }
    ]
    assert data[0]["ruff_version"].startswith("0.17.")


def test_stdin_violation_lines_name_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("x = 1  # c\n"))
    assert cli.main(["verify", "-", "-i", "doc_5"]) == 1
    assert capsys.readouterr().out == "FAIL doc_5\n  <stdin>:1:8 comment Comment found: '# c'\n"


def test_reply_mode_extracts_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text("Sure:\n```python\nx = 1\n```\n", encoding="utf-8")
    status = cli.main(["verify", str(reply), "--reply", "-i", "style_1", "-i", "doc_4"])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert out[0] == "PASS style_1"
    assert out[1] == "FAIL doc_4"
    assert out[2].startswith(f"  {reply}:2:1 markdown-fence ")


def test_usage_errors_exit_2(code_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify", str(code_file), "-i", "logic_33"]) == 2
    err = capsys.readouterr().err
    assert "unknown instruction 'logic_33'; did you mean 'logic_3'" in err
    assert cli.main(["verify", str(code_file)]) == 2
    assert "at least one instruction" in capsys.readouterr().err
    assert cli.main(["verify", str(code_file) + ".missing", "-i", "style_1"]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert cli.main(["verify", str(code_file), "-i", "logic_3:max_branches"]) == 2
    assert "expected ID[:key=value" in capsys.readouterr().err


def test_invalid_cli_parameter_is_a_usage_error(code_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the message must not claim a reset (or a drop) that strict mode does not do
    assert cli.main(["verify", str(code_file), "-i", "logic_3:max_branches=9"]) == 2
    assert capsys.readouterr().err == (
        "vibecheck verify: error: logic_3: parameter max_branches='9' is not int in [2, 4]; "
        "give a valid value, or pass --lenient-params to reset invalid parameters to their "
        "defaults as the paper does\n"
    )
    assert cli.main(["verify", str(code_file), "-i", "style_3:foo=1"]) == 2
    err = capsys.readouterr().err
    assert "style_3: unknown parameter 'foo' (parameters: line_length); give a valid" in err
    assert "dropped" not in err and "reset to the default" not in err


def test_parameter_warning_on_stderr(code_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify", str(code_file), "--lenient-params", "-i", "logic_3:max_branches=9"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "FAIL logic_3 (max_branches=2)"
    assert "max_branches='9' is not int in [2, 4]; reset to the default 2" in captured.err


def test_verifier_error_exit_2(
    code_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("pytest_vibecheck.verify.api.default_engine", lambda: RuffEngine("/nonexistent/ruff"))
    assert cli.main(["verify", str(code_file), "-i", "style_1", "-i", "doc_5"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ERROR style_1: Ruff cannot run")
    assert out[1] == "PASS doc_5"


def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_batch_mode_formats_and_skips_malformed_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    _write_lines(
        inp,
        [
            json.dumps({"id": "a", "code": "x = 1", "instructions": [{"id": "logic_3", "params": {"max_branches": 2}}]}),
            "{not json",
            json.dumps({"id": "b", "reply": "```python\nimport os\n```", "instructions": [{"id": "logic_1"}, {"id": "doc_4"}]}),
            json.dumps({"code": "x = 1", "instructions": [{"id": "style_1"}]}),
            "",
            json.dumps({"id": "c", "code": "x = 1", "instructions": [{"id": "style_99"}]}),
            json.dumps({"id": 7, "code": "x = 1", "instructions": []}),
            json.dumps({"id": 8, "code": "y = 'q'\n", "instructions": ["style_5"]}),
        ],
    )
    status = cli.main(["verify", "--batch", str(inp), "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2  # lines were skipped
    assert f"{inp}:2: skipped: not valid JSON" in err
    assert f'{inp}:4: skipped: missing "id"' in err
    assert f"{inp}:6: skipped: instructions[0]: unknown instruction 'style_99'" in err
    assert f'{inp}:7: skipped: "instructions" must be a non-empty list' in err
    assert "3 line(s) verified, 4 skipped, 0 verifier error(s); Ruff 0.17." in err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows == [
        {
            "id": "a",
            "results": [
                {"instruction": "logic_3", "params": {"max_branches": 2}, "passed": True, "error": None, "violations": []}
            ],
        },
        {
            "id": "b",
            "results": [
                # a reply whose code is only an import has no code (issue 23): every
                # instruction fails, the reply-level doc_4 too
                {
                    "instruction": iid,
                    "params": {},
                    "passed": False,
                    "error": None,
                    "violations": [{"rule": "NO-CODE", "line": 1, "column": 1, "message":
                                    "the reply contains no code (nothing to run: only imports, docstrings, "
                                    "constants, pass or stubs)"}],
                }
                for iid in ("logic_1", "doc_4")
            ],
        },
        {
            "id": 8,
            "results": [
                {
                    "instruction": "style_5",
                    "params": {},
                    "passed": False,
                    "error": None,
                    "violations": [
                        {"rule": "Q000", "line": 1, "column": 5, "message": "Single quotes found but double quotes preferred"}
                    ],
                }
            ],
        },
    ]


def test_batch_all_good_exit_0_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp = tmp_path / "in.jsonl"
    _write_lines(
        inp,
        [json.dumps({"id": f"s{n}", "code": f"x{n} = {n}\n", "instructions": [{"id": "style_1"}]}) for n in range(3)],
    )
    assert cli.main(["verify", "--batch", str(inp)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["s0", "s1", "s2"]
    assert all(json.loads(x)["results"][0]["passed"] is True for x in lines)


def test_batch_usage_errors(tmp_path: Path, code_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify", "--batch", str(tmp_path / "none.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert cli.main(["verify", str(code_file), "--batch", str(code_file)]) == 2
    assert "give no FILE and no -i" in capsys.readouterr().err


def test_console_script_end_to_end(code_file: Path) -> None:
    exe = Path(sys.executable).with_name("vibecheck")
    proc = subprocess.run(
        [str(exe), "verify", str(code_file), "-i", "logic_3:max_branches=2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "FAIL logic_3 (max_branches=2)",
        f"  {code_file}:4:5 PLR0912 Too many branches (3 > 2)",
    ]


def test_a_file_over_the_size_limit_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 400_000, encoding="utf-8")  # 2,400,000 bytes
    assert cli.main(["verify", str(big), "-i", "style_3"]) == 2
    err = capsys.readouterr().err
    assert err == (f"vibecheck verify: error: {big} is 2,400,000 bytes, over the limit of 2,000,000 "
                   "bytes; not verified: pass --max-bytes N to raise the limit\n")
    assert cli.main(["verify", str(big), "-i", "style_3", "--max-bytes", "3000000"]) == 0


def test_violations_printed_per_file_are_capped_with_a_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "long.py"
    f.write_text("".join(f"X{i} = '{'x' * 90}'\n" for i in range(120)), encoding="utf-8")
    assert cli.main(["verify", str(f), "-i", "style_3"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "FAIL style_3 (line_length=79)"
    assert len(lines) == 1 + 50 + 1
    assert lines[-1] == f"  ... and 70 more violations of style_3 in {f}, not shown (--json lists them all)"
