"""The pull-request gate (``pytest --vibe-gate``) on a temporary git repository.

Base commit: ``mod.py`` already has violations (an unannotated function, a long line);
``renamed_old.py`` has a long line; ``gone.py``, ``notes.txt``. The change: ``mod.py`` gains a
new annotated function with a long line, ``clean.py`` changes cleanly, ``renamed_old.py`` moves
to ``pkg/renamed.py`` with one new short line, ``gone.py`` is deleted, ``notes.txt`` changes,
and ``broken.py`` (a syntax error) is added.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ci_helpers import commit_all, git, init_repo, write

from pytest_vibecheck.ci import gate

pytest.importorskip("pytest_vibecheck.verify.api")

LONG_OLD = '    return os.path.join("a", value) + "' + "x" * 45 + '"'  # 85 characters, line 5
LONG_NEW = '    return value + "' + "y" * 70 + '"'  # 91 characters, line 9
MOD_BASE = f"import os\n\n\ndef old(value):\n{LONG_OLD}\n"
MOD_NEW = MOD_BASE + f"\n\ndef new(value: str) -> str:\n{LONG_NEW}\n"
RENAMED = "def keep() -> int:\n    return 1  # " + "z" * 80 + "\n"
BROKEN = "def broken(:\n    pass\n"

GATE_TOML = """
[tool.vibecheck.gate]
instructions = ["style_3", "doc_1"]
"""


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_BASE_REF"):
        monkeypatch.delenv(var, raising=False)
    root = pytester.path
    init_repo(root, {
        "pyproject.toml": GATE_TOML,
        ".gitignore": ".pytest_cache/\n__pycache__/\n",
        "mod.py": MOD_BASE,
        "clean.py": "X = 1\n",
        "renamed_old.py": RENAMED,
        "gone.py": "Y = 2\n",
        "notes.txt": "notes\n",
    })
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {
        "mod.py": MOD_NEW,
        "clean.py": "X = 1\nY = 2\n",
        "notes.txt": "notes\nmore notes\n",
        "broken.py": BROKEN,
    })
    git(root, "mv", "renamed_old.py", "pkg_renamed.py")
    (root / "pkg").mkdir()
    git(root, "mv", "pkg_renamed.py", "pkg/renamed.py")
    write(root, {"pkg/renamed.py": RENAMED + "VALUE = 2\n"})
    git(root, "rm", "-q", "gone.py")
    commit_all(root)
    return root


def _syntax() -> tuple[int, int, str]:
    try:
        ast.parse(BROKEN)
    except SyntaxError as exc:
        assert exc.lineno is not None and exc.offset is not None
        return exc.lineno, exc.offset, f"SyntaxError: {exc.msg}"
    raise AssertionError("BROKEN parses")


def test_diff_of_the_change(repo: Path) -> None:
    conf = gate.load_gate_config(repo / "pyproject.toml")
    diff = gate.compute_diff(repo, "main", conf)
    assert [(f.path, f.status, sorted(f.added), f.old_path) for f in diff.files] == [
        ("broken.py", "added", [1, 2], None),
        ("clean.py", "modified", [2], None),
        ("mod.py", "modified", [6, 7, 8, 9], None),
        ("pkg/renamed.py", "renamed", [3], "renamed_old.py"),
    ]
    assert sorted((s.path, s.reason) for s in diff.skipped) == [
        ("gone.py", "deleted"),
        ("notes.txt", "not a Python file"),
    ]


def test_gate_counts_only_changed_lines(pytester: pytest.Pytester, repo: Path) -> None:
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider",
                                "-rA")
    result.assert_outcomes(passed=5, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    line, col, msg = _syntax()
    result.stdout.fnmatch_lines([
        "collected 7 items*",
        f"broken.py:{line}:{col}: {msg} (the file cannot be checked against any instruction)",
        "mod.py: instruction style_3 not followed on changed lines:",
        "  mod.py:9:80: E501 Line too long (91 > 79)",
        "  (1 more on unchanged lines, not counted; --vibe-gate-all-lines counts them)",
        "PASSED clean.py::gate[style_3]",
        "PASSED clean.py::gate[doc_1]",
        "PASSED mod.py::gate[doc_1]",
        "PASSED pkg/renamed.py::gate[style_3]",
        "PASSED pkg/renamed.py::gate[doc_1]",
        "FAILED broken.py::gate?syntax? - *",
        "FAILED mod.py::gate?style_3? - *",
        # the gate's summary comes last, after pytest's short test summary
        "*= vibecheck gate =*",
        "base main (merge base *); 4 changed Python file(s); 7 check(s): 2 failed, 0 error(s); "
        "violations counted on changed lines only (4 on unchanged lines not counted)",
        "skipped gone.py: deleted",
        "skipped notes.txt: not a Python file",
        "*= 2 failed, 5 passed in *",
    ])
    # no GitHub output outside GitHub Actions
    assert "::error" not in result.stdout.str()


def test_gate_all_lines(pytester: pytest.Pytester, repo: Path) -> None:
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "--vibe-gate-all-lines",
                                "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=3, failed=4)
    result.stdout.fnmatch_lines([
        "mod.py: instruction style_3 not followed:",
        "  mod.py:5:80: E501 Line too long (85 > 79)",
        "  mod.py:9:80: E501 Line too long (91 > 79)",
        "mod.py: instruction doc_1 not followed:",
        "  mod.py:4:5: ANN201 Missing return type annotation for public function `old`",
        "  mod.py:4:9: ANN001 Missing type annotation for function argument `value`",
        "pkg/renamed.py: instruction style_3 not followed:",
        "  pkg/renamed.py:2:80: E501 Line too long (96 > 79)",
        "FAILED broken.py::gate?syntax? - *",
        "FAILED mod.py::gate?style_3? - *",
        "FAILED mod.py::gate?doc_1? - *",
        "FAILED pkg/renamed.py::gate?style_3? - *",
        "*violations counted on all lines",
    ])


def test_github_annotations_and_step_summary(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    line, col, msg = _syntax()
    annotations = [ln for ln in result.outlines if ln.startswith("::")]
    assert annotations == [
        f"::error file=broken.py,line={line},col={col},title=vibecheck syntax error::{msg} "
        "(the file cannot be checked against any instruction)",
        "::error file=mod.py,line=9,col=80,title=vibecheck E501 (style_3)::"
        "Line too long (91 > 79)",
    ]
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## vibecheck gate: failed\n")
    merge_base = git(repo, "merge-base", "main", "HEAD").strip()
    assert (
        f"Base `main` (merge base `{merge_base[:12]}`), 4 changed Python file(s), 7 check(s): "
        "5 passed, 2 failed, 0 error(s). Violations counted on changed lines only."
    ) in text
    assert "| `mod.py:9:80` | style_3 | E501 | Line too long (91 > 79) |" in text
    assert f"| `broken.py:{line}` | syntax | — | {msg} |" in text
    assert "4 violation(s) on unchanged lines were not counted." in text
    assert "- `gone.py`: deleted\n- `notes.txt`: not a Python file\n" in text


def test_no_fail_items_makes_the_gate_advisory(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "--vibe-no-fail-items",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, failed=2)
    assert result.ret == pytest.ExitCode.OK
    assert ("::warning file=mod.py,line=9,col=80,title=vibecheck E501 (style_3)::"
            "Line too long (91 > 79)") in result.outlines
    result.stdout.fnmatch_lines(["vibecheck: 2 failed vibecheck item(s) ignored (--vibe-no-fail-items)"])


def test_a_verifier_error_is_an_error_not_a_violation(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pytest_vibecheck.verify import api as verify
    from pytest_vibecheck.verify.verdict import Verdict

    def broken(items: list[verify.VerifyItem], **kw: object) -> list[list[Verdict]]:
        return [[Verdict.failed_to_judge(i, "ruff crashed (exit 2)") for i, _ in it.instructions]
                for it in items]

    monkeypatch.setattr(verify, "verify_batch", broken)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "--vibe-no-fail-items",
                                "-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(failed=1, errors=6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # errors still fail the run
    result.stdout.fnmatch_lines(["ERROR mod.py::gate?style_3? - mod.py: verifier error: ruff crashed (exit 2)"])
    assert not any(ln.startswith("::error file=mod.py") for ln in result.outlines)
    text = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "## vibecheck gate: failed" in text  # the syntax item
    assert "- error (not counted as a violation): `mod.py` style_3: verifier error: ruff crashed (exit 2)" in text


def test_params_labels_and_k_selection(pytester: pytest.Pytester, repo: Path) -> None:
    write(repo, {"pyproject.toml": """
