"""Replies that game the instruction verdicts (issue 23), judged as a careful reviewer would:
suppression comments, code hidden in strings, answers with nothing to run and the smaller tricks,
through ``vibecheck verify --reply``, the reward (``score_batch``) and, where it applies, the gate.
The listed ones come from the issue; the rest are variants written for this test."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from ci_helpers import commit_all, git, init_repo, write

from pytest_vibecheck.ci.gate import GateConfigError, parse_gate_table
from pytest_vibecheck.ci.suppressions import find_suppressions
from pytest_vibecheck.cli import main as cli
from pytest_vibecheck.reward import RewardConfig, score_batch
from pytest_vibecheck.verify.substance import hidden_code, nothing_to_run

LONG = "x" * 90
#: Long with spaces: Ruff's E501 skips an overlong line whose end is one long word (a URL).
WORDS = " ".join(["word"] * 20)


def fenced(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}```\n"


def verify_reply(tmp_path: Path, capsys: pytest.CaptureFixture[str], reply: str,
                 *instructions: str) -> dict[str, list[str]]:
    """``vibecheck verify --reply --json``: instruction -> the rules of its violations
    (``[]``: followed)."""
    path = tmp_path / "reply.md"
    path.write_text(reply, encoding="utf-8")
    args = ["verify", "--reply", str(path), "--json"]
    for iid in instructions:
        args += ["-i", iid]
    cli.main(args)
    rows = json.loads(capsys.readouterr().out)
    assert all(r["passed"] is not None for r in rows), rows  # judged, never a verifier error
    return {r["instruction"].split(":")[0]: [v["rule"] for v in r["violations"]] for r in rows}


# ------------------------------------------------------------------ suppression comments

SUPPRESSED: list[tuple[str, str, str, str]] = [
    # (label, code, instruction, the rule the suppression hid)
    ("noqa E501 (issue)", f'URL = "{LONG}"  # noqa: E501\n', "style_3", "E501"),
    ("bare noqa on an import (issue)", "import os  # noqa\n\n\ndef f():\n    return 1\n", "logic_1", "F401"),
    ("file-level ruff: noqa (issue)", f'# ruff: noqa\nimport os\nURL = "{LONG}"\n', "logic_1", "F401"),
    ("file-level ruff: noqa, style_3", f'# ruff: noqa\nimport os\nURL = "{LONG}"\n', "style_3", "E501"),
    ("ruff: noqa: PLR0912 (issue)",
     "# ruff: noqa: PLR0912\ndef f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(6))
     + "    return -1\n", "logic_3:max_branches=3", "PLR0912"),
    ("noqa PLR0915, C901 on a def, logic_4 (issue)",
     "def f(x):  # noqa: PLR0915, C901\n" + "".join(f"    if x == {i}:\n        x += {i}\n" for i in range(6))
     + "    return x\n", "logic_4:max_statements=5", "PLR0915"),
    ("noqa PLR0915, C901 on a def, logic_7 (issue)",
     "def f(x):  # noqa: PLR0915, C901\n" + "".join(f"    if x == {i}:\n        x += {i}\n" for i in range(6))
     + "    return x\n", "logic_7:max_complexity=3", "C901"),
    ("flake8: noqa", "# flake8: noqa\nimport os\n", "logic_1", "F401"),
    ("ruff: ignore[...] on the line", "import os  # ruff: ignore[F401]\n", "logic_1", "F401"),
    ("ruff: file-ignore[...]", f'# ruff: file-ignore[E501]\nURL = "{LONG}"\n', "style_3", "E501"),
    ("ruff: disable/enable block",
     f'# ruff: disable[E501]\nURL = "{LONG}"\n# ruff: enable[E501]\n', "style_3", "E501"),
    ("unmatched ruff: disable", f'# ruff: disable[F401]\nimport os\nURL = "{LONG}"\n', "logic_1", "F401"),
    ("NoQA in another case, no space", f'URL = "{LONG}"  # NoQA:E501\n', "style_3", "E501"),
    ("noqa behind another comment", "import os  # type: ignore # noqa: F401\n", "logic_1", "F401"),
    ("noqa at the end of a multi-line string",
     f'TEXT = """\n{WORDS}\n"""  # noqa: E501\n', "style_3", "E501"),
]


#: Something to run after the suppressed lines (code of only imports has no code at all).
TAIL = "\n\ndef g():\n    return 0\n"


@pytest.mark.parametrize(("label", "code", "instruction", "rule"), SUPPRESSED, ids=[s[0] for s in SUPPRESSED])
def test_a_suppression_never_excuses_a_violation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, code: str, instruction: str, rule: str
) -> None:
    got = verify_reply(tmp_path, capsys, fenced(code + TAIL), instruction)
    assert rule in next(iter(got.values())), (label, got)


def test_suppressed_replies_earn_what_their_code_earns() -> None:
    """Each suppression reply of the issue earned 1.0; with the suppression ignored, a
    reply that breaks its one instruction earns only the tests' part."""
    problem = {"test": {"kind": "humaneval", "entry_point": "f",
                        "code": "def check(candidate):\n    assert candidate(1) == 1\n"},
               "entry_point": "f", "instructions": [{"id": "style_3"}, {"id": "logic_1"}]}
    reply = fenced(f'import os  # noqa\n\n\ndef f(x):\n    return "{WORDS}"[:0] or x  # noqa: E501\n')
    (res,) = score_batch([reply], [problem], RewardConfig(alpha=0.4))
    assert (res.exec_status, res.instruction_if) == ("passed", 0.0)
    assert res.reward == pytest.approx(0.6)
    assert [[v.rule for v in o.violations] for o in res.verdicts] == [["E501"], ["F401"]]


