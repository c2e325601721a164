"""The plugin's settings, resolved once per session into a frozen :class:`VibeSettings`.

Each setting can be given four ways; the first that is set wins:

1. the command line (``--vibe-model gpt-5``);
2. the environment (``VIBECHECK_MODEL=gpt-5``);
3. the file: ``[tool.vibecheck]`` in the rootdir's ``pyproject.toml`` (``model = "gpt-5"`` or a
   list), else the pytest ini key ``vibe_model`` (``[tool.pytest.ini_options]``, ``pytest.ini``,
   ``tox.ini``, ``setup.cfg``);
4. the default.

Every value is validated by a ``_validate_<name>(value, where)`` function; a bad value raises
:class:`pytest.UsageError` whose message names the setting and where the value came from
(``--vibe-k``, ``environment variable VIBECHECK_K``, ``pyproject.toml [tool.vibecheck] k``, ...).

Activation: the plugin collects items only when a model is given on the command line
(``--vibe-model``), or when ``--vibe`` is given and models come from the environment or file.
So a ``[tool.vibecheck] model = ...`` never turns an ordinary ``pytest`` run into a benchmark.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_vibecheck.types import CACHE_MODES, EXTRACT_MODES, PROTOCOLS, ProtocolName

__all__ = [
    "OPTIONS",
    "PROTOCOLS",
    "SETTINGS_KEY",
    "OptionSpec",
    "VibeSettings",
    "add_options",
    "resolve_settings",
]

#: Sub-tables of ``[tool.vibecheck]`` owned by other parts (the CI gate); not settings here.
SUBTABLES: frozenset[str] = frozenset({"gate"})


@dataclass(frozen=True)
class VibeSettings:
    """Every ``--vibe-*`` setting after resolution and validation.

    ``sources`` maps each setting name to where its value came from (``"--vibe-k"``,
    ``"environment variable VIBECHECK_K"``, ``"pyproject.toml [tool.vibecheck] k"``,
    ``"ini vibe_k"``, ``"default"``). Paths are absolute (relative ones are resolved against
    the rootdir). ``profile`` names the run's profile
    (:mod:`pytest_vibecheck.suites.profiles`: ``paper`` or ``lcb``). ``temperature`` is the
    sampling temperature (>= 0) and ``system_prompt`` the system message; ``None`` for either
    means "the profile's, else the suite manifest's, else the default" (resolved per suite by
    :func:`~pytest_vibecheck.generate.setup.generation_setup`). ``max_tokens`` is the output
    token limit per reply, ``concurrency`` the maximum concurrent generation requests per
    process.
    """

    models: tuple[str, ...] = ()
    suites: tuple[str, ...] = ("bigvibebench-lite",)
    protocols: tuple[ProtocolName, ...] = PROTOCOLS
    ks: tuple[int, ...] = (5,)
    tasks: tuple[str, ...] = ()
    limit: int | None = None
    samples: int = 1
    cache: Path | None = None
    cache_mode: str = "use"
    profile: str = "paper"
    temperature: float | None = None
    system_prompt: str | None = None
    max_tokens: int = 4096
    concurrency: int = 4
    base_url: str | None = None
    api_key_env: str | None = None
    extract: str = "first"
    report: Path | None = None
    junitxml: Path | None = None
    report_replies: bool = True
    instruction_dirs: tuple[Path, ...] = ()
    item_timeout: float | None = None
    request_timeout: float | None = None
    max_errors: str | None = None
    budget: str | None = None
    batch: bool = False
    progress: str = "auto"
    executor: str = "local"
    env: str | None = None
    active: bool = False
    sources: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Builtins only, for the report's ``run.settings`` (no secrets: the base URL loses
        its user/password part)."""
        from pytest_vibecheck.generate.backends.base import redact_url

        return {
            "models": list(self.models),
            "suites": list(self.suites),
            "protocols": list(self.protocols),
            "ks": list(self.ks),
            "tasks": list(self.tasks),
            "limit": self.limit,
            "samples": self.samples,
            "cache": str(self.cache) if self.cache else None,
            "cache_mode": self.cache_mode,
            "profile": self.profile,
            "temperature": self.temperature,
            "system_prompt": self.system_prompt,
            "max_tokens": self.max_tokens,
            "concurrency": self.concurrency,
            "base_url": redact_url(self.base_url),
            "api_key_env": self.api_key_env,
            "extract": self.extract,
            "report": str(self.report) if self.report else None,
            "junitxml": str(self.junitxml) if self.junitxml else None,
            "report_replies": self.report_replies,
            **({"instruction_dirs": [str(d) for d in self.instruction_dirs]}
               if self.instruction_dirs else {}),
            "request_timeout": self.request_timeout,
            "max_errors": self.max_errors,
            "budget": self.budget,
            "batch": self.batch,
            "progress": self.progress,
            "executor": self.executor,
            "env": self.env,
        }


