"""Code extraction (issue 2, item 8): every case with the exact expected code and method."""

from __future__ import annotations

import pytest

from pytest_vibecheck.verify.extract import METHODS, Extraction, extract_code

CODE = "def f(x):\n    return x + 1\n"


@pytest.mark.parametrize("tag", ["python", "py", "python3", "", "Python", "PYTHON", "{.python}"])
def test_language_tags(tag: str) -> None:
    reply = f"Here you go:\n\n```{tag}\ndef f(x):\n    return x + 1\n```\n\nDone."
    assert extract_code(reply) == Extraction(CODE, "fenced-first", (CODE,))


def test_tilde_fence_and_longer_backtick_fence() -> None:
    assert extract_code("~~~python\nx = 1\n~~~\n") == Extraction(
        "x = 1\n", "fenced-first", ("x = 1\n",)
    )
    # a four-backtick fence is not closed by three backticks
    reply = "````python\ns = '''\n```\n'''\n````\n"
    assert extract_code(reply).code == "s = '''\n```\n'''\n"


def test_crlf_line_endings() -> None:
    reply = "Sure.\r\n```python\r\ndef f(x):\r\n    return x + 1\r\n```\r\n"
    result = extract_code(reply)
    assert result.code == CODE
    assert "\r" not in result.code
    assert result.method == "fenced-first"


def test_lone_cr_line_endings() -> None:
    assert extract_code("```python\rx = 1\ry = 2\r```").code == "x = 1\ny = 2\n"


def test_think_block_removed_first() -> None:
    reply = (
        "<think>I could write\n```python\ndef draft():\n    pass\n```\nbut no.</think>\n"
        "```python\ndef f(x):\n    return x + 1\n```"
    )
    assert extract_code(reply) == Extraction(CODE, "fenced-first", (CODE,))


def test_think_upper_case_and_thinking_tag() -> None:
    reply = "<THINK>hmm</THINK><thinking>```x = 0```</thinking>```python\nx = 1\n```"
    assert extract_code(reply).code == "x = 1\n"


def test_unopened_think_close_drops_everything_before_it() -> None:
    # the chat template opened <think> in the prompt; the reply starts inside it
    reply = "Let me try\n```python\nx = 0\n```\n</think>\n\n```python\nx = 1\n```\n"
    assert extract_code(reply) == Extraction("x = 1\n", "fenced-first", ("x = 1\n",))


def test_unclosed_think_at_start_is_none() -> None:
    assert extract_code("<think>\nI will write\n```python\nx = 0\n") == Extraction("", "none", ())


def test_only_think_block_is_none() -> None:
    assert extract_code("<think>all reasoning, no answer</think>\n  \n") == Extraction(
        "", "none", ()
    )


@pytest.mark.parametrize("reply", ["", "   \n\n", "\r\n"])
def test_empty_reply_is_none(reply: str) -> None:
    assert extract_code(reply) == Extraction("", "none", ())


def test_unterminated_final_fence() -> None:
    reply = "Here:\n```python\ndef f(x):\n    return x + 1\n    # cut off by the token"
    result = extract_code(reply)
    assert result == Extraction(
        CODE + "    # cut off by the token\n",
        "unterminated-fence",
        (CODE + "    # cut off by the token\n",),
    )


def test_unterminated_fence_after_complete_block_first_mode_takes_first() -> None:
    reply = "```python\nx = 1\n```\nand\n```python\ny = 2"
    assert extract_code(reply) == Extraction("x = 1\n", "fenced-first", ("x = 1\n", "y = 2\n"))


def test_stray_closing_fence() -> None:
    reply = "def f(x):\n    return x + 1\n```\n"
    assert extract_code(reply) == Extraction(CODE, "stray-closing-fence", ())


def test_stray_closing_fence_followed_by_prose_and_block() -> None:
    reply = "import os\n\nprint(os.sep)\n```\n\nExample:\n```python\nprint(1)\n```\n"
    result = extract_code(reply)
    assert result == Extraction(
        "import os\n\nprint(os.sep)\n", "stray-closing-fence", ("print(1)\n",)
    )


def test_prose_then_unterminated_bare_fence_is_not_stray() -> None:
    reply = "Sure! Here is the code:\n```\nx = 1\n"
    assert extract_code(reply) == Extraction("x = 1\n", "unterminated-fence", ("x = 1\n",))


def test_language_tag_that_is_code() -> None:
    reply = "```def f(x):\n    return x + 1\n```"
    assert extract_code(reply) == Extraction(CODE, "fenced-first", (CODE,))


@pytest.mark.parametrize(
    ("first_line", "rest"),
    [
        ("import math", "print(math.pi)\n"),
        ("from os import sep", "print(sep)\n"),
        ("print('hi')", "x = 1\n"),
        ("x = 1", "y = 2\n"),
        ("total += 1", "y = 2\n"),
        ("@decorator", "def g():\n    pass\n"),
        ("class A:", "    pass\n"),
    ],
)
def test_tag_is_code_variants(first_line: str, rest: str) -> None:
    reply = f"```{first_line}\n{rest}```\n"
    assert extract_code(reply).code == f"{first_line}\n{rest}"


@pytest.mark.parametrize("tag", ["python", "python:main.py", 'python title="a.py"', "text"])
def test_real_tags_are_not_code(tag: str) -> None:
    assert extract_code(f"```{tag}\nx = 1\n```").code == "x = 1\n"


def test_closing_fence_glued_to_last_code_line() -> None:
    reply = "```python\ndef f(x):\n    return x + 1```\nThat's it."
    assert extract_code(reply) == Extraction(CODE, "fenced-first", (CODE,))


