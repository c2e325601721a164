"""The shared vocabulary of pytest-vibecheck, defined once.

Every layer (settings, generation, verification, execution, reports) imports these names from
here; each ``Literal`` type has a tuple of its values in the documented order, so validators and
help texts can list them (``", ".join(PROTOCOLS)``) and ``typing.get_args`` agrees with them (a
test checks that).
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "CACHE_MODES",
    "ERROR_KINDS",
    "EXTRACT_MODES",
    "OUTCOMES",
    "PROTOCOLS",
    "TEST_STATUSES",
    "CacheMode",
    "ErrorKind",
    "ExtractMode",
    "Outcome",
    "ParamValue",
    "ProtocolName",
    "TestStatus",
]

#: The value of an instruction parameter (``max_branches = 3``, ``convention = "google"``):
#: an instruction's parameters are ``dict[str, ParamValue]`` once validated (verify/params.py).
ParamValue = int | str

#: The evaluation protocols of Vibe Checker (paper §3.2): ``baseline`` (the plain query, no
#: instruction given), ``single`` (single-turn: all k instructions in the query) and ``multi``
#: (multi-turn: one edit turn per instruction).
ProtocolName = Literal["baseline", "single", "multi"]
PROTOCOLS: tuple[ProtocolName, ...] = ("baseline", "single", "multi")

#: Generation cache modes (docs/generation.md): ``use`` reads and writes on a miss, ``refresh``
#: ignores rows from earlier runs, ``only`` never calls a backend (a miss is an error), ``off``
#: neither reads nor writes.
CacheMode = Literal["use", "refresh", "only", "off"]
CACHE_MODES: tuple[CacheMode, ...] = ("use", "refresh", "only", "off")

#: How the code is taken from a reply (docs/verifiers.md): the ``first`` Python block, or the
#: ``best`` one (the block defining the entry point).
ExtractMode = Literal["first", "best"]
EXTRACT_MODES: tuple[ExtractMode, ...] = ("first", "best")

#: The status of one test run of a candidate program in the sandbox (``tampered``: the code
#: went for its grader, a model failure; docs/sandbox.md, "Verdict integrity").
TestStatus = Literal["passed", "failed", "timeout", "tampered", "error", "skipped"]
TEST_STATUSES: tuple[TestStatus, ...] = (
    "passed", "failed", "timeout", "tampered", "error", "skipped",
)

#: The pytest outcome of one report item (an ``error`` is infrastructure, never a model failure).
Outcome = Literal["passed", "failed", "error", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "error", "skipped")

#: Why an item could not be judged (an infrastructure failure, left out of the metrics).
ErrorKind = Literal[
    "api_error",
    "rate_limit",
    "cache_miss",
    "replay_miss",
    "backend_error",
    "sandbox_error",
    "verifier_error",
    "internal_error",
]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)
