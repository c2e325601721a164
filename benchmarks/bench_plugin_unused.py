"""What pytest-vibecheck costs a pytest session that does not use it (issue 12, point 11).

    python benchmarks/bench_plugin_unused.py [--runs 15] [--tests 200]

Runs an ordinary project (``--tests`` trivial tests in one file, a ``pyproject.toml`` with a
``[tool.vibecheck]`` table and a ``[tool.pytest.ini_options]`` table, as a project that uses the
plugin elsewhere has) in fresh ``python -m pytest -q -p no:cacheprovider`` processes:

- *baseline*: ``-p no:vibecheck -p no:vibecheck-gate`` (the plugin is not even imported);
- *plugin*: the same, with both entry points loaded but neither ``--vibe-model`` nor
  ``--vibe-gate`` given.

The two are interleaved (baseline, plugin, baseline, ...) so load on the shared machine hits
both alike, and the medians and minima of the wall times are compared. It also checks what "invisible"
means besides time: the same output lines (the ``plugins:`` header line aside) and no marker
of the plugin in ``pytest --markers``. Prints the medians, the ratio and the difference in ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OFF = ("-p", "no:vibecheck", "-p", "no:vibecheck-gate")


def _project(root: Path, tests: int) -> None:
    body = "\n".join(f"def test_{i}() -> None:\n    assert {i} == {i}\n" for i in range(tests))
    (root / "test_plain.py").write_text(body, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = ""\n\n[tool.vibecheck]\nmodel = "openai:gpt-5"\n',
        encoding="utf-8",
    )


def _run(root: Path, *extra: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *extra],
        cwd=root, capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"pytest failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return wall, out.stdout


def _normalise(text: str) -> list[str]:
    return [
        line for line in text.splitlines()
        if not line.startswith("plugins:") and " passed in " not in line
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="runs of each side (default 15)")
    ap.add_argument("--tests", type=int, default=200, help="tests in the project (default 200)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _project(root, args.tests)
        _run(root, *OFF)  # warm the file cache and the .pyc files
        _run(root)
        base: list[float] = []
        plug: list[float] = []
        for _ in range(args.runs):
            base.append(_run(root, *OFF)[0])
            plug.append(_run(root)[0])
        _, out_off = _run(root, *OFF, "-v")
        _, out_on = _run(root, "-v")
        markers = subprocess.run(
            [sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"],
            cwd=root, capture_output=True, text=True, check=False,
        ).stdout
    ours = [line for line in markers.splitlines() if line.startswith(("@pytest.mark.vibe", "@pytest.mark.vibecheck"))]
    mb, mp = statistics.median(base), statistics.median(plug)
    print(f"pytest, {args.tests} tests, {args.runs} interleaved runs per side")
    print(f"  -p no:vibecheck -p no:vibecheck-gate : median {mb * 1000:7.1f} ms")
    print(f"  plugin installed, unused             : median {mp * 1000:7.1f} ms")
    print(f"  fastest run: {min(base) * 1000:.1f} ms without, {min(plug) * 1000:.1f} ms with "
          f"(difference {(min(plug) - min(base)) * 1000:+.1f} ms; the minimum is the least "
          "disturbed by load)")
    print(f"  ratio {mp / mb:.3f}, difference {(mp - mb) * 1000:+.1f} ms "
          f"(run-to-run spread of the baseline: {statistics.pstdev(base) * 1000:.1f} ms)")
    same = _normalise(out_off) == _normalise(out_on)
    print(f"  same output lines: {'yes' if same else 'NO'}; plugin markers registered: {len(ours)}")
    return 0 if same and not ours else 1


if __name__ == "__main__":
    raise SystemExit(main())
