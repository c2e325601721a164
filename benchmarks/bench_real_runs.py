#!/usr/bin/env python3
"""Real runs against a local OpenAI-compatible server: fail fast, skipped tasks, concurrency,
duplicate requests under ``-n 2``.

Every scenario runs ``python -m pytest --vibe-model openai:MODEL --vibe-base-url URL ...`` in a
subprocess against a real HTTP server started here (``http.server``; the ``openai`` SDK talks to
it over TCP), and prints what the issue asks to compare before and after a change:

- ``404``: a wrong model name on ``bigvibebench-lite`` (150 items): requests the server saw,
  wall time, lines of output, exit status;
- ``dead``: a base URL where nothing listens: wall time, exit status;
- ``skipped``: ``bigvibebench`` limited to 40 tasks, baseline only: requests sent for tasks
  whose modules are missing here (they are skipped anyway);
- ``concurrency``: replies delayed 0.3 s and 1 s, ``--vibe-concurrency`` 1, 4 and 16 on the same
  workload; wall time and the speed-up against concurrency 1 (measured in the same run), the
  span of the requests at the server, the fixed part of the wall time (before the first
  request, after the last one) and the CPU time of the run (the pytest process and the
  processes it waited for: Ruff, the sandbox), with the load average of the machine: on a
  shared machine the fixed part's wall time grows with the load, its CPU time does not;
- ``dupes``: ``-n 2`` on a cold cache: requests with the same body sent more than once.

``--python`` and ``--repo`` choose the interpreter and checkout to measure (default: this one), so
the same script measures an older checkout as the baseline. The runs write bytecode as a user's
environment does (``PYTHONDONTWRITEBYTECODE`` is not passed on: without it every run recompiles
the plugin's modules, which pytest rewrites as those of a pytest11 plugin).

Usage: python benchmarks/bench_real_runs.py [--python PY] [--repo DIR] [--distinct-replies] [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
#: ``--distinct-replies``: the concurrency scenario's server answers each request with code of
#: its own (:func:`reply_for`), so every item's code is verified and tested, none shared
DISTINCT = False
REPLY = "```python\ndef task_func(*args, **kwargs):\n    return None\n```"


def reply_for(body: dict[str, Any], distinct: bool) -> str:
    """:data:`REPLY`, or with ``distinct`` a version of it of its own per request (as a model's
    code differs per task: nothing is shared by the verdict memo), the same for the same request
    (so a warm-up run fills the sandbox's result cache)."""
    if not distinct:
        return REPLY
    tag = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()[:12]
    return f"```python\ndef task_func(*args, **kwargs):\n    x_{tag} = None\n    return x_{tag}\n```"


class Server:
    """An OpenAI-compatible chat server on 127.0.0.1: answers ``model`` after ``delay_s``
    seconds (:func:`reply_for`), 404 for any other model; records every request body."""

    def __init__(self, model: str = "known", delay_s: float = 0.0, distinct: bool = False) -> None:
        self.model = model
        self.delay_s = delay_s
        self.distinct = distinct
        self.bodies: list[dict[str, Any]] = []
        self.inflight = 0
        self.max_inflight = 0
        self.first = self.last = 0.0
        self._lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw or b"{}")
                with srv._lock:
                    srv.bodies.append(body)
                    srv.first = srv.first or time.perf_counter()
                    srv.inflight += 1
                    srv.max_inflight = max(srv.max_inflight, srv.inflight)
                out: dict[str, Any]
                try:
                    if body.get("model") != srv.model:
                        status, out = 404, {"error": {
                            "message": f"The model `{body.get('model')}` does not exist",
                            "type": "invalid_request_error", "code": "model_not_found"}}
                    else:
                        time.sleep(srv.delay_s)
                        status, out = 200, {
                            "id": "x", "object": "chat.completion", "created": 0, "model": srv.model,
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant",
                                                     "content": reply_for(body, srv.distinct)}}],
                            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                        }
                    data = json.dumps(out).encode()
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    with srv._lock:
                        srv.inflight -= 1
                        srv.last = time.perf_counter()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def run(py: str, repo: Path, model: str, url: str, *args: str, timeout: float = 900,
        folder: Path | None = None) -> dict[str, Any]:
    """One pytest run in a fresh folder (or ``folder``, whose generation cache is removed first);
    returns wall time, exit status and output lines."""
    with tempfile.TemporaryDirectory(prefix="vibe-bench-") as scratch:
        tmp = str(folder or scratch)
        Path(tmp).chmod(0o755)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{tmp}/.vibecheck/cache.sqlite{suffix}").unlink(missing_ok=True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("VIBECHECK_", "OPENAI_", "PYTEST_")) and k != "PYTHONDONTWRITEBYTECODE"}
        env["OPENAI_API_KEY"] = "sk-local-test"
        env["VIBECHECK_TIMEOUT"] = "30"
        cmd = [py, "-m", "pytest", "-p", "no:cacheprovider", f"--rootdir={tmp}", "-q",
               f"--vibe-model=openai:{model}", f"--vibe-base-url={url}",
               f"--vibe-cache={tmp}/.vibecheck/cache.sqlite", *args]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout, check=False)
        t1 = time.perf_counter()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = done.stdout + done.stderr
    return {"wall_s": round(t1 - t0, 2), "t0": t0, "t1": t1, "cpu_s": round(cpu, 2), "rc": done.returncode,
            "lines": len(out.splitlines()), "tail": out.splitlines()[-3:]}