# ------------------------------------------------------------------ code hidden in strings

BODY = "def f(x):\n    if x == 1:\n        return 1\n    if x == 2:\n        return 2\n    return x\n"
B64 = base64.b64encode(BODY.encode()).decode()
HIDDEN: list[tuple[str, str]] = [
    ("exec of a string (issue)", f"SRC = {BODY!r}\nexec(SRC)\n"),
    ("compile + types.FunctionType (issue)",
     f"import types\n\nCODE = compile({BODY!r}, 'f', 'exec')\nf = types.FunctionType(CODE.co_consts[0], globals())\n"),
    ("exec through getattr on builtins", f"import builtins\n\nrun = getattr(builtins, 'ex' + 'ec')\nrun({BODY!r})\n"),
    ("exec of base64", f"import base64\n\nexec(base64.b64decode('{B64}').decode())\n"),
    ("exec through __import__", f"__import__('builtins').exec({BODY!r})\n"),
    ("exec imported under another name", f"from builtins import exec as run\n\nrun({BODY!r})\n"),
    ("eval of a lambda in a string", "f = eval('lambda x: x * 2')\n"),
    ("exec of bytes.fromhex", f"exec(bytes.fromhex('{BODY.encode().hex()}'))\n"),
    ("marshal.loads", "import marshal\n\nf = marshal.loads(b'c\\x00')\n"),
    ("timeit of a statement", "import timeit\n\ntimeit.timeit('import os', number=1)\n\n\ndef f(x):\n    return x\n"),
    ("eval through __builtins__.__dict__", "f = __builtins__.__dict__['eval']('lambda x: x')\n"),
    ("exec through globals()['__builtins__']", f"globals()['__builtins__']['exec']({BODY!r})\n"),
    ("exec through importlib", f"import importlib\n\nimportlib.import_module('builtins').exec({BODY!r})\n"),
    ("a function built from another's code object",
     "def g(x):\n    return x\n\n\nf = type(g)(g.__code__, {})\n"),
    ("python -c in a child process",
     f"import subprocess\nimport sys\n\n\ndef f(x):\n    return subprocess.run([sys.executable, '-c', {BODY!r}]).returncode\n"),
    ("os.system of python3 -c", "import os\n\n\ndef f(x):\n    return os.system('python3 -c \"print(1)\"')\n"),
    ("exec of its own source file", "exec(open(__file__).read().split('#' + 'CODE')[1])\n"),
]


@pytest.mark.parametrize(("label", "code"), HIDDEN, ids=[h[0] for h in HIDDEN])
def test_code_hidden_in_strings_fails_every_code_level_instruction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, code: str
) -> None:
    got = verify_reply(tmp_path, capsys, fenced(code), "logic_3:max_branches=2", "doc_1", "style_8", "doc_6")
    for iid in ("logic_3", "doc_1", "style_8"):
        assert "hidden-code" in got[iid], (label, iid, got)
    assert "hidden-code" not in got["doc_6"]  # the reply's format is judged as it is


