"""The query of a task: what its first user turn asks, as each profile words it (paper §3.2).

A BigCodeBench or HumanEval task's query is its prompt as it is; a LiveCodeBench problem's
statement is wrapped by the profile's ``live_prompt`` style: ``paper`` prefixes the paper's
"Problem Type" preamble (:data:`PAPER_STDIN_PREAMBLE`, :data:`PAPER_FUNCTIONAL_PREAMBLE`),
``lcb`` uses LiveCodeBench's ``### Question`` template (:func:`lcb_query`). The format demands
of a query or system prompt that contradict an instruction (:data:`FORMAT_DEMANDS`) live here
too, since augmentation (:mod:`pytest_vibecheck.suites.augment`) must avoid them as much as the
requests do (:func:`pytest_vibecheck.generate.protocols.request_contradictions`).

The texts are quoted verbatim (they are what the model sees): the paper's from its released
pipeline (Apache-2.0), LiveCodeBench's from ``lcb_runner/prompts/code_generation.py`` (MIT).
They are part of the prompt wording that
:data:`pytest_vibecheck.generate.protocols.PROMPT_VERSION` versions: change it whenever a text
below changes.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.profiles import LIVE_KINDS

__all__ = [
    "FORMAT_DEMANDS",
    "LCB_FORMAT_WITHOUT_STARTER",
    "LCB_FORMAT_WITH_STARTER",
    "PAPER_FUNCTIONAL_PREAMBLE",
    "PAPER_STDIN_PREAMBLE",
    "contradictions",
    "lcb_query",
    "paper_query",
    "query",
]

#: The paper's preamble of a LiveCodeBench standard-input problem.
PAPER_STDIN_PREAMBLE = (
    "**Problem Type: Standard Input/Output**\n\n"
    "**Your Task:**\n"
    "Write an executable Python function that solves the problem described in the prompt "
    "below.\n\n"
    "**Requirements:**\n"
    "- The function must read all necessary input from `stdin`.\n"
    "- The function must print the final output to `stdout`.\n"
    "- Simply call the function after the definition.\n\n"
    "**Evaluation:**\n"
    "We will evaluate your solution by running the code and comparing its standard output with "
    "the expected solution."
)

#: The paper's preamble of a LiveCodeBench call-based problem (the function is ``solve``).
PAPER_FUNCTIONAL_PREAMBLE = (
    "**Problem Type: Functional Implementation**\n\n"
    "**Your Task:**\n"
    "Implement a function to solve the problem described in the prompt below.\n\n"
    "**Requirements:**\n"
    "- The primary function, which takes arguments as input and returns the final result, "
    "**must be named `solve()`**.\n"
    "- The function **must NOT read from standard input** (e.g., using `input()` or "
    "`sys.stdin`). All required data will be passed in as function arguments.\n"
    "- Any helper functions are permitted.\n"
    "- Your code must only contain function definitions. **Strictly do not include a call to "
    "`solve()`**.\n\n"
    "**Evaluation:**\n"
    "We will evaluate your solution by first executing your code to load the function "
    "definitions, and then calling your `solve()` function directly with various test cases."
)

#: LiveCodeBench's format lines (``PromptConstants``).
LCB_FORMAT_WITH_STARTER = (
    "You will use the following starter code to write the solution to the problem and enclose "
    "your code within delimiters."
)
LCB_FORMAT_WITHOUT_STARTER = (
    "Read the inputs from stdin solve the problem and write the answer to stdout (do not "
    "directly test on the sample inputs). Enclose your code within delimiters as follows."
)


def paper_query(problem: Problem) -> str:
    """The paper's LiveCodeBench query: the preamble of the problem's test kind, a rule, then
    ``**Problem:**`` and the statement (``problem.prompt``)."""
    preamble = PAPER_STDIN_PREAMBLE if problem.test.kind == "stdin" else PAPER_FUNCTIONAL_PREAMBLE
    return f"{preamble}\n\n---\n**Problem:**\n{problem.prompt}"


def lcb_query(problem: Problem) -> str:
    """LiveCodeBench's query (``get_generic_question_template_answer``): ``### Question:``,
    the statement, the format line with the starter code (or ``# YOUR CODE HERE``) in a fenced
    block, and ``### Answer: (use the provided format with backticks)``."""
    text = f"### Question:\n{problem.prompt}\n\n"
    if problem.starter_code:
        text += f"### Format: {LCB_FORMAT_WITH_STARTER}\n```python\n{problem.starter_code}\n```\n\n"
    else:
        text += f"### Format: {LCB_FORMAT_WITHOUT_STARTER}\n```python\n# YOUR CODE HERE\n```\n\n"
    return text + "### Answer: (use the provided format with backticks)\n\n"


def query(problem: Problem, live_prompt: str = "paper") -> str:
    """The user query of ``problem``: its prompt, or for a LiveCodeBench problem (test kind
    ``stdin``/``functional``) the statement wrapped by ``live_prompt`` (``"paper"``:
    :func:`paper_query`; ``"lcb"``: :func:`lcb_query`). Raises ParameterError for another
    style, or for a LiveCodeBench record whose prompt is already a full query (a suite built
    by pytest-vibecheck 0.1: rebuild it with ``vibecheck augment``)."""
    if problem.test.kind not in LIVE_KINDS:
        return problem.prompt
    if problem.prompt.startswith("### Question:"):
        raise ParameterError(
            f"{problem.suite}/{problem.task_id}: the prompt is a LiveCodeBench query, not the "
            "statement (a suite built by an older pytest-vibecheck); rebuild the suite with "
            "vibecheck augment"
        )
    if live_prompt == "paper":
        return paper_query(problem)
    if live_prompt == "lcb":
        return lcb_query(problem)
    raise ParameterError(f"unknown LiveCodeBench prompt style {live_prompt!r}; expected paper or lcb")


#: Phrases of a system prompt or query that demand a reply format (lower case), with the
#: instructions they contradict: ``doc_4`` asks for pure code with no fences, ``doc_6`` for a
#: JSON block after the code.
FORMAT_DEMANDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("enclose your code within delimiters", frozenset({"doc_4"})),
    ("use the provided format with backticks", frozenset({"doc_4"})),
    ("put your fixed program within code delimiters", frozenset({"doc_4"})),
    ("in a markdown code block", frozenset({"doc_4"})),
    ("you will not return anything except for the program", frozenset({"doc_6"})),
)


def contradictions(texts: Iterable[str], instruction_ids: Iterable[str]) -> list[tuple[str, str]]:
    """``(instruction id, phrase)`` for every instruction in ``instruction_ids`` that a
    format demand of :data:`FORMAT_DEMANDS` found in ``texts`` contradicts (case-insensitive);
    empty when there is none."""
    lowered = [t.lower() for t in texts]
    ids = list(instruction_ids)
    return [
        (iid, phrase)
        for phrase, against in FORMAT_DEMANDS
        if any(phrase in t for t in lowered)
        for iid in ids
        if iid in against
    ]
