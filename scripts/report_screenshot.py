"""Render a ``vibecheck report`` HTML page in headless Chromium and save a PNG screenshot.

Without ``--html``, first builds a seeded synthetic run (6 models, 40 problems, baseline,
single-turn k = 1..5 and multi-turn k = 5; verdicts drawn with a primacy effect in single-turn
and a recency effect in multi-turn), writes it as a schema-valid report with the plugin's own
``report.json_report`` writer, plus an Elo CSV, and runs ``vibecheck report`` on it.

Chromium: Debian's ``chromium`` package (``apt-get install -y chromium``). Usage::

    python scripts/report_screenshot.py --out /tmp/vibe-report [--html PATH] [--height 1600]

Prints the paths of the HTML page and the PNG; exits 2 when Chromium is missing or fails.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

from pytest_vibecheck.cli.main import main as vibecheck
from pytest_vibecheck.report.json_report import build_report, write_report
from pytest_vibecheck.report.records import ReportItem

IDS = ["style_1", "style_3", "logic_3", "logic_6", "doc_1", "doc_3", "error_1", "library_1"]
MODELS = {  # name: (pass@1, base IF, Elo)
    "alpha-large": (0.52, 0.86, 1470),
    "beta-medium": (0.49, 0.80, 1430),
    "gamma-coder": (0.50, 0.70, 1350),
    "delta-small": (0.44, 0.66, 1330),
    "eps-mini": (0.47, 0.76, 1400),
    "zeta-chat": (0.45, 0.82, 1440),
}


def _turn(turn: int, k: int, ids: list[str], verdicts: list[bool], tests: bool) -> dict[str, Any]:
    return {
        "turn": turn,
        "k": k,
        "generation": {
            "key": hashlib.sha256(f"{turn}{ids}{verdicts}".encode()).hexdigest(),
            "cached": False,
            "input_tokens": 900,
            "output_tokens": 300,
            "latency_s": 1.2,
            "finish_reason": "stop",
        },
        "extraction": {
            "method": "fenced-first",
            "blocks": 1,
            "no_code": False,
            "code_sha256": hashlib.sha256(str(turn).encode()).hexdigest(),
        },
        "tests": {
            "status": "passed" if tests else "failed",
            "failed_tests": [],
            "message": "",
            "duration_s": 0.2,
            "cached": False,
        },
        "verdicts": [
            {"position": p, "id": i, "passed": ok, "error": None, "violations": []}
            for p, (i, ok) in enumerate(zip(ids, verdicts, strict=True), start=1)
        ],
        "passed": tests and all(verdicts),
    }


def synthetic_items(seed: int = 0, tasks: int = 40) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for model, (func, base_if, _) in MODELS.items():
        for n in range(tasks):
            task = f"BigCodeBench/{n}"
            ids = rng.sample(IDS, 5)
            insts = [{"position": p, "id": i, "category": i.split("_")[0], "params": {}}
                     for p, i in enumerate(ids, 1)]  # fmt: skip
            easy = rng.random() < func + 0.1
            common = {"suite": "bigvibebench", "task_id": task, "model": model, "sample": 0,
                      "error": None, "skip_reason": None, "no_code": False, "duration_s": 2.0,
                      "ruff_version": "0.17.6", "instructions": insts}  # fmt: skip

            def add(
                protocol: str, k: int, turns: list[dict[str, Any]], common: dict[str, Any] = common
            ) -> None:
                passed = bool(turns[-1]["passed"])
                items.append({**common, "nodeid": f"bigvibebench::{common['task_id']}[{common['model']}-{protocol}-k{k}]",
                              "protocol": protocol, "k": k, "turns": turns,
                              "outcome": "passed" if passed else "failed", "passed": passed})  # fmt: skip

            add("baseline", 0, [_turn(0, 0, ids, [rng.random() < 0.45 for _ in ids], easy)])
            for k in range(1, 6):
                v = [rng.random() < base_if - 0.03 * p - 0.02 * k for p in range(k)]
                add("single", k, [_turn(0, k, ids[:k], v, easy and rng.random() > 0.02 * k)])
            turns = [_turn(0, 0, [], [], easy)]
            state: list[bool] = []
            for t in range(1, 6):
                state = [ok and rng.random() < 0.93 for ok in state] + [rng.random() < base_if]
                turns.append(_turn(t, t, ids[:t], list(state), easy and rng.random() > 0.03))
            add("multi", 5, turns)
    return items


def screenshot(html: Path, png: Path, width: int, height: int) -> None:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("chromium not found: apt-get update && apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--no-first-run", f"--user-data-dir={profile}", f"--screenshot={png}",
               f"--window-size={width},{height}", html.resolve().as_uri()]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0 or not png.exists():
        print(proc.stderr[-2000:], file=sys.stderr)
        sys.exit(2)


def run(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "vibe-report")
    ap.add_argument("--html", type=Path, help="screenshot this page instead of a synthetic run")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=1600)
    ap.add_argument(
        "--tiles", type=int, default=0, metavar="H",
        help="also cut the page into tiles of height H (needs Pillow; use a tall --height)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    html = args.html
    if html is None:
        args.out.mkdir(parents=True, exist_ok=True)
        report = write_report(args.out / "run.json", build_report(cast("list[ReportItem]", synthetic_items()), settings={}))
        elo = args.out / "elo.csv"
        elo.write_text("model,elo\n" + "".join(f"{m},{v[2]}\n" for m, v in MODELS.items()))
        status = vibecheck(["report", str(report), "--out", str(args.out / "report"),
                            "--elo-csv", str(elo), "--bootstrap", "500"])  # fmt: skip
        if status:
            return status
        html = args.out / "report" / "report.html"
    png = html.with_suffix(f".{args.height}.png")
    screenshot(html, png, args.width, args.height)
    print(f"html: {html}\npng:  {png}")
    if args.tiles:
        for tile in cut_tiles(png, args.tiles):
            print(f"tile: {tile}")
    return 0


def cut_tiles(png: Path, height: int) -> list[Path]:
    """Cut a tall screenshot into tiles, dropping the blank space below the page."""
    from PIL import Image, ImageOps

    im = Image.open(png).convert("RGB")
    bbox = ImageOps.invert(im).getbbox()  # content box (non-white pixels)
    bottom = min(im.height, (bbox[3] if bbox else im.height) + 20)
    out = []
    for i, top in enumerate(range(0, bottom, height)):
        path = png.with_name(f"{png.stem}.tile{i}.png")
        im.crop((0, top, im.width, min(top + height, bottom))).save(path)
        out.append(path)
    return out


if __name__ == "__main__":
    sys.exit(run())
