"""The built-in checks (doc_4, doc_5, doc_6, the df part of library_2): exact findings."""

from __future__ import annotations

import re

import pytest

from pytest_vibecheck.errors import UnknownIdError
from pytest_vibecheck.verify.checks import (
    CHECKS,
    NOTHING_BUT_SYNTAX,
    _may_have_decoys,
    _short_cut_hint,
    code_then_json_reply,
    decoy_uses,
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


# ----------------------------------------------------------------------------- logic_1's filter

#: The pattern the filter used for a constant that short-cuts ``and``/``or`` before
#: :func:`_short_cut_hint` replaced it (70329c8): the reference it must never fall short of.
_SHORT_CUT_PATTERN = re.compile(r"(?:False|True|None|[0-9.]|['\"])(?:[\s)\\]|#[^\n]*\n)*(?<![\w.])(?:and|or)\b")


def _short_cut_texts() -> list[str]:
    constants = ["False", "True", "None", "0", "1.5", ".5", "''", '""', "'x'", "b''", "x.None", "sorted", "err"]
    gaps = ["", " ", ")", " ) ", "\\\n", "  # c\n", " # c)\n  ", "\n# only\n", ")\n  ", "\t", " \\\n   # x\n", "x "]
    words = ["and", "or", "and(", "or\n", "orx", "andy", "and_", "or.x"]
    before = ["x = ", "if ", "(", "a == ", "f", "1", "fo", ""]
    return [b + c + g + w + " os\n" for b in before for c in constants for g in gaps for w in words]


def test_the_short_cut_hint_finds_every_text_the_pattern_did() -> None:
    texts = _short_cut_texts()
    assert len(texts) == 9984
    hits = [t for t in texts if _SHORT_CUT_PATTERN.search(t)]
    assert len(hits) == 4560  # both kinds of text are among them
    assert [t for t in hits if not _short_cut_hint(t)] == []
    # what it finds beyond the pattern: a word after a comment line (parsed to tell)
    extra = [t for t in texts if _short_cut_hint(t) and not _SHORT_CUT_PATTERN.search(t)]
    assert len(extra) == 320
    assert all("#" in t for t in extra)


@pytest.mark.parametrize(("code", "parsed"), [
    ("import os\n\n\ndef f():\n    os\n", True),
    ("import os\n\n\ndef f():\n    (os.path)\n", True),
    ("import os\n\n\ndef f():\n    os, os.path  # x\n", True),
    ("import os\n\n\ndef f():\n    (os,\n     os.path)\n", True),
    ("import os\n\n\ndef f(x):\n    if x: os\n", True),
    ("import os\n\n\ndef f():\n    x = 1; (os)\n", True),
    # a call is no decoy: a line of one call without arguments is not parsed for one
    ("import matplotlib.pyplot as plt\n\n\ndef f():\n    plt.show()\n", False),
    ("import matplotlib.pyplot as plt\n\n\ndef f():\n    plt.show ()\n    (plt.figure)()\n", False),
    ("import os\n\n\ndef f(x):\n    if x: os.sync()\n", False),
    ("import os\n\n\ndef f():\n    x = 1; os.sync()\n", False),
    # non-ASCII text is read line by line: a name alone is parsed for, a call is not
    ("import os\n\n\ndef f():\n    ф = 1\n    (os)\n", True),
    ("import os\n\n\ndef f():\n    ф = 1\n    os.sync()\n", False),
])
def test_the_decoy_filter_parses_names_alone_and_not_calls(code: str, parsed: bool) -> None:
    assert _may_have_decoys(code) is parsed


def test_a_call_alone_on_a_line_is_no_decoy_use() -> None:
    honest = "import matplotlib.pyplot as plt\n\n\ndef f():\n    plt.figure()\n    plt.show()\n"
    assert decoy_uses(honest) == []
    gamed = "import os\n\n\ndef f():\n    (os,\n     os.path)\n    return 1\n"
    assert found(decoy_uses(gamed)) == [("F401", 1, 8)]
