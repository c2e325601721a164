"""The built-in checks (doc_4, doc_5, doc_6, the df part of library_2): exact findings."""

from __future__ import annotations

import pytest

from pytest_vibecheck.errors import UnknownIdError
from pytest_vibecheck.verify.checks import (
    CHECKS,
    NOTHING_BUT_SYNTAX,
    code_then_json_reply,
    no_comments_or_docstrings,
    pandas_df_name,
    pure_code_reply,
    run_check,
    strip_reasoning,
)
from pytest_vibecheck.verify.verdict import Violation


def found(vs: list[Violation]) -> list[tuple[str, int, int]]:
    return [(v.rule, v.line, v.column) for v in vs]


# ----------------------------------------------------------------------------- reasoning


def test_strip_reasoning_keeps_line_numbers() -> None:
    assert strip_reasoning("<think>\na\nb\n</think>\nx = 1\n") == "\n\n\n\nx = 1\n"
    assert strip_reasoning("a\r\nb") == "a\nb"
    assert strip_reasoning("plan\n</think>\ncode") == "\n\ncode"  # opening tag was in the prompt
    assert strip_reasoning("x = 1\n<think>cut off") == "x = 1\n"
    assert strip_reasoning("<THINKING>\n</THINKING>y") == "\ny"


# ----------------------------------------------------------------------------- doc_4


def test_pure_code_reply() -> None:
    assert pure_code_reply("x = 1") == []
    assert pure_code_reply("\n\n  \nx = 1\n\n") == []
    assert pure_code_reply("<think>\nLet me write it.\n</think>\n\nx = 1\n") == []
    assert pure_code_reply("x = 1\r\ny = 2\r\n") == []
    # the fence lines are named, counted from the start of the reply
    assert found(pure_code_reply("\n\n```python\nx = 1\n```\n")) == [
        ("markdown-fence", 3, 1),
        ("markdown-fence", 5, 1),
    ]
    assert found(pure_code_reply("~~~\nx = 1\n~~~")) == [("markdown-fence", 1, 1), ("markdown-fence", 3, 1)]
    [v] = pure_code_reply("\nSure! Here it is:\nx = 1\n")
    assert (v.rule, v.line) == ("invalid-syntax", 2)
    assert v.message.startswith("syntax error: the reply does not parse as Python: ")
    assert found(pure_code_reply(" \n\t")) == [("empty-reply", 1, 1)]
    assert found(pure_code_reply("<think>only thoughts</think>")) == [("empty-reply", 1, 1)]


def test_pure_code_reply_allows_fences_inside_strings() -> None:
    code = 'def f():\n    """Example:\n\n    ```python\n    f()\n    ```\n    """\n'
    assert pure_code_reply(code) == []


# ----------------------------------------------------------------------------- doc_5


def test_no_comments_or_docstrings_positions() -> None:
    code = (
        "#!/usr/bin/env python\n"
        '"""Module."""\n'
        'x = "é"  # naïve\n'
        "class A:\n"
        "    '''Class doc.'''\n"
        "    def f(self):\n"
        '        """Method doc."""\n'
        "        return '# not a comment'\n"
        "async def g():\n"
        "    r'''raw doc'''\n"
    )
    assert found(no_comments_or_docstrings(code)) == [
        ("comment", 1, 1),
        ("comment", 3, 10),  # character column, after a non-ASCII character
        ("docstring", 2, 1),
        ("docstring", 5, 5),
        ("docstring", 7, 9),
        ("docstring", 10, 5),
    ]
    msgs = [v.message for v in no_comments_or_docstrings("x = 1  # " + "c" * 60 + "\n")]
    assert msgs == ["Comment found: '# " + "c" * 35 + "...'"]


def test_no_comments_or_docstrings_non_docstrings_pass() -> None:
    assert no_comments_or_docstrings("x = 1\n'not a docstring: not the first statement'\n") == []
    assert no_comments_or_docstrings("def f():\n    return 1\n    'after return'\n") == []
    assert no_comments_or_docstrings("def f():\n    b'bytes are no docstring'\n") == []
    assert no_comments_or_docstrings("") == []
    assert no_comments_or_docstrings("\ufeffx = 1\r\n") == []  # a BOM is not code


def test_no_comments_or_docstrings_syntax_error() -> None:
    vs = no_comments_or_docstrings("# c\ndef f(:\n")
    assert found(vs) == [("comment", 1, 1), ("invalid-syntax", 2, 7)]


# ----------------------------------------------------------------------------- doc_6


GOOD6 = '```python\ndef f():\n    return 1\n```\n\n```json\n{"explanation": "returns 1"}\n```\n'


