"""Rewards on a local Ray cluster with a Ray worker killed mid-run (``benchmarks/ray_reward.py``).

The script starts Ray inside a network namespace that has only loopback (``unshare -n``), so no
traffic can leave the machine, and scores the same completions on the local pool, on Ray with
task retries (a worker killed: Ray runs its task again, verdicts identical) and on Ray without
retries (the killed task becomes an infrastructure outcome, ``WorkerCrashedError``, never a
model failure). Skipped where Ray is not installed (it is in the dev extra) or no network
namespace can be made. Marked slow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "ray_reward.py"


def _netns() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    flags = "-n" if os.geteuid() == 0 else "-rn"
    return subprocess.run(["unshare", flags, "true"], capture_output=True, check=False).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _netns(), reason="cannot make a loopback-only network namespace (unshare)")
def test_ray_rewards_survive_a_killed_worker_with_the_local_pools_verdicts() -> None:
    done = subprocess.run(
        # BigCodeBench/1 and /2: quick references (/0 sums over 10! permutations)
        [sys.executable, str(SCRIPT), "--tasks", "2", "--start", "1", "--cpus", "2", "--sleep", "3",
         "--reference", "--time-limit", "30"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "local pool          :" in out and "statuses {'passed': 3}" in out
    retried = re.search(r"Ray, retries 3 .*worker killed: pid (\d+); verdicts identical to the "
                        r"local pool: (\d+)/(\d+); infrastructure outcomes: (\d+)", out)
    assert retried is not None, out
    assert retried.group(2, 3, 4) == ("3", "3", "0")
    bare = re.search(r"Ray, retries 0 .*worker killed: pid (\d+); verdicts identical to the "
                     r"local pool: (\d+)/(\d+); infrastructure outcomes: (\d+)", out)
    assert bare is not None, out
    assert bare.group(2, 3, 4) == ("2", "3", "1")
    assert "infra_error, exec_status error: sandbox error: ray (ray): WorkerCrashedError" in out
    assert out.count("passing programs scored as model failures: 0") == 2
