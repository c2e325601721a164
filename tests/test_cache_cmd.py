"""``vibecheck cache stats``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.generate.backends import GenerationRequest
from pytest_vibecheck.generate.backends.scripted import ScriptedBackend
from pytest_vibecheck.generate.cache import GenerationCache
from pytest_vibecheck.generate.generator import Generator


def fill(path: Path) -> None:
    bot = ScriptedBackend("bot", respond=lambda r: "reply", usage={"input_tokens": 100, "output_tokens": 20})
    gen = Generator(bot, GenerationCache(path), "use")
    for i, label in enumerate(["baseline", "single-k1", "single-k1"]):
        gen.generate(GenerationRequest(({"role": "user", "content": f"q{i}"},), task_id=f"T/{i}", label=label))
    gen.close()


def test_cache_stats_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sqlite"
    fill(path)
    assert main(["cache", "stats", "--cache", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["entries"], data["input_tokens"], data["output_tokens"], data["integrity"]) == (3, 300, 60, "ok")
    assert data["by_model"] == {"scripted:bot": 3}
    assert data["by_label"] == {"baseline": 1, "single-k1": 2}
    assert data["schema"] == 1 and data["size_bytes"] > 0


def test_cache_stats_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sqlite"
    fill(path)
    assert main(["cache", "stats", "--cache", str(path)]) == 0
    out = capsys.readouterr().out
    assert "entries:    3\n" in out
    assert "tokens:     300 in, 60 out\n" in out
    assert "integrity:  ok\n" in out
    assert "  scripted:bot" in out


def test_cache_stats_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "stats", "--cache", str(tmp_path / "none.sqlite")]) == 2
    assert "none.sqlite: no such file; give --cache PATH" in capsys.readouterr().err