def test_no_fence_whole_reply() -> None:
    assert extract_code("def f(x):\n    return x + 1") == Extraction(CODE, "whole-reply", ())


def test_only_blank_blocks_fall_back_to_whole_reply() -> None:
    assert extract_code("```python\n\n```") == Extraction(
        "```python\n\n```\n", "whole-reply", ("",)
    )


def test_first_non_empty_block_skips_blank_ones() -> None:
    reply = "```\n   \n```\n```py\nx = 1\n```\n"
    assert extract_code(reply) == Extraction("x = 1\n", "fenced-first", ("", "x = 1\n"))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("x = 1", "x = 1\n"),  # no final newline: one is added (no W292)
        ("x = 1\n\n\n", "x = 1\n"),  # trailing blank lines removed (no W391)
        ("\n\nx = 1\n", "x = 1\n"),  # leading blank lines removed
        ("x = 1   \n  \n", "x = 1   \n"),  # trailing spaces on a code line are the model's (W291)
    ],
)
def test_final_newline_normalised(body: str, expected: str) -> None:
    assert extract_code(f"```python\n{body}```").code == expected
    assert extract_code(body).code == expected


def test_indented_fence_in_list_item_is_dedented() -> None:
    reply = "1. Code:\n   ```python\n   def f(x):\n       return x + 1\n   ```\n"
    assert extract_code(reply).code == CODE


TWO = (
    "A draft:\n```python\ndef helper():\n    return 0\n```\n"
    "The solution:\n```python\ndef solve(n):\n    return n\n```\n"
    "Usage:\n```python\nprint(solve(3))\nprint(solve(4))\nprint(solve(5))\n```\n"
)


def test_best_picks_block_defining_entry_point() -> None:
    result = extract_code(TWO, mode="best", entry_point="solve")
    assert result.code == "def solve(n):\n    return n\n"
    assert result.method == "fenced-best-entry-point"
    assert len(result.blocks) == 3
    # default mode: the paper's first block
    assert extract_code(TWO).code == "def helper():\n    return 0\n"


def test_best_entry_point_via_regex_when_block_does_not_parse() -> None:
    reply = "```python\nx = 1\n```\n```python\nclass Solver:\n    def run(self\n```\n"
    result = extract_code(reply, mode="best", entry_point="Solver")
    assert result == Extraction(
        "class Solver:\n    def run(self\n",
        "fenced-best-entry-point",
        ("x = 1\n", "class Solver:\n    def run(self\n"),
    )


def test_best_longest_python_block_without_entry_point() -> None:
    result = extract_code(TWO, mode="best")
    assert result.code == "print(solve(3))\nprint(solve(4))\nprint(solve(5))\n"
    assert result.method == "fenced-best-longest"


def test_best_prefers_python_tag_and_parsing_blocks() -> None:
    reply = (
        "```bash\npip install numpy scipy pandas matplotlib\n```\n"
        "```python\nimport numpy\n```\n"
        "```python\ndef broken(:\n    pass pass pass\n```\n"
    )
    result = extract_code(reply, mode="best", entry_point="missing")
    assert result == Extraction(
        "import numpy\n",
        "fenced-best-longest",
        (
            "pip install numpy scipy pandas matplotlib\n",
            "import numpy\n",
            "def broken(:\n    pass pass pass\n",
        ),
    )


def test_best_on_unterminated_last_block() -> None:
    reply = "```python\nx = 1\n```\n```python\ndef solve():\n    return 1\n"
    result = extract_code(reply, mode="best", entry_point="solve")
    assert result.code == "def solve():\n    return 1\n"
    assert result.method == "unterminated-fence"


def test_best_with_stray_closing_fence() -> None:
    reply = "def solve():\n    return 1\n```\nExample:\n```python\nprint(solve())\n```\n"
    assert extract_code(reply, mode="best", entry_point="solve") == Extraction(
        "def solve():\n    return 1\n", "stray-closing-fence", ("print(solve())\n",)
    )


def test_best_without_fences_is_whole_reply() -> None:
    assert extract_code("x = 1", mode="best", entry_point="f") == Extraction(
        "x = 1\n", "whole-reply", ()
    )


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown mode 'last'"):
        extract_code("x", mode="last")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reply must be a str"):
        extract_code(None)  # type: ignore[arg-type]


def test_methods_listed() -> None:
    assert set(METHODS) == {
        "fenced-first",
        "fenced-best-entry-point",
        "fenced-best-longest",
        "unterminated-fence",
        "stray-closing-fence",
        "whole-reply",
        "none",
    }


def test_parsing_candidate_code_prints_no_warnings() -> None:
    """Regression: a reply with an invalid escape sequence (``"\\#"``) made the parent's
    ``ast.parse`` emit a DeprecationWarning/SyntaxWarning that reached the user's pytest output
    ("1 warning" at the end of the quick start)."""
    import warnings

    from pytest_vibecheck.plugin.run.record import has_no_code
    from pytest_vibecheck.verify.extract import extract_code, parse_quietly

    code = 'import re\n\ndef task_func(s):\n    return re.sub("\\#", "", s)\n'
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ex = extract_code(code, entry_point="task_func")
        assert has_no_code(ex) is False
        parse_quietly(code)
    assert [str(w.message) for w in seen] == []
    with warnings.catch_warnings(record=True) as loud:
        warnings.simplefilter("always")
        compile(code, "<candidate>", "exec")
    assert len(loud) == 1  # the code does warn: the quiet parse is what hides it
