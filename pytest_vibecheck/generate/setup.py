"""A suite's generation setup under a profile (:mod:`pytest_vibecheck.suites.profiles`): the
system prompt and temperature resolved, and the check that no request of a suite contradicts
one of its instructions.

The profiles are data of the suites layer; resolving one needs the prompt texts of the
protocols (:mod:`pytest_vibecheck.generate.protocols`), so it happens here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_vibecheck.generate import protocols
from pytest_vibecheck.generate.protocols import request_contradictions
from pytest_vibecheck.suites.profiles import PROFILES, GenerationSetup, Profile
from pytest_vibecheck.suites.store import Suite

__all__ = ["contradictory_pairs", "generation_setup"]


def generation_setup(
    profile: Profile,
    manifest: Mapping[str, Any] | None,
    *,
    temperature: float | None = None,
    system_prompt: str | None = None,
) -> GenerationSetup:
    """Resolve a suite's system prompt and temperature.

    Precedence, first set wins: the user's ``temperature`` / ``system_prompt`` (command line,
    environment, ``[tool.vibecheck]``), the profile's own value, the suite manifest's
    ``generation`` object (``{"temperature": 0.2, "system_prompt": "..."}``), the default
    (0.0 and the paper's BigVibeBench system prompt). Raises ValueError for a manifest value
    of the wrong type.
    """
    gen = (manifest or {}).get("generation") or {}
    if not isinstance(gen, Mapping):
        raise ValueError("manifest field 'generation': expected an object")
    sources: dict[str, str] = {}
    if system_prompt is not None:
        text, sources["system_prompt"] = system_prompt, "setting"
    elif profile.system_prompt is not None:
        text, sources["system_prompt"] = protocols.named_system_prompt(profile.system_prompt), "profile"
    elif gen.get("system_prompt") is not None:
        if not isinstance(gen["system_prompt"], str) or not gen["system_prompt"].strip():
            raise ValueError("manifest field 'generation.system_prompt': expected a non-empty string")
        text, sources["system_prompt"] = gen["system_prompt"], "suite manifest"
    else:
        text, sources["system_prompt"] = protocols.PAPER_SYSTEM_PROMPT, "default"
    if temperature is not None:
        temp, sources["temperature"] = float(temperature), "setting"
    elif profile.temperature is not None:
        temp, sources["temperature"] = profile.temperature, "profile"
    elif gen.get("temperature") is not None:
        value = gen["temperature"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError("manifest field 'generation.temperature': expected a number >= 0")
        temp, sources["temperature"] = float(value), "suite manifest"
    else:
        temp, sources["temperature"] = 0.0, "default"
    return GenerationSetup(profile.name, text, temp, profile.live_prompt, sources)


def contradictory_pairs(suite: Suite) -> list[str]:
    """Every (task, instruction) pair of ``suite`` (a loaded suite) whose system prompt or
    query, under any profile that sends instructions to the suite, contradicts the instruction
    (a query asking for fenced code with ``doc_4``, a system prompt forbidding anything but the
    program with ``doc_6``: :data:`~pytest_vibecheck.suites.queries.FORMAT_DEMANDS`). Each as
    ``"suite/task: doc_4 vs 'phrase' (profile)"``; empty when there is none."""
    found: list[str] = []
    for profile in PROFILES.values():
        if not {"single", "multi"} & set(profile.protocols):
            continue  # never sends an instruction
        setup = generation_setup(profile, suite.manifest)
        for problem in suite.problems:
            if not profile.applies_to(problem.test.kind):
                continue
            for iid, phrase in request_contradictions(problem, setup):
                found.append(f"{suite.name}/{problem.task_id}: {iid} vs {phrase!r} ({profile.name})")
    return found
