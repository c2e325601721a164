"""A real TRL ``GRPOTrainer`` step with the vibecheck reward (``scripts/grpo_step.py``).

Runs only where TRL, torch and transformers are installed: not in the dev extra (torch is too
heavy for it), but in ``.ci/run``'s second environment, ``.venv-verl`` (CPU torch, TRL and
verl's reward path); its output on a 2-core machine is in docs/reward.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "grpo_step.py"


@pytest.mark.slow
def test_one_grpo_step_with_the_vibecheck_reward() -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    done = subprocess.run([sys.executable, str(SCRIPT), "--inject-solution"], capture_output=True,
                          text=True, timeout=900, env=env, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "GRPO step with the vibecheck reward: ok" in done.stdout
    assert '"vibecheck/pass_rate": 0.5' in done.stdout  # the injected reference solutions pass