HONEST_DYNAMIC = [
    "import re\n\nPATTERN = re.compile(r'[a-z]+')\n",
    "n = eval(input())\nprint(n)\n",
    "import sys\n\nvals = [eval(line) for line in sys.stdin]\n",
    "def f(model):\n    model.eval()\n    return model\n",
    "import ast\n\nvalue = ast.literal_eval('[1, 2]')\n",
    "import subprocess\n\nout = subprocess.run(['ls', '-c'], check=False)\n",
    "import sys\n\nprint(sys.executable)\n",
]


@pytest.mark.parametrize("code", HONEST_DYNAMIC)
def test_honest_code_is_not_hidden_code(code: str) -> None:
    assert hidden_code(code) == ()


def test_hidden_code_earns_only_its_tests() -> None:
    """The issue's exec reply passed its tests and 5 instructions: 1.0. Its instructions now
    all fail (hidden-code), so it earns the tests' part of the gated composite only."""
    problem = {"test": {"kind": "humaneval", "entry_point": "f",
                        "code": "def check(candidate):\n    assert candidate(2) == 2\n    assert candidate(5) == 5\n"},
               "entry_point": "f",
               "instructions": ["logic_3", "logic_4", "logic_7", "doc_1", "style_8"]}
    (res,) = score_batch([fenced(HIDDEN[0][1])], [problem])
    assert (res.exec_status, res.instruction_if) == ("passed", 0.0)
    assert res.reward == pytest.approx(0.6)
    assert all({v.rule for v in o.violations} == {"hidden-code"} for o in res.verdicts)
    assert res.verdicts[0].violations[0].line == 2  # at the exec


# ------------------------------------------------------------------ nothing to run

EMPTY = [
    ("docstring only (issue)", '"""Compute the answer."""\n'),
    ("pass only", "pass\n"),
    ("ellipsis only", "...\n"),
    ("imports only", "import os\nfrom collections import Counter\n"),
    ("a stub with a docstring", 'import os\n\n\ndef f(x: int) -> int:\n    """Return the thing."""\n    ...\n'),
    ("a stub that raises NotImplementedError", "def f(x):\n    raise NotImplementedError\n"),
    ("a class of stubs", "class Solver:\n    def solve(self):\n        pass\n"),
    ("a docstring that says return", '"""This function will return the answer, while it waits."""\n'),
    ("a docstring with an escaped quote", '"""a \\""" b\nreturn x\n"""\n'),
    ("a constant", "42\n"),
    ("a main guard that does nothing", 'import sys\n\nif __name__ == "__main__":\n    pass\n'),
    ("a try of nothing", "try:\n    import numpy\nexcept ImportError:\n    pass\n"),
    ("annotations only", "x: int\ny: str\n"),
    ("a stub with a lambda default", "def f(x, key=lambda v: v):\n    pass\n"),
]


@pytest.mark.parametrize(("label", "code"), EMPTY, ids=[e[0] for e in EMPTY])
def test_an_answer_with_nothing_to_run_has_no_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, code: str
) -> None:
    assert nothing_to_run(code), label
    got = verify_reply(tmp_path, capsys, fenced(code), "style_1", "logic_1", "logic_3", "doc_1", "style_3", "doc_4")
    assert got == {key: ["NO-CODE"] for key in ("style_1", "logic_1", "logic_3", "doc_1", "style_3", "doc_4")}


@pytest.mark.parametrize("code", [
    "def f():\n    return 1\n", "x = 1\n", "print('hi')\n", "@cache\ndef f():\n    pass\n",
    "def f():\n    x = 1\n", "if __name__ == '__main__':\n    main()\n", 'f"{1}"\n',
])
def test_code_that_does_something_has_code(code: str) -> None:
    assert not nothing_to_run(code)


