"""The cheaper verification path gives the results of the plain one: Ruff's concise output
read like its JSON, doc_5's comments found without tokenize like tokenize finds them, built-in
checks run while Ruff lints, the shared parse, the paused garbage collector, and IF-only
rewards of a real batch equal to one verification at a time."""

from __future__ import annotations

import ast
import atexit
import gc
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ruff_helpers import wrapped_ruff

from pytest_vibecheck import _gc
from pytest_vibecheck.plugin.run.record import has_no_code
from pytest_vibecheck.reward import RewardConfig, score_batch
from pytest_vibecheck.suites.store import load_suite
from pytest_vibecheck.verify import checks
from pytest_vibecheck.verify.api import BatchVerification, VerifyItem, verify, verify_batch
from pytest_vibecheck.verify.extract import extract_code, parse_shared
from pytest_vibecheck.verify.instructions import default_registry
from pytest_vibecheck.verify.ruff_engine import RuffEngine, _parse_concise

REPO = Path(__file__).resolve().parent.parent
REPLIES = REPO / "replays" / "qwen2.5-coder-7b-instruct" / "replies.jsonl.gz"


def _replies(n: int) -> list[tuple[str, str]]:
    with gzip.open(REPLIES, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    return [(str(r["task_id"]), str(r["reply"])) for r in rows[:n]]


# ----------------------------------------------------------------------------- Ruff output


def test_concise_lines_parse_like_the_json_fields() -> None:
    out = (
        "c00000/s0000001_0.py:3:89: E501 Line too long (95 > 88)\n"
        "c00000/s0000001_0.py:1:8: F401 [*] `os` imported but unused\n"
        "c00001/s0000002_1.py:6:10: invalid-syntax: Expected an expression\n"
    )
    assert _parse_concise(out) == [
        ("c00000/s0000001_0.py", 3, 89, "E501", "Line too long (95 > 88)"),
        ("c00000/s0000001_0.py", 1, 8, "F401", "`os` imported but unused"),
        ("c00001/s0000002_1.py", 6, 10, None, "Expected an expression"),
    ]
    # a message with a newline continues on the next line; other output is not understood
    assert _parse_concise("a.py:1:1: E501 one\ntwo\n") == [("a.py", 1, 1, "E501", "one\ntwo")]
    assert _parse_concise("error: something else\n") is None
    assert _parse_concise("") == []


FAKE_RUFF_NO_CONCISE = """#!{python}
import os, sys
real = {real!r}
if "--output-format=concise" in sys.argv:
    print("Ruff printed something this engine does not read")
    sys.exit(1)
os.execv(real, [real] + sys.argv[1:])
"""


def test_unreadable_concise_output_is_asked_again_in_json(tmp_path: Path) -> None:
    fake = wrapped_ruff(tmp_path, FAKE_RUFF_NO_CONCISE)
    items = [VerifyItem([("style_1", {}), ("logic_1", {})], code="import os\nx = 1 \n")]
    assert verify_batch(items, engine=RuffEngine(fake)) == verify_batch(items)
    [[style, logic]] = verify_batch(items, engine=RuffEngine(fake))
    assert [x.rule for x in style.violations] == ["W291"]
    assert [(x.rule, x.line, x.column) for x in logic.violations] == [("F401", 1, 8)]


# ----------------------------------------------------------------------------- doc_5


TRICKY = [
    'x = 1  # a comment\n',
    's = "#not"  # but this\n',
    's = """\n# inside a docstring\n"""  # after it\n',
    'x = ("a"  # between parts\n     "b#c")\n',
    "d = {'#': 1}\nb = b'#'  # bytes first\n",
    'x = "é#ü"  # ünïcode\ny = 2\n',
    'f = f"{1:#x}"\n',
    'def g():\n    """Doc # hash."""\n    return 1  # tail\n',
    '#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nx = 1\n',
    'x = 1 \\\n    + 2  # after a continuation\n',
    "s = 'a\\\n#b'\n",
    # a def's line is not its decorators': the literal on the decorator line must be seen
    '@app.route("/#anchor")\ndef g():\n    return 1\n',
    'x = 1  # c\n@dec("#")\nclass A:\n    y = "#"  # real\n',
    'def f():\n    return 1\n\n\n@d(\n    "#",\n)\nasync def h():\n    pass  # end\n',
]


@pytest.mark.parametrize("code", TRICKY)
def test_comments_from_the_tree_are_tokenize_comments(code: str) -> None:
    found = checks._comments_from_tree(code, ast.parse(code))
    assert found is None or found == checks._comments_tokenize(code)
    assert [v for v in checks.no_comments_or_docstrings(code) if v.rule == "comment"] == [
        checks._comment_violation(c) for c in checks._comments_tokenize(code)
    ]


def test_comments_on_real_source_files() -> None:
    """On the verify and reward modules and 40 small modules of the standard library (of
    whatever Python runs the tests) the tree-based answer, where it decides, is tokenize's,
    and it decides for most files."""
    stdlib = [p for p in sorted(Path(os.__file__).parent.glob("*.py")) if p.stat().st_size < 12_000][:40]
    ours = [REPO / "pytest_vibecheck" / sub for sub in ("verify", "reward")]
    files = [p for folder in ours for p in sorted(folder.glob("*.py"))] + stdlib
    decided = 0
    for path in files:
        code = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            continue
        found = checks._comments_from_tree(code, tree)
        if found is not None:
            decided += 1
            assert found == checks._comments_tokenize(code), path
    assert decided > 0.8 * len(files)


def test_doc5_docstrings_at_any_depth() -> None:
    code = (
        '"""Module."""\n'
        "class A:\n"
        "    'Class.'\n"
        "    def f(self):\n"
        "        if True:\n"
        "            def g():\n"
        "                '''Nested.'''\n"
        "        try:\n"
        "            pass\n"
        "        except ValueError:\n"
        "            class B:\n"
        "                \"Deep.\"\n"
        "f = lambda: 'not a docstring'\n"
    )
    assert [(v.rule, v.line, v.column) for v in checks.no_comments_or_docstrings(code)] == [
        ("docstring", 1, 1), ("docstring", 3, 5), ("docstring", 7, 17), ("docstring", 12, 17)]


# ----------------------------------------------------------------------------- the batch


def test_checks_run_while_ruff_lints_and_give_the_same_verdicts() -> None:
    items = [
        VerifyItem([("doc_5", {}), ("style_1", {}), ("library_2", {})], code="df = 1  # c\n"),
        VerifyItem([("doc_5", {}), ("logic_1", {})], code="def f(:\n    pass\n"),
        VerifyItem([("doc_4", {}), ("style_5", {})], reply="Sure:\n```python\nx = 'a'\n```\n"),
    ]
    plain = verify_batch(items)
    with BatchVerification(items) as batch:
        batch.check_item(2)
        batch.check_item(0)
        early = batch.finish()
    assert early == plain
    assert [[v.passed for v in row] for row in plain] == [[False, True, False], [False, False], [False, False]]
    with BatchVerification(items) as batch:
        batch.drop(1)
        rows = batch.finish()
    assert rows[1] == [] and rows[0] == plain[0] and rows[2] == plain[2]


def test_an_abandoned_batch_leaves_no_process_and_no_files(tmp_path: Path) -> None:
    engine = RuffEngine(temp_base=tmp_path)
    with BatchVerification([VerifyItem([("style_1", {})], code="x = 1\n")], engine=engine):
        assert len(list(tmp_path.iterdir())) == 1  # the tree, Ruff at work on it
    assert list(tmp_path.iterdir()) == []
    verify_batch([VerifyItem([("style_1", {}), ("style_3", {})], code="x = 1\n")], engine=engine)
    assert list(tmp_path.iterdir()) == []


def test_parse_shared_gives_one_tree_and_fresh_errors() -> None:
    code = "def shared_parse_probe():\n    return 1\n"
    assert parse_shared(code) is parse_shared(code)
    errors = []
    for _ in range(2):
        with pytest.raises(SyntaxError) as info:
            parse_shared("def broken(:\n")
        errors.append(info.value)
    assert errors[0] is not errors[1]
    assert (errors[1].lineno, errors[1].offset) == (1, 12)


def test_freeze_at_exit_freezes_only_at_exit_and_registers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The objects are frozen when the interpreter exits (an earlier-registered handler, run
    after it, sees them frozen), not before; two calls register one handler."""
    probe = (  # Python 3.12 starts with some objects frozen already: compare with the start
        "import atexit, gc\n"
        "from pytest_vibecheck import _gc\n"
        "start = gc.get_freeze_count()\n"
        "atexit.register(lambda: print('AT EXIT', gc.get_freeze_count() > start + 100, flush=True))\n"
        "_gc.freeze_at_exit()\n"
        "_gc.freeze_at_exit()\n"
        "print('BEFORE', gc.get_freeze_count() == start, flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["BEFORE True", "AT EXIT True"]
    calls: list[object] = []
    monkeypatch.setattr(_gc, "_freeze_registered", False)
    monkeypatch.setattr(atexit, "register", calls.append)
    _gc.freeze_at_exit()
    _gc.freeze_at_exit()
    assert calls == [gc.freeze]


def test_gc_paused_nests_and_keeps_a_disabled_collector_disabled() -> None:
    assert gc.isenabled()
    with _gc.paused():
        assert not gc.isenabled()
        with _gc.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with _gc.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


# ----------------------------------------------------------------------------- rewards


def test_if_only_rewards_equal_one_verification_at_a_time() -> None:
    """30 real Qwen2.5-Coder-7B replies with their BigVibeBench instructions (doc_4, doc_5,
    doc_6 and library_2 among them): the batched IF-only reward equals the verdicts of one
    ``verify`` call (one Ruff process) per (reply, instruction)."""
    suite = {p.task_id: p for p in load_suite("bigvibebench").problems}
    replies = _replies(30)
    problems = [suite[t] for t, _r in replies]
    results = score_batch([r for _t, r in replies], problems, RewardConfig(functional=False))
    reg = default_registry()
    judged = 0
    for (_t, reply), prob, res in zip(replies, problems, results, strict=True):
        ex = extract_code(reply, "first", prob.entry_point)
        if has_no_code(ex):
            assert {v.violations[0].rule for v in res.verdicts} == {"NO-CODE"}
            continue
        expected = []
        for ref in prob.instructions:
            if reg.get(ref.id).verifier.target == "reply":
                v = verify(reply, ref.id, ref.params, is_reply=True, entry_point=prob.entry_point)
            else:
                v = verify(ex.code, ref.id, ref.params)
            expected.append((v.instruction, v.passed, v.error, v.violations))
            judged += 1
        assert [(o.id, o.passed, o.error, o.violations) for o in res.verdicts] == expected
        assert res.reward == pytest.approx(sum(bool(x[1]) for x in expected) / len(expected))
    assert judged >= 140


def test_verify_batch_works_with_descriptors_above_fd_setsize() -> None:
    """A run with many sandboxes, pipes and SQLite files open has descriptors above 1024;
    select() refuses those ("filedescriptor out of range in select()"), which once turned 83
    items of a full BigVibeBench run into verifier errors. Ruff's exit is waited for with
    poll()."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard descriptor limit ({hard}) is below 1200")
    if soft != resource.RLIM_INFINITY and soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    held: list[int] = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        code = "import os\n\n\ndef f(p):\n    return open(os.path.join(p, 'x'))\n"
        [verdicts] = verify_batch([VerifyItem([("library_1", {})], code=code)])
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [(v.instruction, v.passed, v.error) for v in verdicts] == [("library_1", False, None)]