[tool.vibecheck.gate]
instructions = [{id = "style_3", params = {line_length = 88}}, "doc_1"]
exclude = ["broken.py"]
"""})
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider",
                                "-k", "style_3", "-rA")
    # line_length 88: only the 91-character line counts; broken.py is excluded
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*mod.py: instruction style_3:line_length=88 not followed on changed lines:",
        "  mod.py:9:89: E501 Line too long (91 > 88)",
        "skipped broken.py: excluded by [tool.vibecheck.gate] include/exclude",
    ])


def test_no_changed_python_file_passes(pytester: pytest.Pytester, repo: Path) -> None:
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "HEAD", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["vibecheck: no gate items (no changed Python file)"])


def test_uncommitted_and_untracked_changes_count(pytester: pytest.Pytester, repo: Path) -> None:
    write(repo, {"extra.py": "def f(x):\n    return x\n"})
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "HEAD", "-p", "no:cacheprovider",
                                "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED extra.py::gate?doc_1?*"])


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('instructions = ["logic_33"]', "*unknown instruction 'logic_33'; did you mean 'logic_3'*"),
        ('instructions = [{id = "logic_3", params = {max_branches = 9}}]',
         "*instructions entry 1: logic_3: parameter max_branches=9 is not int in ?2, 4?"),
        ('instructions = ["doc_4"]', "*doc_4 judges a model's whole reply*"),
        ('instructions = ["doc_1", "doc_1"]', "*instruction 'doc_1' is declared twice*"),
        ("instructions = []", "*needs a non-empty list 'instructions'*"),
        ('instructions = ["doc_1"]\nlines = 3', "*unknown key(s) lines in ?tool.vibecheck.gate?; allowed: instructions, include, exclude, base, suppressions, max_file_bytes"),
    ],
)
def test_bad_config_is_a_usage_error(
    pytester: pytest.Pytester, repo: Path, table: str, message: str
) -> None:
    write(repo, {"pyproject.toml": f"[tool.vibecheck.gate]\n{table}\n"})
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: vibecheck gate: {message}"])


def test_unknown_base_and_no_repository(pytester: pytest.Pytester, repo: Path, tmp_path: Path) -> None:
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "nope", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*base ref 'nope' (from --vibe-base) is not a commit*"])
    result = pytester.runpytest("--vibe-base", "main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*only apply with --vibe-gate*"])


# ---------------------------------------------------------------- pure functions


def test_base_ref_precedence(repo: Path) -> None:
    # --vibe-base > the pull request's base (GITHUB_BASE_REF) > [tool.vibecheck.gate] base >
    # main; action.yml and docs/ci.md document the same order
    git(repo, "branch", "develop", "main")
    pr = {"GITHUB_BASE_REF": "main"}
    assert gate.resolve_base(repo, None, "develop", environ=pr) == "main"
    assert gate.resolve_base(repo, None, "develop", environ={}) == "develop"
    assert gate.resolve_base(repo, "develop", None, environ=pr) == "develop"
    assert gate.resolve_base(repo, None, None, environ={}) == "main"
    git(repo, "branch", "origin/main", "main")  # a remote-tracking name wins over the local one
    assert gate.resolve_base(repo, None, "develop", environ=pr) == "origin/main"
    with pytest.raises(gate.GateError, match=r"base branch 'release' \(GITHUB_BASE_REF\) is not fetched"):
        gate.resolve_base(repo, None, "develop", environ={"GITHUB_BASE_REF": "release"})


def test_gate_uses_the_pull_request_base_over_the_config(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(repo, "branch", "develop", "HEAD")  # the config's base: nothing changed against it
    write(repo, {"pyproject.toml": GATE_TOML + 'base = "develop"\n'})
    commit_all(repo, "config base")
    git(repo, "branch", "-f", "develop", "HEAD")
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    result = pytester.runpytest("--vibe-gate", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["base main (merge base *); 4 changed Python file(s); *"])


def test_parse_unified_diff_cases() -> None:
    text = "\n".join([
        "diff --git a/a b.py b/a b.py",
        "index 1..2 100644",
        "--- a/a b.py",
        "+++ b/a b.py",
        "@@ -3 +3 @@ x",
        "-old",
        "+new",
        "@@ -10,2 +10,0 @@",
        "@@ -20,0 +19,3 @@",
        'diff --git "a/t\\303\\251\\tx.py" "b/t\\303\\251\\tx.py"',
        "new file mode 100644",
        "--- /dev/null",
        '+++ "b/t\\303\\251\\tx.py"',
        "@@ -0,0 +1,2 @@",
        "diff --git a/p.py b/q.py",
        "similarity index 100%",
        "rename from p.py",
        "rename to q.py",
        "diff --git a/img.py b/img.py",
        "Binary files a/img.py and b/img.py differ",
        "diff --git a/del.py b/del.py",
        "deleted file mode 100644",
        "--- a/del.py",
        "+++ /dev/null",
        "@@ -1,2 +0,0 @@",
    ])
    got = [(e.path, e.status, sorted(e.added), e.old_path, e.binary)
           for e in gate.parse_unified_diff(text)]
    assert got == [
        ("a b.py", "modified", [3, 19, 20, 21], None, False),
        ("té\tx.py", "added", [1, 2], None, False),
        ("q.py", "renamed", [], "p.py", False),
        ("img.py", "modified", [], None, True),
        ("del.py", "deleted", [], None, False),
    ]


def test_annotation_escaping() -> None:
    assert gate.annotation_line("dir,x/a:b.py", 3, None, "vibecheck E501 (style_3:line_length=88)",
                                "50% done\r\nnext") == (
        "::error file=dir%2Cx/a%3Ab.py,line=3,title=vibecheck E501 "
        "(style_3%3Aline_length=88)::50%25 done%0D%0Anext"
    )
    assert gate.annotation_line("a.py", None, None, "t", "m", "notice") == "::notice file=a.py,title=t::m"


def test_counted() -> None:
    added = frozenset({2, 3})
    assert [gate.counted(n, added, False) for n in (1, 2, 3, 4, None)] == [False, True, True, False, False]
    assert [gate.counted(n, added, True) for n in (1, None)] == [True, True]


def test_config_forms(tmp_path: Path) -> None:
    conf = gate.parse_gate_table({
        "instructions": ["doc_1", "logic_3:max_branches=3", {"id": "style_3", "params": {"line_length": 88}}],
        "include": ["src/*.py"], "exclude": "src/gen_*.py", "base": "origin/dev",
    })
    assert [(g.id, dict(g.params), g.label()) for g in conf.instructions] == [
        ("doc_1", {}, "doc_1"),
        ("logic_3", {"max_branches": 3}, "logic_3:max_branches=3"),
        ("style_3", {"line_length": 88}, "style_3:line_length=88"),
    ]
    assert (conf.include, conf.exclude, conf.base) == (("src/*.py",), ("src/gen_*.py",), "origin/dev")
    assert [conf.selects(p) for p in ("src/a.py", "src/sub/b.py", "src/gen_x.py", "a.py")] == [
        True, True, False, False]
    with pytest.raises(gate.GateConfigError, match=r"no \[tool.vibecheck.gate\] table"):
        (tmp_path / "x.toml").write_text("[tool.other]\n", encoding="utf-8")
        gate.load_gate_config(tmp_path / "x.toml")
    with pytest.raises(gate.GateConfigError, match="is not valid TOML"):
        (tmp_path / "y.toml").write_text("[tool\n", encoding="utf-8")
        gate.load_gate_config(tmp_path / "y.toml")


def test_check_syntax() -> None:
    assert gate.check_syntax(b"x = 1\n", "a.py") is None
    bad = gate.check_syntax(b"x = (\n", "a.py")
    assert bad is not None and bad.line == 1
    latin = gate.check_syntax(b"x = '\xe9'\n", "a.py")
    assert latin == gate.SyntaxProblem("not valid UTF-8 (invalid continuation byte at byte 5)", None, None)


def test_a_python_environment_in_the_work_tree_is_left_out(pytester: pytest.Pytester, repo: Path) -> None:
    """A .venv that is not git-ignored: its files are neither read nor checked, one line says so."""
    write(repo, {
        ".venv/pyvenv.cfg": "home = /usr/bin\n",
        ".venv/lib/python3.11/site-packages/pkg/mod.py": "def f(x):\n    return x\n",
        ".venv/bin/tool.py": "def g(x):\n    return x\n",
        "vendor/site-packages/other.py": "def h(x):\n    return x\n",
    })  # fmt: skip
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "HEAD", "-p", "no:cacheprovider")
    assert "gate?doc_1" not in result.stdout.str()
    result.stdout.fnmatch_lines([
        "skipped .venv/: a Python environment (3 changed or untracked files): installed code is "
        "left out; add it to .gitignore",
        "skipped vendor/site-packages/: a Python environment (1 changed or untracked files): *",
    ])


def test_a_file_over_the_size_limit_is_an_error_naming_the_limit(pytester: pytest.Pytester, repo: Path) -> None:
    (repo / "pyproject.toml").write_text(GATE_TOML + "max_file_bytes = 100\n", encoding="utf-8")
    write(repo, {"big.py": "X = 1\n" * 50})  # 300 bytes
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "HEAD", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        "*big.py: verification failed: big.py is 300 bytes, over the limit of 100 bytes; not "
        f"verified: raise max_file_bytes in ?tool.vibecheck.gate? ({repo / 'pyproject.toml'}) or "
        "exclude the file*",
    ])


def test_the_violations_shown_per_file_are_capped(pytester: pytest.Pytester, repo: Path) -> None:
    write(repo, {"wide.py": "".join(f"X{i} = '{'x' * 90}'\n" for i in range(60))})
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "HEAD", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert out.count("wide.py:") >= 50
    assert sum(1 for ln in result.outlines if ln.startswith("  wide.py:") and " E501 " in ln) == 50
    result.stdout.fnmatch_lines([
        "  ... and 10 more violations of style_3 in this file, not shown (the SARIF log, "
        "--vibe-sarif, lists them all)",
    ])
