"""Shared helpers of the verification benchmarks (real BigCodeBench samples, paper settings)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_vibecheck.verify.instructions import Instruction, all_instructions
from pytest_vibecheck.verify.ruff_engine import default_engine

SAMPLES = Path(
    os.environ.get(
        "VIBECHECK_SAMPLES",
        Path(__file__).resolve().parents[2]
        / "shared"
        / "data"
        / "samples"
        / "bigcodebench-qwen2.5-coder-7b-instruct"
        / "Qwen2.5-Coder-7B-Instruct--bigcodebench-instruct--sanitized_calibrated.jsonl.gz",
    )
)

#: Parameters of the runs: every default, doc_3 with the google convention.
PARAMS: dict[str, dict[str, object]] = {"doc_3": {"convention": "google"}}


def run_context() -> str:
    """One line naming what a timing depends on: the commit measured (``git describe``, with
    ``-dirty`` for uncommitted changes; and the tree the package is imported from when it is not
    this one), the load average and the CPUs, for every benchmark
    to print beside its ratios (issue 29)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty"],
            capture_output=True, text=True, check=False,
        ).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    import pytest_vibecheck

    package = Path(pytest_vibecheck.__file__).parent.parent
    tree = "" if package == root else f" (package imported from {package})"
    load = os.getloadavg()
    return (f"commit {commit}{tree}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
            f"{os.cpu_count()} CPUs (timings are noisy on a shared machine: compare the ratios, "
            "each measured against its floor in the same run)")


def ratio_line(name: str, value: float, floor_name: str, floor: float, target: float | None = None) -> str:
    """``NAME = 3.42x FLOOR (0.85 s / 0.25 s; target <= 2x)``: a ratio always printed with the
    floor it is measured against."""
    goal = f"; target <= {target:g}x" if target is not None else ""
    return f"{name} = {value / floor:.2f}x {floor_name} ({value:.3f} s / {floor:.3f} s{goal})"


def load_solutions(path: Path = SAMPLES) -> list[tuple[str, str]]:
    """(task_id, solution) of every sample, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [(str(r["task_id"]), str(r["solution"])) for r in rows]


def ruff_instructions() -> list[Instruction]:
    """The 27 Ruff-backed instructions."""
    return [i for i in all_instructions() if i.verifier.rules]


def with_final_newline(code: str) -> str:
    """The code with its final newline restored (the samples were stripped of it)."""
    return code if code.endswith("\n") else code + "\n"


def reference_args(inst: Instruction, params: dict[str, object]) -> list[str]:
    """The paper's command line for one instruction: rules, settings and preview.

    library_2 selects PD002,PD011 only: PD901 was removed from Ruff (selecting it is an
    error since Ruff 0.12); its part is checked by the built-in ``pandas_df_name``.
    """
    values: dict[str, object] = {n: s.default for n, s in inst.params.items()}
    values.update(params)
    args = ["--select", ",".join(inst.verifier.rules)]
    if inst.verifier.preview:
        args.append("--preview")
    for key, value in inst.verifier.fixed.items():
        args += _setting_args(str(key), value)
    for pname, key in inst.verifier.settings.items():
        args += _setting_args(key, values[pname])
    return args


def _setting_args(key: str, value: object) -> list[str]:
    if key == "lint.pycodestyle.max-line-length":  # the paper passes --line-length
        return ["--line-length", str(value)]
    rendered = json.dumps(value) if isinstance(value, str) else str(value).lower()
    return ["--config", f"{key} = {rendered}"]


def run_reference(
    code: str, args: Sequence[str], cwd: str, ruff_bin: str | None = None
) -> tuple[bool | None, list[tuple[str, int, int, str]], str]:
    """One ``ruff check --isolated -`` on ``code``: (passed or None on error, violations, stderr).

    Violations are ``(rule, line, column, message)``.
    """
    cmd = [
        ruff_bin or default_engine().ruff_bin(),
        "check",
        "--isolated",
        "--no-cache",
        "--output-format",
        "json",
        *args,
        "-",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUFF_")}
    proc = subprocess.run(cmd, input=code.encode(), capture_output=True, cwd=cwd, env=env, check=False)
    if proc.returncode not in (0, 1):
        return None, [], proc.stderr.decode(errors="replace")
    data = json.loads(proc.stdout)
    found = [
        (str(d["code"] or "invalid-syntax"), int(d["location"]["row"]), int(d["location"]["column"]), d["message"])
        for d in data
    ]
    return (not found), sorted(found), ""


#: Set in a benchmark's own run inside the loopback-only network namespace.
NETNS_FLAG = "VIBECHECK_RAY_NETNS"


def in_loopback_namespace(script: str) -> None:
    """Make sure the calling benchmark runs in a network namespace that has only loopback
    (``unshare -n`` as root, else ``unshare -rn``; ``ip link set lo up``;
    ``RAY_AUTH_MODE=disabled``, Ray's usage stats off), so nothing Ray starts reaches beyond
    this machine (its probe of 8.8.8.8:53 finds no route). Outside it, runs the script again
    there and exits with its status; inside, returns. As root the host's user ids are kept:
    inside ``unshare -r`` only one uid is mapped and the sandbox cannot give a run its own.
    ``script``: the benchmark's file name, for the message when ``unshare`` or ``ip`` is
    missing."""
    if os.environ.get(NETNS_FLAG) == "1":
        return
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        sys.exit(f"{script}: needs unshare and ip (util-linux, iproute2) for a loopback-only "
                 "network namespace")
    env = dict(os.environ, **{NETNS_FLAG: "1", "RAY_AUTH_MODE": "disabled",
                              "RAY_USAGE_STATS_ENABLED": "0"})
    command = " ".join(["ip link set lo up &&", "exec", sys.executable, *map(_quote, sys.argv)])
    flags = "-n" if os.geteuid() == 0 else "-rn"
    done = subprocess.run(["unshare", flags, "sh", "-c", command], env=env, check=False)
    sys.exit(done.returncode)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
