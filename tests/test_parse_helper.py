"""The parse helper (a second process for the no-code rule's parses) answers exactly as this
process would, stays in step across batches, cancels, survives being killed, and the
rewards are the same with and without it; the no-code rule skips the parse only where the
parser cannot give up."""

from __future__ import annotations

import inspect
import os
import signal
import sys
from pathlib import Path

import pytest

from pytest_vibecheck.reward import RewardConfig, RewardScorer
from pytest_vibecheck.verify import parse_helper
from pytest_vibecheck.verify.extract import extract_code, parse_quietly
from pytest_vibecheck.verify.nocode import (
    PARSER_GIVES_UP_AT,
    code_status,
    no_code_reason,
    parse_free_length,
)
from pytest_vibecheck.verify.parse_helper import ParseHelper

TEXTS: list[tuple[str, bool]] = [
    ("def f():\n    return 1\n", True),  # code
    ("Sorry, I cannot help with that.\n", True),  # prose: does not parse
    ("Sorry\n", True),  # prose: a bare name
    ("'just a string'\n42\n", True),  # prose: bare constants
    ("def broken(:\n", True),  # whole reply that does not parse: prose
    ("def broken(:\n", False),  # a fenced block with a syntax error still has code
    ("x = 'caf\u00e9 \ud800'\n", True),  # a lone surrogate travels (surrogatepass); not Python
    ("import os\nprint(os.getcwd())\n", True),
    ("\0x = 1\n", True),  # NUL byte: ValueError, prose
]


def _expected(texts: list[tuple[str, bool]]) -> list[tuple[str | None, bool]]:
    return [code_status(t, w, parse_quietly) for t, w in texts]


def _here(text: str, whole: bool) -> tuple[str | None, bool]:
    return code_status(text, whole, parse_quietly)


def test_answers_equal_this_process_and_batches_stay_in_step() -> None:
    helper = ParseHelper()
    try:
        texts = TEXTS * 10
        for _ in range(3):  # the same helper, batch after batch
            pending = helper.submit(texts)
            assert pending is not None
            for _spin in range(200):  # let the helper answer everything itself
                pending._read(0.05)
                if pending._ended:
                    break
            assert pending.settle(lambda _t, _w: ("parsed here", False)) == _expected(texts)
        assert _expected(TEXTS) == [(None, True), ("prose", False), ("prose", True), ("prose", True),
                                    ("prose", False), (None, False), ("prose", False), (None, True),
                                    ("prose", False)]
    finally:
        helper.close()


def test_work_is_shared_from_both_ends_and_a_cancelled_batch_leaves_the_helper_usable() -> None:
    """Settled at once, this process parses from the back while the helper parses from the
    front; the answers are the same either way, and the next batch is answered in full."""
    helper = ParseHelper()
    here: list[str] = []

    def parse_here(text: str, whole: bool) -> tuple[str | None, bool]:
        here.append(text)
        return code_status(text, whole, parse_quietly)

    try:
        texts = [(f"def f{i}():\n    return {i}\n" * 20, True) for i in range(400)]
        pending = helper.submit(texts)
        assert pending is not None
        assert pending.settle(parse_here) == [(None, True)] * 400
        assert 0 < len(here) <= 400  # this process took texts from the back
        assert set(here) == {t for t, _w in texts[400 - len(here):]}
        again = helper.submit(TEXTS)  # the cancel and the end marker kept the protocol in step
        assert again is not None
        for _spin in range(200):
            again._read(0.05)
            if again._ended:
                break
        assert again.settle(lambda _t, _w: ("parsed here", False)) == _expected(TEXTS)
    finally:
        helper.close()


def test_one_batch_at_a_time() -> None:
    helper = ParseHelper()
    try:
        first = helper.submit(TEXTS)
        assert first is not None
        assert helper.submit(TEXTS) is None
        first.settle(_here)
        second = helper.submit(TEXTS)
        assert second is not None
        assert second.settle(_here) == _expected(TEXTS)
    finally:
        helper.close()


