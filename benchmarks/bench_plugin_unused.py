"""What pytest-vibecheck costs a pytest session that does not use it (issue 12, point 11).

    python benchmarks/bench_plugin_unused.py [--runs 30] [--tests 20] [--no-bytecode-cache]

Runs an ordinary project (``--tests`` trivial tests in one file, a ``pyproject.toml`` with a
``[tool.vibecheck]`` table and a ``[tool.pytest.ini_options]`` table, as a project that uses the
plugin elsewhere has) in fresh ``python -m pytest -q -p no:cacheprovider`` processes:

- *baseline*: ``-p no:vibecheck -p no:vibecheck-gate`` (both pytest11 entry points of
  pyproject.toml blocked: the plugin is not even imported);
- *plugin*: the same, with both entry points loaded but neither ``--vibe-model``/``--vibe`` nor
  ``--vibe-gate`` given.

Both sides run with a bytecode cache, as an installed package has (``pip install`` compiles
the ``.pyc`` files): the children get ``PYTHONPYCACHEPREFIX`` set to a temporary folder (nothing
is written into the source tree) and ``PYTHONDONTWRITEBYTECODE`` unset; warm-up runs fill it.
``--no-bytecode-cache`` keeps the environment as it is instead (with
``PYTHONDONTWRITEBYTECODE=1`` every module of an editable install is compiled from source in
every process, which is what most of the cost measured without a cache is).

The two are interleaved (baseline, plugin, baseline, ...) so load on the shared machine hits
both alike. Two measures of each process: its wall time, and its CPU time (user + system, from
``getrusage(RUSAGE_CHILDREN)``), which waiting for a loaded CPU does not inflate. For each it
prints the medians of both sides, their ratio, and the median of the per-pair differences (each
plugin run minus the baseline run just before it). It also checks what "invisible" means
besides time: the same output lines (the ``plugins:`` header line aside) and no marker of the
plugin in ``pytest --markers``; the exit status is 1 if either differs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The pytest11 entry points of pyproject.toml ([project.entry-points.pytest11]).
OFF = ("-p", "no:vibecheck", "-p", "no:vibecheck-gate")


def _project(root: Path, tests: int) -> None:
    body = "\n".join(f"def test_{i}() -> None:\n    assert {i} == {i}\n" for i in range(tests))
    (root / "test_plain.py").write_text(body, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = ""\n\n[tool.vibecheck]\nmodel = "openai:gpt-5"\n',
        encoding="utf-8",
    )


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


_ENV: dict[str, str] = dict(os.environ)


def _run(root: Path, *extra: str) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of one pytest process."""
    cpu0, t0 = _cpu(), time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *extra],
        cwd=root, capture_output=True, text=True, check=False, env=_ENV,
    )
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    if out.returncode != 0:
        raise SystemExit(f"pytest failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return wall, cpu, out.stdout


def _normalise(text: str) -> list[str]:
    return [
        line for line in text.splitlines()
        if not line.startswith("plugins:") and " passed in " not in line
    ]


def _line(what: str, base: list[float], plug: list[float]) -> str:
    mb, mp = statistics.median(base), statistics.median(plug)
    diffs = [p - b for b, p in zip(base, plug, strict=True)]
    return (
        f"  {what:<4} median {mb * 1000:7.1f} ms without, {mp * 1000:7.1f} ms with: "
        f"ratio {mp / mb:.3f}, paired difference median {statistics.median(diffs) * 1000:+.1f} ms "
        f"(fastest {min(base) * 1000:.1f} vs {min(plug) * 1000:.1f} ms)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="runs of each side (default 30)")
    ap.add_argument("--tests", type=int, default=20, help="tests in the project (default 20)")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="run the children in this environment as it is (no PYTHONPYCACHEPREFIX)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        if not args.no_bytecode_cache:
            _ENV.pop("PYTHONDONTWRITEBYTECODE", None)
            _ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        _project(root, args.tests)
        for _ in range(2):  # warm the file cache and the .pyc files
            _run(root, *OFF)
            _run(root)
        walls: tuple[list[float], list[float]] = ([], [])
        cpus: tuple[list[float], list[float]] = ([], [])
        for _ in range(args.runs):
            for side, extra in enumerate((OFF, ())):
                wall, cpu, _ = _run(root, *extra)
                walls[side].append(wall)
                cpus[side].append(cpu)
        out_off = _run(root, *OFF, "-v")[2]
        out_on = _run(root, "-v")[2]
        markers = subprocess.run(
            [sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"],
            cwd=root, capture_output=True, text=True, check=False, env=_ENV,
        ).stdout
    ours = [line for line in markers.splitlines() if line.startswith(("@pytest.mark.vibe", "@pytest.mark.vibecheck"))]
    cache = "none (environment as is)" if args.no_bytecode_cache else "PYTHONPYCACHEPREFIX, warm"
    print(f"pytest, {args.tests} tests, {args.runs} interleaved runs per side "
          f"(without: {' '.join(OFF)}; with: the plugin installed, unused; bytecode cache: {cache})")
    print(_line("wall", *walls))
    print(_line("CPU", *cpus))
    same = _normalise(out_off) == _normalise(out_on)
    print(f"  same output lines: {'yes' if same else 'NO'}; plugin markers registered: {len(ours)}")
    return 0 if same and not ours else 1


if __name__ == "__main__":
    from _common import run_context  # commit and load beside every figure (issue 29)

    print(run_context(), flush=True)
    try:
        raise SystemExit(main())
    finally:
        print(run_context())
