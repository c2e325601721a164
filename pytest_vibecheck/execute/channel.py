"""Reading the sandbox's result channel within bounds (``docs/sandbox.md``, "Verdict integrity").

The sandbox writes its facts and its result as *sealed* lines on a pipe: ``MAC JSON`` where MAC
is the keyed BLAKE2b (16 bytes, hex) of the JSON text under a key made for that run and known
only to the evaluator and to the harness's main thread (``_child/boot.py``, ``Channel``).
:func:`read_channel` keeps the sealed lines and reports every other byte as a problem: code
under test that writes to the pipe can add bytes, never a result. It never raises, whatever the
bytes: it reads at most the cap it is given, parses only sealed lines, and bounds each parsed
value (nesting depth, integer digits, container sizes).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

#: ``person`` parameter of the seal (``_child/boot.py`` uses the same).
SEAL_PERSON = b"vibecheck-rc1"

#: Bounds on a parsed value: nesting depth, integer digits, items per container.
MAX_DEPTH = 16
MAX_INT_DIGITS = 40
MAX_ITEMS = 100_000


@dataclass(frozen=True)
class ChannelRead:
    """What the channel held: the bootstrap's facts (``boot``) or its failure
    (``boot_error``), the job's result (``job``, a dict: a harness's one result line, or a
    runner's event lines gathered as ``{"events": True, "import": ..., "cases": [...],
    "end": ...}``) and every problem found (bytes that
    are not sealed lines, more than one result, values out of bounds); ``started``: the
    harness said that candidate code runs from then on."""

    boot: dict[str, Any] | None
    boot_error: str | None
    job: dict[str, Any] | None
    problems: tuple[str, ...]
    started: bool = False


def seal(raw: bytes, key: bytes) -> bytes:
    """The hex MAC of ``raw`` under ``key`` (what the sandbox puts before each line)."""
    return hashlib.blake2b(raw, key=key, digest_size=16, person=SEAL_PERSON).hexdigest().encode()


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)


def _within_bounds(value: Any, depth: int = 0) -> bool:
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, dict):
        return len(value) <= MAX_ITEMS and all(_within_bounds(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return len(value) <= MAX_ITEMS and all(_within_bounds(v, depth + 1) for v in value)
    return True


def _parse(raw: bytes) -> tuple[Any, str | None]:
    try:
        value = json.loads(raw.decode("utf-8", "replace"), parse_int=_parse_int)
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"a sealed line that is not valid JSON ({type(exc).__name__})"
    if not _within_bounds(value):
        return None, "a sealed line nested too deeply or too large"
    return value, None


#: Keys of the lines a runner (``_child/runner.py``) writes one by one instead of one result:
#: they are gathered into one job record (``import``, ``cases``, ``end``, ``harness_error``).
EVENT_KEYS = frozenset({"case", "import", "end", "harness_error"})


def case_line(line: bytes, key: bytes) -> dict[str, Any] | None:
    """The case of a sealed ``{"case": {...}}`` line (a runner's case as it arrives), else
    None (an unsealed line, or another one). Never raises."""
    mac, _, raw = line.partition(b" ")
    if not hmac.compare_digest(mac, seal(raw, key)):
        return None
    value, problem = _parse(raw)
    if problem is not None or not isinstance(value, dict) or len(value) != 1:
        return None
    case = value.get("case")
    return case if isinstance(case, dict) else None


def _event(job: dict[str, Any] | None, value: dict[str, Any]) -> dict[str, Any]:
    """``job`` (a runner's record so far) with the event ``value`` added."""
    job = job if job is not None else {"events": True, "cases": []}
    (name, body), = value.items()
    if name == "case":
        job["cases"].append(body)
    else:
        job[name] = body
    return job


def read_channel(data: bytes, total: int, key: bytes, cap: int) -> ChannelRead:
    """Split ``data`` (the first ``cap`` bytes of ``total`` read from the channel) into
    sealed lines and problems. Never raises."""
    problems: list[str] = []
    if total > cap:
        problems.append(f"the result channel held {total} bytes, more than the {cap} read")
    boot: dict[str, Any] | None = None
    boot_error: str | None = None
    job: dict[str, Any] | None = None
    lines = data.split(b"\n")
    tail = lines.pop()
    if tail and total <= cap:
        problems.append("bytes after the last line of the result channel")
    foreign = 0
    started = False
    for line in lines:
        mac, _, raw = line.partition(b" ")
        if not hmac.compare_digest(mac, seal(raw, key)):
            foreign += 1
            continue
        value, problem = _parse(raw)
        if problem is not None:
            problems.append(problem)
            continue
        if not isinstance(value, dict):
            problems.append("a sealed line that is not a JSON object")
        elif boot is None and boot_error is None and "boot" in value:
            boot = value["boot"] if isinstance(value["boot"], dict) else {}
        elif boot is None and boot_error is None and "boot_error" in value:
            boot_error = str(value["boot_error"])[:2000]
        elif boot is not None and job is None and value == {"started": True} and not started:
            started = True
        elif boot is not None and len(value) == 1 and next(iter(value)) in EVENT_KEYS and (
            job is None or "events" in job
        ):
            job = _event(job, value)
        elif job is None and boot is not None:
            job = value
        else:
            problems.append("more than one result on the result channel")
    if foreign:
        problems.append(f"{foreign} line(s) on the result channel that the harness did not write")
    return ChannelRead(boot, boot_error, job, tuple(problems), started)