def test_a_closed_batch_is_settled_here_without_reading_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller that gave up (close) and settles anyway parses everything itself: by then the
    helper may be answering another batch."""
    helper = ParseHelper()
    try:
        pending = helper.submit(TEXTS)
        assert pending is not None
        pending.close()

        def no_read(timeout: float) -> bool:
            raise AssertionError("read the helper after close")

        monkeypatch.setattr(pending, "_read", no_read)
        assert pending.settle(_here) == _expected(TEXTS)
    finally:
        helper.close()


def test_a_killed_helper_costs_only_speed_and_is_replaced() -> None:
    helper = ParseHelper()
    try:
        pending = helper.submit(TEXTS * 20)
        assert pending is not None and helper._proc is not None
        os.kill(helper._proc.pid, signal.SIGKILL)
        helper._proc.wait()
        assert pending.settle(_here) == _expected(TEXTS * 20)
        assert helper._proc is None  # marked broken, stopped
        again = helper.submit(TEXTS)  # a new helper
        assert again is not None
        assert again.settle(_here) == _expected(TEXTS)
    finally:
        helper.close()


def test_a_helper_that_cannot_start_falls_back(tmp_path: Path) -> None:
    helper = ParseHelper(python=str(tmp_path / "no-such-python"))
    assert helper.submit(TEXTS) is None
    assert helper.submit(TEXTS) is None  # and it does not block


def test_the_helper_gets_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-for-test")
    helper = ParseHelper()
    try:
        pending = helper.submit(TEXTS)
        assert pending is not None and helper._proc is not None
        environ = Path(f"/proc/{helper._proc.pid}/environ").read_bytes()
        pending.settle(_here)
        assert b"sk-secret-for-test" not in environ and b"OPENAI_API_KEY" not in environ
    finally:
        helper.close()


def test_rewards_are_the_same_with_and_without_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """80 whole replies (code, prose, bare names, syntax errors) with instructions that do not
    parse the code themselves: the helper takes their parses, and every result equals the
    run without it."""
    kinds = ["def f():\n    return {i}\n", "Sorry, answer {i} is not here.\n", "Sorry{i}\n",
             "'just {i}'\n{i}\n", "def broken{i}(:\n", "import os\nprint(os.getcwd(), {i})\n"]
    replies = [kind.format(i=i) for i in range(14) for kind in kinds]  # 84 distinct replies
    problem = {
        "test": {"kind": "humaneval", "code": "def check(candidate):\n    assert candidate() == 1\n",
                 "entry_point": "f"},
        "entry_point": "f",
        "instructions": ["style_1", {"id": "logic_3", "params": {"max_branches": 2}}, "doc_4"],
    }
    problems = [problem] * len(replies)
    cfg = RewardConfig(functional=False)
    used: list[int] = []
    real_submit = ParseHelper.submit

    def counting_submit(self: ParseHelper, texts: list[tuple[str, bool]]) -> parse_helper.Pending | None:
        used.append(len(texts))
        return real_submit(self, texts)

    monkeypatch.setattr(ParseHelper, "submit", counting_submit)
    with_helper = [r.to_dict() for r in RewardScorer(cfg).score(replies, problems)]
    assert used and used[0] >= parse_helper.MIN_BATCH
    monkeypatch.setattr(ParseHelper, "submit", lambda self, texts: None)
    without = [r.to_dict() for r in RewardScorer(cfg).score(replies, problems)]
    assert with_helper == without
    no_code = [r["verdicts"][0]["violations"][:1] == [{"rule": "NO-CODE", "line": 1, "column": 1,
                                                         "message": "the reply contains no code"}]
               for r in with_helper[:6]]
    assert no_code == [False, True, True, True, True, False]
    assert [r["reward"] for r in with_helper[:6]] == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_shared_helper_belongs_to_one_process() -> None:
    first = parse_helper.shared_helper()
    assert parse_helper.shared_helper() is first
    pid = os.fork()
    if pid == 0:  # the child must get its own helper
        os._exit(0 if parse_helper.shared_helper() is not first else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_texts_the_helper_parsed_need_no_parse_for_doc_4(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_vibecheck.verify import checks, extract

    text = "def known_to_the_test():\n    return 1\n"
    assert not extract.known_to_parse(text)
    extract.note_parses([text])
    assert extract.known_to_parse(text)

    def no_parse(code: str) -> object:
        raise AssertionError("parsed again")

    monkeypatch.setattr(checks, "_parse", no_parse)
    assert checks.pure_code_reply("\n" + text.rstrip("\n") + "  \n") == []  # stripped + newline
    with pytest.raises(AssertionError, match="parsed again"):
        checks.pure_code_reply("def other():\n    return 2\n")


def test_known_texts_are_bounded() -> None:
    from pytest_vibecheck.verify import extract

    extract.note_parses(f"x{i} = {i}\n" for i in range(9000))
    assert len(extract._KNOWN) <= 8192
    assert extract.known_to_parse("x8999 = 8999\n") and not extract.known_to_parse("x0 = 0\n")


# ----------------------------------------------------------------------------- no-code rule


def test_short_fenced_code_needs_no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_vibecheck.verify import nocode

    calls: list[str] = []

    def counting(code: str, whole: bool, parse: object = None) -> str | None:
        calls.append(code)
        return None

    monkeypatch.setattr(nocode, "code_reason", counting)
    fenced = extract_code("```python\ndef f(:\n```\n")
    assert no_code_reason(fenced) is None and calls == []
    whole = extract_code("def f():\n    return 1\n")
    assert no_code_reason(whole) is None and len(calls) == 1  # a whole reply is parsed
    long_fenced = extract_code("```python\nx = " + "-" * 3000 + "1\n```\n")
    assert no_code_reason(long_fenced) is None and len(calls) == 2  # long: parsed


def test_the_parse_free_length_is_safe_here() -> None:
    """The densest nesting (one unary operator per level) one character shorter than the
    parse-free length parses on this interpreter; a deep stack or a low recursion limit
    lowers the length."""
    n = parse_free_length()
    assert 0 < n <= min(2_000, PARSER_GIVES_UP_AT)
    parse_quietly("-" * (n - 2) + "1")
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(len(_frames()) + 60)
        assert parse_free_length() <= 120
    finally:
        sys.setrecursionlimit(old)


def _frames() -> list[inspect.FrameInfo]:
    return inspect.stack(0)


def test_the_helper_reports_its_cpu_time() -> None:
    helper = ParseHelper()
    try:
        assert helper.cpu_seconds() is None  # not started
        pending = helper.submit([(f"def f{i}():\n    return {i}\n" * 30, True) for i in range(300)])
        assert pending is not None
        for _spin in range(400):
            pending._read(0.05)
            if pending._ended:
                break
        pending.settle(_here)
        used = helper.cpu_seconds()
        assert used is not None and 0.0 < used < 60.0
    finally:
        helper.close()
    assert helper.cpu_seconds() is None
