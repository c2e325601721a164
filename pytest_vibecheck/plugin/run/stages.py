"""The three stages that prepare items (in place, over a batch of :class:`Work`): generate and
extract (concurrently, ``--vibe-concurrency`` at a time), verify (one Ruff batch for every turn),
test (the distinct programs in the sandbox)."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.plugin.run.context import StageContext, VerdictKey
from pytest_vibecheck.plugin.run.failure import VibeInfraError, describe_exception, error_kind
from pytest_vibecheck.plugin.run.record import (
    Turn,
    Work,
    has_no_code,
    new_messages,
    sha256_text,
    tests_dict,
)
from pytest_vibecheck.types import ParamValue
from pytest_vibecheck.verify.nocode import NO_CODE_RULE

if TYPE_CHECKING:
    from pytest_vibecheck.config.settings import VibeSettings
    from pytest_vibecheck.generate.backends.base import Generation, GenerationRequest
    from pytest_vibecheck.plugin.run.spec import ItemSpec, Judged
    from pytest_vibecheck.report.records import TestsRecord, VerdictRecord

__all__ = ["conversation", "extract_stage", "finish", "generate_one", "generate_stage", "not_runnable", "prepare", "test_stage", "verify_stage"]

def not_runnable(spec: ItemSpec) -> str | None:
    """Why the item cannot run here, before any request: the problem has fewer than k
    instructions, or its tests need modules this environment lacks (decided at collection,
    :func:`pytest_vibecheck.execute.envcheck.missing_modules`); None when it can run."""
    if spec.k > len(spec.problem.instructions):
        return (
            f"vibecheck: {spec.problem.task_id} has {len(spec.problem.instructions)} "
            f"instructions, fewer than k = {spec.k}"
        )
    if spec.missing_modules:
        from pytest_vibecheck.execute.envcheck import skip_reason

        return f"vibecheck: {skip_reason(spec.missing_modules)}; not sent to the model"
    return None


#: One generation of an item's conversation: ``(request, turn, k, judged, messages)``.
Step = tuple["GenerationRequest", int, int, "Judged", list[dict[str, str]]]


def conversation(spec: ItemSpec, settings: VibeSettings) -> Generator[Step, Generation, None]:
    """The requests of one item, in order: yields each :data:`Step` and is sent its reply
    (multi-turn replies build on each other, so a turn's request is known only once the
    previous reply is). :func:`_conversation` drives it with direct requests,
    :func:`pytest_vibecheck.plugin.run.waves.batch_waves` with one batch wave per turn."""
    from pytest_vibecheck.generate import protocols
    from pytest_vibecheck.generate.generator import request_for

    def request(messages: Sequence[Mapping[str, str]], label: str) -> GenerationRequest:
        return request_for(
            spec.problem,
            [dict(m) for m in messages],
            label,
            temperature=spec.setup.temperature,
            max_tokens=settings.max_tokens,
            sample=spec.sample,
            profile=spec.setup.profile,
        )

    if spec.protocol != "multi":
        messages = protocols.protocol_messages(spec.problem, spec.protocol, spec.k, setup=spec.setup)
        yield request(messages, protocols.label(spec.protocol, spec.k)), 0, spec.k, spec.instructions, [
            dict(m) for m in messages
        ]
        return
    everything = tuple(
        (i, ref.id, dict(ref.params)) for i, ref in enumerate(spec.problem.instructions, start=1)
    )
    history: list[str] = []
    previous: Sequence[Mapping[str, str]] = ()
    for t in range(spec.k + 1):
        messages = protocols.multi_turn_messages(spec.problem, history, t, spec.setup)
        judged = everything if t == 0 else spec.instructions[:t]
        gen = yield request(messages, protocols.label("multi", t)), t, t, judged, new_messages(previous, messages)
        history.append(gen.text)
        previous = messages


def _conversation(runtime: StageContext, work: Work) -> None:
    """Every generation of one item into ``work.replies`` (sequential: multi-turn replies build
    on each other). Raises what the generator raises."""
    steps = conversation(work.spec, runtime.settings)
    reply: Generation | None = None
    while True:
        try:
            step = steps.send(reply) if reply is not None else next(steps)
        except StopIteration:
            return
        request, t, k, judged, messages = step
        reply = runtime.generate(work.spec.model, request)
        work.replies.append((t, k, reply, judged, messages))


def generate_one(runtime: StageContext, work: Work) -> None:
    """Stage 1 for one item: its generations and extractions, or the reason it is skipped (it
    cannot run here; the run stopped sending requests: "not run") or its infrastructure error."""
    from pytest_vibecheck.generate.backends.base import GenerationError
    from pytest_vibecheck.generate.generator import RunStoppedError

    t0 = time.perf_counter()
    work.skip = not_runnable(work.spec)
    if work.skip is not None:
        return
    try:
        _conversation(runtime, work)
    except RunStoppedError as exc:
        work.replies.clear()
        work.skip = f"vibecheck: not run: {exc}"
    except GenerationError as exc:
        work.error = VibeInfraError(error_kind(exc), str(exc), fatal=bool(getattr(exc, "fatal", False)))
    except VibecheckError as exc:
        work.error = VibeInfraError("backend_error", str(exc))
    except Exception as exc:  # a backend bug or an unmapped SDK error: still not the model's fault
        work.error = VibeInfraError("backend_error", describe_exception(exc))
    finally:
        work.timing["generate"] = time.perf_counter() - t0
    if work.error is not None and not work.error.fatal:
        runtime.guard.item_error()  # may stop the run (--vibe-max-errors)


def generate_stage(runtime: StageContext, works: Sequence[Work], concurrent: bool = True) -> None:
    """Stage 1 for many items, ``--vibe-concurrency`` at a time (one after the other when
    ``concurrent`` is false)."""
    n = min(runtime.settings.concurrency, len(works)) if concurrent else 1
    if n <= 1:
        for w in works:
            generate_one(runtime, w)
        return
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="vibecheck-gen")
    try:
        list(pool.map(lambda w: generate_one(runtime, w), works))
    except BaseException:
        # the item's deadline (pytest-timeout) or an interrupt: do not wait for hung requests
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()



def extract_stage(runtime: StageContext, works: Sequence[Work]) -> None:
    """Stage 1b (in the calling thread): the code of every reply of every live item, as its
    :class:`Turn` (:func:`pytest_vibecheck.verify.extract.extract_code` with ``--vibe-extract``)."""
    from pytest_vibecheck.verify.extract import extract_code

    for w in works:
        if not w.live or w.turns:
            continue
        via_cache = runtime.generators[w.spec.model].uses_cache
        entry = w.spec.problem.entry_point
        for t, k, gen, judged, messages in w.replies:
            ex = extract_code(gen.text, mode=runtime.settings.extract, entry_point=entry)  # type: ignore[arg-type]
            w.turns.append(Turn(t, k, gen, via_cache, ex, has_no_code(ex), judged, messages=messages))


def no_code_tests() -> TestsRecord:
    """The tests of a turn whose reply has no code: failed, without running the sandbox."""
    return {
        "status": "failed",
        "failed_tests": [],
        "message": "the reply contains no code",
        "duration_s": 0.0,
        "cached": False,
    }


def _no_code_verdicts(judged: Judged) -> list[VerdictRecord]:
    return [
        {
            "position": pos,
            "id": iid,
            "passed": False,
            "error": None,
            "violations": [
                {"rule": NO_CODE_RULE, "line": 1, "column": 1, "message": "the reply contains no code"}
            ],
        }
        for pos, iid, _params in judged
    ]


#: Verdicts remembered per process (identical code is judged once: the baseline and multi-turn
#: turn 0 share a reply, and a model often returns the same code on several turns).
MEMO_LIMIT = 100_000

def verify_stage(works: Sequence[Work], memo: dict[VerdictKey, Any] | None = None) -> None:
    """Stage 2: judge every turn of every live item; each distinct (reply, code, instruction,
    params) once, all in one :func:`~pytest_vibecheck.verify.api.verify_batch`."""

    from pytest_vibecheck.verify.api import VerifyItem, verify_batch

    memo = {} if memo is None else memo
    if len(memo) > MEMO_LIMIT:
        memo.clear()
    t0 = time.perf_counter()
    targets: list[tuple[Work, Turn, list[VerdictKey]]] = []
    todo: dict[str, tuple[Turn, Work, dict[VerdictKey, tuple[str, dict[str, ParamValue]]]]] = {}
    for w in works:
        if not w.live:
            continue
        for t in w.turns:
            if t.no_code:
                t.verdicts = _no_code_verdicts(t.judged)
                continue
            if not t.judged:
                continue
            text_key = sha256_text(
                json.dumps([t.generation.text, t.extraction.code, w.spec.problem.entry_point])
            )
            keys: list[VerdictKey] = []
            for _pos, iid, params in t.judged:
                key = (text_key, iid, json.dumps(params, sort_keys=True))
                keys.append(key)
                if key not in memo:
                    entry = todo.setdefault(text_key, (t, w, {}))
                    entry[2][key] = (iid, params)
            targets.append((w, t, keys))
    if todo:
        batch = [
            VerifyItem(
                instructions=list(pending.values()),
                reply=t.generation.text,
                code=t.extraction.code,
                entry_point=w.spec.problem.entry_point,
            )
            for t, w, pending in todo.values()
        ]
        try:
            results = verify_batch(batch)
        except Exception as exc:
            msg = str(exc) if isinstance(exc, VibecheckError) else describe_exception(exc)
            for w, _t, _keys in targets:
                w.error = w.error or VibeInfraError("verifier_error", msg)
            return
        for (_t, _w, pending), verdicts in zip(todo.values(), results, strict=True):
            for key, v in zip(pending, verdicts, strict=True):
                memo[key] = v
    for w, t, keys in targets:
        t.verdicts = []
        for (pos, iid, _params), key in zip(t.judged, keys, strict=True):
            v = memo[key]
            if v.passed is None:
                w.error = w.error or VibeInfraError(
                    "verifier_error", f"{iid} could not be verified: {v.error}"
                )
            t.ruff_version = t.ruff_version or v.ruff_version
            t.verdicts.append(
                {
                    "position": pos,
                    "id": iid,
                    "passed": bool(v.passed),
                    "error": v.error,
                    "violations": [x.to_dict() for x in v.violations],
                }
            )
    judged = {id(w): w for w, _t, _k in targets}
    share = (time.perf_counter() - t0) / max(1, len(judged))
    for w in judged.values():
        w.timing["verify"] += share



def test_stage(runtime: StageContext, works: Sequence[Work]) -> None:
    """Stage 3: start each item's distinct programs on the process's executor
    (:meth:`~pytest_vibecheck.plugin.run.context.StageContext.tests`: the sandbox's
    result cache, longest expected run first). Nothing waits here: :func:`finish_tests` waits
    for one item's own runs when that item is taken, so no item waits for the slowest run of
    its window."""
    live = [w for w in works if w.live]
    if not live:
        return
    try:
        service = runtime.tests()
        service.learn(w.spec.problem for w in live)
        for w in live:
            w.tests_started = time.perf_counter()
            for t in w.turns:
                if t.no_code:  # nothing to run (and code too deep to parse would crash the harness)
                    t.tests = no_code_tests()
                    continue
                code = t.extraction.code
                if code not in w.pending:
                    w.pending[code] = service.submit(code, w.spec.problem)
    except Exception as exc:  # a sandbox bug is an infrastructure failure, never the model's
        msg = str(exc) if isinstance(exc, VibecheckError) else describe_exception(exc)
        for w in live:
            w.error = VibeInfraError("sandbox_error", msg)


def finish_tests(work: Work) -> None:
    """Wait for ``work``'s own test runs and put their results into its turns (an ``error``
    result is an infrastructure error, a ``skipped`` one skips the item)."""
    if not work.pending:
        return
    pending, work.pending = work.pending, {}
    if not work.live:
        return
    try:
        outs = {code: tests_dict(fut.result()) for code, fut in pending.items()}
    except Exception as exc:
        work.error = VibeInfraError("sandbox_error", describe_exception(exc))
        return
    work.timing["tests"] += time.perf_counter() - work.tests_started
    for t in work.turns:
        if t.no_code:
            continue  # failed without running (test_stage)
        tests = outs[t.extraction.code]
        t.tests = tests
        if tests["status"] == "error":
            work.error = VibeInfraError("sandbox_error", tests["message"] or "the sandbox failed")
            break
        if tests["status"] == "skipped":
            work.skip = "vibecheck: " + (tests["message"] or "the tests cannot run in this environment")
            break


def finish(runtime: StageContext, works: Sequence[Work]) -> None:
    """Stages 1b, 2 and 3 over ``works`` whose generations are done (in place; each marked
    ``finished``). Warnings raised by parsing the model's code (``invalid escape sequence``,
    other ``SyntaxWarning`` s) are about the model's code, not the run, and are not shown; the
    code is parsed only here, in the calling thread, so the filter holds."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=SyntaxWarning)
        warnings.filterwarnings("ignore", message="invalid escape sequence", category=DeprecationWarning)
        extract_stage(runtime, works)
        verify_stage(works, runtime.verdicts)
        test_stage(runtime, works)
    for w in works:
        w.finished = True


def prepare(runtime: StageContext, works: Sequence[Work], concurrent: bool = True) -> None:
    """Run every stage over ``works`` (in place): generate, then :func:`finish`, then wait for
    every test run (:func:`finish_tests`)."""
    generate_stage(runtime, works, concurrent)
    finish(runtime, works)
    for w in works:
        finish_tests(w)