def scenario_404(py: str, repo: Path) -> None:
    srv = Server(model="known")
    try:
        r = run(py, repo, "no-such-model", srv.url, "--vibe-suite=bigvibebench-lite")
    finally:
        srv.close()
    print(f"404 run: requests {len(srv.bodies)}, wall {r['wall_s']} s, output lines {r['lines']}, exit {r['rc']}")
    print("   last lines:", *r["tail"], sep="\n     ")


def scenario_dead(py: str, repo: Path) -> None:
    r = run(py, repo, "known", dead_url(), "--vibe-suite=bigvibebench-lite")
    print(f"dead URL run: wall {r['wall_s']} s, output lines {r['lines']}, exit {r['rc']}")
    print("   last lines:", *r["tail"], sep="\n     ")


def _missing(py: str, repo: Path) -> set[str]:
    code = (
        "import json,sys\n"
        "try:\n from pytest_vibecheck.execute.envcheck import check_environment\n"
        "except ImportError:\n from pytest_vibecheck.envcheck import check_environment\n"
        "try:\n from pytest_vibecheck.suites.store import load_suite\n"
        "except ImportError:\n from pytest_vibecheck.suites import load_suite\n"
        "s=load_suite('bigvibebench')\n"
        "r=check_environment(s.problems[:40],'bigvibebench')\n"
        "print(json.dumps(list(r.skipped)))\n"
    )
    out = subprocess.run([py, "-c", code], cwd=repo, capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def scenario_skipped(py: str, repo: Path) -> None:
    skipped = _missing(py, repo)
    srv = Server(model="known")
    try:
        r = run(py, repo, "known", srv.url, "--vibe-suite=bigvibebench", "--vibe-limit=40",
                "--vibe-protocol=baseline")
    finally:
        srv.close()
    prompts = [json.dumps(b.get("messages")) for b in srv.bodies]
    # a request belongs to a task when the task's prompt is in it; count requests for skipped tasks
    code = (
        "import json,sys\n"
        "try:\n from pytest_vibecheck.suites.store import load_suite\n"
        "except ImportError:\n from pytest_vibecheck.suites import load_suite\n"
        "s=load_suite('bigvibebench')\n"
        "print(json.dumps({p.task_id: p.prompt[:200] for p in s.problems[:40]}))\n"
    )
    heads = json.loads(subprocess.run([py, "-c", code], cwd=repo, capture_output=True, text=True, check=True).stdout)
    paid = sum(1 for t in skipped for p in prompts if json.dumps(heads[t])[1:-1][:120] in p)
    print(f"skipped tasks: {len(skipped)} of 40 cannot run here; requests sent {len(srv.bodies)}, "
          f"of which for those tasks {paid}; wall {r['wall_s']} s, exit {r['rc']}")


def scenario_concurrency(py: str, repo: Path) -> None:
    args = ("--vibe-suite=bigvibebench-lite", "--vibe-limit=48", "--vibe-protocol=baseline,single", "--vibe-k=1")
    print("concurrency (bigvibebench-lite, 48 tasks, baseline + single-turn k=1: 96 requests; the sandbox's")
    print("calibration and result caches warmed once, the generation cache cold in every run;")
    print("fixed = wall time before the first request + after the last; cpu = the run's CPU time):")
    print(f"  {'delay':>5} {'c':>3} {'wall s':>7} {'speed-up':>8} {'span s':>7} {'speed-up':>8} {'in flight':>9} "
          f"{'fixed s':>7} {'to 1st':>6} {'after':>6} {'cpu s':>6} {'load':>5}")
    with tempfile.TemporaryDirectory(prefix="vibe-bench-warm-") as warm:
        srv = Server(model="known", distinct=DISTINCT)
        try:
            run(py, repo, "known", srv.url, *args, "--vibe-concurrency=16", folder=Path(warm))
        finally:
            srv.close()
        for delay in (0.3, 1.0):
            base: tuple[float, float] | None = None
            for c in (1, 4, 16):
                srv = Server(model="known", delay_s=delay, distinct=DISTINCT)
                try:
                    r = run(py, repo, "known", srv.url, *args, f"--vibe-concurrency={c}", folder=Path(warm))
                finally:
                    srv.close()
                span = srv.last - srv.first
                to_first, after_last = srv.first - r["t0"], r["t1"] - srv.last
                base = base or (r["wall_s"], span)
                print(f"  {delay:>5} {c:>3} {r['wall_s']:>7} {base[0] / r['wall_s']:>7.1f}x {span:>7.1f} "
                      f"{base[1] / span:>7.1f}x {srv.max_inflight:>9} {to_first + after_last:>7.1f} {to_first:>6.1f} "
                      f"{after_last:>6.1f} {r['cpu_s']:>6.2f} {os.getloadavg()[0]:>5.1f}"
                      f"  (requests {len(srv.bodies)}, exit {r['rc']})")
                sys.stdout.flush()


def scenario_dupes(py: str, repo: Path) -> None:
    srv = Server(model="known", delay_s=0.3)
    try:
        r = run(py, repo, "known", srv.url, "--vibe-suite=bigvibebench-lite", "--vibe-limit=10",
                "--vibe-k=2", "-n", "2")
    finally:
        srv.close()
    keys = Counter(hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest() for b in srv.bodies)
    dupes = sum(n - 1 for n in keys.values() if n > 1)
    print(f"-n 2 cold cache: requests {len(srv.bodies)}, distinct {len(keys)}, duplicates {dupes}; "
          f"wall {r['wall_s']} s, exit {r['rc']}")


SCENARIOS = {"404": scenario_404, "dead": scenario_dead, "skipped": scenario_skipped,
             "concurrency": scenario_concurrency, "dupes": scenario_dupes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--distinct-replies", action="store_true",
                    help="concurrency: code of its own in every reply (nothing shared by the verdict memo)")
    ap.add_argument("scenarios", nargs="*", help=f"some of {', '.join(SCENARIOS)} (default: all)")
    a = ap.parse_args()
    global DISTINCT
    DISTINCT = a.distinct_replies
    unknown = [s for s in a.scenarios if s not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario {unknown[0]!r}; choose from {', '.join(SCENARIOS)}")
    for name in a.scenarios or list(SCENARIOS):
        SCENARIOS[name](a.python, a.repo)
        sys.stdout.flush()


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        main()
    finally:
        print(run_context())