def test_no_code_earns_nothing() -> None:
    """The issue's docstring-only reply earned 0.4; with no code it earns 0, in both
    composites and with IF only."""
    problem = {"test": {"kind": "humaneval", "entry_point": "f",
                        "code": "def check(candidate):\n    assert candidate(1) == 1\n"},
               "entry_point": "f", "instructions": ["style_1", "logic_1", "logic_3", "doc_1", "style_3"]}
    replies = [fenced(code) for _, code in EMPTY[:5]]
    for config in (RewardConfig(), RewardConfig(composite="blend"), RewardConfig(functional=False)):
        res = score_batch(replies, [problem] * len(replies), config)
        assert [r.reward for r in res] == [0.0] * len(replies), config
        assert all(v.violations[0].rule == "NO-CODE" for r in res for v in r.verdicts)


# ------------------------------------------------------------------ the smaller tricks

DECOYS = [
    ("if False (issue)", "import os\n\nif False:\n    os.getcwd()\n", "os"),
    ("while 0", "import sys\n\nwhile 0:\n    sys.exit()\n", "sys"),
    ("alone as a statement", "import json\n\njson\n", "json"),
    ("assigned to _", "import re\n\n_ = re\n", "re"),
    ("a conditional expression on a constant", "import os\n\nx = os if False else None\n", "os"),
    ("False and ...", "import sys\n\nok = False and sys.argv\n", "sys"),
    ("listed in __all__", 'import os\n\n__all__ = ["os"]\n', "os"),
    ("a constant comparison", "import os\n\nif 1 > 2:\n    os.getcwd()\n", "os"),
    ("a lambda assigned to _", "import os\n\n_ = lambda: os.getcwd()\n", "os"),
    ("assert of the name", "import os\n\nassert os\n", "os"),
    ("a private helper nothing calls", "import os\n\n\ndef _unused():\n    return os.getcwd()\n", "os"),
    # the text filter in front of the parse once let these two through unparsed
    ('"" and ... in a function', 'import os\n\n\ndef f():\n    "" and os.getcwd()\n    return 1\n', "os"),
    ("a tuple of names alone", "import os\n\n\ndef f():\n    os, os.path\n    return 1\n", "os"),
    ("a name alone after ;", "import os\n\nx = 1; os\n", "os"),
    ("a name alone after if ...:", "import os\n\nx = 1\nif x: os\n", "os"),
    ("False and ... past a comment", "import os\n\nok = (False  # c\n      and os.getcwd())\n", "os"),
    ("False and ... past a line continuation", "import os\n\nok = False \\\n    and os\n", "os"),
    ("_ = ... after ;", "import os\n\nx = 1; _ = os\n", "os"),
]


@pytest.mark.parametrize(("label", "code", "name"), DECOYS, ids=[d[0] for d in DECOYS])
def test_a_decoy_use_does_not_use_an_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, code: str, name: str
) -> None:
    assert verify_reply(tmp_path, capsys, fenced(code), "logic_1") == {"logic_1": ["F401"]}, label


def test_real_uses_of_imports_are_uses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = ("from typing import TYPE_CHECKING\n\nimport os\nimport sys\n\nif TYPE_CHECKING:\n    from pathlib import Path\n\n\n"
            "def _helper() -> list[str]:\n    return sys.argv\n\n\n"
            "def f(p: Path) -> str:\n    if True:\n        return os.fspath(p) + str(_helper())\n    return ''\n")
    assert verify_reply(tmp_path, capsys, fenced(code), "logic_1") == {"logic_1": []}


@pytest.mark.parametrize("dunder_all", ["__all__ = []", '__all__ = ["other"]', "__all__: list[str] = []"])
def test_dunder_all_does_not_hide_public_functions_from_doc_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dunder_all: str
) -> None:
    code = f'"""Tools."""\n\n{dunder_all}\n\n\ndef task_func(x):\n    return x\n'
    assert verify_reply(tmp_path, capsys, fenced(code), "doc_3") == {"doc_3": ["D103"]}


