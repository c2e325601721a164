"""What the agent is told: the declared instructions as the text to hand a coding agent.

A gate on an agent's pull request is fair when the agent was given the same instructions.
:func:`agent_prompt` renders the repository's declared instructions
(:func:`pytest_vibecheck.ci.declared.load_declared`, the same object the gate checks) with each
instruction's own single-turn wording and its parameters
(:func:`pytest_vibecheck.verify.params.render_prompt`, the sentence the Vibe Checker benchmark
puts in its prompts, paper §3.2), so the prompt and the gate cannot disagree on an id or a
value.

``vibecheck gate-prompt`` prints it, writes it between two marker lines into the repository's
``AGENTS.md`` (the agents.md convention) or ``CLAUDE.md`` (:func:`with_block`), and checks that
a written copy is still current (:func:`block_of`): the copy in the file is the only thing that
can fall behind the config, and the gate's summary says when it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_vibecheck.ci.gate import GateConfig, GateInstruction
from pytest_vibecheck.verify.params import render_prompt

__all__ = [
    "AGENT_FILES",
    "BEGIN",
    "END",
    "agent_prompt",
    "block_of",
    "choose_agent_file",
    "instruction_text",
    "stale_agent_files",
    "with_block",
]

#: The agent instruction files a repository may keep at its root, in the order they are chosen.
AGENT_FILES = ("AGENTS.md", "CLAUDE.md")
BEGIN = "<!-- vibecheck gate-prompt: begin (generated; rewrite with `vibecheck gate-prompt --write`) -->"
END = "<!-- vibecheck gate-prompt: end -->"


def instruction_text(gi: GateInstruction) -> str:
    """One instruction's own single-turn wording with its declared parameters, e.g. ``Keep
    every line at most 100 characters long.``"""
    return render_prompt(gi.id, gi.params, "single")


def _patterns(patterns: Sequence[str]) -> str:
    return ", ".join(f"`{p}`" for p in patterns)


def agent_prompt(config: GateConfig, source: str | None = None) -> str:
    """The Markdown text to hand an agent: a heading, what is checked and how, then the
    instructions numbered in the config's order, each followed by its gate label
    (``style_3:line_length=100``: the name a gate failure reports). ``source`` names the config
    file in the text (default ``config.source``). Ends with one newline."""
    where = source or config.source
    scope = f"Python files matching {_patterns(config.include)}"
    if config.exclude:
        scope += f" (except {_patterns(config.exclude)})"
    lines = [
        "## Code instructions (checked by the vibecheck gate)",
        "",
        f"Every change you make to {scope} must meet the following requirements. The "
        "pull-request gate checks the lines you add or change against exactly these "
        f"instructions (`[tool.vibecheck.gate]` in `{where}`); a violation fails it.",
        "",
    ]
    lines += [f"{n}. {instruction_text(gi)} (`{gi.label()}`)"
              for n, gi in enumerate(config.instructions, start=1)]
    return "\n".join(lines) + "\n"


def _block(prompt: str) -> str:
    return f"{BEGIN}\n{prompt.rstrip()}\n{END}\n"


def block_of(text: str) -> str | None:
    """The generated prompt between the markers of ``text`` (without them), or None."""
    start = text.find(BEGIN)
    end = text.find(END, start + len(BEGIN)) if start >= 0 else -1
    if start < 0 or end < 0:
        return None
    return text[start + len(BEGIN):end].strip("\n") + "\n"


def with_block(existing: str | None, prompt: str) -> str:
    """``existing`` (a file's text, None when there is no file) with ``prompt`` between the
    markers: the block is replaced where it is, or appended after a blank line; everything
    else in the file is kept as it was."""
    block = _block(prompt)
    if not existing:
        return block
    start = existing.find(BEGIN)
    end = existing.find(END, start + len(BEGIN)) if start >= 0 else -1
    if start >= 0 and end >= 0:
        after = existing[end + len(END):]
        return existing[:start] + block + after.removeprefix("\n")
    return existing.rstrip("\n") + "\n\n" + block


def choose_agent_file(root: Path) -> Path:
    """The agent file to write when none is named: the first of :data:`AGENT_FILES` that holds
    a generated block, else the first that exists, else ``AGENTS.md``."""
    present = [root / name for name in AGENT_FILES if (root / name).is_file()]
    for path in present:
        if block_of(path.read_text(encoding="utf-8", errors="replace")) is not None:
            return path
    return present[0] if present else root / AGENT_FILES[0]


def stale_agent_files(root: Path, config: GateConfig, source: str | None = None) -> list[str]:
    """The agent files at ``root`` whose generated block differs from :func:`agent_prompt` now
    (files without a block are not the gate's business)."""
    want = agent_prompt(config, source)
    out = []
    for name in AGENT_FILES:
        path = root / name
        if not path.is_file():
            continue
        try:
            got = block_of(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if got is not None and got != want:
            out.append(name)
    return out
