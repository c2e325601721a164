#!/usr/bin/env python3
"""Batch mode against direct requests on bigvibebench-lite, every protocol, both providers.

For each provider (``openai``, ``anthropic``) a local server of its direct and batch endpoints
(``tests/batch_helpers.py``: replies keyed by request, so both runs get the same replies) serves
two runs of ``python -m pytest --vibe-suite bigvibebench-lite`` (baseline, single-turn and
multi-turn at the default k = 5; ``--vibe-concurrency 1`` so which item reads a shared reply
first is the same in both), each on a cache folder of its own: once through direct requests,
once with ``--vibe-batch``. It prints per run the HTTP calls the server saw by route and the
wall time, whether the two reports are identical (every item and aggregate, without the wall
times and the sandbox result cache's hits), and the spend of each. Then a restart mid-poll: a
batch run killed (SIGKILL) while its first batch waits, run again on the same cache: the batches
submitted by each run and whether the second submitted the first wave again.

Timings are wall times of one run each on a shared machine: noisy; the load average is printed.

Usage: python benchmarks/batch_vs_direct.py [--provider openai|anthropic] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from batch_helpers import FakeProvider, fake_provider  # noqa: E402

MODELS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-haiku-4-5"}
VOLATILE = frozenset({"timing", "duration_s", "latency_s"})


def reply(body: dict[str, Any]) -> str:
    """Code of its own per request (the tests of a BigCodeBench task fail on it, quickly)."""
    import hashlib

    tag = hashlib.sha256(json.dumps([body.get("system"), body.get("messages")], sort_keys=True).encode()).hexdigest()[:8]
    return f"```python\ndef task_func(*args, **kwargs):\n    value_{tag} = None\n    return value_{tag}\n```"


def command(fp: FakeProvider, provider: str, folder: str, limit: int | None, *extra: str) -> list[str]:
    url = fp.url + ("/v1" if provider == "openai" else "")
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "-q",
            "--vibe-model", MODELS[provider], "--vibe-base-url", url, "--vibe-suite", "bigvibebench-lite",
            "--vibe-concurrency", "1", "--vibe-cache", f"{folder}/cache.sqlite", "--vibe-report", f"{folder}.json",
            *(["--vibe-limit", str(limit)] if limit else []), *extra]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH", "PYTEST_ADDOPTS")}
    env.update(VIBECHECK_BATCH_POLL="0.2,1")
    return env


def strip(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in VOLATILE and not (k == "cached" and "status" in x)}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def comparable(path: Path) -> dict[str, Any]:
    report = json.loads(path.read_text(encoding="utf-8"))
    return {"items": sorted((strip(i) for i in report["items"]), key=lambda i: i["nodeid"]),
            "aggregates": strip(report["aggregates"]), "generation": strip(report["generation"])}


def timed(cwd: Path, cmd: list[str], fp: FakeProvider) -> tuple[float, dict[str, int], int]:
    before = dict(fp.calls)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=environment(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    calls = {k: v - before.get(k, 0) for k, v in sorted(fp.calls.items()) if v - before.get(k, 0)}
    if done.returncode not in (0, 1):
        print(done.stdout[-3000:], done.stderr[-3000:])
    return wall, calls, done.returncode


def one_provider(provider: str, limit: int | None) -> None:
    with fake_provider() as fp, tempfile.TemporaryDirectory(prefix="vibecheck-batchbench-") as d:
        fp.reply = reply
        cwd = Path(d)
        cwd.chmod(0o755)
        (cwd / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
        print(f"== {provider} ({MODELS[provider]}), bigvibebench-lite, every protocol, k = 5; load {os.getloadavg()}")
        for name, extra in (("direct", ()), ("batch", ("--vibe-batch",))):
            wall, calls, ret = timed(cwd, command(fp, provider, name, limit, *extra), fp)
            print(f"{name:>7}: exit {ret}, wall {wall:.1f} s, {sum(calls.values())} HTTP calls: {calls}")
        a, b = comparable(cwd / "direct.json"), comparable(cwd / "batch.json")
        print(f"reports identical (items {len(a['items'])}, aggregates {len(a['aggregates'])}): {a == b}")
        for name in ("direct", "batch"):
            spend = json.loads((cwd / f"{name}.json").read_text())["run"]["spend"]
            print(f"  spend {name}: {spend['requests']} requests, {spend['input_tokens']:,} in, "
                  f"{spend['output_tokens']:,} out, ${spend['usd']} at {spend['price']} prices")
        # restart mid-poll
        fp.polls_to_end = 10_000
        first_batches = len(fp.batches)
        proc = subprocess.Popen(command(fp, provider, "restart", limit, "--vibe-batch"), cwd=cwd, env=environment(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not (len(fp.batches) > first_batches and list(fp.batches.values())[-1]["looks"] >= 2):
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        waiting = list(fp.batches)[first_batches:]
        print(f"restart: killed (SIGKILL) while {waiting} waited ({len(fp.batches[waiting[0]]['requests'])} requests, "
              f"{fp.batches[waiting[0]]['looks']} looks)")
        fp.polls_to_end = 0
        wall, calls, ret = timed(cwd, command(fp, provider, "restart", limit, "--vibe-batch"), fp)
        again = list(fp.batches)[first_batches + len(waiting):]
        resent = sum(len(fp.batches[b]["requests"]) for b in again if {c for c, _ in fp.batches[b]["requests"]}
                     & {c for c, _ in fp.batches[waiting[0]]["requests"]})
        print(f"restart: second run exit {ret}, wall {wall:.1f} s, submitted {len(again)} new batches "
              f"(waves 2..); requests of the first wave submitted again: {resent}; HTTP calls {calls}")
        print(f"restart: report identical to the direct run: {comparable(cwd / 'restart.json') == a}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=sorted(MODELS), action="append")
    parser.add_argument("--limit", type=int, default=None, help="first N tasks only")
    args = parser.parse_args()
    for provider in args.provider or sorted(MODELS):
        one_provider(provider, args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