def test_prose_in_a_string_is_prose_for_doc_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prose = ('def f(x):\n    """Double x."""\n    "Sure! I doubled it with a multiplication."\n    return x * 2\n\n\n'
             '"Here is the code you asked for; it runs in O(1)."\n')
    assert verify_reply(tmp_path, capsys, prose, "doc_4") == {"doc_4": ["prose-string", "prose-string"]}
    honest = '"""Doubling."""\n\n\ndef f(x):\n    """Double x."""\n    return x * 2\n'
    assert verify_reply(tmp_path, capsys, honest, "doc_4") == {"doc_4": []}
    note = 'NOTE = "Sure! Here is the code you asked for."\n\n\ndef f(x):\n    return x * 2\n'
    assert verify_reply(tmp_path, capsys, note, "doc_4") == {"doc_4": ["prose-string"]}
    used = 'MESSAGE = "Enter a number, please."\n\n\ndef f():\n    return input(MESSAGE)\n'
    assert verify_reply(tmp_path, capsys, used, "doc_4") == {"doc_4": []}
    in_if = 'def f(x):\n    """Double x."""\n    if x:\n        """Sure, this doubles it."""\n    return x * 2\n'
    assert verify_reply(tmp_path, capsys, in_if, "doc_4") == {"doc_4": ["prose-string"]}
    after_docstring = 'def f(x):\n    """Double x.\n\n    More.\n    """\n    """And here is my chat."""\n    return x\n'
    assert verify_reply(tmp_path, capsys, after_docstring, "doc_4") == {"doc_4": ["prose-string"]}


@pytest.mark.parametrize(("block", "ok"), [
    ("{}", False), ("[]", False), ("null", False), ('""', False), ('{"": ""}', False), ("[1, 2]", False),
    ('"it adds"', False), ('{"summary": "adds two numbers"}', True), ('{"steps": []}', True),
    ('["adds two numbers"]', True),
])
def test_an_empty_or_keyless_json_block_explains_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], block: str, ok: bool
) -> None:
    reply = f"```python\ndef add(a, b):\n    return a + b\n```\n\n```json\n{block}\n```\n"
    assert verify_reply(tmp_path, capsys, reply, "doc_6") == {"doc_6": [] if ok else ["empty-json"]}


def test_the_smaller_tricks_through_the_reward() -> None:
    problem = {"test": {"kind": "humaneval", "entry_point": "add",
                        "code": "def check(candidate):\n    assert candidate(2, 3) == 5\n"},
               "entry_point": "add", "instructions": ["logic_1", "doc_6"]}
    gamed = ("```python\nimport os\n\n\ndef add(a, b):\n    if False:\n        os.getcwd()\n    return a + b\n```\n\n"
             "```json\n{}\n```\n")
    honest = '```python\ndef add(a, b):\n    return a + b\n```\n\n```json\n{"summary": "adds"}\n```\n'
    bad, good = score_batch([gamed, honest], [problem, problem])
    assert [[v.rule for v in o.violations] for o in bad.verdicts] == [["F401"], ["empty-json"]]
    assert [bad.reward, good.reward] == pytest.approx([0.6, 1.0])


# ------------------------------------------------------------------ the gate

def test_find_suppressions_reads_every_form_with_its_reason() -> None:
    src = ("import os  # noqa: F401  # re-exported for the plugin API\n"
           "# ruff: noqa: E501\n"
           "x = 1  # ruff: ignore[E741]\n"
           "# ruff: disable[N803] legacy names\n"
           "y = 2\n"
           "# ruff: enable[N803]\n"
           "s = '# noqa'\n")
    got = [(s.line, s.scope, s.codes, s.reason, s.end) for s in find_suppressions(src)]
    assert got == [
        (1, "line", ("F401",), "re-exported for the plugin API", 0),
        (2, "file", ("E501",), None, 0),
        (3, "line", ("E741",), None, 0),
        (4, "block", ("N803",), "legacy names", 6),
    ]


def test_gate_suppressions_setting_is_checked() -> None:
    assert parse_gate_table({"instructions": ["style_3"]}).suppressions == "forbid"
    assert parse_gate_table({"instructions": ["style_3"], "suppressions": "with-reason"}).suppressions == "with-reason"
    with pytest.raises(GateConfigError, match="suppressions must be one of 'forbid', 'with-reason', got 'yes'"):
        parse_gate_table({"instructions": ["style_3"], "suppressions": "yes"})


GATE_BASE = "def old() -> int:\n    return 1\n"
GATE_NEW = GATE_BASE + (
    f'\n\nURL = "{LONG}"  # noqa: E501\n'  # line 5: no reason
    f'DOC = "{LONG}"  # noqa: E501  # a URL that cannot be split\n'  # line 6: a reason
    "import os  # noqa\n"  # line 7: blanket, hides F401 from logic_1 and E501 from style_3
    "exec(\"print('hi')\")\n"  # line 8: hidden code
)


