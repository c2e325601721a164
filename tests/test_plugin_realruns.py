"""Real runs against a local OpenAI-compatible HTTP server (the ``openai`` SDK over TCP): a fatal
error stops the run (also under ``-n 2``), a dead base URL fails in seconds, tasks that cannot run
here cost no request, fast replies still go out ``--vibe-concurrency`` at a time, concurrency
adapts to 429s, and one distinct request is sent once across xdist workers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from generation_helpers import FakeAPI, Response, fake_api
from plugin_helpers import tiny_problems, write_tiny_suite

from pytest_vibecheck.generate.backends import (
    BackendSettings,
    Generation,
    GenerationRequest,
    make_backend,
)
from pytest_vibecheck.generate.generator import Generator
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.store import write_suite

pytest.importorskip("openai")

SUITE = ("--vibe-suite", "suite", "-p", "no:randomly")
#: distinct requests of the tiny suite with --vibe-k 1,2: per task, baseline (= multi-turn turn 0),
#: single-turn k=1 and k=2, multi-turn turns 1 and 2 (turn 1 is the same for k=1 and k=2)
DISTINCT = 3 * 5


def completion(text: str = "```python\ndef add(a, b):\n    return a + b\n```") -> dict[str, Any]:
    return {
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


NOT_FOUND = Response(404, {"error": {"message": "The model `nope` does not exist", "code": "model_not_found"}})


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A world-enterable folder outside pytest's 0700 basetemp (the sandbox hides folders under
    /tmp that others cannot enter), with the tiny suite in ``suite/``."""
    with tempfile.TemporaryDirectory(prefix="vibecheck-realruns-") as d:
        Path(d).chmod(0o755)
        (Path(d) / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
        write_tiny_suite(Path(d) / "suite")
        yield Path(d)


class Run:
    """A finished pytest subprocess: ``ret``, ``out`` (stdout), ``lines``."""

    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        self.ret = done.returncode
        self.out = done.stdout
        self.lines = done.stdout.splitlines()
        self.err = done.stderr

    def outcomes(self) -> dict[str, int]:
        return pytest.RunResult(self.ret, self.lines, [], 0.0).parseoutcomes()

    def has(self, pattern: str) -> bool:
        import fnmatch

        return any(fnmatch.fnmatchcase(ln, pattern) for ln in self.lines)


def run(cwd: Path, *args: str, workers: int | None = None) -> Run:
    """pytest in a subprocess (the SDK's HTTP modules stay one copy, unlike an in-process run)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH", "PYTEST_ADDOPTS")}
    env.update(OPENAI_API_KEY="sk-test", VIBECHECK_TIMEOUT="20")
    extra = ["-n", str(workers)] if workers is not None else ["-p", "no:xdist"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra, *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    return Run(done)


def test_fatal_404_stops_every_request_and_the_rest_is_not_run(workdir: Path, api: FakeAPI) -> None:
    api.default = NOT_FOUND
    url = f"http://user:secret@127.0.0.1:{api.port}/v1"
    r = run(workdir, "--vibe-model", "openai:nope", "--vibe-base-url", url, *SUITE,
            "--vibe-k", "1", "--vibe-concurrency", "1", "--vibe-report", "r.json")
    assert len(api.requests) == 1, r.out[-3000:]  # before: one per item (9)
    assert (r.ret, r.outcomes()) == (1, {"errors": 1, "skipped": 8})
    line = (f"openai:nope at {api.url}/v1: HTTP 404: The model `nope` does not exist; check the model "
            "name (--vibe-model) and the base URL (--vibe-base-url) (no further requests are sent to openai:nope)")
    assert f"vibecheck: stopped openai:nope: {line}; 8 items not run" in r.lines
    assert "secret" not in r.out
    assert len([ln for ln in r.lines if ln.startswith("ERROR ")]) == 1  # before: one per item
    report = json.loads((workdir / "r.json").read_text(encoding="utf-8"))
    reasons = {i["skip_reason"] for i in report["items"] if i["outcome"] == "skipped"}
    assert reasons == {f"vibecheck: not run: {line}"}


def test_dead_base_url_is_fatal_within_seconds(workdir: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    r = run(workdir, "--vibe-model", "openai:m", "--vibe-base-url", f"http://127.0.0.1:{port}/v1", *SUITE, "--vibe-k", "1")
    outcomes = r.outcomes()
    assert r.ret == 1
    assert outcomes.get("errors", 0) + outcomes.get("skipped", 0) == 9
    assert outcomes.get("errors", 0) <= 4  # only the requests in flight (--vibe-concurrency 4)
    assert r.has(
        f"vibecheck: stopped openai:m: openai:m at http://127.0.0.1:{port}/v1: cannot connect after 5 "
        "attempts (connection refused or host not found): check --vibe-base-url and that the server is "
        "running (no further requests are sent to openai:m); * items not run"
    ), r.out[-3000:]
    # wall time (the SDK's backoff once, about 6 s; before: once per item): benchmarks/bench_real_runs.py


def test_tasks_that_cannot_run_here_are_skipped_without_a_request(workdir: Path, api: FakeAPI) -> None:
    add = tiny_problems("envsuite")[0]
    needs = Problem(suite="envsuite", task_id="t/needs", prompt="Write f using a missing module.", test=add.test,
                    entry_point="add", canonical_solution=add.canonical_solution, instructions=add.instructions,
                    libs=("vibecheck_absent_module",))
    write_suite(workdir / "envsuite", [add, needs], name="envsuite", description="env", source="tests",
                licence="Apache-2.0", attribution="tests", selector="manual", seed=None, k=3, compress=False)
    api.default = Response(200, completion())
    r = run(workdir, "--vibe-model", "openai:m", "--vibe-base-url", api.url + "/v1", "--vibe-suite", "envsuite",
            "--vibe-protocol", "baseline", "-rs")
    assert len(api.requests) == 1, r.out[-3000:]  # only t/add; before: t/needs was sent too
    assert add.prompt in json.dumps(api.requests[0].body)
    assert r.outcomes() == {"failed": 1, "skipped": 1}
    assert (
        "vibecheck: 1 of 2 tasks cannot run in this environment (missing: vibecheck_absent_module x1); "
        "install 'pytest-vibecheck[exec-full]' or pass --vibe-tasks to leave them out; their items are "
        "skipped without a request"
    ) in r.lines
    assert r.has(
        "SKIPPED * vibecheck: environment: missing module vibecheck_absent_module (pip install "
        "vibecheck_absent_module); not sent to the model"
    )


def test_concurrency_backs_off_on_429_and_recovers(api: FakeAPI) -> None:
    api.default = Response(200, completion(), delay_s=0.05)
    api.cap = 2  # the server answers 2 requests at a time, 429 (Retry-After 0.2 s) beyond
    settings = BackendSettings(base_url=api.url + "/v1", env={}, max_retries=8, timeout_s=20.0)
    gen = Generator(make_backend("openai:m", settings), concurrency=8)
    msgs = ({"role": "user", "content": "Write add."},)
    first = gen.generate_many([GenerationRequest(msgs, extra={"seed": i}) for i in range(24)])
    assert all(isinstance(r, Generation) for r in first)
    assert min(limit for _t, limit in gen.limit.history) <= 2  # halved from 8 on 429s
    rejected = api.rejected
    assert rejected < 24  # before (8 at once, no back-off): several 429s per request
    api.cap = None
    second = gen.generate_many([GenerationRequest(msgs, extra={"seed": 100 + i}) for i in range(48)])
    assert all(isinstance(r, Generation) for r in second)
    assert gen.limit.limit == 8  # grew back, one per round of answered requests


def test_fast_replies_still_go_out_concurrency_at_a_time(workdir: Path, api: FakeAPI) -> None:
    # replies of 0.2 s, under the 0.5 s "slow generation" switch that once ran all but the first
    # --vibe-concurrency requests one at a time (0.3 s replies: 4 was 1.1x faster than 1)
    api.default = Response(200, completion(), delay_s=0.2)
    r = run(workdir, "--vibe-model", "openai:m", "--vibe-base-url", api.url + "/v1", *SUITE,
            "--vibe-k", "1,2", "--vibe-concurrency", "4")
    assert r.outcomes() == {"failed": 15}, r.out[-3000:]  # the reply is `add` for every task
    assert len(api.requests) == DISTINCT
    assert api.max_inflight >= 3, (api.max_inflight, api.overlapped)
    # requests sent while another was in flight (10 to 12 of the 15 here: the multi-turn turns
    # of one item go one after the other); before: 5 (the first round of 4, then one at a time)
    assert api.overlapped >= 8, api.overlapped


# ---------------------------------------------------------------- under -n 2


def test_fatal_error_on_one_worker_stops_the_other(workdir: Path, api: FakeAPI) -> None:
    pytest.importorskip("xdist")
    api.default = Response(404, NOT_FOUND.body, delay_s=0.2)
    r = run(workdir, "--vibe-model", "openai:nope", "--vibe-base-url", api.url + "/v1", *SUITE,
            "--vibe-k", "1", "--vibe-concurrency", "1", workers=2)
    assert len(api.requests) <= 2, r.out[-3000:]  # at most one in flight per worker; before: 9
    assert r.ret == 1
    assert r.has("vibecheck: stopped openai:nope: openai:nope at * items not run")
    outcomes = r.outcomes()
    assert outcomes.get("errors", 0) <= 2 and outcomes.get("errors", 0) + outcomes.get("skipped", 0) == 9


def test_one_distinct_request_is_sent_once_across_workers(workdir: Path, api: FakeAPI) -> None:
    pytest.importorskip("xdist")
    api.default = Response(200, completion(), delay_s=0.3)
    r = run(workdir, "--vibe-model", "openai:m", "--vibe-base-url", api.url + "/v1", *SUITE,
            "--vibe-k", "1,2", "--vibe-report", "r.json", workers=2)
    assert r.ret in (0, 1), r.out[-3000:] + r.err[-2000:]
    bodies = Counter(json.dumps(rec.body, sort_keys=True) for rec in api.requests)
    assert sum(n - 1 for n in bodies.values()) == 0  # duplicates; before: turn 0 sent by both workers
    report = json.loads((workdir / "r.json").read_text(encoding="utf-8"))
    assert not [i for i in report["items"] if i["outcome"] == "error"]
    assert len(bodies) == DISTINCT