#: Stash key of the session's settings (set in ``pytest_configure`` on controller and workers).
SETTINGS_KEY = pytest.StashKey[VibeSettings]()


# ---------------------------------------------------------------- validators
# Each takes the raw value (a str from the command line / environment / ini, or a TOML value)
# and ``where`` (for the message), and returns the typed value.


def _fail(where: str, value: object, expected: str) -> pytest.UsageError:
    return pytest.UsageError(f"vibecheck: {where}: {value!r} is not valid; expected {expected}")


def _as_list(value: object, where: str) -> list[str]:
    """A list of non-empty strings from a comma-separated string or a list of strings."""
    if isinstance(value, str):
        parts = value.split(",")
    elif isinstance(value, (list, tuple)):
        parts = []
        for v in value:
            if not isinstance(v, str):
                raise _fail(where, value, "a string or a list of strings")
            parts.extend(v.split(","))
    else:
        raise _fail(where, value, "a string or a list of strings")
    return [p.strip() for p in parts if p.strip()]


def _as_int(value: object, where: str, *, minimum: int, name: str) -> int:
    if isinstance(value, bool):
        raise _fail(where, value, f"an integer >= {minimum} ({name})")
    if isinstance(value, int):
        n = value
    elif isinstance(value, str):
        try:
            n = int(value.strip())
        except ValueError:
            raise _fail(where, value, f"an integer >= {minimum} ({name})") from None
    else:
        raise _fail(where, value, f"an integer >= {minimum} ({name})")
    if n < minimum:
        raise _fail(where, value, f"an integer >= {minimum} ({name})")
    return n


def _validate_models(value: object, where: str) -> tuple[str, ...]:
    models = _as_list(value, where)
    if not models:
        raise _fail(where, value, "at least one model spec such as openai:gpt-5, replay:NAME or reference")
    seen: list[str] = []
    for m in models:
        if any(ch.isspace() for ch in m) or "[" in m or "]" in m or "::" in m:
            raise _fail(where, m, "a model spec without spaces, brackets or '::' (e.g. openai:gpt-5)")
        if m not in seen:
            seen.append(m)
    return tuple(seen)


def _validate_suites(value: object, where: str) -> tuple[str, ...]:
    suites = _as_list(value, where)
    if not suites:
        raise _fail(where, value, "a suite name (e.g. bigvibebench-lite) or a suite folder")
    return tuple(dict.fromkeys(suites))


def _validate_protocols(value: object, where: str) -> tuple[str, ...]:
    protocols = _as_list(value, where)
    for p in protocols:
        if p not in PROTOCOLS:
            import difflib

            close = difflib.get_close_matches(p, PROTOCOLS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _fail(where, p, f"a comma-separated list of {', '.join(PROTOCOLS)}{hint}")
    if not protocols:
        raise _fail(where, value, f"a comma-separated list of {', '.join(PROTOCOLS)}")
    return tuple(p for p in PROTOCOLS if p in protocols)


def _validate_ks(value: object, where: str) -> tuple[int, ...]:
    items: list[object]
    expected = "integers >= 1 (instructions per task): 3, [1, 3, 5] or \"1,3,5\""
    if isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, (list, tuple)):
        items = []
        for v in value:  # integers, or strings of them (["1", "3"], ["1,3"])
            if isinstance(v, int) and not isinstance(v, bool):
                items.append(v)
            elif isinstance(v, str) and all(p.strip().isdigit() for p in v.split(",") if p.strip()):
                items.extend(p.strip() for p in v.split(",") if p.strip())
            else:
                raise _fail(where, value, expected)
    elif isinstance(value, str):
        items = list(_as_list(value, where))
    else:
        raise _fail(where, value, expected)
    ks = sorted({_as_int(v, where, minimum=1, name="instructions per task, e.g. 1,3,5") for v in items})
    if not ks:
        raise _fail(where, value, "a comma-separated list of integers >= 1, e.g. 1,3,5")
    return tuple(ks)


def _validate_tasks(value: object, where: str) -> tuple[str, ...]:
    return tuple(_as_list(value, where))


def _validate_limit(value: object, where: str) -> int:
    return _as_int(value, where, minimum=1, name="problems per suite")


def _validate_samples(value: object, where: str) -> int:
    return _as_int(value, where, minimum=1, name="samples per item")


def _validate_path(value: object, where: str) -> Path:
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise _fail(where, value, "a file path")
    return Path(str(value).strip()).expanduser()