@pytest.fixture
def gate_repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_BASE_REF"):
        monkeypatch.delenv(var, raising=False)
    root = pytester.path
    init_repo(root, {"pyproject.toml": '[tool.vibecheck.gate]\ninstructions = ["style_3", "logic_1"]\n',
                     ".gitignore": ".pytest_cache/\n__pycache__/\n", "mod.py": GATE_BASE})
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"mod.py": GATE_NEW})
    commit_all(root)
    return root


def test_gate_reports_added_suppressions_and_hidden_code(pytester: pytest.Pytester, gate_repo: Path) -> None:
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    for line in (
        "  mod.py:5:80: E501 Line too long (98 > 79)",
        "  mod.py:5:101: suppression `# noqa: E501` hides E501 from style_3; suppressions are not allowed: "
        '[tool.vibecheck.gate] suppressions = "forbid"',
        "  mod.py:6:80: E501 Line too long (98 > 79)",
        "  mod.py:7:12: suppression `# noqa` hides every rule from style_3; *",
        "  mod.py:7:8: F401 `os` imported but unused",
        "  mod.py:7:12: suppression `# noqa` hides every rule from logic_1; *",
        "  mod.py:8:1: hidden-code runs code held in a string (exec): *",
    ):
        result.stdout.fnmatch_lines([line])
    assert "mod.py:6:101: suppression" in out  # forbid: even a suppression with a reason


def test_gate_allows_suppressions_with_a_reason_when_the_team_says_so(
    pytester: pytest.Pytester, gate_repo: Path
) -> None:
    write(gate_repo, {"pyproject.toml": '[tool.vibecheck.gate]\ninstructions = ["style_3"]\n'
                                        'suppressions = "with-reason"\n',
                      "mod.py": GATE_NEW.replace("exec(\"print('hi')\")\n", "")})
    commit_all(gate_repo)
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "mod.py:5:80: E501" in out and "mod.py:5:101: suppression `# noqa: E501` hides E501 from style_3; it gives no reason" in out
    assert "mod.py:6:" not in out  # the reasoned suppression excuses its line
    assert "mod.py:7:12: suppression `# noqa` hides every rule from style_3; it gives no reason" in out


@pytest.mark.parametrize(("label", "code"), EMPTY[:5], ids=[e[0] for e in EMPTY[:5]])
def test_the_plugin_counts_an_answer_with_nothing_to_run_as_no_code(label: str, code: str) -> None:
    """The plugin's runner asks ``has_no_code`` of each reply's extraction before it runs tests
    or verifiers (a no-code item fails every instruction)."""
    from pytest_vibecheck.plugin.run.record import has_no_code, no_code_reason
    from pytest_vibecheck.verify.extract import extract_code

    extraction = extract_code(fenced(code))
    assert has_no_code(extraction) and no_code_reason(extraction) == "empty"
    assert not has_no_code(extract_code(fenced("def f():\n    return 1\n")))


def test_gate_reports_decoy_uses_and_public_names_hidden_by_dunder_all(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The smaller tricks on an agent's changed lines: an import used only in dead code is
    unused (logic_1), and ``__all__ = []`` does not hide a public function from the docstring
    rules (doc_3)."""
    for var in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_BASE_REF"):
        monkeypatch.delenv(var, raising=False)
    root = pytester.path
    init_repo(root, {"pyproject.toml": '[tool.vibecheck.gate]\ninstructions = ["logic_1", "doc_3"]\n',
                     ".gitignore": ".pytest_cache/\n__pycache__/\n",
                     "mod.py": '"""Tools."""\n'})
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"mod.py": '"""Tools."""\n\nimport json\n\n__all__ = []\n\n\n'
                           'def api(x):\n    return x\n\n\nif False:\n    json.dumps(1)\n'})
    commit_all(root)
    result = pytester.runpytest("--vibe-gate", "--vibe-base", "main", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["  mod.py:3:8: F401 `json` imported but used only in code that never runs or does "
                                 "nothing (a decoy use)"])
    result.stdout.fnmatch_lines(["  mod.py:8:5: D103 Missing docstring in public function*"])
