"""A pytest plugin for benchmarks: where a run's wall time goes (per process and sandbox).

Loaded with ``-p timeline_plugin`` (``benchmarks/`` on ``PYTHONPATH``) and switched on by
``VIBECHECK_TIMELINE=DIR``: every process (controller and xdist workers) appends JSON lines to
``DIR/<worker>.jsonl``:

- ``{"ev": "item", "w", "task", "t0", "t1"}``: one item's run protocol (setup, call, teardown),
  seconds since the epoch;
- ``{"ev": "sandbox", "w", "task", "t0", "t1", "cpu_s", "limit", "status"}``: one sandboxed
  test run (``pytest_vibecheck.execute.tests._run_once``; a lazily calibrated candidate may
  have two, and a reference's timing its own through the calibrator);
- ``{"ev": "bytes", "w", "n", "bytes"}``: at the end of a worker, how many reports it sent
  and the size of their serialized form (``pytest_report_to_serializable`` then
  ``execnet.dumps``, as pytest-xdist sends them).

:func:`summarize` (``python benchmarks/timeline_plugin.py DIR``) prints per worker: its span,
the time its sandboxes were busy, the mean number of sandboxes running, when the longest runs
started and ended and what ran beside them. A benchmark helper only: it wraps a function of
the code under test and reads nothing private of pytest or xdist.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

_DIR = os.environ.get("VIBECHECK_TIMELINE")
_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"n": 0, "bytes": 0}


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _write(rec: dict[str, Any]) -> None:
    if not _DIR:
        return
    line = json.dumps(rec) + "\n"
    with _LOCK, Path(_DIR, f"{_worker()}.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(line)


def _wrap_sandbox() -> None:
    try:
        from pytest_vibecheck.execute import tests as mod
    except ImportError:  # an older tree's layout
        return
    inner = getattr(mod, "_run_once", None)
    if inner is None or getattr(inner, "_timeline", False):
        return

    def run_once(code: str, problem: Any, limit: float, *args: Any, **kw: Any) -> Any:
        t0 = time.time()
        res = inner(code, problem, limit, *args, **kw)
        _write({"ev": "sandbox", "w": _worker(), "task": problem.task_id, "t0": t0,
                "t1": time.time(), "cpu_s": getattr(res, "cpu_time_s", None),
                "limit": round(limit, 2), "status": getattr(res, "status", None)})
        return res

    run_once._timeline = True  # type: ignore[attr-defined]
    mod._run_once = run_once


def pytest_configure(config: pytest.Config) -> None:
    if _DIR:
        Path(_DIR).mkdir(parents=True, exist_ok=True)
        _wrap_sandbox()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    t0 = time.time()
    try:
        return (yield)
    finally:
        spec = getattr(item, "spec", None)
        task = spec.problem.task_id if spec is not None else item.nodeid
        _write({"ev": "item", "w": _worker(), "task": task, "t0": t0, "t1": time.time()})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _DIR or _worker() == "main":
        return
    config = _CONFIG.get("config")
    if config is None:
        return
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    try:
        import execnet

        size = len(execnet.dumps(data))  # what pytest-xdist sends (execnet's serializer)
    except Exception:
        size = len(json.dumps(data, default=str))
    _STATE["n"] += 1
    _STATE["bytes"] += size


_CONFIG: dict[str, pytest.Config] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG["config"] = session.config


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _DIR and _worker() != "main":
        _write({"ev": "bytes", "w": _worker(), "n": _STATE["n"], "bytes": _STATE["bytes"]})


# -- reading a timeline ---------------------------------------------------------------------


def load(folder: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in sorted(folder.glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line]
    return out


def _busy(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def summarize(folder: Path, top: int = 6) -> str:
    recs = load(folder)
    if not recs:
        return f"no timeline in {folder}"
    start = min(r["t0"] for r in recs if "t0" in r)
    lines = []
    workers = sorted({r["w"] for r in recs if r["ev"] in ("item", "sandbox")})
    allsb = [r for r in recs if r["ev"] == "sandbox"]
    end = max(r["t1"] for r in recs if "t1" in r)
    lines.append(f"span {end - start:.1f} s; {len(allsb)} sandbox runs, "
                 f"{sum(r['t1'] - r['t0'] for r in allsb):.0f} sandbox-s, "
                 f"mean running {sum(r['t1'] - r['t0'] for r in allsb) / (end - start):.2f}")
    for w in workers:
        items = [r for r in recs if r["ev"] == "item" and r["w"] == w]
        sb = [r for r in allsb if r["w"] == w]
        if not items and not sb:
            continue
        t0 = min(r["t0"] for r in items + sb) - start
        t1 = max(r["t1"] for r in items + sb) - start
        busy = _busy([(r["t0"], r["t1"]) for r in sb])
        sbs = sum(r["t1"] - r["t0"] for r in sb)
        cpu = sum(r["cpu_s"] or 0 for r in sb)
        lines.append(f"{w}: {len(items)} items {t0:.1f}-{t1:.1f} s; {len(sb)} sandbox runs, "
                     f"any running {busy:.1f} s ({busy / max(t1 - t0, 1e-9):.0%}), "
                     f"mean running {sbs / max(t1 - t0, 1e-9):.2f}, sandbox CPU {cpu:.1f} s")
        for r in sorted(sb, key=lambda r: r["t0"] - r["t1"])[:top]:
            a, b = r["t0"] - start, r["t1"] - start
            beside = [o for o in allsb if o is not r and o["t0"] < r["t1"] and o["t1"] > r["t0"]]
            mine = sum(1 for o in beside if o["w"] == w)
            lines.append(f"    {r['task']:<20} {a:6.1f}-{b:6.1f} s ({b - a:5.1f} s, cpu "
                         f"{r['cpu_s'] or 0:.1f}, limit {r['limit']}); beside it {mine} runs "
                         f"here, {len(beside) - mine} elsewhere")
        # the longest gaps with no sandbox running on this worker
        spans = sorted((r["t0"] - start, r["t1"] - start) for r in sb)
        gaps, reach = [], t0
        for a, b in spans:
            if a > reach + 0.5:
                gaps.append((reach, a))
            reach = max(reach, b)
        if t1 > reach + 0.5:
            gaps.append((reach, t1))
        if gaps:
            idle = sum(b - a for a, b in gaps)
            worst = sorted(gaps, key=lambda g: g[0] - g[1])[:3]
            lines.append(f"    idle (no sandbox) {idle:.1f} s; longest "
                         + ", ".join(f"{a:.1f}-{b:.1f}" for a, b in worst))
    lines.extend(
        f"{r['w']}: {r['n']} reports, {r['bytes']:,} bytes serialized "
        f"({r['bytes'] / max(r['n'], 1):,.0f} per report)"
        for r in recs
        if r["ev"] == "bytes"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1])))
