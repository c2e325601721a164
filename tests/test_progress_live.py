"""Live progress on a terminal and progress lines in CI logs (issue 12): the mode choice, the
live status's escape sequences on a real terminal emulator (pyte), and whole runs on a real
pseudo-terminal, where the status sits right of pytest's progress characters and the run ends
on pytest's line as pytest wrote it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte
import pytest
from plugin_helpers import write_script, write_tiny_suite

from pytest_vibecheck.report.progress import LiveLine, choose_mode

COLS, ROWS = 120, 40


@pytest.mark.parametrize(
    ("setting", "isatty", "markup", "verbosity", "environ", "captured", "mode"),
    [
        ("auto", True, True, 0, {}, True, "live"),
        ("always", True, True, 0, {"TERM": "xterm-256color"}, True, "live"),
        ("auto", True, True, -1, {}, True, "live"),  # -q
        ("off", True, True, 0, {}, True, "off"),
        ("off", False, False, 0, {"CI": "true"}, True, "off"),
        ("auto", True, True, 0, {"CI": "true"}, True, "lines"),  # a CI log, even on a tty
        ("auto", True, True, 0, {"CI": " "}, True, "live"),  # CI set but empty
        ("auto", False, False, 0, {}, True, "lines"),  # piped to a file
        ("auto", True, False, 0, {}, True, "lines"),  # --color=no or NO_COLOR
        ("auto", True, True, 0, {"TERM": "dumb"}, True, "lines"),
        ("auto", True, True, 1, {}, True, "lines"),  # -v: a line per item
        ("auto", True, True, 0, {}, False, "lines"),  # -s
    ],
)
def test_choose_mode(setting: str, isatty: bool, markup: bool, verbosity: int, environ: dict[str, str],
                     captured: bool, mode: str) -> None:
    assert choose_mode(setting, isatty=isatty, markup=markup, verbosity=verbosity, environ=environ,
                       captured=captured) == mode


def _screen(cols: int = 40, rows: int = 4) -> tuple[pyte.Screen, pyte.Stream]:
    screen = pyte.Screen(cols, rows)
    return screen, pyte.Stream(screen)


def test_the_live_status_sits_right_of_the_cursor_and_leaves_it_there() -> None:
    screen, stream = _screen()
    live = LiveLine()
    assert live.erase() == ""  # nothing drawn: nothing written
    stream.feed("tiny FF.")
    stream.feed(live.draw("vibecheck 3/6 items (50%), gen 4 (1 cached), tokens 3.6k in / 900 out"))
    # cut at the edge, not wrapped (without wrap, a terminal writes what does not fit into the
    # last cell: it shows the last character)
    assert screen.display[0] == "tiny FF.  vibecheck 3/6 items (50%), get"
    assert screen.display[1].strip() == ""
    assert (screen.cursor.x, screen.cursor.y) == (8, 0)  # where pytest left it
    stream.feed(live.erase())
    stream.feed("F")  # pytest writes its next character
    stream.feed(live.draw("vibecheck 4/6 items (67%)"))
    assert screen.display[0].rstrip() == "tiny FF.F  vibecheck 4/6 items (67%)"
    stream.feed(live.erase())
    assert screen.display[0].rstrip() == "tiny FF.F"
    assert live.erase() == ""


def test_a_redraw_replaces_a_longer_status() -> None:
    screen, stream = _screen()
    live = LiveLine()
    stream.feed("x")
    stream.feed(live.draw("a long status text"))
    stream.feed(live.draw("short"))
    assert screen.display[0].rstrip() == "x  short"


def _pty_run(cwd: Path, args: list[str], env: dict[str, str]) -> str:
    """pytest in ``cwd`` on a real pseudo-terminal of COLS x ROWS; returns everything it wrote."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        proc.wait(timeout=60)
    return b"".join(chunks).decode("utf-8", errors="replace")


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    write_tiny_suite(tmp_path / "suite")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    script = write_script(tmp_path / "script.json", "bot", usage={"input_tokens": 1200, "output_tokens": 300})
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "NO_COLOR", "PY_COLORS", "PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "COLUMNS", "LINES")}
    env.update(TERM="xterm-256color", VIBECHECK_SCRIPTED=str(script))
    return tmp_path, env


RUN = ["--vibe-model", "scripted:bot", "--vibe-suite", "suite", "--vibe-protocol", "baseline",
       "-p", "no:cacheprovider", "-p", "no:randomly", "--vibe-concurrency", "1"]


@pytest.mark.parametrize("workers", ["0", "2"])
def test_live_progress_on_a_terminal(project: tuple[Path, dict[str, str]], workers: str) -> None:
    cwd, env = project
    out = _pty_run(cwd, [*RUN, "-n", workers], env)
    screen = pyte.Screen(COLS, 500)  # tall enough that nothing scrolls away
    screen.set_mode(pyte.modes.LNM)  # a pty turns "\n" into "\r\n"
    stream = pyte.Stream(screen)
    # while it ran: after the second item, the status is right of pytest's characters
    second = out.index("  vibecheck 2/3 items (67%)")
    stream.feed(out[:out.index(LiveLine.RESTORE, second) + len(LiveLine.RESTORE)])
    prefix = "tiny " if workers == "0" else ""  # xdist writes no file name
    row = next(line.rstrip() for line in screen.display if line.startswith(f"{prefix}FF"))
    # tokens: what the run has spent so far (every request answered, also those sent ahead for
    # the item still running), the figures of the last line and run.spend
    assert re.fullmatch(rf"{prefix}FF  vibecheck 2/3 items \(67%\), gen 2 \(0 cached\), tokens "
                        r"(2\.4k in / 600|3\.6k in / 900) out, ETA 0m\d\ds", row), row
    assert (screen.cursor.x, screen.display[screen.cursor.y].startswith(f"{prefix}FF ")) == (len(prefix) + 2, True)
    # at the end: pytest's line as pytest wrote it, no status left anywhere on the screen
    stream.feed(out[len(out[:out.index(LiveLine.RESTORE, second) + len(LiveLine.RESTORE)]):])
    text = "\n".join(line.rstrip() for line in screen.display)
    (row,) = [line for line in text.splitlines() if line.startswith(f"{prefix}FFF")]
    assert re.fullmatch(rf"{prefix}FFF +\[100%\]", row), row
    assert "vibecheck 3/3 items" not in text and "vibecheck 2/3" not in text
    assert LiveLine.SAVE not in out[out.index("[100%]"):]  # nothing drawn after the test loop
    assert "vibecheck: 3/3 items (100%)" not in out  # no CI lines on a terminal
    assert "vibecheck: spent 3,600 input + 900 output tokens on 3 model requests" in text


def test_ci_lines_on_a_terminal_when_ci_is_set(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    out = _pty_run(cwd, [*RUN, "--vibe-progress", "always"], {**env, "CI": "true"})
    assert LiveLine.SAVE not in out
    lines = [ln for ln in out.replace("\r", "").splitlines() if re.match(r"vibecheck: \d+/\d+ items", ln)]
    assert [ln.split(";")[0] for ln in lines] == [
        "vibecheck: 1/3 items (33%)", "vibecheck: 2/3 items (67%)", "vibecheck: 3/3 items (100%)"]
    assert lines[-1].startswith("vibecheck: 3/3 items (100%); generations 3 requested, 0 from the cache; "
                                "tokens 3.6k in / 900 out; elapsed ")