def test_code_then_json_reply_passes() -> None:
    assert code_then_json_reply(GOOD6) == []
    assert code_then_json_reply("\n\n" + GOOD6.replace("\n", "\r\n") + "   \n") == []
    assert code_then_json_reply("<think>\nplan\n</think>\n" + GOOD6) == []
    assert code_then_json_reply(GOOD6.replace("```python", "```Python3")) == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Here:\n" + GOOD6, [("text-outside-blocks", 1, 1)]),
        (GOOD6 + "Hope this helps!\nBye.\n", [("text-outside-blocks", 9, 1)]),
        (GOOD6.replace('{"explanation": "returns 1"}', "{'a': 1}"), [("invalid-json", 7, 2)]),
        (GOOD6.replace('{"explanation": "returns 1"}', '{"a": 1,\n"b": }'), [("invalid-json", 8, 6)]),
        (GOOD6.split("\n\n")[0] + "\n", [("block-count", 1, 1)]),
        (GOOD6 + "```json\n{}\n```\n", [("block-count", 9, 1)]),
        (GOOD6.replace("```python", "```"), [("block-language", 1, 1)]),
        (GOOD6.replace("```json", "```"), [("block-language", 6, 1)]),
        (GOOD6.replace("def f():\n    return 1\n", "\n"), [("empty-block", 1, 1)]),
        ('```python\nx = 1\n```\n```json\n{"a": 1}\n', [("unterminated-fence", 4, 1)]),
        ('```python\nx = 1\n```\n```json\n{"a": 1', [("unterminated-fence", 4, 1), ("invalid-json", 5, 8)]),
        ('```python\nx = 1\n```\n```json\n{"a": \n', [("unterminated-fence", 4, 1), ("invalid-json", 6, 1)]),
        ("just prose", [("text-outside-blocks", 1, 1), ("block-count", 1, 1)]),
    ],
)
def test_code_then_json_reply_failures(reply: str, expected: list[tuple[str, int, int]]) -> None:
    assert found(code_then_json_reply(reply)) == expected


# ----------------------------------------------------------------------------- library_2


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("df = 1\n", [("PD901", 1, 1)]),
        ("def f():\n    df = load()\n    return df\n", [("PD901", 2, 5)]),
        ("class A:\n    df = 1\n", [("PD901", 2, 5)]),
        ("(df) = 1\n", [("PD901", 1, 2)]),
        ("x = 'é'; df = 1\n", [("PD901", 1, 10)]),  # characters, not UTF-8 bytes
        # no suppression excuses a violation (issue 23), unlike Ruff's PD901
        ("df = 1  # noqa\n", [("PD901", 1, 1)]),
        ("df = 1  # noqa: PD901\n", [("PD901", 1, 1)]),
        ("df = 1  # noqa: E501\n", [("PD901", 1, 1)]),
        ("# ruff: noqa\ndf = 1\n", [("PD901", 2, 1)]),
        # not flagged by PD901 (Ruff 0.11.13): only `df = ...` with a single plain-name target
        ("df, n = 1, 2\n", []),
        ("a = df = 1\n", []),
        ("df: int = 1\n", []),
        ("df += 1\n", []),
        ("for df in x:\n    pass\n", []),
        ("with x as df:\n    pass\n", []),
        ("(df := 1)\n", []),
        ("def f(df):\n    return df\n", []),
        ("x.df = 1\nd['df'] = 2\ndf2 = 3\n", []),
        ("df == 1\n", []),
    ],
)
def test_pandas_df_name_is_pd901(code: str, expected: list[tuple[str, int, int]]) -> None:
    assert found(pandas_df_name(code)) == expected


def test_pandas_df_name_all_bindings() -> None:
    code = "df, n = 1, 2\nfor df in x:\n    pass\n(df := 1)\ndef f(df):\n    return df\n"
    assert found(pandas_df_name(code, all_bindings=True)) == [
        ("PD901", 1, 1),
        ("PD901", 2, 5),
        ("PD901", 4, 2),
    ]


def test_pandas_df_name_syntax_error_and_message() -> None:
    assert found(pandas_df_name("df = (\n")) == [("invalid-syntax", 1, 6)]
    [v] = pandas_df_name("df = 1\n")
    assert v.message == "Avoid using the generic variable name `df` for DataFrames"


def test_nothing_but_syntax_shortcut_is_exact() -> None:
    quick = NOTHING_BUT_SYNTAX["pandas_df_name"]
    for code in ("df = 1\n", "(df) = 1\n", "df \\\n = 1\n", "a = df = 1\n"):
        assert not quick(code)
    for code in ("x = df\n", "df == 1\n", "df += 1\n", "dfx = 1\n", "df: int = 1\n"):
        assert quick(code)
        assert pandas_df_name(code) == []


def test_check_registry() -> None:
    assert set(CHECKS) == {"pure_code_reply", "no_comments_or_docstrings", "code_then_json_reply", "pandas_df_name",
                           "decoy_uses"}
    assert found(run_check("no_comments_or_docstrings", "# x\n")) == [("comment", 1, 1)]
    with pytest.raises(UnknownIdError, match="did you mean 'pure_code_reply'"):
        run_check("pure_code_replies", "x")
