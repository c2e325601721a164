"""Verifiers of the 30 VeriCode instructions: exact verdicts and rule codes (Ruff 0.17).

Every instruction has at least two passing and two failing snippets, at two parameter values
where it has parameters. The whole table is verified in ONE batch (one Ruff process); a
sample of it is re-verified one call at a time and must give identical verdicts.
"""

from __future__ import annotations

import os
import textwrap
import warnings
from pathlib import Path

import pytest
from ruff_helpers import wrapped_ruff

from pytest_vibecheck.errors import ParameterWarning, UnknownIdError, VibecheckError
from pytest_vibecheck.verify.api import (
    VerifyItem,
    normalise_code,
    ruff_check_for,
    verify,
    verify_batch,
)
from pytest_vibecheck.verify.instructions import all_instructions, get_instruction, load_registry
from pytest_vibecheck.verify.ruff_engine import (
    RuffCheck,
    RuffEngine,
    RuffJob,
    compatible,
    plan_groups,
    safe_temp_base,
    selector_covers,
)
from pytest_vibecheck.verify.verdict import Verdict, Violation

REPO = Path(__file__).resolve().parents[1]


def d(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


LONG = "a" * 100
MATCH3 = d("""
    def f(x):
        match x:
            case 1:
                return 1
            case 2:
                return 2
            case _:
                return 3
""")
IF3 = d("""
    def f(x):
        if x == 1:
            return 1
        elif x == 2:
            return 2
        else:
            return 3
""")
BRANCH4 = d("""
    def f(x):
        if x == 1:
            return 1
        if x == 2:
            return 2
        if x == 3:
            return 3
        if x == 4:
            return 4
        return 0
""")
NEST2 = "def f(a):\n    for x in a:\n        if x:\n            print(x)\n"
NEST3 = "def f(a):\n    for x in a:\n        if x:\n            while x:\n                x -= 1\n"


def stmts(n: int) -> str:
    """A function with ``n`` statements as Ruff's PLR0915 counts them (it does not count
    ``return`` statements: observed with Ruff 0.17)."""
    return "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(n)) + "    return 0\n"


def locs(n: int) -> str:
    return "def f():\n" + "".join(f"    v{i} = {i}\n" for i in range(n)) + "    return 0\n"


# (instruction, params, text, expected rule codes of the violations; () = pass)
CASES: list[tuple[str, dict[str, object], str, tuple[str, ...]]] = [
    # style_1: pycodestyle E,W, E501 at 88
    ("style_1", {}, "x = 1\n", ()),
    ("style_1", {}, "def f(a, b):\n    return a + b\n", ()),
    ("style_1", {}, "x = '" + "a" * 82 + "'\n", ()),  # 88 characters
    ("style_1", {}, "x = '" + "a" * 83 + "'\n", ("E501",)),  # 89 characters
    ("style_1", {}, "import os, sys\n", ("E401",)),
    ("style_1", {}, "l = 1 \n", ("E741", "W291")),
    # style_2: isort
    ("style_2", {}, "import os\nimport sys\n\nprint(os, sys)\n", ()),
    ("style_2", {}, "from a import b\n", ()),
    ("style_2", {}, "import sys\nimport os\n", ("I001",)),
    ("style_2", {}, "import os\nimport numpy as np\nimport sys\n", ("I001",)),
    # style_3: E501 at line_length
    ("style_3", {"line_length": 79}, "x = '" + "a" * 73 + "'\n", ()),  # 79
    ("style_3", {"line_length": 79}, "x = 1\n", ()),
    ("style_3", {"line_length": 79}, "x = '" + "a" * 74 + "'\n", ("E501",)),  # 80
    ("style_3", {"line_length": 79}, "# " + LONG + "\n", ("E501",)),
    ("style_3", {"line_length": 88}, "x = '" + "a" * 74 + "'\n", ()),  # 80
    ("style_3", {"line_length": 88}, "x = '" + "a" * 82 + "'\n", ()),  # 88
    ("style_3", {"line_length": 88}, "x = '" + "a" * 83 + "'\n", ("E501",)),  # 89
    ("style_3", {"line_length": 88}, "y = 1\n# " + LONG + "\n", ("E501",)),
    # style_4: trailing commas
    ("style_4", {}, "x = [\n    1,\n    2,\n]\n", ()),
    ("style_4", {}, "x = [1, 2]\n", ()),
    ("style_4", {}, "x = [\n    1,\n    2\n]\n", ("COM812",)),
    ("style_4", {}, "f(\n    1,\n    2\n)\n", ("COM812",)),
    # style_5: double quotes
    ("style_5", {}, 'x = "a"\n', ()),
    ("style_5", {}, "x = \"it's\"\n", ()),
    ("style_5", {}, "x = 'a'\n", ("Q000",)),
    ("style_5", {}, "x = '''\na\n'''\n", ("Q001",)),
    ("style_5", {}, "def f():\n    '''Doc.'''\n", ("Q002",)),
    # style_6: snake_case in functions
    ("style_6", {}, "def f():\n    my_var = 1\n    return my_var\n", ()),
    ("style_6", {}, "MY_CONST = 1\n", ()),
    ("style_6", {}, "def f():\n    MyVar = 1\n    return MyVar\n", ("N806",)),
    ("style_6", {}, "def f():\n    camelCase = 2\n    return camelCase\n", ("N806",)),
    # style_7: redundant open modes
    ("style_7", {}, "open('f')\n", ()),
    ("style_7", {}, "open('f', 'w')\n", ()),
    ("style_7", {}, "open('f', 'r')\n", ("UP015",)),
    ("style_7", {}, "open('f', 'rt')\n", ("UP015",)),
    # style_8: magic numbers
    ("style_8", {}, "def f(x):\n    return x > 0 and x != 1\n", ()),
    ("style_8", {}, "LIMIT = 5\n\n\ndef f(x):\n    return x > LIMIT\n", ()),
    ("style_8", {}, "def f(x):\n    return x > 5\n", ("PLR2004",)),
    ("style_8", {}, "def f(a):\n    return len(a) == 10\n", ("PLR2004",)),
    # style_9: unused unpacked names (preview rule RUF059)
    ("style_9", {}, "def f(g):\n    a, _b = g()\n    return a\n", ()),
    ("style_9", {}, "def f(g):\n    a, b = g()\n    return a + b\n", ()),
    ("style_9", {}, "def f(g):\n    a, b = g()\n    return a\n", ("RUF059",)),
    ("style_9", {}, "def f(g):\n    (a, b), c = g()\n    return a + c\n", ("RUF059",)),
    # logic_1: pyflakes
    ("logic_1", {}, "import os\n\nprint(os)\n", ()),
    ("logic_1", {}, "def f(x):\n    return x\n", ()),
    ("logic_1", {}, "import os\n", ("F401",)),
    ("logic_1", {}, "def f():\n    x = 1\n    return y\n", ("F821", "F841")),
    # logic_2: nesting depth (preview rule PLR1702)
    ("logic_2", {"max_nested_blocks": 1}, "def f(a):\n    for x in a:\n        print(x)\n", ()),
    ("logic_2", {"max_nested_blocks": 1}, "def f(a):\n    return a\n", ()),
    ("logic_2", {"max_nested_blocks": 1}, NEST2, ("PLR1702",)),
    ("logic_2", {"max_nested_blocks": 1}, NEST3, ("PLR1702",)),
    ("logic_2", {"max_nested_blocks": 2}, NEST2, ()),
    ("logic_2", {"max_nested_blocks": 2}, "def f(a):\n    for x in a:\n        print(x)\n", ()),
    ("logic_2", {"max_nested_blocks": 2}, NEST3, ("PLR1702",)),
    ("logic_2", {"max_nested_blocks": 2}, "def f(a):\n" + NEST3.split("\n", 1)[1].replace("\n    ", "\n        ").replace("    for", "    if a:\n        for", 1), ("PLR1702",)),
    # logic_3: branches per function (PLR0912); match counts like if/elif
    ("logic_3", {"max_branches": 2}, "def f(x):\n    if x:\n        return 1\n    return 2\n", ()),
    ("logic_3", {"max_branches": 2}, "def f(x):\n    if x == 1:\n        return 1\n    elif x == 2:\n        return 2\n", ()),
    ("logic_3", {"max_branches": 2}, IF3, ("PLR0912",)),
    ("logic_3", {"max_branches": 2}, MATCH3, ("PLR0912",)),
    ("logic_3", {"max_branches": 3}, IF3, ()),
    ("logic_3", {"max_branches": 3}, MATCH3, ()),
    ("logic_3", {"max_branches": 3}, BRANCH4, ("PLR0912",)),
    ("logic_3", {"max_branches": 3}, BRANCH4.replace("def f", "async def f"), ("PLR0912",)),
    # logic_4: statements per function (PLR0915)
    ("logic_4", {"max_statements": 6}, stmts(5), ()),
    ("logic_4", {"max_statements": 6}, stmts(6), ()),
    ("logic_4", {"max_statements": 6}, stmts(7), ("PLR0915",)),
    ("logic_4", {"max_statements": 6}, stmts(12), ("PLR0915",)),
    ("logic_4", {"max_statements": 10}, stmts(7), ()),
    ("logic_4", {"max_statements": 10}, stmts(10), ()),
    ("logic_4", {"max_statements": 10}, stmts(11), ("PLR0915",)),
    ("logic_4", {"max_statements": 10}, stmts(12), ("PLR0915",)),
    # logic_5: local variables (preview rule PLR0914)
    ("logic_5", {"max_locals": 2}, locs(2), ()),
    ("logic_5", {"max_locals": 2}, "def f(a, b, c):\n    d = a\n    return d + b + c\n", ()),
    ("logic_5", {"max_locals": 2}, locs(3), ("PLR0914",)),
    ("logic_5", {"max_locals": 2}, locs(5), ("PLR0914",)),
    ("logic_5", {"max_locals": 4}, locs(3), ()),
    ("logic_5", {"max_locals": 4}, locs(4), ()),
    ("logic_5", {"max_locals": 4}, locs(5), ("PLR0914",)),
    ("logic_5", {"max_locals": 4}, locs(8), ("PLR0914",)),
    # logic_6: no else after return/raise/continue/break, no assign-then-return
    ("logic_6", {}, "def f():\n    return 1\n", ()),
    ("logic_6", {}, "def f(x):\n    if x:\n        return 1\n    return 2\n", ()),
    ("logic_6", {}, "def f():\n    x = 1\n    return x\n", ("RET504",)),
    ("logic_6", {}, "def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n", ("RET505",)),
    ("logic_6", {}, "def f(x):\n    if x:\n        raise ValueError\n    else:\n        return 2\n", ("RET506",)),
    ("logic_6", {}, "def f(a):\n    for x in a:\n        if x:\n            continue\n        else:\n            print(x)\n", ("RET507",)),
    ("logic_6", {}, "def f(a):\n    for x in a:\n        if x:\n            break\n        else:\n            print(x)\n", ("RET508",)),
    # logic_7: cyclomatic complexity (C901)
    ("logic_7", {"max_complexity": 2}, "def f(x):\n    return x\n", ()),
    ("logic_7", {"max_complexity": 2}, "def f(x):\n    if x:\n        return 1\n    return 3\n", ()),
    ("logic_7", {"max_complexity": 2}, "def f(x):\n    if x:\n        return 1\n    if x > 1:\n        return 2\n    return 3\n", ("C901",)),
    ("logic_7", {"max_complexity": 2}, BRANCH4, ("C901",)),
    ("logic_7", {"max_complexity": 3}, "def f(x):\n    if x:\n        return 1\n    if x > 1:\n        return 2\n    return 3\n", ()),
    ("logic_7", {"max_complexity": 3}, "def f(x):\n    return x\n", ()),
    ("logic_7", {"max_complexity": 3}, BRANCH4, ("C901",)),
    # mccabe does not count boolean operators: for + if + if = complexity 4
    ("logic_7", {"max_complexity": 3}, "def f(a):\n    for x in a:\n        if x and a:\n            return 1\n        if x:\n            return 2\n    return 0\n", ("C901",)),
    # logic_8: comprehensions instead of loops
    ("logic_8", {}, "def f(a):\n    return [x * 2 for x in a if x]\n", ()),
    ("logic_8", {}, "def f(a):\n    for x in a:\n        print(x)\n", ()),
    ("logic_8", {}, "def f(a):\n    r = []\n    for x in a:\n        if x:\n            r.append(x * 2)\n    return r\n", ("PERF401",)),
    ("logic_8", {}, "def f(a):\n    r = []\n    for x in a:\n        r.append(x)\n    return r\n", ("PERF402",)),
    ("logic_8", {}, "def f(a):\n    d = {}\n    for k, v in a.items():\n        if v:\n            d[k] = v\n    return d\n", ("PERF403",)),
    # logic_9: boolean operands (preview rule PLR0916)
    ("logic_9", {"max_bool_expr": 1}, "def f(a):\n    if a:\n        return 1\n    return 0\n", ()),
    ("logic_9", {"max_bool_expr": 1}, "def f(a, b):\n    return a and b\n", ()),
    ("logic_9", {"max_bool_expr": 1}, "def f(a, b):\n    if a and b:\n        return 1\n    return 0\n", ("PLR0916",)),
    ("logic_9", {"max_bool_expr": 1}, "def f(a, b, c):\n    if a and b or c:\n        return 1\n    return 0\n", ("PLR0916",)),
    ("logic_9", {"max_bool_expr": 2}, "def f(a, b):\n    if a and b:\n        return 1\n    return 0\n", ()),
    ("logic_9", {"max_bool_expr": 2}, "def f(a):\n    if a:\n        return 1\n    return 0\n", ()),
    ("logic_9", {"max_bool_expr": 2}, "def f(a, b, c):\n    if a and b and c:\n        return 1\n    return 0\n", ("PLR0916",)),
    ("logic_9", {"max_bool_expr": 2}, "def f(a, b, c):\n    if a:\n        return 0\n    elif (a or b) and c:\n        return 1\n    return 2\n", ("PLR0916",)),
    # doc_1: full annotations, no Any
    ("doc_1", {}, "def f(x: int) -> int:\n    return x\n", ()),
    ("doc_1", {}, "class A:\n    def __init__(self, x: int) -> None:\n        self.x = x\n", ()),
    ("doc_1", {}, "def f(x):\n    return x\n", ("ANN001", "ANN201")),
    ("doc_1", {}, "from typing import Any\n\n\ndef f(x: Any) -> int:\n    return 1\n", ("ANN401",)),
    ("doc_1", {}, "def f(*args, **kwargs) -> None:\n    pass\n", ("ANN002", "ANN003")),
    ("doc_1", {}, "class A:\n    def __init__(self, x: int):\n        self.x = x\n", ("ANN204",)),
    # doc_2: comment/docstring lines (W505 with max-doc-length)
    ("doc_2", {"line_length": 72}, "# " + "a" * 70 + "\n", ()),  # 72
    ("doc_2", {"line_length": 72}, "x = '" + "a" * 90 + "'\n", ()),  # code lines do not count
    ("doc_2", {"line_length": 72}, "# " + "a" * 71 + "\n", ("W505",)),  # 73
    # a doc line without whitespace is never too long (a URL, say): use words
    ("doc_2", {"line_length": 72}, 'def f():\n    """' + "a" * 70 + '."""\n', ()),
    ("doc_2", {"line_length": 72}, 'def f():\n    """' + "ab " * 23 + '."""\n', ("W505",)),
    ("doc_2", {"line_length": 80}, "# " + "a" * 71 + "\n", ()),
    ("doc_2", {"line_length": 80}, 'def f():\n    """' + "ab " * 23 + '."""\n', ()),
    ("doc_2", {"line_length": 80}, "# " + "a" * 79 + "\n", ("W505",)),  # 81
    ("doc_2", {"line_length": 80}, 'def f():\n    """Sum.\n\n    ' + "ab " * 26 + '.\n    """\n', ("W505",)),
    # doc_3: pydocstyle with the convention (module docstring required)
    ("doc_3", {"convention": "pep257"}, '"""Mod."""\n\n\ndef f():\n    """Return the value."""\n', ()),
    ("doc_3", {"convention": "pep257"}, '"""Module docstring."""\n\nX = 1\n', ()),
    ("doc_3", {"convention": "pep257"}, '"""Mod."""\n\n\ndef f():\n    """Returns the value."""\n', ("D401",)),
    ("doc_3", {"convention": "pep257"}, "def f():\n    pass\n", ("D100", "D103")),
    ("doc_3", {"convention": "google"}, '"""Mod."""\n\n\ndef f():\n    """Returns the value."""\n', ()),
    ("doc_3", {"convention": "google"}, '"""Mod."""\n\n\ndef f(x):\n    """Return x.\n\n    Args:\n        x: A value.\n    """\n    return x\n', ()),
    ("doc_3", {"convention": "google"}, "def f():\n    pass\n", ("D100", "D103")),
    ("doc_3", {"convention": "google"}, '"""Mod."""\n\n\ndef f():\n    """Return the value"""\n', ("D415",)),
    # doc_4: the whole reply is pure code
    ("doc_4", {}, "x = 1\n", ()),
    ("doc_4", {}, "\n\ndef f():\n    return 1\n\n\n", ()),
    ("doc_4", {}, "```python\nx = 1\n```\n", ("markdown-fence", "markdown-fence")),
    # a reply without code follows no instruction (issue 23): NO-CODE, as in the plugin
    ("doc_4", {}, "Here is the code:\nx = 1\n", ("NO-CODE",)),
    ("doc_4", {}, "   \n", ("NO-CODE",)),
    # doc_5: no comments, no docstrings
    ("doc_5", {}, "x = 1\n", ()),
    ("doc_5", {}, "def f():\n    return '# not a comment'\n", ()),
    ("doc_5", {}, "x = 1  # c\n", ("comment",)),
    ("doc_5", {}, 'def f():\n    """Doc."""\n    return 1\n', ("docstring",)),
    ("doc_5", {}, '"""Mod."""\n#!c\nclass A:\n    """A."""\n', ("comment", "docstring", "docstring")),
    # doc_6: one python block then one json block
    ("doc_6", {}, '```python\nx = 1\n```\n```json\n{"a": 1}\n```\n', ()),
    ("doc_6", {}, '\n```py\nx = 1\n```\n\n  \n```json\n["x"]\n```', ()),
    ("doc_6", {}, 'Here:\n```python\nx = 1\n```\n```json\n{"a": 1}\n```\n', ("text-outside-blocks",)),
    ("doc_6", {}, '```python\nx = 1\n```\n```json\n{a: 1}\n```\n', ("invalid-json",)),
    ("doc_6", {}, "```python\nx = 1\n```\n", ("block-count",)),
    ("doc_6", {}, '```json\n{}\n```\n```python\nx = 1\n```\n', ("block-language", "block-language")),
    # error_1: raise ... from in except
    ("error_1", {}, "try:\n    pass\nexcept ValueError as e:\n    raise TypeError('x') from e\n", ()),
    ("error_1", {}, "try:\n    pass\nexcept ValueError:\n    raise\n", ()),
    ("error_1", {}, "try:\n    pass\nexcept ValueError:\n    raise TypeError('x')\n", ("B904",)),
    ("error_1", {}, "try:\n    pass\nexcept (ValueError, KeyError) as e:\n    raise TypeError(str(e))\n", ("B904",)),
    # error_2: messages in a variable first
    ("error_2", {}, "def f(x):\n    msg = f'{x}'\n    raise ValueError(msg)\n", ()),
    ("error_2", {}, "def f():\n    raise ValueError\n", ()),
    ("error_2", {}, "def f():\n    raise ValueError('msg')\n", ("EM101",)),
    ("error_2", {}, "def f(x):\n    raise ValueError(f'{x}')\n", ("EM102",)),
    ("error_2", {}, "def f(x):\n    raise ValueError('{}'.format(x))\n", ("EM103",)),
    # error_3: OSError, not its aliases
    ("error_3", {}, "try:\n    pass\nexcept OSError:\n    pass\n", ()),
    ("error_3", {}, "raise OSError\n", ()),
    ("error_3", {}, "try:\n    pass\nexcept IOError:\n    pass\n", ("UP024",)),
    ("error_3", {}, "raise EnvironmentError\n", ("UP024",)),
    # error_4: no long messages at the raise site
    ("error_4", {}, "def f(msg):\n    raise ValueError(msg)\n", ()),
    ("error_4", {}, "def f():\n    raise ValueError('bad')\n", ()),
    ("error_4", {}, "def f():\n    raise ValueError('bad value')\n", ("TRY003",)),
    ("error_4", {}, "def f(x):\n    raise ValueError(f'bad value {x}')\n", ("TRY003",)),
    # library_1: pathlib
    ("library_1", {}, "from pathlib import Path\n\nPath('a') / 'b'\n", ()),
    ("library_1", {}, "from pathlib import Path\n\nPath('f').read_text()\n", ()),
    ("library_1", {}, "import os\n\nos.path.join('a', 'b')\n", ("PTH118",)),
    ("library_1", {}, "import glob\n\nglob.glob('*')\n", ("PTH207",)),
    ("library_1", {}, "open('f')\n", ("PTH123",)),
    # library_2: no df (built-in PD901), no inplace=True (PD002), no .values (PD011)
    ("library_2", {}, "import pandas as pd\n\nframe = pd.DataFrame()\ny = frame.to_numpy()\n", ()),
    ("library_2", {}, "import pandas as pd\n\n\ndef task_func(df):\n    return df.sum()\n", ()),
    ("library_2", {}, "import pandas as pd\n\ndf = pd.DataFrame()\n", ("PD901",)),
    ("library_2", {}, "import pandas as pd\n\nx = pd.DataFrame()\nx.drop('a', inplace=True)\n", ("PD002",)),
    ("library_2", {}, "import pandas as pd\n\nx = pd.DataFrame()\ny = x.values\n", ("PD011",)),
]

REPLY_TARGET = {"doc_4", "doc_6"}


def _item(iid: str, params: dict[str, object], text: str) -> VerifyItem:
    if iid in REPLY_TARGET:
        return VerifyItem([(iid, params)], reply=text)
    return VerifyItem([(iid, params)], code=text)


@pytest.fixture(scope="module")
def table_verdicts() -> list[Verdict]:
    """The whole table in one batch."""
    return [row[0] for row in verify_batch([_item(*case[:3]) for case in CASES])]


def _case_id(case: tuple[str, dict[str, object], str, tuple[str, ...]]) -> str:
    iid, params, _text, rules = case
    p = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{iid}[{p}]-{'pass' if not rules else '+'.join(rules)}"


@pytest.mark.parametrize("index", range(len(CASES)), ids=[_case_id(c) for c in CASES])
def test_table(index: int, table_verdicts: list[Verdict]) -> None:
    iid, params, _text, rules = CASES[index]
    v = table_verdicts[index]
    assert v.error is None
    assert v.instruction == iid
    assert v.passed is (not rules)
    assert tuple(sorted(x.rule for x in v.violations)) == tuple(sorted(rules))
    inst = get_instruction(iid)
    assert v.params == {**inst.defaults(), **params}
    if inst.verifier.rules:
        assert v.ruff_version is not None and v.ruff_version.startswith("0.17.")
    else:
        assert v.ruff_version is None


def test_table_covers_every_instruction_twice_each_way() -> None:
    for inst in all_instructions():
        values = [tuple(sorted(c[1].items())) for c in CASES if c[0] == inst.id]
        per_value = {v: [c for c in CASES if c[0] == inst.id and tuple(sorted(c[1].items())) == v] for v in values}
        assert len(per_value) >= (2 if inst.params else 1), inst.id
        for cases in per_value.values():
            assert sum(1 for c in cases if not c[3]) >= 2, inst.id
            assert sum(1 for c in cases if c[3]) >= 2, inst.id


def test_one_call_equals_batch(table_verdicts: list[Verdict]) -> None:
    # every 3rd case, one verify() call each (one Ruff process each)
    for index in range(0, len(CASES), 3):
        iid, params, text, _rules = CASES[index]
        single = verify(text, iid, params, is_reply=iid in REPLY_TARGET)
        assert single == table_verdicts[index], CASES[index]


def test_batch_of_many_instructions_per_item_equals_one_by_one(table_verdicts: list[Verdict]) -> None:
    """All cases sharing a text in ONE item (grouped configs) give the one-by-one verdicts."""
    by_text: dict[str, list[int]] = {}
    for n, (iid, _p, text, _r) in enumerate(CASES):
        if iid not in REPLY_TARGET:
            by_text.setdefault(text, []).append(n)
    items = []
    index_lists = []
    all_ids = [i.id for i in all_instructions() if i.verifier.target == "code"]
    for text, idx in by_text.items():
        pairs = [(CASES[n][0], CASES[n][1]) for n in idx]
        # plus every other code instruction at default parameters, to force grouping
        pairs += [(iid, {}) for iid in all_ids]
        items.append(VerifyItem(pairs, code=text))
        index_lists.append(idx)
    results = verify_batch(items)
    for idx, row in zip(index_lists, results, strict=True):
        for k, n in enumerate(idx):
            assert row[k] == table_verdicts[n], CASES[n]


# ----------------------------------------------------------------------------- pitfalls


def test_preview_rule_is_really_checked() -> None:
    v = verify(locs(9), "logic_5", {"max_locals": 8})
    assert v.passed is False
    assert [(x.rule, x.line, x.column, x.message) for x in v.violations] == [
        ("PLR0914", 1, 5, "Too many local variables (9 > 8)")
    ]


def test_match_counts_branches_like_if_elif() -> None:
    for n in (2, 3):
        a = verify(MATCH3, "logic_3", {"max_branches": n})
        b = verify(IF3, "logic_3", {"max_branches": n})
        assert a.passed is b.passed is (n == 3)
        assert [x.message for x in a.violations] == [x.message for x in b.violations]
    assert verify(MATCH3, "logic_3", {"max_branches": 2}).violations[0].message == "Too many branches (3 > 2)"


def test_tabs_are_measured_like_ruff() -> None:
    """Ruff counts a tab as reaching the next multiple of 4 columns (indent-width 4)."""
    body = "return '" + "a" * 66 + "'"  # 75 characters
    one_tab = f"def f():\n\t{body}\n"  # 76 characters, width 4 + 75 = 79
    two_tabs = f"def f():\n\tif True:\n\t\t{body}\n"  # 77 characters, width 8 + 75 = 83
    assert verify(one_tab, "style_3", {"line_length": 79}).passed is True
    v = verify(two_tabs, "style_3", {"line_length": 79})
    assert [(x.rule, x.line, x.message) for x in v.violations] == [("E501", 3, "Line too long (83 > 79)")]
    assert verify(two_tabs, "style_3", {"line_length": 88}).passed is True
    # style_1 also reports the tab indentation (W191)
    assert sorted(x.rule for x in verify(two_tabs, "style_1").violations) == ["W191", "W191"]


def test_syntax_error_fails_every_ruff_backed_instruction() -> None:
    code = "def f(:\n    return 1\n"
    ids = [i.id for i in all_instructions()]
    [row] = verify_batch([VerifyItem([(iid, {}) for iid in ids], code=code)])
    for v in row:
        inst = get_instruction(v.instruction)
        if inst.verifier.rules:
            assert v.passed is False, v.instruction
            assert v.violations[0].rule == "invalid-syntax"
            assert v.violations[0].message.startswith("syntax error: ")
            assert (v.violations[0].line, v.violations[0].column) == (1, 7)
        elif v.instruction == "doc_5":
            assert [x.rule for x in v.violations] == ["invalid-syntax"]
    # library_2 (Ruff + built-in check) reports Ruff's syntax error once, not twice
    lib2 = row[ids.index("library_2")]
    assert [x.message for x in lib2.violations] == [
        "syntax error: Expected a parameter or the end of the parameter list",
        "syntax error: Expected `)`, found newline",
    ]


def test_missing_final_newline_and_crlf_do_not_fail_style_1() -> None:
    assert verify("x = 1", "style_1").passed is True
    assert verify("x = 1\r\ny = 2\r\n", "style_1").passed is True
    assert verify("x = 1\n\n\n", "style_1").passed is True
    assert normalise_code("a\r\nb") == "a\nb\n"
    assert normalise_code("") == ""
    assert normalise_code("x\n\n") == "x\n"
    assert normalise_code(" \n\t\n") == ""


def test_removed_rule_is_an_error_not_a_fail(tmp_path: Path) -> None:
    """PD901 (removed from Ruff 0.12) makes Ruff exit 2: the verdict is an error, and other
    instructions and samples in the same batch are still judged."""
    folder = tmp_path / "insts"
    folder.mkdir()
    src = (REPO / "instructions" / "library_2.toml").read_text(encoding="utf-8")
    old = src.replace('id = "library_2"', 'id = "library_0"').replace(
        'rules = ["PD002", "PD011"]', 'rules = ["PD901", "PD002", "PD011"]'
    ).replace('checks = ["pandas_df_name"]', "checks = []").replace('replaces = ["PD901"]', "")
    (folder / "library_0.toml").write_text(old, encoding="utf-8")
    for name in ("style_1", "logic_3"):
        (folder / f"{name}.toml").write_text(
            (REPO / "instructions" / f"{name}.toml").read_text(encoding="utf-8"), encoding="utf-8"
        )
    reg = load_registry(folder)
    items = [
        VerifyItem([("library_0", {}), ("style_1", {}), ("logic_3", {})], code="x = 1 \n"),
        VerifyItem([("style_1", {})], code="x = 1\n"),
    ]
    [row, other] = verify_batch(items, registry=reg)
    assert row[0].passed is None
    assert row[0].error is not None and "PD901" in row[0].error and "removed" in row[0].error
    assert row[0].violations == ()
    assert row[0].ruff_version is not None
    assert (row[1].passed, [x.rule for x in row[1].violations]) == (False, ["W291"])
    assert row[2].passed is True
    assert other[0].passed is True


FAKE_RUFF = """#!{python}
import os, sys
real = {real!r}
targets = [a for a in sys.argv[1:] if os.path.exists(a)]
files = []
for t in targets:
    if os.path.isdir(t):
        for root, _dirs, names in os.walk(t):
            files += [os.path.join(root, n) for n in names if n.endswith(".py")]
    else:
        files.append(t)
for f in files:
    with open(f, encoding="utf-8") as fh:
        if "CRASH_RUFF_HERE" in fh.read():
            sys.stderr.write("error: Ruff crashed (simulated panic)\\n")
            sys.exit(2)
os.execv(real, [real] + sys.argv[1:])
"""


def test_a_crash_on_one_sample_does_not_poison_the_others(tmp_path: Path) -> None:
    fake = wrapped_ruff(tmp_path, FAKE_RUFF)
    engine = RuffEngine(fake)
    items = [
        VerifyItem([("style_1", {}), ("logic_3", {}), ("logic_5", {})], code=f"x{n} = 1 \n") for n in range(6)
    ]
    items.insert(3, VerifyItem([("style_1", {}), ("doc_5", {})], code="y = 'CRASH_RUFF_HERE'\n"))
    results = verify_batch(items, engine=engine)
    assert results[3][0].passed is None
    assert "simulated panic" in (results[3][0].error or "")
    assert results[3][1].passed is True  # doc_5 needs no Ruff
    for n in (0, 1, 2, 4, 5, 6):
        assert [v.passed for v in results[n]] == [False, True, True]
        assert [x.rule for x in results[n][0].violations] == ["W291"]
    assert engine.processes_run > 2  # it had to split the work to find the bad sample


def test_ruff_missing_is_an_error_for_ruff_checks_only() -> None:
    engine = RuffEngine("/nonexistent/ruff")
    [row] = verify_batch([VerifyItem([("style_1", {}), ("doc_5", {})], code="x = 1  # c\n")], engine=engine)
    assert row[0].passed is None and "Ruff cannot run" in (row[0].error or "")
    assert row[1].passed is False and [x.rule for x in row[1].violations] == ["comment"]


def test_user_config_and_env_do_not_change_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_verdicts: list[Verdict]
) -> None:
    (tmp_path / "ruff.toml").write_text(
        'line-length = 200\n[lint]\nselect = ["ALL"]\nignore = ["E501", "W", "D"]\npreview = true\n',
        encoding="utf-8",
    )
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nrequires-python = ">=3.8"\n[tool.ruff]\nline-length = 40\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUFF_OUTPUT_FORMAT", "concise")
    monkeypatch.setenv("RUFF_NO_CACHE", "false")
    monkeypatch.setenv("RUFF_CACHE_DIR", str(tmp_path / "cache"))
    again = [row[0] for row in verify_batch([_item(*case[:3]) for case in CASES])]
    assert again == table_verdicts
    assert not (tmp_path / "cache").exists()


