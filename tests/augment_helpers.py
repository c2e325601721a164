"""Recorded selector replies for the augmentation tests (a local server sends them).

The replies follow the reply format the LLM selector's prompt asks for
(``selectors/llm.build_prompt``). They were written for these tests, not captured from a
live model (no API key or network is available to the test suite); they exercise the
same parser and validation a real reply goes through, including the failure cases the
paper's procedure must survive.
"""

from __future__ import annotations

import json

#: A well-formed reply: five relevant instructions, one with a custom parameter, plus rejections.
REPLY_OK = """I scanned the list in order.

```json
{"selected": [
  {"id": "logic_3", "params": {"max_branches": 3}, "reason": "the solution branches on input types"},
  {"id": "doc_1", "params": {}, "reason": "signature lacks annotations"},
  {"id": "style_3", "params": {"line_length": 88}, "reason": "long calls"},
  {"id": "error_2", "params": {}, "reason": "raises ValueError with a message"},
  {"id": "doc_3", "params": {"convention": "numpy"}, "reason": "functions need docstrings"}
 ],
 "rejected": [{"id": "library_2", "reason": "no pandas"}]}
```
"""

#: Unknown id, an out-of-range parameter and a malformed entry, then valid picks.
REPLY_BAD_IDS_AND_PARAMS = json.dumps(
    {
        "selected": [
            {"id": "style_99", "params": {}, "reason": "made up"},
            {"id": "logic_3", "params": {"max_branches": 9, "colour": "red"}, "reason": "branches"},
            {"params": {}},
            {"id": "doc_4", "params": {}, "reason": "format"},
            {"id": "doc_6", "params": {}, "reason": "conflicts with doc_4"},
            {"id": "style_1", "reason": "pep8"},
            {"id": "logic_5", "params": {"max_locals": "4"}, "reason": "locals"},
            {"id": "doc_1", "params": {}, "reason": "annotations"},
        ]
    }
)

#: Only two instructions judged relevant: the task keeps fewer than k.
REPLY_FEWER = '```json\n{"selected": [{"id": "style_1"}, {"id": "doc_4"}], "rejected": []}\n```'

#: Not parseable: prose with no JSON object.
REPLY_UNPARSEABLE = "I think style_1 and doc_4 are relevant, the others are not."
