"""Every benchmark item has a hard deadline (pytest-timeout), so a backend that never answers
cannot stall the run: the item is an error (infrastructure), never a model failure."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from plugin_helpers import write_tiny_suite

from pytest_vibecheck.plugin.deadline import VERIFY_BUDGET_S, item_deadline_s


def test_the_computed_deadline_covers_every_turn_and_the_window() -> None:
    single = item_deadline_s(protocol="single", k=3, request_timeout_s=600, retries=4,
                             concurrency=4, exec_limit_s=80, calibration_s=300)
    # 8 rounds (window 32 / concurrency 4) of one generation of up to 5 x 600 s
    assert single == 8 * 1 * 600 * 5 + 1 * (80 + VERIFY_BUDGET_S) + 300
    multi = item_deadline_s(protocol="multi", k=3, request_timeout_s=10, retries=0,
                            concurrency=32, exec_limit_s=6, calibration_s=0)
    assert multi == 1 * 4 * 10 * 1 + 4 * (6 + VERIFY_BUDGET_S)


class _Silent(BaseHTTPRequestHandler):
    """Reads the request and answers nothing until the test releases it (then a 400)."""

    release = threading.Event()
    seen = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).seen.set()
        type(self).release.wait(120)
        body = b'{"error": {"message": "released", "type": "invalid_request_error"}}'
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.slow  # waits for a 15 s deadline in a subprocess
def test_a_backend_that_never_answers_is_an_error_at_the_deadline(tmp_path: Path) -> None:
    write_tiny_suite(tmp_path / "suite")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Silent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "VIBECHECK_TIMEOUT": "600"}
    cmd = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--vibe-model", "openai:silent-model", "--vibe-suite", "suite", "--vibe-tasks", "t/add",
        "--vibe-protocol", "baseline", "--vibe-cache-mode", "off",
        "--vibe-base-url", f"http://127.0.0.1:{server.server_port}/v1",
        "--vibe-item-timeout", "15", "-rE",
    ]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("=") and " in " in line and ("error" in line or "passed" in line):
                break  # pytest's last line: the session is over
        summary_after = time.monotonic() - t0
    finally:
        _Silent.release.set()  # let the hung request end so the process can exit
        try:
            proc.wait(timeout=120)
        finally:
            proc.kill()
            server.shutdown()
    out = "\n".join(lines)
    assert _Silent.seen.is_set(), out
    assert "1 error" in lines[-1], out
    assert "Timeout (>15.0s)" in out, out
    assert "failed" not in lines[-1], out
    # the request timeout is 600 s (and retried); the item's deadline (15 s, start-up of the
    # SDK included, generous for a loaded machine) ended it
    assert summary_after < 120, out


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_item_timeout_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    result = pytester.runpytest("--vibe-model", "reference", "--vibe-item-timeout", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*vibecheck: --vibe-item-timeout: {value!r} is not valid; expected a number of seconds > 0*"])
