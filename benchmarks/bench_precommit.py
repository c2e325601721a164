"""How long the pre-commit hook takes, from hook start to verdict, against Ruff alone (issue 27).

    python benchmarks/bench_precommit.py [--files 300] [--rounds 5] [--small 10] [--pre-commit]

Builds a scratch git repository of ``--files`` Python files (the canonical solutions of the
first BigCodeBench tasks of the shipped suite: real code, with real violations), a
``pyproject.toml`` declaring five Ruff-backed instructions (style_3, doc_1, logic_3, logic_1,
error_1), and commits it. Then two staged changes, each file changed by a new function appended
(with a long line and an unused import, so every file has counted findings):

- *small*: ``--small`` files changed and staged (a typical commit);
- *all*: every file changed and staged (a large refactor, the hook's worst case but one: the
  whole file is added only in a first commit, which ``--files`` new files would be).

For each, interleaved in each round (so load on the shared machine hits both alike):

- *hook*: ``vibecheck gate-staged FILES`` in a fresh process, as ``.pre-commit-hooks.yaml``'s
  ``vibecheck-gate`` entry runs it (pre-commit passes the staged Python files): process start to
  exit, which is when the verdict is printed;
- *floor*: ``ruff check --isolated --no-cache --output-format json`` in a fresh process on the
  same files, one run with the union of the five instructions' rules and settings: the least any
  engine must do (start Ruff once and lint the files). What the hook adds on top: Python's and
  the package's start-up, reading the config, ``git diff --cached`` and ``git cat-file``, the
  per-instruction grouping of the Ruff runs, counting only staged lines;
- with ``--pre-commit`` (needs the ``pre-commit`` package): ``pre-commit run`` on the same
  staged change, the whole tool (its own start, the stash of unstaged changes, file filtering),
  with the hook environment installed once before the rounds.

Prints the medians (seconds) of the wall time and of the CPU time (user + system of the process
and its children, from ``getrusage``; waiting for a loaded CPU does not inflate it), the ratios
hook / floor and the load average beside them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import reference_args  # noqa: E402

from pytest_vibecheck.verify.instructions import get_instruction  # noqa: E402
from pytest_vibecheck.verify.ruff_engine import default_engine  # noqa: E402

INSTRUCTIONS = ["style_3", "doc_1", "logic_3", "logic_1", "error_1"]
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}
NEW_FUNCTION = (
    "\n\nimport json\n\n\ndef added_{n}(value):\n"
    "    return str(value) + '" + "z" * 70 + "'\n"
)


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV, "HOME": str(repo)}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _solutions(n: int) -> list[str]:
    path = ROOT / "problems" / "bigvibebench" / "problems.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [str(r["canonical_solution"]).rstrip("\n") + "\n" for r in rows[:n]]


def _repo(root: Path, n: int) -> list[str]:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    toml = "[tool.vibecheck.gate]\ninstructions = " + json.dumps(INSTRUCTIONS) + '\ninclude = ["src/*.py"]\n'
    (root / "pyproject.toml").write_text(toml, encoding="utf-8")
    names = []
    for i, code in enumerate(_solutions(n)):
        name = f"src/pkg{i // 50}/task_{i:04d}.py"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(code, encoding="utf-8")
        names.append(name)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    return names


def _stage(root: Path, names: list[str], changed: list[str]) -> None:
    _git(root, "reset", "-q", "--hard")
    for n, name in enumerate(changed):
        with (root / name).open("a", encoding="utf-8") as fh:
            fh.write(NEW_FUNCTION.format(n=n))
    _git(root, "add", *changed)


def _floor_args() -> list[str]:
    selects: list[str] = []
    rest: list[str] = []
    for iid in INSTRUCTIONS:
        args = reference_args(get_instruction(iid), {})
        selects += args[1].split(",")
        rest += args[2:]
    return ["--select", ",".join(dict.fromkeys(selects)), *rest]


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _time(cmd: list[str], cwd: Path, ok: tuple[int, ...], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s of the process and its children) of one run of ``cmd``."""
    cpu0, t0 = _cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, env=env)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    if proc.returncode not in ok:
        raise SystemExit(f"{cmd[:3]} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--small", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pre-commit", action="store_true", help="also time `pre-commit run`")
    args = ap.parse_args()
    vibecheck = str(Path(sys.executable).parent / "vibecheck")
    ruff = default_engine().ruff_bin()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUFF_", "GIT_"))}
    with tempfile.TemporaryDirectory(prefix="bench-precommit-") as tmp:
        repo = Path(tmp) / "repo"
        names = _repo(repo, args.files)
        pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
        if args.pre_commit:
            if pre_commit is None:
                raise SystemExit("--pre-commit needs the pre-commit package (pip install pre-commit)")
            env["PRE_COMMIT_HOME"] = str(Path(tmp) / "pre-commit-home")
            config = ("repos:\n- repo: local\n  hooks:\n  - id: vibecheck-gate\n"
                      "    name: vibecheck gate\n    entry: " + vibecheck + " gate-staged\n"
                      "    language: system\n    types: [python]\n    require_serial: true\n")
            (repo / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
            _git(repo, "add", ".pre-commit-config.yaml")
            _git(repo, "commit", "-q", "-m", "hooks")
        floor = [ruff, "check", "--isolated", "--no-cache", "--output-format", "json", *_floor_args()]
        print(f"repository: {len(names)} Python files ({sum((repo / n).stat().st_size for n in names) / 1e6:.2f} MB), "
              f"instructions {', '.join(INSTRUCTIONS)}; {args.rounds} round(s); "
              f"cores {os.cpu_count()}")
        print("wall = process start to exit (the verdict); cpu = user + system time of the process "
              "and its children (not inflated by waiting for a loaded CPU)")
        print(f"{'change':<22} {'hook wall':>9} {'floor wall':>10} {'ratio':>6} {'load':>5} "
              f"{'hook cpu':>9} {'floor cpu':>9} {'ratio':>6}"
              + (f" {'pre-commit run wall':>19}" if args.pre_commit else ""))
        for label, changed in ((f"small ({args.small} files)", names[:args.small]),
                               (f"all ({len(names)} files)", names)):
            _stage(repo, names, changed)
            hook: list[tuple[float, float]] = []
            ruff_only: list[tuple[float, float]] = []
            whole: list[float] = []
            _time([vibecheck, "gate-staged", *changed], repo, (1,), env)  # warm the page cache
            for _ in range(args.rounds):
                hook.append(_time([vibecheck, "gate-staged", *changed], repo, (1,), env))
                ruff_only.append(_time([*floor, *changed], repo, (1,), env))
                if args.pre_commit:
                    whole.append(_time([pre_commit or "pre-commit", "run"], repo, (1,), env)[0])
            hw, fw = (statistics.median(w for w, _ in xs) for xs in (hook, ruff_only))
            hc, fc = (statistics.median(c for _, c in xs) for xs in (hook, ruff_only))
            line = (f"{label:<22} {hw:>9.3f} {fw:>10.3f} {hw / fw:>6.1f} {os.getloadavg()[0]:>5.1f} "
                    f"{hc:>9.3f} {fc:>9.3f} {hc / fc:>6.1f}")
            if whole:
                line += f" {statistics.median(whole):>19.3f}"
            print(line)
    return 0


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        sys.exit(main())
    finally:
        print(run_context())
