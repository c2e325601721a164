"""The SQLite generation cache: key recipe, modes, concurrency, crash safety, no secrets."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.generate import cache as gencache
from pytest_vibecheck.generate import protocols
from pytest_vibecheck.generate.backends import (
    BackendError,
    Generation,
    GenerationRequest,
    RateLimitError,
)
from pytest_vibecheck.generate.backends.scripted import ScriptedBackend
from pytest_vibecheck.generate.cache import (
    CACHE_MODES,
    CacheError,
    CacheMissError,
    CacheWarning,
    GenerationCache,
    cache_key,
    key_components,
    validate_cache_mode,
)
from pytest_vibecheck.generate.generator import Generator, GeneratorStats

ROOT = Path(__file__).resolve().parent.parent
ID = {"provider": "openai", "model": "gpt-x", "base_url": "http://127.0.0.1:8000/v1"}
MSGS = ({"role": "system", "content": "sys"}, {"role": "user", "content": "Write f."})


def req(**kw: Any) -> GenerationRequest:
    base: dict[str, Any] = {"messages": MSGS, "temperature": 0.0, "max_tokens": 512}
    base.update(kw)
    return GenerationRequest(**base)


class Counting(ScriptedBackend):
    """Replies ``"<prefix>:<last user message>"`` and counts calls."""

    def __init__(self, prefix: str = "r", model: str = "counting") -> None:
        super().__init__(model, respond=lambda r: f"{prefix}:{r.messages[-1]['content']}", usage={"input_tokens": 7, "output_tokens": 3})
        self.preflights = 0

    def preflight(self) -> None:
        self.preflights += 1


# ---------------------------------------------------------------- the key


def test_key_is_sha256_of_the_documented_components() -> None:
    comp = key_components(ID, req(extra={"top_p": 0.9}))
    assert comp == {
        "schema": 1,
        "prompt_version": "vibecheck-prompts-2",
        "profile": "paper",
        "backend": {"base_url": "http://127.0.0.1:8000/v1", "model": "gpt-x", "provider": "openai"},
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Write f."}],
        "temperature": 0.0,
        "max_tokens": 512,
        "params": {"top_p": 0.9},
        "sample": 0,
    }
    key = cache_key(ID, req(extra={"top_p": 0.9}))
    assert len(key) == 64 and int(key, 16) >= 0


CHANGES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("provider", {"provider": "anthropic"}, {}),
    ("model", {"model": "gpt-y"}, {}),
    ("base_url", {"base_url": "http://127.0.0.1:9000/v1"}, {}),
    ("message content", {}, {"messages": (MSGS[0], {"role": "user", "content": "Write g."})}),
    ("message role", {}, {"messages": ({"role": "user", "content": "sys"}, MSGS[1])}),
    ("system prompt", {}, {"messages": ({"role": "system", "content": "sys2"}, MSGS[1])}),
    ("temperature", {}, {"temperature": 0.2}),
    ("max_tokens", {}, {"max_tokens": 513}),
    ("top_p", {}, {"extra": {"top_p": 0.5}}),
    ("seed", {}, {"extra": {"seed": 1}}),
    ("stop", {}, {"extra": {"stop": ["```"]}}),
    ("profile", {}, {"profile": "lcb"}),
]


@pytest.mark.parametrize(("what", "identity", "request_kw"), CHANGES, ids=[c[0] for c in CHANGES])
def test_key_changes_with_each_component(what: str, identity: dict[str, Any], request_kw: dict[str, Any]) -> None:
    assert cache_key({**ID, **identity}, req(**request_kw)) != cache_key(ID, req())


def test_key_changes_with_prompt_and_schema_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    before = cache_key(ID, req())
    monkeypatch.setattr(gencache, "PROMPT_VERSION", "vibecheck-prompts-3")
    after_prompt = cache_key(ID, req())
    monkeypatch.setattr(gencache, "CACHE_SCHEMA_VERSION", 2)
    after_schema = cache_key(ID, req())
    assert len({before, after_prompt, after_schema}) == 3
    assert gencache.PROMPT_VERSION != protocols.PROMPT_VERSION  # the patch took effect


def test_sample_index_counts_only_above_temperature_zero() -> None:
    assert cache_key(ID, req(sample=3)) == cache_key(ID, req(sample=0))
    hot0 = cache_key(ID, req(temperature=0.8, sample=0))
    hot1 = cache_key(ID, req(temperature=0.8, sample=1))
    assert hot0 != hot1


SAME: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("timeout", {}, {"extra": {"timeout": 30}}),
    ("max_retries", {}, {"extra": {"max_retries": 9}}),
    ("concurrency", {}, {"extra": {"concurrency": 4, "max_concurrency": 2}}),
    ("api_key", {}, {"extra": {"api_key": "sk-abc"}}),
    ("authorization", {}, {"extra": {"Authorization": "Bearer x", "x_secret": "s", "password": "p"}}),
    ("headers/user/stream", {}, {"extra": {"extra_headers": {"a": "b"}, "user": "u", "stream": False}}),
    ("metadata", {}, {"task_id": "T/1", "label": "single-k3", "reference": "def f(): pass"}),
    ("int temperature", {}, {"temperature": 0}),
    ("url trailing slash", {"base_url": "http://127.0.0.1:8000/v1/"}, {}),
    ("url credentials", {"base_url": "http://me:pw@127.0.0.1:8000/v1?api-key=zzz"}, {}),
    ("identity secret", {"api_key": "sk-abc"}, {}),
]


@pytest.mark.parametrize(("what", "identity", "request_kw"), SAME, ids=[c[0] for c in SAME])
def test_key_ignores_excluded_parameters(what: str, identity: dict[str, Any], request_kw: dict[str, Any]) -> None:
    assert cache_key({**ID, **identity}, req(**request_kw)) == cache_key(ID, req())


def test_unserialisable_parameter_is_a_clear_error() -> None:
    with pytest.raises(ParameterError, match="sampling parameter 'top_p'"):
        cache_key(ID, req(extra={"top_p": object()}))


def test_validate_cache_mode() -> None:
    assert CACHE_MODES == ("use", "refresh", "only", "off")
    assert validate_cache_mode("only") == "only"
    with pytest.raises(ParameterError, match=r"\[tool.vibecheck\] cache_mode: unknown cache mode 'sometimes'"):
        validate_cache_mode("sometimes", "[tool.vibecheck] cache_mode")


# ---------------------------------------------------------------- modes


def test_mode_use_reads_and_writes(tmp_path: Path) -> None:
    backend = Counting()
    gen = Generator(backend, GenerationCache(tmp_path / "c.sqlite"), "use")
    first = gen.generate(req(task_id="T/1", label="baseline"))
    second = gen.generate(req(task_id="T/1", label="baseline"))
    assert (first.text, first.cached) == ("r:Write f.", False)
    assert (second.text, second.cached) == ("r:Write f.", True)
    assert first.key == second.key == gen.key(req())
    assert len(backend.history) == 1
    s = gen.stats
    assert (s.requests, s.hits, s.misses, s.generated, s.errors) == (2, 1, 1, 1, 0)
    assert (s.input_tokens, s.output_tokens, s.cached_input_tokens, s.cached_output_tokens) == (7, 3, 7, 3)
    assert s.hit_rate == 0.5
    assert backend.preflights == 1


def test_mode_refresh_regenerates_once_per_run(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    Generator(Counting("old"), GenerationCache(path), "use").generate(req())
    backend = Counting("new")
    gen = Generator(backend, GenerationCache(path), "refresh", run_id="run-2")
    a = gen.generate(req())
    b = gen.generate(req())  # same run: the row written by this run is reused
    assert (a.text, a.cached, b.text, b.cached) == ("new:Write f.", False, "new:Write f.", True)
    assert len(backend.history) == 1
    # a later `use` run sees the refreshed reply
    assert Generator(Counting("x"), GenerationCache(path), "use").generate(req()).text == "new:Write f."


def test_mode_refresh_other_worker_same_run_keeps_first_reply(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    w1 = Generator(Counting("w1"), GenerationCache(path), "refresh", run_id="R")
    w2 = Generator(Counting("w2"), GenerationCache(path), "refresh", run_id="R")
    assert w1.generate(req()).text == "w1:Write f."
    assert w2.generate(req()).text == "w1:Write f."  # looked up: written by the same run


def test_mode_only_hits_and_misses_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    Generator(Counting(), GenerationCache(path), "use").generate(req())
    backend = Counting()
    gen = Generator(backend, GenerationCache(path), "only")
    assert gen.generate(req()).text == "r:Write f."
    with pytest.raises(CacheMissError) as info:
        gen.generate(req(max_tokens=99, task_id="BigCodeBench/7", label="single-k2"))
    msg = str(info.value)
    assert "cache mode 'only': no cached reply for task 'BigCodeBench/7' (single-k2)" in msg
    assert "--vibe-cache-mode use" in msg
    assert (info.value.task_id, info.value.label) == ("BigCodeBench/7", "single-k2")
    assert backend.history == [] and backend.preflights == 0
    assert (gen.stats.hits, gen.stats.misses, gen.stats.errors) == (1, 1, 1)


def test_mode_only_needs_a_cache() -> None:
    with pytest.raises(ParameterError, match="cache mode 'only' needs a generation cache"):
        Generator(Counting(), None, "only")


def test_mode_off_never_touches_the_file(tmp_path: Path) -> None:
    backend = Counting()
    gen = Generator(backend, None, "off")
    gen.generate(req())
    gen.generate(req())
    assert len(backend.history) == 2
    assert (gen.stats.hits, gen.stats.misses, gen.stats.generated) == (0, 0, 2)
    assert gen.stats.hit_rate is None
    path = tmp_path / "c.sqlite"
    cache = GenerationCache(path)
    Generator(Counting(), cache, "off").generate(req())
    assert len(cache) == 0


def test_uncacheable_backends_bypass_the_cache(tmp_path: Path) -> None:
    backend = ScriptedBackend("local", default="x", cacheable=False)
    cache = GenerationCache(tmp_path / "c.sqlite")
    gen = Generator(backend, cache, "only")  # 'only' does not apply to offline backends
    assert gen.generate(req()).text == "x"
    assert len(cache) == 0 and not gen.uses_cache


def test_errors_are_not_cached_and_carry_the_item(tmp_path: Path) -> None:
    backend = ScriptedBackend("flaky")
    backend.enqueue(RateLimitError("429 after retries"), "ok")
    gen = Generator(backend, GenerationCache(tmp_path / "c.sqlite"), "use")
    with pytest.raises(RateLimitError) as info:
        gen.generate(req(task_id="T/9", label="multi-k1"))
    assert (info.value.task_id, info.value.label) == ("T/9", "multi-k1")
    assert gen.generate(req()).text == "ok"
    assert (gen.stats.errors, gen.stats.generated, gen.stats.misses) == (1, 1, 2)


def test_generate_many_keeps_order_and_returns_errors(tmp_path: Path) -> None:
    backend = ScriptedBackend(
        "many",
        respond=lambda r: (_ for _ in ()).throw(BackendError("boom")) if r.task_id == "bad" else r.task_id or "",
    )
    gen = Generator(backend, GenerationCache(tmp_path / "c.sqlite"), "use", concurrency=3)
    out = gen.generate_many(
        [req(messages=({"role": "user", "content": str(i)},), task_id=t) for i, t in enumerate(["a", "bad", "c", "d"])]
    )
    assert [o.text if isinstance(o, Generation) else type(o).__name__ for o in out] == ["a", "BackendError", "c", "d"]


def test_stats_merge() -> None:
    a = GeneratorStats(requests=2, hits=1, misses=1, input_tokens=5)
    a.merge({"requests": 3, "hits": 3, "input_tokens": 1, "latency_s": 0.5})
    a.merge(GeneratorStats(misses=2))
    assert (a.requests, a.hits, a.misses, a.input_tokens, a.latency_s) == (5, 4, 3, 6, 0.5)
    assert a.hit_rate == pytest.approx(4 / 7)
    assert set(a.as_dict()) == {
        "requests", "hits", "misses", "generated", "errors", "input_tokens", "output_tokens",
        "cached_input_tokens", "cached_output_tokens", "latency_s",
    }


# ---------------------------------------------------------------- the file


def test_stored_row_and_stats(tmp_path: Path) -> None:
    path = tmp_path / ".vibecheck" / "cache.sqlite"
    cache = GenerationCache(path)
    assert (path.parent / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    gen = Generator(Counting(), cache, "use", run_id="RUN")
    gen.generate(req(task_id="T/1", label="single-k1", extra={"top_p": 0.9}))
    (row,) = list(cache.rows())
    assert row["reply"] == "r:Write f."
    assert (row["provider"], row["model"], row["task_id"], row["label"], row["run_id"]) == ("scripted", "counting", "T/1", "single-k1", "RUN")
    assert (row["input_tokens"], row["output_tokens"], row["finish_reason"]) == (7, 3, "stop")
    assert '"top_p":0.9' in row["request"]
    assert abs(row["created_at"] - time.time()) < 60
    st = cache.stats()
    assert (st.entries, st.input_tokens, st.output_tokens) == (1, 7, 3)
    assert st.by_model == {"scripted:counting": 1} and st.by_label == {"single-k1": 1}
    assert cache.integrity_check() == "ok"
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CacheError, match=r"not a usable SQLite database .* --vibe-cache-mode off"):
        GenerationCache(bad)


def test_other_schema_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    GenerationCache(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE name = 'schema'")
    with pytest.raises(CacheError, match="written with cache schema 99, this version uses 1"):
        GenerationCache(path)


def test_runtime_write_failure_warns_and_keeps_the_reply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = GenerationCache(tmp_path / "c.sqlite")
    gen = Generator(Counting(), cache, "use")

    def broken(*a: object, **k: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(cache, "put", broken)
    with pytest.warns(CacheWarning, match="write failed"):
        g = gen.generate(req())
    assert (g.text, g.cached) == ("r:Write f.", False)


def test_no_key_is_ever_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-PLANTED-ENV-0123456789")
    path = tmp_path / "c.sqlite"
    backend = Counting()
    backend.base_url = "https://user:pw-PLANTED-URL@example.invalid/v1?api-key=PLANTED-QUERY&region=eu"
    gen = Generator(backend, GenerationCache(path), "use")
    gen.generate(
        req(
            extra={
                "top_p": 0.95,
                "api_key": "sk-PLANTED-EXTRA",
                "Authorization": "Bearer PLANTED-AUTH",
                "client_secret": "PLANTED-SECRET",
                "extra_headers": {"x-api-key": "PLANTED-HEADER"},
            }
        )
    )
    gen.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("c.sqlite"))
    assert b"top_p" in blob and b"region=eu" in blob  # the row is really there
    for secret in (b"PLANTED-ENV", b"PLANTED-EXTRA", b"PLANTED-AUTH", b"PLANTED-SECRET", b"PLANTED-HEADER", b"PLANTED-URL", b"PLANTED-QUERY", b"pw-"):
        assert secret not in blob, secret


# ---------------------------------------------------------------- many processes


def _worker(args: tuple[str, int]) -> dict[str, str]:
    path, p = args
    warnings.simplefilter("error", CacheWarning)
    backend = ScriptedBackend(f"w{p}", respond=lambda r: f"worker{p}:{r.messages[-1]['content']}")
    backend.model = "shared"  # same identity in every process
    gen = Generator(backend, GenerationCache(path), "use")
    seen = {}
    for j in range(60):
        i = p * 30 + j
        g = gen.generate(GenerationRequest(({"role": "user", "content": f"task {i}"},), task_id=str(i)))
        seen[str(i)] = g.text
    gen.close()
    return seen


def test_concurrent_writers_in_four_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    GenerationCache(path).close()
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.map(_worker, [(path, p) for p in range(4)])
    cache = GenerationCache(path)
    stored = {r["task_id"]: r["reply"] for r in cache.rows()}
    assert len(stored) == 150  # keys 0..149, overlapping ranges of 60
    for seen in results:
        for task, text in seen.items():
            assert stored[task] == text  # first writer wins; everyone used the stored reply
    assert cache.integrity_check() == "ok"


WRITER = """
import sys
from pytest_vibecheck.generate.backends import GenerationRequest
from pytest_vibecheck.generate.backends.scripted import ScriptedBackend
from pytest_vibecheck.generate.cache import GenerationCache
from pytest_vibecheck.generate.generator import Generator
backend = ScriptedBackend("crash", respond=lambda r: "reply-" + r.task_id + "-" + "x" * 20000)
gen = Generator(backend, GenerationCache(sys.argv[1]), "use")
i = 0
while True:
    gen.generate(GenerationRequest(({"role": "user", "content": f"task {i}"},), task_id=str(i)))
    i += 1
"""


def test_kill_9_mid_run_then_resume(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    GenerationCache(path).close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], env=env, stderr=subprocess.PIPE)
    probe = GenerationCache(path)
    deadline = time.monotonic() + 60
    while len(probe) < 40:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "writer too slow"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    probe.close()

    cache = GenerationCache(path)
    assert cache.integrity_check() == "ok"
    rows = {int(r["task_id"]): r["reply"] for r in cache.rows()}
    n = len(rows)
    assert n >= 40
    assert sorted(rows) == list(range(n))  # committed rows form a prefix; no torn row
    assert all(rows[i] == f"reply-{i}-" + "x" * 20000 for i in rows)

    backend = ScriptedBackend("crash", respond=lambda r: "reply-" + (r.task_id or "") + "-" + "x" * 20000)
    gen = Generator(backend, cache, "use")
    for i in range(n + 5):
        gen.generate(GenerationRequest(({"role": "user", "content": f"task {i}"},), task_id=str(i)))
    assert (gen.stats.hits, gen.stats.misses) == (n, 5)
    assert len(backend.history) == 5
    assert cache.integrity_check() == "ok"