def _validate_instruction_dirs(value: object, where: str) -> tuple[Path, ...]:
    folders = _as_list(value, where)
    if not folders:
        raise _fail(where, value, "folders of instruction TOML files (comma-separated or a list)")
    return tuple(Path(f).expanduser() for f in dict.fromkeys(folders))


def _validate_item_timeout(value: object, where: str) -> float:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise _fail(where, value, "a number of seconds > 0") from None
    if isinstance(value, bool) or not seconds > 0 or math.isinf(seconds):
        raise _fail(where, value, "a number of seconds > 0")
    return seconds


def _validate_cache_mode(value: object, where: str) -> str:
    if not isinstance(value, str) or value.strip() not in CACHE_MODES:
        raise _fail(where, value, f"one of {', '.join(CACHE_MODES)}")
    return value.strip()


def _validate_temperature(value: object, where: str) -> float:
    if isinstance(value, bool):
        raise _fail(where, value, "a number >= 0")
    try:
        t = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise _fail(where, value, "a number >= 0") from None
    if not math.isfinite(t) or t < 0:
        raise _fail(where, value, "a number >= 0")
    return t


def _validate_profile(value: object, where: str) -> str:
    from pytest_vibecheck.suites.profiles import PROFILES

    name = value.strip() if isinstance(value, str) else value
    if name not in PROFILES:
        import difflib

        close = difflib.get_close_matches(str(name), list(PROFILES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise _fail(where, value, f"one of {', '.join(PROFILES)}{hint}")
    return str(name)


def _validate_system_prompt(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, value, "a non-empty string, or file:PATH to read it from a file")
    if value.startswith("file:"):  # not "@FILE": pytest reads @FILE as a file of arguments
        path = Path(value.removeprefix("file:")).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise pytest.UsageError(f"vibecheck: {where}: cannot read {path}: {exc.strerror}") from None
        if not text.strip():
            raise pytest.UsageError(f"vibecheck: {where}: {path} is empty")
        return text
    return value


def _validate_max_tokens(value: object, where: str) -> int:
    return _as_int(value, where, minimum=1, name="output tokens per reply")


def _validate_concurrency(value: object, where: str) -> int:
    return _as_int(value, where, minimum=1, name="concurrent generation requests per process")


def _validate_base_url(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip().startswith(("http://", "https://")):
        raise _fail(where, value, "an http:// or https:// URL")
    return value.strip()


def _validate_api_key_env(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip().replace("_", "A").isalnum():
        raise _fail(where, value, "the name of an environment variable, e.g. MY_OPENAI_KEY")
    return value.strip()


def _validate_yes_no(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("yes", "true", "1", "on"):
        return True
    if text in ("no", "false", "0", "off"):
        return False
    raise _fail(where, value, "yes or no")


def _validate_extract(value: object, where: str) -> str:
    if not isinstance(value, str) or value.strip() not in EXTRACT_MODES:
        raise _fail(where, value, f"one of {', '.join(EXTRACT_MODES)}")
    return value.strip()


def _validate_max_errors(value: object, where: str) -> str:
    from pytest_vibecheck.config.limits import parse_max_errors
    from pytest_vibecheck.errors import ParameterError

    try:
        return parse_max_errors(str(value)).text
    except ParameterError as exc:
        raise pytest.UsageError(f"vibecheck: {where}: {exc}") from None


def _validate_budget(value: object, where: str) -> str:
    from pytest_vibecheck.config.limits import parse_budget
    from pytest_vibecheck.errors import ParameterError

    try:
        return parse_budget(str(value)).text
    except ParameterError as exc:
        raise pytest.UsageError(f"vibecheck: {where}: {exc}") from None


def _validate_progress(value: object, where: str) -> str:
    if not isinstance(value, str) or value.strip() not in ("auto", "always", "off"):
        raise _fail(where, value, "one of auto, always, off")
    return value.strip()


def _validate_executor(value: object, where: str) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if text not in ("local", "ray") and not (text.startswith("ray://") and len(text) > 6):
        raise _fail(where, value, "local, ray or ray://HOST:PORT")
    return text


def _validate_env(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, value, "an environment name (vibecheck env list) or a folder")
    return value.strip()


@dataclass(frozen=True)
class OptionSpec:
    """One setting: its name (the ``VibeSettings`` field and the ``[tool.vibecheck]`` key),
    the command-line flag, the environment variable, the ini key, the help text (shared by
    option and ini key), how many values the command line takes, and the validator."""

    name: str
    flag: str
    metavar: str
    help: str
    validate: Callable[[object, str], Any]
    repeatable: bool = False
    toml_keys: tuple[str, ...] = ()
    #: an on/off switch: the command line takes no value (``--vibe-gate``)
    switch: bool = False

    @property
    def env(self) -> str:
        return "VIBECHECK_" + self.flag.removeprefix("--vibe-").replace("-", "_").upper()

    @property
    def ini(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def dest(self) -> str:
        return self.ini


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("models", "--vibe-model", "SPEC",
               "model to evaluate: openai:MODEL, anthropic:MODEL, replay:NAME|PATH, reference "
               "(repeatable or comma-separated); giving it turns the benchmark on",
               _validate_models, repeatable=True, toml_keys=("model", "models")),
    OptionSpec("suites", "--vibe-suite", "NAME|PATH",
               "suite to run: a shipped name (bigvibebench, bigvibebench-hard, livevibebench, "
               "bigvibebench-lite) or a suite folder (repeatable; default bigvibebench-lite)",
               _validate_suites, repeatable=True, toml_keys=("suite", "suites")),
    OptionSpec("protocols", "--vibe-protocol", "LIST",
               "protocols, comma-separated: baseline,single,multi (default all three)",
               _validate_protocols, toml_keys=("protocol", "protocols")),
    OptionSpec("ks", "--vibe-k", "LIST",
               "numbers of instructions for single- and multi-turn, e.g. 1,3,5 (default 5)",
               _validate_ks, toml_keys=("k",)),
    OptionSpec("tasks", "--vibe-tasks", "GLOB",
               "only problems whose task id matches one of these globs (comma-separated), "
               "e.g. 'BigCodeBench/1*'", _validate_tasks, toml_keys=("tasks",)),
    OptionSpec("limit", "--vibe-limit", "N",
               "only the first N problems of each suite (after --vibe-tasks)",
               _validate_limit, toml_keys=("limit",)),
    OptionSpec("samples", "--vibe-samples", "N",
               "samples per (problem, model, protocol, k) for pass@k (default 1)",
               _validate_samples, toml_keys=("samples",)),
    OptionSpec("cache", "--vibe-cache", "PATH",
               "generation cache file (SQLite; default .vibecheck/cache.sqlite under the rootdir)",
               _validate_path, toml_keys=("cache",)),
    OptionSpec("cache_mode", "--vibe-cache-mode", "MODE",
               "generation cache mode: use (default), refresh, only (a miss is an error), off",
               _validate_cache_mode, toml_keys=("cache_mode", "cache-mode")),
    OptionSpec("profile", "--vibe-profile", "NAME",
               "run profile: paper (default: the paper's prompts, temperatures and grading) or "
               "lcb (LiveCodeBench's prompt and grading; LiveCodeBench suites, baseline only)",
               _validate_profile, toml_keys=("profile",)),
    OptionSpec("temperature", "--vibe-temperature", "T",
               "sampling temperature (default: the profile's, else the suite's: 0 on "
               "BigVibeBench, 0.2 on LiveVibeBench)", _validate_temperature,
               toml_keys=("temperature",)),
    OptionSpec("system_prompt", "--vibe-system-prompt", "TEXT|file:PATH",
               "system prompt of every request (default: the profile's, else the suite's)",
               _validate_system_prompt, toml_keys=("system_prompt", "system-prompt")),
    OptionSpec("max_tokens", "--vibe-max-tokens", "N",
               "maximum output tokens per reply (default 4096)", _validate_max_tokens,
               toml_keys=("max_tokens", "max-tokens")),
    OptionSpec("concurrency", "--vibe-concurrency", "N",
               "maximum concurrent generation requests per process (default 4)",
               _validate_concurrency, toml_keys=("concurrency",)),
    OptionSpec("base_url", "--vibe-base-url", "URL",
               "base URL of an OpenAI-compatible server (vLLM, Ollama, OpenRouter, llama.cpp)",
               _validate_base_url, toml_keys=("base_url", "base-url")),
    OptionSpec("api_key_env", "--vibe-api-key-env", "NAME",
               "environment variable holding the API key (default OPENAI_API_KEY / "
               "ANTHROPIC_API_KEY); the key itself is never a setting",
               _validate_api_key_env, toml_keys=("api_key_env", "api-key-env")),
    OptionSpec("extract", "--vibe-extract", "MODE",
               "code extraction: first (the paper's: first fenced block) or best "
               "(the block defining the entry point)", _validate_extract,
               toml_keys=("extract",)),
    OptionSpec("report", "--vibe-report", "PATH",
               "write the JSON report here (schema: docs/report-schema.md)", _validate_path,
               toml_keys=("report",)),
    OptionSpec("max_errors", "--vibe-max-errors", "N|P%",
               "stop sending requests once more than N items (or P%% of the run's items) had an "
               "infrastructure error (default 10%%, at least 10)", _validate_max_errors,
               toml_keys=("max_errors", "max-errors")),
    OptionSpec("budget", "--vibe-budget", "TOKENS|$USD",
               "stop sending requests once the run spent this many tokens (200k, 2M) or dollars at "
               "list prices ($5), or both (2M,$5); the summary and the JSON report (run.spend) "
               "state what was spent",
               _validate_budget, toml_keys=("budget",)),
    OptionSpec("batch", "--vibe-batch", "",
               "send the generations through the provider's batch API (OpenAI Batch API, "
               "Anthropic Message Batches) at half the price, one batch wave per turn; results "
               "take up to 24 hours (docs/generation.md, \"Batch mode\")",
               lambda value, where: _validate_switch(value, where), switch=True, toml_keys=("batch",)),
    OptionSpec("progress", "--vibe-progress", "MODE",
               "progress (items, generations, cache hits, tokens, ETA): on a terminal a live "
               "status beside pytest's progress characters, in CI logs ($CI set, or not a "
               "terminal) and with -v a line every 5%% once the run has lasted 5 s; auto "
               "(default), always (lines from the start), off", _validate_progress,
               toml_keys=("progress",)),
    OptionSpec("junitxml", "--vibe-junitxml", "PATH",
               "write a JUnit XML file with the metrics as test-suite properties",
               _validate_path, toml_keys=("junitxml",)),
    OptionSpec("report_replies", "--vibe-report-replies", "yes|no",
               "put each turn's messages, reply and extracted code in the JSON report "
               "(default yes: the report is self-contained for vibecheck view/show)",
               _validate_yes_no, toml_keys=("report_replies", "report-replies")),
    OptionSpec("instruction_dirs", "--vibe-instruction-dir", "DIR",
               "folder of team instruction TOML files (the shipped schema; repeatable or "
               "comma-separated), e.g. vibe/instructions", _validate_instruction_dirs,
               repeatable=True, toml_keys=("instruction_dirs", "instruction-dirs")),
    OptionSpec("item_timeout", "--vibe-item-timeout", "SECONDS",
               "hard deadline of each item (pytest-timeout; a timeout is an error, never a model "
               "failure); default computed from the generation and execution budget",
               _validate_item_timeout, toml_keys=("item_timeout", "item-timeout")),
    OptionSpec("request_timeout", "--vibe-request-timeout", "SECONDS",
               "timeout of one model request in seconds, each retry included (default "
               "$VIBECHECK_TIMEOUT, else 600); raise it for a slow server",
               _validate_item_timeout, toml_keys=("request_timeout", "request-timeout")),
    OptionSpec("executor", "--vibe-executor", "SPEC",
               "where the sandboxed tests run: local (default) or ray[://HOST:PORT] "
               "(the ray extra; docs/ci.md)", _validate_executor, toml_keys=("executor",)),
    OptionSpec("env", "--vibe-env", "NAME|PATH",
               "execution environment for candidate code, made by `vibecheck env create "
               "NAME` (default: this interpreter)", _validate_env, toml_keys=("env",)),
)


def _validate_switch(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise _fail(where, value, "true or false (1/0, yes/no)")


def _validate_ref(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, value, "a git ref")
    return value.strip()


def _ci_error(where: str, exc: Exception) -> pytest.UsageError:
    text = str(exc)
    return pytest.UsageError(f"vibecheck: {text}" if text.startswith(where) else f"vibecheck: {where}: {text}")


def _validate_fail_under(value: object, where: str) -> tuple[Any, ...]:
    from pytest_vibecheck.config.thresholds import parse_fail_under
    from pytest_vibecheck.errors import VibecheckError

    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
        raise _fail(where, value, "METRIC=VALUE strings")
    try:
        return tuple(parse_fail_under(list(items), where))
    except VibecheckError as exc:
        raise _ci_error(where, exc) from None


def _validate_max_fr(value: object, where: str) -> Any:
    from pytest_vibecheck.config.thresholds import parse_max_fr
    from pytest_vibecheck.errors import VibecheckError

    try:
        return parse_max_fr(str(value), where)
    except VibecheckError as exc:
        raise _ci_error(where, exc) from None


def _validate_shard(value: object, where: str) -> tuple[int, int]:
    from pytest_vibecheck.config.shard import parse_shard
    from pytest_vibecheck.errors import VibecheckError

    try:
        return parse_shard(str(value), where)
    except VibecheckError as exc:
        raise _ci_error(where, exc) from None


#: The CI options (:mod:`pytest_vibecheck.ci.plugin` registers them): the same four sources
#: as every setting (``VIBECHECK_GATE=1``, ``[tool.vibecheck] fail_under = [...]``, ini ``vibe_shard``).
CI_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("gate", "--vibe-gate", "",
               "pull-request gate: check the changed Python files of this git repository against "
               "the instructions in [tool.vibecheck.gate] (one item per file and instruction); the "
               "test suite is not collected", _validate_switch, toml_keys=(), switch=True),
    OptionSpec("base", "--vibe-base", "REF",
               "gate: the base ref to diff against (default: the pull request's base "
               "origin/$GITHUB_BASE_REF, else base in [tool.vibecheck.gate], else origin/main, main, "
               "origin/master, master)", _validate_ref, toml_keys=()),
    OptionSpec("all_lines", "--vibe-gate-all-lines", "",
               "gate: count violations on every line of a changed file, not only on changed lines",
               _validate_switch, toml_keys=(), switch=True),
    OptionSpec("gate_config", "--vibe-gate-config", "PATH",
               "gate: TOML file with [tool.vibecheck.gate] (default: pyproject.toml of the rootdir, "
               "else of the repository root)", _validate_path, toml_keys=()),
    OptionSpec("sarif", "--vibe-sarif", "PATH",
               "write a SARIF 2.1.0 log (for GitHub code scanning): with --vibe-gate the counted "
               "violations of the gate, else the instruction violations of the benchmark run",
               _validate_path, toml_keys=()),
    OptionSpec("fail_under", "--vibe-fail-under", "[MODEL:]METRIC=VALUE,...",
               "fail the run if a metric is below VALUE (fraction in [0,1] or a percentage like "
               "40%%): pass@1, pass@K, instruction_if, task_if; MODEL: limits it to one model; "
               "repeatable", _validate_fail_under, repeatable=True,
               toml_keys=("fail_under", "fail-under")),
    OptionSpec("max_fr", "--vibe-max-fr", "VALUE",
               "fail the run if functional regression FR_k of any single-/multi-turn group is "
               "above VALUE (fraction, or percentage with %%)", _validate_max_fr,
               toml_keys=("max_fr", "max-fr")),
    OptionSpec("no_fail_items", "--vibe-no-fail-items", "",
               "failing vibecheck items (model failures, gate violations) do not fail the run; "
               "only thresholds, errors and ordinary tests do", _validate_switch,
               toml_keys=("no_fail_items", "no-fail-items"), switch=True),
    OptionSpec("shard", "--vibe-shard", "I/N",
               "run only shard I of N (1-based) of the collected items: even, disjoint, "
               "deterministic; merge the JSON reports with `vibecheck merge`", _validate_shard,
               toml_keys=()),
)

_DEFAULTS = VibeSettings()


def add_options(parser: pytest.Parser) -> None:
    """Register every ``--vibe-*`` option and its ini key in the ``vibecheck`` group."""
    group = parser.getgroup("vibecheck", "VeriCode / Vibe Checker evaluation")
    group.addoption(
        "--vibe",
        action="store_true",
        dest="vibe",
        default=False,
        help="run the benchmark with the models configured in the environment "
        "(VIBECHECK_MODEL) or [tool.vibecheck] (implied by --vibe-model)",
    )
    add_option_specs(parser, OPTIONS)


def add_option_specs(parser: pytest.Parser, specs: Sequence[OptionSpec]) -> None:
    """Register the options of ``specs`` and their ini keys in the ``vibecheck`` group (the
    CI gate registers :data:`CI_OPTIONS` through this too)."""
    group = parser.getgroup("vibecheck", "VeriCode / Vibe Checker evaluation")
    for spec in specs:
        if spec.switch:
            group.addoption(spec.flag, action="store_const", const=True, dest=spec.dest,
                            default=None, help=spec.help)
        else:
            group.addoption(
                spec.flag,
                action="append" if spec.repeatable else "store",
                dest=spec.dest,
                default=None,
                metavar=spec.metavar,
                help=spec.help,
            )
        # argparse %-formats option help (so ``%`` is written ``%%``); ini help is printed as is
        parser.addini(spec.ini, spec.help.replace("%%", "%"), type="string", default="")


_PYPROJECT_KEY = pytest.StashKey["tuple[dict[str, Any], str]"]()


def _read_pyproject(config: pytest.Config) -> tuple[dict[str, Any], str]:
    """The ``[tool.vibecheck]`` table and the file's name for messages ({} if absent); read
    once per session (both plugins resolve their options from it)."""
    cached = config.stash.get(_PYPROJECT_KEY, None)
    if cached is not None:
        return cached
    candidates = []
    inipath = getattr(config, "inipath", None)
    if inipath is not None and Path(inipath).name == "pyproject.toml":
        candidates.append(Path(inipath))
    candidates.append(Path(config.rootpath) / "pyproject.toml")
    found: tuple[dict[str, Any], str] = ({}, "pyproject.toml")
    for path in candidates:
        if not path.is_file():
            continue
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10 only
            import tomli as tomllib
        try:
            with path.open("rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise pytest.UsageError(f"vibecheck: cannot read {path}: {exc}") from None
        table = data.get("tool", {}).get("vibecheck", {})
        if not isinstance(table, dict):
            raise pytest.UsageError(f"vibecheck: {path}: [tool.vibecheck] must be a table")
        found = (table, str(path))
        break
    config.stash[_PYPROJECT_KEY] = found
    return found


def _unknown_keys(table: Mapping[str, Any], filename: str) -> list[tuple[str, str]]:
    """``(key, message)`` of each key of ``[tool.vibecheck]`` that no option reads, the message
    with the closest known key (``... unknown key 'limt'; did you mean 'limit'?``)."""
    known = {k for spec in (*OPTIONS, *CI_OPTIONS) for k in spec.toml_keys}
    out = []
    for key in table:
        if key in known or key in SUBTABLES:
            continue
        import difflib

        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        out.append((key, f"{filename} [tool.vibecheck]: unknown key {key!r}{hint}"))
    return out


def benchmark_requested(config: pytest.Config, environ: Mapping[str, str] | None = None) -> bool:
    """True when this pytest run asks for pytest-vibecheck: ``--vibe``, or any ``--vibe-*``
    option on the command line, or ``VIBECHECK_GATE`` in the environment. Otherwise the run
    is the team's ordinary ``pytest``, which a bad ``[tool.vibecheck]`` must not break."""
    env = os.environ if environ is None else environ
    if config.getoption("vibe", False) or env.get(
        next(s for s in CI_OPTIONS if s.name == "gate").env, ""
    ).strip():
        return True
    for spec in (*OPTIONS, *CI_OPTIONS):
        cli = config.getoption(spec.dest, default=None)
        if cli not in (None, [], "", False):
            return True
    return False


_WARNED_KEY = pytest.StashKey["set[str]"]()


def _warn_once(config: pytest.Config, message: str) -> None:
    """One line on stderr, once per session and only on the controller: a ``[tool.vibecheck]``
    problem ignored because the benchmark is off."""
    warned = config.stash.setdefault(_WARNED_KEY, set())
    if message in warned or hasattr(config, "workerinput"):
        return
    warned.add(message)
    sys.stderr.write(
        f"vibecheck: warning: {message} (ignored: the benchmark is off; with --vibe it is an "
        "error)\n"
    )


def resolve_settings(
    config: pytest.Config, environ: Mapping[str, str] | None = None
) -> VibeSettings:
    """Resolve every setting once: command line > environment > file > default.

    Raises :class:`pytest.UsageError` naming the setting and the source of a bad value.
    """
    values, sources = resolve_options(config, OPTIONS, environ)
    return _finish(config, values, sources)


def _empty_value(cli: object) -> bool:
    """True for a command-line value given empty (``--vibe-report=``, ``--vibe-model ""``)."""
    values = cli if isinstance(cli, list) else [cli]
    return any(isinstance(v, str) and not v.strip() for v in values)


def resolve_options(
    config: pytest.Config, specs: Sequence[OptionSpec], environ: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """``(values, sources)`` of ``specs``: command line > environment > ``[tool.vibecheck]`` >
    ini > default (absent from ``values``; ``sources`` says ``"default"``).

    Raises :class:`pytest.UsageError` naming the setting and the source of a bad value, or an
    unknown ``[tool.vibecheck]`` key.
    """
    env = os.environ if environ is None else environ
    table, filename = _read_pyproject(config)
    strict = benchmark_requested(config, env)
    unknown = _unknown_keys(table, filename)
    if unknown and strict:
        known = sorted({k for spec in (*OPTIONS, *CI_OPTIONS) for k in spec.toml_keys})
        raise pytest.UsageError(f"vibecheck: {unknown[0][1]} (known keys: {', '.join(known)})")
    for _key, message in unknown:  # an ordinary pytest run: warn, run the user's tests
        _warn_once(config, message)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for spec in specs:
        raw: object = None
        where = ""
        cli = config.getoption(spec.dest, default=None)
        if not spec.switch and cli is not None and _empty_value(cli):
            raise pytest.UsageError(
                f"vibecheck: {spec.flag} is empty; give {spec.flag}={spec.metavar} or leave "
                "the option out"
            )
        if cli not in (None, [], ""):
            raw = cli if not spec.repeatable else list(cli)
            where = spec.flag
        elif env.get(spec.env, "").strip():
            raw, where = env[spec.env], f"environment variable {spec.env}"
        else:
            for key in spec.toml_keys:
                if key in table:
                    raw, where = table[key], f"{Path(filename).name} [tool.vibecheck] {key}"
                    break
            if not where:
                ini = config.getini(spec.ini)
                if isinstance(ini, str) and ini.strip():
                    raw, where = ini, f"ini option {spec.ini}"
        if not where:
            sources[spec.name] = "default"
            continue
        try:
            values[spec.name] = spec.validate(raw, where)
        except pytest.UsageError as exc:
            if strict or where == spec.flag:  # asked for on the command line: an error
                raise
            _warn_once(config, str(exc).removeprefix("vibecheck: "))
            sources[spec.name] = "default"
            continue
        sources[spec.name] = where
    return values, sources


def _finish(config: pytest.Config, values: dict[str, Any], sources: dict[str, str]) -> VibeSettings:
    models_from_cli = sources.get("models") == "--vibe-model"
    active = bool(values.get("models")) and (models_from_cli or bool(config.getoption("vibe", False)))
    if config.getoption("vibe", False) and not values.get("models"):
        raise pytest.UsageError(
            "vibecheck: --vibe needs at least one model: give --vibe-model SPEC, set "
            "VIBECHECK_MODEL, or set model in [tool.vibecheck] of pyproject.toml"
        )
    root = Path(config.rootpath)
    invocation = Path(config.invocation_params.dir)

    def base(name: str) -> Path:
        # relative paths: to the invocation folder when given on the command line or in the
        # environment (as pytest's --junitxml), to the rootdir when read from a file
        src = sources.get(name, "default")
        return invocation if src.startswith(("--", "environment")) else root

    for name in ("cache", "report", "junitxml"):
        p = values.get(name)
        if isinstance(p, Path) and not p.is_absolute():
            values[name] = base(name) / p
    if "instruction_dirs" in values:
        folder = base("instruction_dirs")
        values["instruction_dirs"] = tuple(
            d if d.is_absolute() else folder / d for d in values["instruction_dirs"]
        )
    gate_dirs = _gate_config_instruction_dirs(config)
    if gate_dirs:
        mine = values.get("instruction_dirs", ())
        values["instruction_dirs"] = tuple(dict.fromkeys((*mine, *gate_dirs)))
        sources["instruction_dirs"] = ", ".join(
            filter(None, [sources.get("instruction_dirs") if mine else None, "--vibe-gate-config"])
        )
    if "suites" in values:
        values["suites"] = tuple(
            str(base("suites") / s) if not Path(s).is_absolute() and (base("suites") / s).is_dir() else s
            for s in values["suites"]
        )
    if "cache" not in values:
        values["cache"] = root / ".vibecheck" / "cache.sqlite"
    _apply_profile(values, sources)
    if not active:
        values.pop("models", None)
    return VibeSettings(active=active, sources=sources, **values)


def _gate_config_instruction_dirs(config: pytest.Config) -> tuple[Path, ...]:
    """``[tool.vibecheck] instruction_dirs`` of the gate config file (``--vibe-gate-config``,
    the action's ``config:``) as absolute folders (relative ones are relative to that file's
    folder); ``()`` when no gate config is given or the file does not exist (the gate then names
    it). The team instructions its ``[tool.vibecheck.gate]`` declares live there, so the session's
    registry loads them beside those of ``pyproject.toml``.

    Raises :class:`pytest.UsageError` naming the file for unreadable TOML or a value that is
    not a list of folders.
    """
    spec = next(s for s in CI_OPTIONS if s.name == "gate_config")
    values, _sources = resolve_options(config, [spec])
    path = values.get("gate_config")
    if not isinstance(path, Path):
        return ()
    path = path if path.is_absolute() else Path(config.invocation_params.dir) / path
    if not path.is_file():
        return ()
    from pytest_vibecheck.compose.build import instruction_dirs_from_pyproject
    from pytest_vibecheck.errors import VibecheckError

    try:
        return tuple(instruction_dirs_from_pyproject(path))
    except VibecheckError as exc:
        raise pytest.UsageError(f"vibecheck: {exc}") from None


def _apply_profile(values: dict[str, Any], sources: Mapping[str, str]) -> None:
    """A profile that supports fewer protocols (``lcb``: baseline only) narrows the default
    protocol list; protocols it does not support given explicitly are a usage error."""
    if "profile" not in values and "protocols" not in values:
        return  # the default profile (paper) runs every protocol: nothing to import or narrow
    from pytest_vibecheck.suites.profiles import get_profile

    profile = get_profile(values.get("profile", VibeSettings.profile))
    if "protocols" not in values:
        values["protocols"] = tuple(p for p in PROTOCOLS if p in profile.protocols)
        return
    extra = [p for p in values["protocols"] if p not in profile.protocols]
    if extra:
        raise pytest.UsageError(
            f"vibecheck: {sources.get('protocols')}: profile {profile.name!r} runs only "
            f"{', '.join(profile.protocols)} ({profile.description}); drop {', '.join(extra)} "
            "or use --vibe-profile=paper"
        )
