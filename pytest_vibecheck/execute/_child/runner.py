"""The candidate's side of a test run that is judged elsewhere (standard library only).

Loaded by the sandbox bootstrap, which calls ``main(payload, out)``. This process (the
*monitor*) never runs candidate code and never sees an expected output or a test: it forks the
candidate's process(es), gives them only the inputs, and sends what came back, with the time it
took, on the sealed result channel ``out``. The verdict is made where the expected values are
(the evaluator, or the judge of ``judge.py``), so nothing the candidate does in its own process
can change it; only its output can. Modes (``payload["mode"]``):

``stdin``
    LiveCodeBench standard-input programs: each case in a fresh process forked from this one,
    the program run as ``__main__`` with the case as its real standard input (``sys.stdin.buffer``
    and ``open(0)`` work) and its standard output in a file. One line per case::

        {"case": {"n": k, "outcome": "ok" | "timeout" | "error" | "too_long",
                  "out": stdout text, "message": str, "missing": str, "time_s": float}}

``calls``
    LiveCodeBench call-based tests: one process imports the candidate (as module
    ``__candidate__``) and calls the entry point with the arguments of each case, in order
    (``Solution()`` made once, as LiveCodeBench does); what it returned comes back as JSON with
    its tuples marked (``wire.mark_tuples``). This process times every case by the arrival of its
    answer, so the candidate cannot stretch its time limit. Lines as above, ``out`` holding the
    JSON text of the value, plus ``"repr"``.

``serve``
    HumanEval-style ``check(candidate)``: one process imports the candidate and answers the
    judge's calls on the two pipes it was given (``payload["fd_req"]``, ``payload["fd_rep"]``),
    in :mod:`wire` frames. The judge decides everything; this process only waits.

Every mode first writes ``{"started": true}`` (candidate code runs from then on) and last
``{"end": {"test_time_s": ..., "cpu_time_s": ...}}`` (a line the candidate could forge only by
its own output). A candidate's process keeps descriptors 0-2 (and, serving, its two pipes) and
nothing else: not the result channel.
"""

# ruff: noqa: PTH100, PTH118, PTH120, PTH123
# (os.path, not pathlib: the sandbox's scripts keep their imports to the minimum they need.)

from __future__ import annotations

import builtins
import contextlib
import json
import os
import select
import signal
import sys
import tempfile
import time
import types
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sibling(name: str) -> types.ModuleType:
    """A sibling file loaded by path (this file is itself run by path in the sandbox)."""
    path = os.path.join(_HERE, name + ".py")
    source = globals().get("_VIBECHECK_SOURCES", {}).get(name + ".py")
    if source is None:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    module = types.ModuleType("_vibecheck_" + name)
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module


wire = _sibling("wire")
report = _sibling("report")

#: Frames of these files are left out of the candidate's tracebacks.
HIDDEN = frozenset({os.path.join(_HERE, n) for n in ("runner.py", "wire.py", "report.py", "boot.py",
                                                    "zygote.py")})
CANDIDATE_FILE = "candidate.py"
_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGCHLD")


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _immune() -> None:
    """The monitor ignores the signals a candidate's process could send it (SIGKILL and
    SIGSTOP cannot be ignored: they end the run without a result, the candidate's failure)."""
    for name in _SIGNALS:
        if name != "SIGCHLD":
            with contextlib.suppress(OSError, ValueError):
                signal.signal(getattr(signal, name), signal.SIG_IGN)


def _candidate_process(keep: dict[int, int]) -> None:
    """In a forked candidate process: default signal handling, descriptor ``target`` =
    ``keep[target]`` for each entry, every other descriptor above 2 closed."""
    signal.setitimer(signal.ITIMER_REAL, 0)
    for name in _SIGNALS:
        with contextlib.suppress(OSError, ValueError):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    import fcntl

    base = max(keep) + 1
    high = {target: fcntl.fcntl(fd, fcntl.F_DUPFD, base) for target, fd in keep.items()}
    for target, fd in high.items():
        os.dup2(fd, target)
        os.close(fd)
    top = max([2, *keep])
    os.closerange(top + 1, 1 << 16)
    for fd in range(3, top):
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _own_source(code: str) -> None:
    """The candidate's source in ``linecache``, for its tracebacks and ``inspect``."""
    import linecache

    linecache.cache[CANDIDATE_FILE] = (len(code), None, code.splitlines(True), CANDIDATE_FILE)


