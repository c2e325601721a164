"""The messages of the three evaluation protocols (paper §3.2), per profile.

- **baseline** (k = 0): system prompt + the task's query. Its reply is the 0-instruction
  generation whose pass@1 is S0.
- **single-turn** (k >= 1): system prompt + the query followed by a blank line and, as in the
  authors' released pipeline (maszhongming/SWE-IF ``code_generator.py``), either
  ``"Additionally, ensure your code meets the following requirement: <prompt>"`` (k = 1,
  inline) or ``"Additionally, ensure your code meets the following requirements:"`` and the
  single-turn prompts of the first k instructions numbered ``1.`` .. ``k.``, one per line.
- **multi-turn**: turn 0 is the plain query (exactly the baseline messages, so its reply is
  shared with the baseline through the generation cache); then one user turn per
  instruction carrying its multi-turn edit prompt alone, with every earlier assistant reply
  in the history. The code after k edit turns is judged against all k instructions.

The query (:func:`pytest_vibecheck.suites.queries.query`): a BigCodeBench or HumanEval task's
prompt as it is; a LiveCodeBench problem's statement wrapped by the profile (``live_prompt``):
the paper's "Problem Type" preamble or LiveCodeBench's ``### Question`` template. The system
prompt comes from the run's :class:`~pytest_vibecheck.suites.profiles.GenerationSetup`
(:func:`pytest_vibecheck.generate.setup.generation_setup`).

Prompt texts that reproduce a published setup are quoted verbatim (they are what the model
sees): the paper's from its released pipeline (Apache-2.0), LiveCodeBench's from
``lcb_runner/prompts/code_generation.py`` (MIT).

Labels name a (protocol, k) for replay look-ups and messages: ``"baseline"``,
``"single-k3"``, ``"multi-k2"``; multi-turn k = 0 and single-turn k = 0 are ``"baseline"``.

:data:`PROMPT_VERSION` is part of every generation-cache key: change it whenever the wording
below changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.generate.backends.base import Message
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.queries import contradictions, query
from pytest_vibecheck.types import PROTOCOLS
from pytest_vibecheck.verify.params import render_prompt

if TYPE_CHECKING:
    from pytest_vibecheck.suites.profiles import GenerationSetup

#: Version of the prompt wording (here and in :mod:`pytest_vibecheck.suites.queries`); part of
#: the generation-cache key. 2: the paper's system
#: prompts, single-turn wording and LiveCodeBench preambles, and LiveCodeBench's own template
#: for the ``lcb`` profile (issue 14).
PROMPT_VERSION = "vibecheck-prompts-2"

_FORMATS = (
    "**Output Formats:**\n"
    "You must strictly adhere to one of these two formats:\n\n"
    "1.  **Format 1: Markdown-Wrapped Code**\n"
    "    * **Use Case:** Use this format if your response contains ANY text or explanation in "
    "addition to the code.\n"
    "    * **Specification:** Place the entire code solution within the *first* Markdown code "
    "block (e.g., ```python ... ```).\n\n"
    "2.  **Format 2: Raw Code Only**\n"
    "    * **Use Case:** Use this format ONLY if your response consists *exclusively* of the "
    "code solution.\n"
    "    * **Specification:** Provide the raw code directly, with no Markdown or other text.\n\n"
    "**Requirements:**\n"
    "1. When generating or editing code, satisfy ALL user instructions throughout the entire "
    "conversation while keeping the functionality intact.\n"
)

#: The paper's system prompt for BigVibeBench (and the default of any suite).
PAPER_SYSTEM_PROMPT = (
    "**Objective:**\n"
    "You are an expert code generation assistant. Your primary objective is to provide a "
    "complete and runnable code solution for every request.\n\n"
    + _FORMATS
    + "2. Always include **complete, runnable code** in every response, even if no changes "
    "are needed from the previous version."
)

#: The paper's system prompt for LiveVibeBench (manifest ``generation.system_prompt``).
PAPER_LIVE_SYSTEM_PROMPT = (
    "**Objective:**\n"
    "You are an expert code generation assistant. Your primary objective is to provide "
    "functional Python solutions.\n\n"
    + _FORMATS
    + "2. Always include **complete Python functions** in every response, even if no changes "
    "are needed from the previous version."
)

#: LiveCodeBench's system prompt (``PromptConstants.SYSTEM_MESSAGE_GENERIC``).
LCB_SYSTEM_PROMPT = (
    "You are an expert Python programmer. You will be given a question (problem "
    "specification) and will generate a correct Python program that matches the specification "
    "and passes all tests. You will NOT return anything except for the program."
)

#: Kept for callers of the first version: the default system prompt.
SYSTEM_PROMPT = PAPER_SYSTEM_PROMPT

#: System prompts by name (``Profile.system_prompt``; ``scripts/build_suites.py``).
NAMED_SYSTEM_PROMPTS: dict[str, str] = {
    "paper": PAPER_SYSTEM_PROMPT,
    "paper-live": PAPER_LIVE_SYSTEM_PROMPT,
    "lcb": LCB_SYSTEM_PROMPT,
}

#: The single-turn requirement sentences of the released pipeline (k = 1 inline; k > 1 list).
SINGLE_TURN_ONE = "Additionally, ensure your code meets the following requirement:"
SINGLE_TURN_HEADER = "Additionally, ensure your code meets the following requirements:"

def named_system_prompt(name: str) -> str:
    """The system prompt called ``name`` (:data:`NAMED_SYSTEM_PROMPTS`); ParameterError
    for another name."""
    try:
        return NAMED_SYSTEM_PROMPTS[name]
    except KeyError:
        raise ParameterError(
            f"unknown system prompt {name!r}; expected one of {', '.join(NAMED_SYSTEM_PROMPTS)}"
        ) from None


def _system(setup: GenerationSetup | None) -> str:
    return PAPER_SYSTEM_PROMPT if setup is None else setup.system_prompt


def _live(setup: GenerationSetup | None) -> str:
    return "paper" if setup is None else setup.live_prompt


def label(protocol: str, k: int = 0) -> str:
    """The label of a generation: ``"baseline"`` when k = 0 or protocol is baseline, else
    ``"single-k{k}"`` or ``"multi-k{k}"``. Raises ParameterError for an unknown protocol
    or a negative k."""
    if protocol not in PROTOCOLS:
        raise ParameterError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ParameterError(f"k must be an int >= 0, got {k!r}")
    if protocol == "baseline" or k == 0:
        return "baseline"
    return f"{protocol}-k{k}"


def _check_k(problem: Problem, k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ParameterError(f"{problem.task_id}: k must be an int >= 0, got {k!r}")
    if k > len(problem.instructions):
        raise ParameterError(
            f"{problem.task_id}: k = {k} but the task has only {len(problem.instructions)} "
            "instructions; lower --vibe-k or use a suite augmented with more instructions"
        )


def baseline_messages(problem: Problem, setup: GenerationSetup | None = None) -> tuple[Message, ...]:
    """``(system, user: query)``: the 0-instruction request (paper §3.2). ``setup`` gives
    the system prompt and the LiveCodeBench query style (None: the paper's defaults)."""
    return (
        {"role": "system", "content": _system(setup)},
        {"role": "user", "content": query(problem, _live(setup))},
    )


def single_turn_prompt(problem: Problem, k: int, live_prompt: str = "paper") -> str:
    """The single-turn user message: the query, a blank line, then for k = 1
    ``"Additionally, ensure your code meets the following requirement: <prompt>"`` and for
    k > 1 ``"Additionally, ensure your code meets the following requirements:"`` and the
    single-turn prompts of instructions 1..k, numbered ``1.`` to ``k.`` one per line (the
    released pipeline's wording). k = 0 gives the plain query. Raises ParameterError if the
    task has fewer than k instructions."""
    _check_k(problem, k)
    text = query(problem, live_prompt)
    if k == 0:
        return text
    prompts = [render_prompt(ref.id, ref.params, "single") for ref in problem.instructions[:k]]
    if k == 1:
        return f"{text}\n\n{SINGLE_TURN_ONE} {prompts[0]}"
    lines = [f"{i}. {p}" for i, p in enumerate(prompts, start=1)]
    return text + "\n\n" + SINGLE_TURN_HEADER + "\n" + "\n".join(lines)


def single_turn_messages(
    problem: Problem, k: int, setup: GenerationSetup | None = None
) -> tuple[Message, ...]:
    """``(system, user: query + requirements 1..k)``; k = 0 is the baseline."""
    return (
        {"role": "system", "content": _system(setup)},
        {"role": "user", "content": single_turn_prompt(problem, k, _live(setup))},
    )


def edit_prompt(problem: Problem, position: int) -> str:
    """The multi-turn edit request of instruction ``position`` (1-based) alone."""
    _check_k(problem, position)
    if position < 1:
        raise ParameterError(f"{problem.task_id}: instruction positions start at 1, got {position}")
    ref = problem.instructions[position - 1]
    return render_prompt(ref.id, ref.params, "multi")


def multi_turn_messages(
    problem: Problem, history: Sequence[str], turn: int, setup: GenerationSetup | None = None
) -> tuple[Message, ...]:
    """The messages of multi-turn turn ``turn`` (= number of instructions given so far).

    ``history`` holds the assistant replies of turns ``0 .. turn-1`` (at least ``turn`` of
    them; extra ones are ignored). Turn 0 is :func:`baseline_messages`. Turn t >= 1 is::

        system, user: query, assistant: history[0],
        user: edit prompt of instruction 1, assistant: history[1], ...,
        user: edit prompt of instruction t

    Raises ParameterError if ``history`` is too short or the task has fewer than ``turn``
    instructions.
    """
    _check_k(problem, turn)
    if len(history) < turn:
        raise ParameterError(
            f"{problem.task_id}: multi-turn turn {turn} needs the {turn} earlier replies, "
            f"got {len(history)}"
        )
    messages: list[Message] = list(baseline_messages(problem, setup))
    for t in range(1, turn + 1):
        messages.append({"role": "assistant", "content": history[t - 1]})
        messages.append({"role": "user", "content": edit_prompt(problem, t)})
    return tuple(messages)


def protocol_messages(
    problem: Problem,
    protocol: str,
    k: int,
    history: Sequence[str] = (),
    setup: GenerationSetup | None = None,
) -> tuple[Message, ...]:
    """Dispatch: ``baseline`` -> :func:`baseline_messages`; ``single`` ->
    :func:`single_turn_messages` (k); ``multi`` -> :func:`multi_turn_messages` (history, k)."""
    if protocol == "baseline":
        return baseline_messages(problem, setup)
    if protocol == "single":
        return single_turn_messages(problem, k, setup)
    if protocol == "multi":
        return multi_turn_messages(problem, history, k, setup)
    raise ParameterError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")


def request_contradictions(problem: Problem, setup: GenerationSetup | None = None) -> list[tuple[str, str]]:
    """The contradictory (instruction, phrase) pairs between ``problem``'s instructions and
    the system prompt and query that every request of the task carries under ``setup``."""
    texts = (_system(setup), query(problem, _live(setup)))
    return contradictions(texts, (ref.id for ref in problem.instructions))