def test_temp_tree_avoids_a_requires_python_ancestor(tmp_path: Path) -> None:
    """Ruff takes the target version from a pyproject.toml above the linted files: the
    engine never builds its tree below one (a match statement would be a syntax error)."""
    bad = tmp_path / "proj"
    (bad / "tmp").mkdir(parents=True)
    (bad / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.8"\n', encoding="utf-8")
    base, isolated = safe_temp_base(bad / "tmp")
    assert isolated is True
    assert bad not in base.parents
    engine = RuffEngine(temp_base=bad / "tmp")
    [[outcome]] = engine.run([RuffJob(MATCH3, [RuffCheck.make(["E", "W"])])])
    assert outcome.error is None and outcome.violations == ()


# ----------------------------------------------------------------------------- grouping


def test_selector_semantics() -> None:
    assert selector_covers("E", "E501")
    assert not selector_covers("E", "EM101")
    assert selector_covers("PL", "PLR0912")
    assert not selector_covers("PLR0912", "PLR0915")
    assert selector_covers("C", "C901") and selector_covers("ALL", "D100")


def test_compatibility_rules() -> None:
    e_w = RuffCheck.make(["E", "W"], settings={"lint.pycodestyle.max-line-length": 88})
    e501 = RuffCheck.make(["E501"], settings={"lint.pycodestyle.max-line-length": 79})
    w505 = RuffCheck.make(["W505"], settings={"lint.pycodestyle.max-doc-length": 72})
    em = RuffCheck.make(["EM101"])
    d = RuffCheck.make(["D"], settings={"lint.pydocstyle.convention": "google"})
    doc = RuffCheck.make(["DOC201"])
    plr12 = RuffCheck.make(["PLR0912"], settings={"lint.pylint.max-branches": 2})
    plr15 = RuffCheck.make(["PLR0915"], settings={"lint.pylint.max-statements": 6})
    plr14 = RuffCheck.make(["PLR0914"], True, {"lint.pylint.max-locals": 2})
    unknown = RuffCheck.make(["PTH"], settings={"line-length": 100})
    assert not compatible(e_w, e501)  # overlapping selectors
    assert not compatible(e_w, w505)  # W covers W505, and max-doc-length would enable it
    assert compatible(e501, w505)
    assert compatible(e_w, em)  # E does not cover EM
    assert not compatible(d, doc)  # the convention changes DOC rules
    assert compatible(plr12, plr15)
    assert not compatible(plr12, plr14)  # preview differs
    assert not compatible(unknown, em)  # a setting of unknown scope is never shared
    assert compatible(plr12, RuffCheck.make(["F"], settings={"lint.pylint.max-branches": 2}))
    assert not compatible(plr12, RuffCheck.make(["PLR0912"], settings={"lint.pylint.max-branches": 3}))


def test_27_default_instructions_need_three_configurations() -> None:
    checks = []
    for inst in all_instructions():
        check = ruff_check_for(inst, inst.defaults())
        if check is not None:
            checks.append(check)
    assert len(checks) == 27
    groups = plan_groups(tuple(checks))
    ids = [[i.id for i in all_instructions() if i.verifier.rules][k] for k in range(27)]
    named = [sorted(ids[k] for k in g) for g in groups]
    assert len(groups) == 3
    assert sorted(["doc_2", "style_3"]) in named
    assert sorted(["logic_2", "logic_5", "logic_9", "style_9"]) in named


# ----------------------------------------------------------------------------- API


def test_parameter_changes_are_warned_and_recorded() -> None:
    with pytest.warns(ParameterWarning, match="max_branches"):
        v = verify(IF3, "logic_3", {"max_branches": 99, "bogus": 1})
    assert v.params == {"max_branches": 2}
    assert len(v.warnings) == 2
    assert v.passed is False


def test_reply_only_item_extracts_the_code() -> None:
    reply = "Here you go:\n```python\nx = 1\n```\nDone."
    [row] = verify_batch([VerifyItem([("style_1", {}), ("doc_4", {}), ("doc_5", {})], reply=reply)])
    assert row[0].passed is True  # judged on the extracted "x = 1\n"
    assert [x.rule for x in row[1].violations] == ["markdown-fence", "markdown-fence"]
    assert row[2].passed is True
    v = verify(reply, "logic_1", is_reply=True)
    assert v.passed is True


def test_code_only_item_judges_reply_instructions_on_the_code() -> None:
    [row] = verify_batch([VerifyItem([("doc_4", {}), ("doc_6", {})], code="x = 1\n")])
    assert row[0].passed is True
    assert row[1].passed is False


def test_bad_items_raise_before_running() -> None:
    with pytest.raises(UnknownIdError, match="logic_3"):
        verify_batch([VerifyItem([("logic_33", {})], code="x = 1\n")])
    with pytest.raises(VibecheckError, match=r"code.*reply"):
        verify_batch([VerifyItem([("logic_3", {})])])


def test_verdict_invariants_and_round_trip() -> None:
    v = Verdict.judged("style_1", [Violation("W291", 2, 5, "b"), Violation("E501", 1, 9, "a")], ruff_version="0.17.6")
    assert v.passed is False and [x.rule for x in v.violations] == ["E501", "W291"]
    assert Verdict.from_dict(v.to_dict()) == v
    e = Verdict.failed_to_judge("library_2", "Ruff failed")
    assert e.passed is None and e.to_dict()["passed"] is None
    with pytest.raises(ValueError, match="iff error"):
        Verdict(None, (), None, "x")
    with pytest.raises(ValueError, match="contradicts"):
        Verdict(True, (Violation("E501", 1, 1, "m"),), None, "x")


def test_empty_batch_and_no_warnings_for_valid_params() -> None:
    assert verify_batch([]) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert verify("x = 1\n", "style_3", {"line_length": "88"}).params == {"line_length": 88}


def test_environment_is_scrubbed_of_ruff_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_vibecheck.verify.ruff_engine import _ruff_env

    monkeypatch.setenv("RUFF_OUTPUT_FORMAT", "concise")
    env = _ruff_env()
    assert "RUFF_OUTPUT_FORMAT" not in env
    assert env.get("PATH") == os.environ.get("PATH")