def _new_module(name: str) -> dict[str, Any]:
    module = types.ModuleType(name)
    module.__dict__.update({"__builtins__": builtins, "__file__": CANDIDATE_FILE,
                            "__package__": None, "__doc__": None})
    sys.modules[name] = module
    return module.__dict__


def _join_threads() -> None:
    import threading

    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()


def _wait(pid: int, deadline: float) -> int | None:
    """The wait status of ``pid``, or None when ``deadline`` passed first (then it is killed)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if pidfd >= 0:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                if poller.poll(int(left * 1000) + 1):
                    return os.waitpid(pid, 0)[1]
            else:  # pragma: no cover - kernels before 5.3
                got, status = os.waitpid(pid, os.WNOHANG)
                if got:
                    return status
                time.sleep(min(0.005, left))
    finally:
        if pidfd >= 0:
            os.close(pidfd)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def _line(out: Any, value: dict[str, Any]) -> None:
    out.write(json.dumps(value, allow_nan=True) + "\n")


# --------------------------------------------------------------------------------- stdin


def _stdin_child(code: Any, source: str, fin: int, fout: int, ferr: int) -> None:
    """A case's process: run ``code`` as ``__main__`` on the case's stdin; never returns.
    Exit status 0 (done), 3 (``SystemExit`` with a status), 2 (an exception: its traceback,
    with the missing module after a NUL line, on stderr)."""
    status = 0
    try:
        _candidate_process({0: fin, 1: fout, 2: ferr})
        _own_source(source)
        namespace = {"__name__": "__main__", "__builtins__": builtins, "__file__": CANDIDATE_FILE}
        try:
            exec(code, namespace)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                status = 3
        except BaseException as exc:
            status = 2
            with contextlib.suppress(BaseException):
                text = report.describe(exc, HIDDEN)
                os.write(2, ("\n\0" + report.missing(exc) + "\0" + text + "\n").encode(
                    "utf-8", "replace"))
        _join_threads()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            status = status or 2
    finally:
        os._exit(status)


def _stdin_case(code: Any, source: str, data: str, limit: float, max_out: int) -> dict[str, Any]:
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, \
            tempfile.TemporaryFile() as ferr:
        fin.write(data.encode("utf-8"))
        fin.seek(0)
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _stdin_child(code, source, fin.fileno(), fout.fileno(), ferr.fileno())
        status = _wait(pid, started + limit)
        elapsed = round(time.monotonic() - started, 6)
        if status is None:
            return {"outcome": "timeout", "message": f"time limit of {limit:g} s exceeded",
                    "time_s": elapsed}
        fout.seek(0)
        raw = fout.read(max_out + 1)
        ferr.seek(0)
        err = ferr.read(1 << 20).decode("utf-8", "replace")
    code_ = os.waitstatus_to_exitcode(status)
    if code_ == 2 or code_ < 0:
        missing, message = "", err[-2000:]
        head, sep, tail = err.rpartition("\n\0")
        if sep:
            missing, _, message = tail.partition("\0")
            message = (head[-1000:] + "\n" + message).strip() if head.strip() else message
        elif code_ < 0:
            message = f"killed by signal {-code_}\n{err[-1500:]}"
        why = message.strip().splitlines()[-1] if message.strip() else f"exit status {code_}"
        return {"outcome": "error", "message": f"runtime error: {why}\n{message[-1500:]}",
                "missing": missing.strip(), "time_s": elapsed}
    if len(raw) > max_out:
        return {"outcome": "too_long", "message": f"more than {max_out} bytes of output",
                "time_s": elapsed}
    return {"outcome": "ok", "out": raw.decode("utf-8", "replace"), "time_s": elapsed}


def _run_stdin(payload: dict[str, Any], out: Any) -> None:
    try:
        code = compile(payload["code"], CANDIDATE_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        _line(out, {"import": ["fail", _compile_error(exc), ""]})
        return
    _line(out, {"import": ["pass", "", ""]})
    limit = float(payload["limit"])
    max_out = int(payload["max_out"])
    for n, data in enumerate(payload["inputs"]):
        result = _stdin_case(code, payload["code"], str(data), limit, max_out)
        result["n"] = n
        _line(out, {"case": result})


def _compile_error(exc: SyntaxError) -> str:
    import traceback

    return "candidate does not compile: " + "".join(traceback.format_exception_only(type(exc),
                                                                                     exc))


# --------------------------------------------------------------------------------- calls


def _describe(exc: BaseException) -> tuple[str, str]:
    try:
        return report.describe(exc, HIDDEN), report.missing(exc)
    except BaseException:
        return f"{type(exc).__name__}", ""


def _calls_child(payload: dict[str, Any], fd: int) -> None:
    """The candidate's process of the ``calls`` mode; never returns. Frames on ``fd``:
    ``{"import": [outcome, message, missing]}``, then per case ``{"ok": JSON, "repr": str}``
    or ``{"raise": message, "missing": str}``."""

    def send(value: dict[str, Any]) -> None:
        wire.send(3, json.dumps(value, allow_nan=True))

    try:
        _candidate_process({3: fd})
        _own_source(payload["code"])
        code = compile(payload["code"], CANDIDATE_FILE, "exec", dont_inherit=True)
        ns = _new_module("__candidate__")
        try:
            exec(code, ns)
        except BaseException as exc:
            message, missing = _describe(exc)
            send({"import": ["fail", "candidate failed to import:\n" + message, missing]})
            os._exit(0)
        try:
            entry = payload["entry"]
            name = str(entry["name"])
            if entry["use_class"]:
                target = getattr(ns["Solution"](), name, None)
            else:
                target = ns.get(name) if name else None
            if not callable(target):
                raise AttributeError(f"the candidate does not define {name!r} "
                                     f"({entry['rule']} entry-point rule)")
        except BaseException as exc:
            message, missing = _describe(exc)
            send({"import": ["fail", message, missing]})
            os._exit(0)
        send({"import": ["pass", "", ""]})
        for args_text in payload["args"]:
            try:
                args = [json.loads(line) for line in str(args_text).split("\n") if line.strip()]
                got = target(*args)
                text = json.dumps(wire.mark_tuples(got), allow_nan=True, default=_json_default)
            except BaseException as exc:
                message, missing = _describe(exc)
                send({"raise": message, "missing": missing})
                continue
            try:
                shown = repr(got)[:300]
            except BaseException:
                shown = "?"
            send({"ok": text, "repr": shown})
    except BaseException:
        pass
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(0)


def _json_default(o: Any) -> Any:
    """JSON for numbers that are not ``int``/``float`` (numpy's): their index or float."""
    import operator

    if hasattr(o, "__index__"):
        return operator.index(o)
    if hasattr(o, "__float__") and not isinstance(o, (str, bytes)):
        return float(o)
    raise TypeError(f"a {type(o).__name__} is not a JSON value")


def _run_calls(payload: dict[str, Any], out: Any) -> None:
    try:
        compile(payload["code"], CANDIDATE_FILE, "exec", dont_inherit=True)
    except SyntaxError as exc:
        _line(out, {"import": ["fail", _compile_error(exc), ""]})
        return
    limit = float(payload["limit"])
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _calls_child(payload, w)
    os.close(w)
    try:
        _monitor_calls(payload, out, r, limit)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)


