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


def _steering_candidate() -> tuple[Any, dict[str, Any]]:
    """An object of a candidate's class whose ``__eq__`` is not its own Python code (what
    ``returned_problem`` must find wherever it is held), and the candidate's namespace."""
    namespace: dict[str, Any] = {"__name__": "__test__", "__file__": "candidate.py"}
    exec(compile("class Steer:\n    __eq__ = str.__ne__\n", "candidate.py", "exec"), namespace)
    return namespace["Steer"](), namespace


def test_returned_values_are_checked_through_shared_objects_at_their_least_depth() -> None:
    """The walk goes through each object once per depth it improves on: an object reached
    first at the last level (its contents not looked into) and then near the top is looked
    into from there, so what it holds is found; a graph of shared objects is gone through once."""
    calls = load_harness()["_VIBECHECK_PARTS"]["calls"]
    steer, namespace = _steering_candidate()
    hidden = [steer]  # at depth 4 on the first path, depth 1 on the second
    value = [[[[hidden]]], hidden]
    why = calls.returned_problem(value, namespace)
    assert why is not None and "returned an object of its class Steer whose __eq__" in why
    assert calls.returned_problem([[[[hidden]]]], namespace) is None  # past 4 levels: not seen
    # a graph in which every node holds the next ones: 200 x 200 x ... paths, few objects
    shared: list[Any] = [1.0]
    for _ in range(6):
        shared = [shared] * 150
    walk = calls._Walk(namespace)
    assert walk.problem(shared, 0) is None
    assert len(walk.depth_of) == 5  # one object per level down to depth 4
    shared_bad: list[Any] = [[steer]] * 150
    assert calls.returned_problem([shared_bad] * 150, namespace) is not None
