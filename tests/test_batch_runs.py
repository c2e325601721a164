"""Whole runs in batch mode (``--vibe-batch``) against a local server of both providers' direct
and batch endpoints (tests/batch_helpers.py), through the real SDKs in a pytest subprocess:
the report equals the direct run's, one batch wave per turn, ``-n 2`` submits each request once,
a run killed mid-poll resumes the same batches, a fatal submission stops the run, the spend is
at the batch price, and per-request errors are infrastructure errors of those items."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_helpers import FakeProvider, fake_provider
from plugin_helpers import write_tiny_suite

pytest.importorskip("openai")
pytest.importorskip("anthropic")

MODELS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-haiku-4-5"}
SUBMIT = {"openai": "POST /v1/batches", "anthropic": "POST /v1/messages/batches"}
#: distinct requests of the tiny suite with --vibe-k 1,2 (see test_plugin_realruns.DISTINCT)
DISTINCT = 3 * 5
#: fields that differ between any two runs (wall times), and the sandbox result cache's hits
#: (which depend on which items' programs are tested together, not on where the replies came from)
VOLATILE = frozenset({"timing", "duration_s", "latency_s"})


@pytest.fixture
def fp() -> Iterator[FakeProvider]:
    with fake_provider() as server:
        yield server


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="vibecheck-batch-") as d:
        Path(d).chmod(0o755)
        (Path(d) / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
        write_tiny_suite(Path(d) / "suite")
        yield Path(d)


def command(fp: FakeProvider, provider: str, name: str, *extra: str, workers: int | None = None) -> list[str]:
    url = fp.url + ("/v1" if provider == "openai" else "")
    xdist = ["-n", str(workers)] if workers else ["-p", "no:xdist"]
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *xdist, "--vibe-model", MODELS[provider],
            "--vibe-base-url", url, "--vibe-suite", "suite", "-p", "no:randomly", "--vibe-k", "1,2",
            "--vibe-concurrency", "1", "--vibe-cache", f"{name}/cache.sqlite", "--vibe-report", f"{name}.json",
            *extra]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH", "PYTEST_ADDOPTS")}
    env.update(VIBECHECK_BATCH_POLL="0.05,0.2", VIBECHECK_TIMEOUT="20")
    return env


def run(cwd: Path, cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=300, check=False)


def strip(x: Any, order: bool) -> Any:
    """``x`` without :data:`VOLATILE` fields; without ``order``, also without which item read a
    shared reply first (``cached``, the groups' ``cache`` and ``tokens``: under ``-n 2`` that is a race of the
    workers, in a direct run as in a batch run)."""
    if isinstance(x, dict):
        return {
            k: strip(v, order) for k, v in x.items()
            if k not in VOLATILE and not (k == "cached" and ("status" in x or not order)) and (order or k not in ("cache", "tokens"))
        }
    if isinstance(x, list):
        return [strip(v, order) for v in x]
    return x


def results(path: Path, order: bool = True) -> dict[str, Any]:
    report = json.loads(path.read_text(encoding="utf-8"))
    return {"items": sorted((strip(i, order) for i in report["items"]), key=lambda i: i["nodeid"]),
            "aggregates": strip(report["aggregates"], order), "generation": strip(report["generation"], True)}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_batch_run_reports_what_the_direct_run_reports_at_half_the_price(
    fp: FakeProvider, workdir: Path, provider: str
) -> None:
    direct = run(workdir, command(fp, provider, "direct"))
    calls = dict(fp.calls)
    batch = run(workdir, command(fp, provider, "batch", "--vibe-batch"))
    assert batch.returncode == direct.returncode == 1, batch.stdout[-2000:] + batch.stderr[-2000:]
    assert results(workdir / "batch.json") == results(workdir / "direct.json")
    new = {k: v - calls.get(k, 0) for k, v in fp.calls.items() if v - calls.get(k, 0)}
    assert new[SUBMIT[provider]] == 3  # one wave per turn: first requests, multi-turn turns 1, 2
    assert not any("chat/completions" in k or k == "POST /v1/messages" for k in new)  # no direct request
    assert sum(len(b["requests"]) for b in fp.batches.values()) == DISTINCT
    spend_d = json.loads((workdir / "direct.json").read_text())["run"]["spend"]
    spend_b = json.loads((workdir / "batch.json").read_text())["run"]["spend"]
    assert (spend_d["price"], spend_b["price"]) == ("list", "batch")
    assert (spend_b["input_tokens"], spend_b["output_tokens"]) == (spend_d["input_tokens"], spend_d["output_tokens"])
    assert spend_b["usd"] == pytest.approx(spend_d["usd"] / 2, abs=2e-6)
    assert "at batch prices (half the list price)" in batch.stdout
    # the waiting display: the batch ids, the provider's status and counts, elapsed, its deadline
    first = next(iter(fp.batches))
    assert f"vibecheck: waiting for 1 batch of {MODELS[provider]} (elapsed 0:00:" in batch.stderr
    assert f"  {first}: in_progress (" in batch.stderr and "the provider's deadline in 23:59:" in batch.stderr


def test_two_workers_share_one_submission_per_wave_without_duplicates(fp: FakeProvider, workdir: Path) -> None:
    pytest.importorskip("xdist")
    direct = run(workdir, command(fp, "openai", "direct"))
    batch = run(workdir, command(fp, "openai", "batch", "--vibe-batch", workers=2))
    assert batch.returncode == direct.returncode == 1, batch.stdout[-2000:] + batch.stderr[-2000:]
    assert results(workdir / "batch.json", order=False) == results(workdir / "direct.json", order=False)
    ids = [cid for b in fp.batches.values() for cid, _ in b["requests"]]
    assert len(ids) == len(set(ids)) == DISTINCT  # before the ledger's reservation: each worker its own
    assert len(fp.batches) == fp.calls["POST /v1/batches"] == 3


def test_a_run_killed_mid_poll_resumes_the_same_batch_and_submits_nothing_twice(
    fp: FakeProvider, workdir: Path
) -> None:
    fp.polls_to_end = 10_000  # the batch waits until the first run is killed
    proc = subprocess.Popen(command(fp, "anthropic", "batch", "--vibe-batch"), cwd=workdir, env=environment(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (fp.batches and next(iter(fp.batches.values()))["looks"] >= 2):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    (first,) = fp.batches
    fp.polls_to_end = 0  # it ends at the next look
    again = run(workdir, command(fp, "anthropic", "batch", "--vibe-batch"))
    assert again.returncode == 1, again.stdout[-2000:]
    assert next(iter(fp.batches)) == first and len(fp.batches[first]["requests"]) == 9  # wave 1, not sent again
    assert fp.calls["POST /v1/messages/batches"] == 3  # wave 1 once, then waves 2 and 3
    report = json.loads((workdir / "batch.json").read_text())
    assert {i["outcome"] for i in report["items"]} == {"failed"}


def test_vibecheck_batches_lists_and_cancels_the_open_batches(fp: FakeProvider, workdir: Path) -> None:
    fp.polls_to_end = 10_000
    proc = subprocess.Popen(command(fp, "openai", "batch", "--vibe-batch"), cwd=workdir, env=environment(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not fp.batches:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    (bid,) = fp.batches
    cli = [sys.executable, "-m", "pytest_vibecheck.cli.main", "batches"]
    env = {**environment(), "OPENAI_API_KEY": "sk-test"}
    listed = subprocess.run([*cli, "list", "--cache", "batch/cache.sqlite"],
                            cwd=workdir, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert listed.returncode == 0, listed.stderr
    assert f"{bid}  openai:gpt-4o-mini  9 requests  in_progress" in listed.stdout
    cancelled = subprocess.run([*cli, "cancel", "--cache", "batch/cache.sqlite", "--base-url", fp.url + "/v1",
                                "--all"], cwd=workdir, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert cancelled.returncode == 0, cancelled.stderr
    assert fp.batches[bid]["cancelled"] is True
    assert f"cancelled {bid}" in cancelled.stdout


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_per_request_errors_are_infrastructure_errors_of_those_items(fp: FakeProvider, workdir: Path, provider: str) -> None:
    bad = "invalid_request_error"
    fp.outcome = lambda cid, body: (400, bad) if "sign" in json.dumps(body["messages"]) else "ok"
    r = run(workdir, command(fp, provider, "batch", "--vibe-batch"))
    report = json.loads((workdir / "batch.json").read_text())
    by_task: dict[str, set[str]] = {}
    for item in report["items"]:
        by_task.setdefault(item["task_id"], set()).add(item["outcome"])
    assert by_task["t/sign"] == {"error"}, r.stdout[-3000:]
    assert by_task["t/add"] == {"failed"} and by_task["t/squares"] == {"failed"}
    errors = {i["error"]["message"] for i in report["items"] if i["outcome"] == "error"}
    assert all(f"fake {bad}" in m and "(after 1 batch submission)" in m for m in errors)


def test_a_401_on_submission_stops_the_run_at_once(fp: FakeProvider, workdir: Path) -> None:
    fp.submit_error = (401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
    r = run(workdir, command(fp, "openai", "batch", "--vibe-batch"))
    assert r.returncode == 1
    assert fp.calls["POST /v1/batches"] == 1
    assert r.stdout.count("HTTP 401: Incorrect API key provided") >= 1
    assert "vibecheck: stopped openai:gpt-4o-mini: " in r.stdout


def test_batch_mode_needs_a_cache(fp: FakeProvider, workdir: Path) -> None:
    r = run(workdir, [*command(fp, "openai", "batch", "--vibe-batch"), "--vibe-cache-mode", "off"])
    assert r.returncode == 4
    assert "vibecheck: --vibe-batch keeps its batches and their replies in the generation cache" in r.stderr


def test_the_wait_for_the_batches_is_no_items_deadline(fp: FakeProvider, workdir: Path) -> None:
    # each wave waits about 9 s (45 looks, 0.05 s doubling to 0.2 s apart), longer than an
    # item's deadline of 5 s, which the first item's own work (the sandbox's fork server, Ruff)
    # must fit in on a loaded machine: a deadline of 2 s once timed the first item out in CI
    fp.polls_to_end = 45
    r = run(workdir, command(fp, "openai", "batch", "--vibe-batch", "--vibe-item-timeout", "5"))
    report = json.loads((workdir / "batch.json").read_text())
    assert {i["outcome"] for i in report["items"]} == {"failed"}, r.stdout[-3000:]  # before: the first item timed out
    assert fp.calls["POST /v1/batches"] == 3