def _monitor_calls(payload: dict[str, Any], out: Any, fd: int, limit: float) -> None:
    started = time.monotonic()

    def frame(deadline: float) -> dict[str, Any] | str | None:
        try:
            text = wire.recv(fd, deadline)
        except TimeoutError:
            return "timeout"
        except (wire.WireError, OSError):
            return None
        if text is None:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    got = frame(started + limit)
    if got == "timeout":
        _line(out, {"import": ["timeout", f"time limit of {limit:g} s exceeded", ""]})
        return
    if not isinstance(got, dict) or not isinstance(got.get("import"), list):
        _line(out, {"import": ["fail", "the candidate's process ended while importing it", ""]})
        return
    _line(out, {"import": got["import"]})
    if got["import"][:1] != ["pass"]:
        return
    for n in range(len(payload["args"])):
        t0 = time.monotonic()
        got = frame(t0 + limit)
        elapsed = round(time.monotonic() - t0, 6)
        if got == "timeout":
            _line(out, {"case": {"n": n, "outcome": "timeout",
                                 "message": f"time limit of {limit:g} s exceeded",
                                 "time_s": elapsed}})
            return
        if not isinstance(got, dict):
            _line(out, {"case": {"n": n, "outcome": "error", "time_s": elapsed,
                                 "message": "the candidate's process ended during the call"}})
            return
        if "ok" in got:
            _line(out, {"case": {"n": n, "outcome": "ok", "out": str(got["ok"]),
                                 "repr": str(got.get("repr", ""))[:300], "time_s": elapsed}})
        else:
            _line(out, {"case": {"n": n, "outcome": "error", "time_s": elapsed,
                                 "message": str(got.get("raise", ""))[:4000],
                                 "missing": str(got.get("missing", ""))[:500]}})


