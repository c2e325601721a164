"""``vibecheck cache export PATH`` / ``vibecheck cache import PATH``."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.generate import transfer as ct
from pytest_vibecheck.generate.backends import Generation, GenerationRequest
from pytest_vibecheck.generate.cache import GenerationCache, cache_key

IDENTITY = {"provider": "openai", "model": "gpt-x", "base_url": "http://u:pw@127.0.0.1:8000/v1",
            "api_key": "sk-very-secret"}


def _fill(path: Path, prompts: list[str]) -> list[str]:
    keys = []
    with GenerationCache(path) as cache:
        for n, prompt in enumerate(prompts):
            req = GenerationRequest(messages=({"role": "user", "content": prompt},), max_tokens=64,
                                    extra={"top_p": 0.5, "api_key": "sk-very-secret"})
            key = cache_key(IDENTITY, req)
            cache.put(key, Generation(text=f"reply {n}", usage={"input_tokens": n, "output_tokens": 2 * n},
                                      latency_s=0.25, model="gpt-x-2026", finish_reason="stop"),
                      identity=IDENTITY, request=req, run_id="run-1")
            keys.append(key)
    return keys


def _rows(path: Path) -> list[dict[str, object]]:
    with GenerationCache(path) as cache:
        return list(cache.rows())


def test_round_trip_merge_and_no_secrets(tmp_path: Path) -> None:
    src = tmp_path / "a" / "cache.sqlite"
    keys = _fill(src, ["p0", "p1", "p2"])
    out = tmp_path / "cache.jsonl.gz"
    st = ct.export_cache(src, out)
    assert (st.rows, st.rejected) == (3, 0)
    raw = gzip.decompress(out.read_bytes()).decode("utf-8")
    assert "sk-very-secret" not in raw and "pw@" not in raw
    lines = [json.loads(x) for x in raw.splitlines()]
    assert lines[0] == {"format": "pytest-vibecheck-cache", "version": 1, "cache_schema": 1, "rows": 3}
    assert [x["key"] for x in lines[1:]] == sorted(keys)
    # reproducible bytes
    again = tmp_path / "again.jsonl.gz"
    ct.export_cache(src, again)
    assert again.read_bytes() == out.read_bytes()

    dst = tmp_path / "b" / "cache.sqlite"
    kept = _fill(dst, ["p2", "other"])[0]  # p2 is already there (same key, "reply 0")
    st = ct.import_cache(out, dst)
    assert (st.rows, st.added, st.present, st.rejected) == (3, 2, 1, 0)
    got = {r["key"]: r for r in _rows(dst)}
    assert len(got) == 4
    for row in _rows(src):
        if row["key"] == kept:  # rows already in the target cache win
            assert (row["reply"], got[kept]["reply"]) == ("reply 2", "reply 0")
        else:
            assert got[str(row["key"])] == row
    st = ct.import_cache(out, dst)  # twice: nothing new
    assert (st.added, st.present) == (0, 3)
    assert len(_rows(dst)) == 4
    with GenerationCache(dst) as cache:
        assert cache.integrity_check() == "ok"


def test_bad_rows_are_rejected(tmp_path: Path) -> None:
    src = tmp_path / "cache.sqlite"
    keys = _fill(src, ["p0", "p1", "p2"])
    conn = sqlite3.connect(src)
    conn.execute("UPDATE generations SET key = 'not-a-key' WHERE key = ?", (keys[1],))
    bad_req = json.dumps({"params": {"authorization": "Bearer x"}}, sort_keys=True, separators=(",", ":"))
    conn.execute("UPDATE generations SET request = ? WHERE key = ?", (bad_req, keys[2]))
    conn.commit()
    conn.close()
    st = ct.export_cache(src, tmp_path / "out.jsonl.gz")
    assert (st.rows, st.rejected) == (1, 2)
    assert sorted(r.split(": ", 1)[1] for r in st.reasons) == [
        "key is not a sha256 hex digest (64 lowercase hex digits)",
        "request has secret-looking field(s) params.authorization",
    ]
    # a hand-edited file is checked on import too
    lines = gzip.decompress((tmp_path / "out.jsonl.gz").read_bytes()).decode().splitlines()
    row = json.loads(lines[1])
    row["request"] = json.dumps({"backend": {"api_key": "sk-x"}})
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress((lines[0] + "\n" + json.dumps(row) + "\n").encode()))
    st = ct.import_cache(bad, tmp_path / "new.sqlite")
    assert (st.rows, st.added, st.rejected) == (1, 0, 1)
    assert st.reasons == (f"line 2 ({row['key'][:12]}): request has secret-looking field(s) backend.api_key",)
    assert _rows(tmp_path / "new.sqlite") == []


def test_file_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "x.jsonl.gz"
    plain.write_text("not gzip", encoding="utf-8")
    with pytest.raises(ct.TransferError, match="not a gzip-compressed JSONL cache export"):
        ct.import_cache(plain, tmp_path / "c.sqlite")
    other = tmp_path / "y.jsonl.gz"
    other.write_bytes(gzip.compress(b'{"format": "pytest-vibecheck-cache", "version": 1, "cache_schema": 99, "rows": 0}\n'))
    with pytest.raises(ct.TransferError, match="exported from cache schema 99, this version uses 1"):
        ct.import_cache(other, tmp_path / "c.sqlite")
    short = tmp_path / "z.jsonl.gz"
    short.write_bytes(gzip.compress(b'{"format": "pytest-vibecheck-cache", "version": 1, "cache_schema": 1, "rows": 2}\n'))
    with pytest.raises(ct.TransferError, match="header says 2 rows, the file has 0"):
        ct.import_cache(short, tmp_path / "c.sqlite")
    assert main(["cache", "export", str(tmp_path / "o.gz"), "--cache", str(tmp_path / "none.sqlite")]) == 2
    assert "cache none" not in capsys.readouterr().err


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "a.sqlite"
    _fill(src, ["p0", "p1"])
    out = tmp_path / "t.jsonl.gz"
    assert main(["cache", "export", str(out), "--cache", str(src)]) == 0
    assert capsys.readouterr().out == f"exported 2 generation(s) from {src} to {out}\n"
    dst = tmp_path / "b.sqlite"
    assert main(["cache", "import", str(out), "--cache", str(dst)]) == 0
    assert capsys.readouterr().out == (
        f"imported {out} into {dst}: 2 row(s) read, 2 added, 0 already present, 0 rejected\n")
