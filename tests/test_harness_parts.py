"""The sandbox harness's parts (``execute/_child/``): every file of the child is protected by
the audit hook, and the parts share the harness's private builtins."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

CHILD = Path(__file__).resolve().parents[1] / "pytest_vibecheck" / "execute" / "_child"


def load_harness() -> dict[str, Any]:
    """harness.py loaded as the fork server loads it (by path, a private copy of builtins)."""
    path = str(CHILD / "harness.py")
    namespace: dict[str, Any] = {"__name__": "_vibecheck_job", "__file__": path,
                                 "__builtins__": dict(builtins.__dict__)}  # fmt: skip
    exec(compile((CHILD / "harness.py").read_text(encoding="utf-8"), path, "exec"), namespace)
    return namespace


def test_every_child_file_is_protected_and_every_part_loaded() -> None:
    ns = load_harness()
    parts = ns["_VIBECHECK_PARTS"]
    files = sorted(p.name for p in CHILD.glob("*.py") if p.name != "__init__.py")
    assert sorted(parts["audit"].CHILD_FILES) == files
    protected = parts["audit"].PROTECTED_FILES
    assert {str(CHILD / name) for name in files} <= protected
    assert "tests.py" in protected
    assert list(parts) == [name.removesuffix(".py") for name in ns["PARTS"]]
    # the proxies' and the tracer's code is the harness's too, for the audit hook
    assert {"<vibecheck-proxy>", "<vibecheck-tracer>"} <= protected
    # the call threads' one frame is not: the candidate's frames lead to it, and it holds
    # nothing but the call
    assert parts["calls"].INVOKE.__code__.co_filename not in protected


def test_the_zygote_preloads_every_job_script() -> None:
    zygote = (CHILD / "zygote.py").read_text(encoding="utf-8")
    scripts = {p.name for p in CHILD.glob("*.py") if "def main(payload" in p.read_text()}
    assert scripts == {"harness.py", "runner.py", "judge.py"}
    assert 'JOB_SCRIPTS = ("harness.py", "runner.py", "judge.py")' in zygote


def test_parts_use_the_harness_private_builtins() -> None:
    ns = load_harness()
    for name, module in ns["_VIBECHECK_PARTS"].items():
        assert module.__dict__["__builtins__"] is ns["__builtins__"], name
    assert ns["__builtins__"] is not builtins.__dict__