# --------------------------------------------------------------------------------- serve


def _serve_child(payload: dict[str, Any], req: int, rep: int) -> None:
    """The candidate's process of the ``serve`` mode; never returns. Frames on ``rep``: first
    ``{"import": [outcome, message, missing]}``, then one answer per request:
    ``{"ok": wire value}``, ``{"raise": [type name, message, missing]}`` or
    ``{"error": why the value could not be sent}``. Requests on ``req``:
    ``{"call": name, "args": wire list, "kwargs": wire dict}``."""

    def send(value: dict[str, Any]) -> None:
        wire.send(4, json.dumps(value, allow_nan=True))

    try:
        _candidate_process({3: req, 4: rep})
        _own_source(payload["code"])
        code = compile(payload["code"], CANDIDATE_FILE, "exec", dont_inherit=True)
        ns = _new_module("__candidate__")
        names = [str(n) for n in payload["names"]]
        try:
            exec(code, ns)
        except BaseException as exc:
            message, missing = _describe(exc)
            send({"import": ["fail", "candidate failed to import:\n" + message, missing]})
            os._exit(0)
        for name in names:
            if not callable(ns.get(name)):
                send({"import": ["fail", f"the candidate does not define {name!r}", ""]})
                os._exit(0)
        send({"import": ["pass", "", ""]})
        while True:
            text = wire.recv(3)
            if text is None:
                break
            request = json.loads(text)
            args = wire.loads(request["args"])
            kwargs = wire.loads(request["kwargs"])
            target = ns.get(request["call"]) if request["call"] in names else None
            try:
                got = target(*args, **kwargs)  # type: ignore[misc]
            except BaseException as exc:
                message, missing = _describe(exc)
                send({"raise": [type(exc).__name__ if type(type(exc).__name__) is str else "?",
                                message, missing]})
                continue
            try:
                send({"ok": wire.dumps(got)})
            except BaseException as exc:
                send({"error": f"the value it returned cannot be sent back: {exc}"[:500]})
    except BaseException:
        pass
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(0)


def _run_serve(payload: dict[str, Any], out: Any) -> None:
    req, rep = int(payload["fd_req"]), int(payload["fd_rep"])
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _serve_child(payload, req, rep)
    os.close(req)
    os.close(rep)
    os.waitpid(pid, 0)


RUNNERS = {"stdin": _run_stdin, "calls": _run_calls, "serve": _run_serve}


def main(payload: dict[str, Any], out: Any) -> None:
    """Run ``payload`` (see the module docstring), writing its lines to ``out``."""
    started, cpu0 = time.monotonic(), _cpu()
    _immune()
    limit = payload.get("int_max_str_digits")
    if limit is not None and hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(int(limit))
    out.write('{"started": true}\n')
    try:
        RUNNERS[payload["mode"]](payload, out)
    except BaseException as exc:
        _line(out, {"harness_error": f"runner crashed: {type(exc).__name__}: {exc}"[:500]})
    _line(out, {"end": {"test_time_s": round(time.monotonic() - started, 6),
                        "cpu_time_s": round(_cpu() - cpu0, 6)}})
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)
