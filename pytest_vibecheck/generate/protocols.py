"""The messages of the three evaluation protocols (paper §3.2).

- **baseline** (k = 0): system prompt + the task's query. Its reply is the 0-instruction
  generation whose pass@1 is S0.
- **single-turn** (k >= 1): system prompt + the query followed by
  ``"\\n\\nAlso, generate the code to meet the following requirements:\\n1. ...\\n2. ..."``
  with the single-turn prompts of the task's first k instructions.
- **multi-turn**: turn 0 is the plain query (exactly the baseline messages, so its reply is
  shared with the baseline through the generation cache); then one user turn per
  instruction carrying its multi-turn edit prompt alone, with every earlier assistant reply
  in the history. The code after k edit turns is judged against all k instructions.

Labels name a (protocol, k) for replay look-ups and messages: ``"baseline"``,
``"single-k3"``, ``"multi-k2"``; multi-turn k = 0 and single-turn k = 0 are ``"baseline"``.

:data:`PROMPT_VERSION` is part of every generation-cache key: change it whenever the wording
below changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.generate.backends.base import Message
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.types import PROTOCOLS
from pytest_vibecheck.verify.params import render_prompt

#: Version of the prompt wording; part of the generation-cache key.
PROMPT_VERSION = "vibecheck-prompts-1"

#: The system prompt of every protocol (paper §3.2; wording ours, same requirements).
SYSTEM_PROMPT = (
    "You are an expert code-generation assistant. Your goal is to give a complete, runnable "
    "code solution for every request.\n"
    "\n"
    "Reply in one of two formats:\n"
    "1. If your reply contains any text besides the code, put the entire code solution in the "
    "first ```python code block.\n"
    "2. If your reply is only the code, give the raw code with no Markdown and no other text.\n"
    "\n"
    "When you write or edit code, satisfy all of the user's instructions from the whole "
    "conversation while keeping the functionality intact, and always give the complete code, "
    "even if nothing needs to change."
)

#: The sentence that introduces the numbered requirements of a single-turn prompt.
SINGLE_TURN_HEADER = "Also, generate the code to meet the following requirements:"


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


def baseline_messages(problem: Problem) -> tuple[Message, ...]:
    """``(system, user: query)``: the 0-instruction request (paper §3.2)."""
    return (
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": problem.prompt},
    )


def single_turn_prompt(problem: Problem, k: int) -> str:
    """The single-turn user message: the query, a blank line, then
    ``"Also, generate the code to meet the following requirements:"`` and the single-turn
    prompts of instructions 1..k, numbered ``1.`` to ``k.`` one per line. k = 0 gives the
    plain query. Raises ParameterError if the task has fewer than k instructions."""
    _check_k(problem, k)
    if k == 0:
        return problem.prompt
    lines = [
        f"{i}. {render_prompt(ref.id, ref.params, 'single')}"
        for i, ref in enumerate(problem.instructions[:k], start=1)
    ]
    return problem.prompt + "\n\n" + SINGLE_TURN_HEADER + "\n" + "\n".join(lines)


def single_turn_messages(problem: Problem, k: int) -> tuple[Message, ...]:
    """``(system, user: query + numbered requirements 1..k)``; k = 0 is the baseline."""
    return (
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": single_turn_prompt(problem, k)},
    )


def edit_prompt(problem: Problem, position: int) -> str:
    """The multi-turn edit request of instruction ``position`` (1-based) alone."""
    _check_k(problem, position)
    if position < 1:
        raise ParameterError(f"{problem.task_id}: instruction positions start at 1, got {position}")
    ref = problem.instructions[position - 1]
    return render_prompt(ref.id, ref.params, "multi")


def multi_turn_messages(problem: Problem, history: Sequence[str], turn: int) -> tuple[Message, ...]:
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
    messages: list[Message] = list(baseline_messages(problem))
    for t in range(1, turn + 1):
        messages.append({"role": "assistant", "content": history[t - 1]})
        messages.append({"role": "user", "content": edit_prompt(problem, t)})
    return tuple(messages)


def protocol_messages(
    problem: Problem, protocol: str, k: int, history: Sequence[str] = ()
) -> tuple[Message, ...]:
    """Dispatch: ``baseline`` -> :func:`baseline_messages`; ``single`` ->
    :func:`single_turn_messages` (k); ``multi`` -> :func:`multi_turn_messages` (history, k)."""
    if protocol == "baseline":
        return baseline_messages(problem)
    if protocol == "single":
        return single_turn_messages(problem, k)
    if protocol == "multi":
        return multi_turn_messages(problem, history, k)
    raise ParameterError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
