"""Run the ``vibecheck`` command as in a plain install (``pip install pytest-vibecheck``, no
extras): the extras' modules are made unimportable in a child interpreter by a meta-path finder
loaded from a ``sitecustomize.py`` put first on ``PYTHONPATH``.

``run_plain(args, cwd, tmp_path)`` returns the ``subprocess.CompletedProcess`` (text) of
``python -m pytest_vibecheck.cli.main ARGS``; ``BLOCKED`` names the modules it hides (what the
``analysis``, ``plots`` and ``exec-core`` extras bring: numpy, scipy, matplotlib, pandas).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

#: Top-level modules a plain install lacks (the extras ``analysis``, ``plots``, ``exec-core``).
BLOCKED = ("numpy", "scipy", "matplotlib", "pandas")

_SHIM = '''
import sys

_BLOCKED = {blocked!r}


class _PlainInstall:
    """Refuse the extras' modules, as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _PlainInstall())
'''


def shim_dir(tmp_path: Path, blocked: Sequence[str] = BLOCKED) -> Path:
    """A folder holding the ``sitecustomize.py`` that hides ``blocked``."""
    folder = tmp_path / "plain-install-shim"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SHIM.format(blocked=tuple(blocked)), encoding="utf-8")
    return folder


def run_plain(
    args: Sequence[str], cwd: Path, tmp_path: Path, blocked: Sequence[str] = BLOCKED,
    module: str = "pytest_vibecheck.cli.main",
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``python -m MODULE ARGS`` in ``cwd`` with ``blocked`` unimportable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(shim_dir(tmp_path, blocked)), *filter(None, [env.get("PYTHONPATH")])]
    )
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
