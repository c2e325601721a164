"""Named profiles: how a suite is run and graded (``--vibe-profile``; ``docs/suites.md``).

A profile fixes everything about a run that is not the model: how LiveCodeBench queries are
worded, the system prompt and temperature (unless the suite's manifest or the user sets
them), the grading rule of LiveCodeBench tests
(``pytest_vibecheck/execute/_child/compare.py``), the per-case time limit, and the protocols
it supports. Its name is recorded in every report item and in the generation-cache key.

- ``paper`` (the default): the Vibe Checker paper's setup (arXiv 2510.07315 §3-§4.1 and the
  authors' released pipeline, maszhongming/SWE-IF) for every suite: the paper's prompts and
  system prompts (from the suite's manifest), temperature 0.0 on BigVibeBench and 0.2 on
  LiveVibeBench (manifest), the single-turn wording of the released code, the paper's
  stdin/call-based grading rule and its 12 s per test case. Where the released harness has a
  defect, ``paper`` keeps the prompt and the metric but not the defect (listed in
  ``docs/suites.md``).
- ``lcb``: LiveCodeBench's own prompt, system prompt, temperature (0.2) and grading rule
  (``lcb_runner``; 6 s per test case), for comparing with LiveCodeBench leaderboards. It
  applies to LiveCodeBench suites only, and runs the baseline protocol only: LiveCodeBench has
  no instructions, and its prompt ("enclose your code within delimiters") and system prompt
  ("You will NOT return anything except for the program") contradict ``doc_4`` and ``doc_6``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_vibecheck.errors import UnknownIdError

__all__ = [
    "DEFAULT_PROFILE",
    "LIVE_KINDS",
    "PROFILES",
    "GenerationSetup",
    "Profile",
    "get_profile",
]

#: The test kinds of LiveCodeBench problems.
LIVE_KINDS: frozenset[str] = frozenset({"stdin", "functional"})


@dataclass(frozen=True)
class Profile:
    """One named profile (see the module docstring).

    - ``grading``: the rule of ``execute/_child/compare.py`` for ``stdin``/``functional`` tests.
    - ``live_prompt``: how a LiveCodeBench query is worded (``"paper"``: the paper's
      "Problem Type" preamble; ``"lcb"``: LiveCodeBench's ``### Question`` template).
    - ``system_prompt``: ``None`` = the suite's (manifest ``generation.system_prompt``, else
      the paper's BigVibeBench system prompt); ``"lcb"`` = LiveCodeBench's.
    - ``temperature``: ``None`` = the suite's (manifest ``generation.temperature``, else 0.0).
    - ``case_time_limit_s``: seconds per test case of ``stdin``/``functional`` tests.
    - ``protocols``: the protocols the profile supports.
    - ``test_kinds``: the test kinds it applies to (``None``: all).
    """

    name: str
    description: str
    grading: str
    live_prompt: str
    system_prompt: str | None
    temperature: float | None
    case_time_limit_s: float
    protocols: tuple[str, ...]
    test_kinds: frozenset[str] | None = None

    def applies_to(self, kind: str) -> bool:
        """Whether the profile can run a suite whose tests are of ``kind``."""
        return self.test_kinds is None or kind in self.test_kinds


PROFILES: dict[str, Profile] = {
    "paper": Profile(
        name="paper",
        description="the Vibe Checker paper's prompts, temperatures and grading (arXiv 2510.07315)",
        grading="paper",
        live_prompt="paper",
        system_prompt=None,
        temperature=None,
        case_time_limit_s=12.0,
        protocols=("baseline", "single", "multi"),
    ),
    "lcb": Profile(
        name="lcb",
        description="LiveCodeBench's own prompt and grading (lcb_runner), baseline only",
        grading="lcb",
        live_prompt="lcb",
        system_prompt="lcb",
        temperature=0.2,
        case_time_limit_s=6.0,
        protocols=("baseline",),
        test_kinds=LIVE_KINDS,
    ),
}

#: The profile of a run that names none: the paper's setup (docs/suites.md says why).
DEFAULT_PROFILE = "paper"


def get_profile(name: str) -> Profile:
    """The profile called ``name``; :class:`UnknownIdError` (with a suggestion) otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownIdError("profile", name, PROFILES) from None


@dataclass(frozen=True)
class GenerationSetup:
    """The generation settings of one suite under one profile, after resolution.

    ``system_prompt`` is the text sent as the system message; ``temperature`` >= 0;
    ``live_prompt`` as in :class:`Profile`; ``sources`` says where the system prompt and the
    temperature came from (``"setting"``, ``"profile"``, ``"suite manifest"``, ``"default"``).
    """

    profile: str
    system_prompt: str
    temperature: float
    live_prompt: str
    sources: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        """Builtins for reports (the system prompt as its sha256, the first 12 hex digits)."""
        import hashlib

        return {
            "profile": self.profile,
            "temperature": self.temperature,
            "system_prompt_sha256": hashlib.sha256(self.system_prompt.encode()).hexdigest()[:12],
            "live_prompt": self.live_prompt,
            "sources": dict(self.sources),
        }
