"""Settings: command line > environment > [tool.vibecheck] / ini > default, validated with the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vibecheck.config.settings import VibeSettings, resolve_settings
from pytest_vibecheck.suites.profiles import get_profile


def _resolve(pytester: pytest.Pytester, *args: str, env: dict[str, str] | None = None) -> VibeSettings:
    config = pytester.parseconfig(*args)
    return resolve_settings(config, environ=env or {})


def test_defaults_and_inactive_without_a_model(pytester: pytest.Pytester) -> None:
    s = _resolve(pytester)
    assert s.active is False
    assert s.models == ()
    assert s.suites == ("bigvibebench-lite",)
    assert s.protocols == ("baseline", "single", "multi")
    # the default profile narrows nothing (so resolving the defaults needs no profile import)
    assert get_profile(s.profile).protocols == s.protocols
    assert s.ks == (5,)
    assert s.samples == 1
    assert s.cache_mode == "use"
    assert s.extract == "first"
    assert s.cache == Path(pytester.path) / ".vibecheck" / "cache.sqlite"
    assert s.report is None
    assert set(s.sources.values()) == {"default"}


def test_command_line_beats_environment_beats_file(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.vibecheck]
        model = "reference"
        k = [1, 3]
        temperature = 0.5
        max_tokens = 100
        cache = "cache/gen.sqlite"
        """
    )
    s = _resolve(pytester, "--vibe-k", "4", env={"VIBECHECK_K": "2", "VIBECHECK_TEMPERATURE": "0.25"})
    assert s.ks == (4,)
    assert s.sources["ks"] == "--vibe-k"
    assert s.temperature == 0.25
    assert s.sources["temperature"] == "environment variable VIBECHECK_TEMPERATURE"
    assert s.max_tokens == 100
    assert s.sources["max_tokens"] == "pyproject.toml [tool.vibecheck] max_tokens"
    assert s.cache == Path(pytester.path) / "cache" / "gen.sqlite"
    # a model from the file alone does not turn the benchmark on ...
    assert s.active is False
    # ... --vibe does, and --vibe-model always does
    assert _resolve(pytester, "--vibe").models == ("reference",)
    s2 = _resolve(pytester, "--vibe-model", "scripted:a,scripted:b", "--vibe-model", "reference")
    assert s2.active is True
    assert s2.models == ("scripted:a", "scripted:b", "reference")


def test_ini_keys_are_read_when_pyproject_has_no_value(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        vibe_protocol = single,baseline
        vibe_k = 1,3,3
        """
    )
    s = _resolve(pytester, "--vibe-model", "reference")
    assert s.protocols == ("baseline", "single")  # canonical order
    assert s.ks == (1, 3)
    assert s.sources["ks"] == "ini option vibe_k"


@pytest.mark.parametrize(
    ("args", "env", "toml", "message"),
    [
        (("--vibe-k", "a"), {}, "", "--vibe-k: 'a' is not valid; expected an integer >= 1"),
        (("--vibe-k", "0"), {}, "", "--vibe-k: '0' is not valid"),
        (("--vibe",), {"VIBECHECK_MODEL": "reference", "VIBECHECK_TEMPERATURE": "-1"}, "", "environment variable VIBECHECK_TEMPERATURE: '-1' is not valid; expected a number >= 0"),
        (("--vibe-model", "reference"), {}, 'cache_mode = "sometimes"', "pyproject.toml [tool.vibecheck] cache_mode: 'sometimes' is not valid; expected one of use, refresh, only, off"),
        (("--vibe-protocol", "singel"), {}, "", "did you mean 'single'?"),
        (("--vibe-extract", "last"), {}, "", "--vibe-extract: 'last' is not valid; expected one of first, best"),
        (("--vibe-base-url", "localhost:8000"), {}, "", "expected an http:// or https:// URL"),
        (("--vibe-model", "reference"), {}, "samples = true", "pyproject.toml [tool.vibecheck] samples: True is not valid"),
        (("--vibe-model", "reference"), {}, 'modle = "x"', "unknown key 'modle'; did you mean 'model'?"),
        (("--vibe",), {}, "", "--vibe needs at least one model"),
        (("--vibe-model", "bad spec"), {}, "", "a model spec without spaces"),
    ],
)
def test_bad_values_name_their_source(
    pytester: pytest.Pytester, args: tuple[str, ...], env: dict[str, str], toml: str, message: str
) -> None:
    pytester.makepyprojecttoml("[tool.vibecheck]\n" + toml + "\n")
    with pytest.raises(pytest.UsageError) as exc:
        _resolve(pytester, *args, env=env)
    assert message in str(exc.value)


def test_gate_subtable_is_not_a_setting(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.vibecheck]
        k = 2
        [tool.vibecheck.gate]
        instructions = ["doc_1"]
        """
    )
    assert _resolve(pytester).ks == (2,)


def test_usage_error_reaches_the_user_as_exit_status_4(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--vibe-model", "reference", "--vibe-cache-mode", "sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vibe-cache-mode: 'sometimes' is not valid; expected one of use, refresh, only, off*"])


def test_unknown_model_and_suite_fail_before_collection(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--vibe-model", "replay:no-such-recording")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*vibecheck:*no-such-recording*"])
    result = pytester.runpytest("--vibe-model", "reference", "--vibe-suite", "bigvibebench-lit")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown suite 'bigvibebench-lit'*"])


def test_profile_from_command_line_environment_and_file(pytester: pytest.Pytester) -> None:
    """Issue 14: ``--vibe-profile`` resolves like every other setting."""
    s = _resolve(pytester)
    assert (s.profile, s.temperature, s.system_prompt) == ("paper", None, None)
    pytester.makepyprojecttoml('[tool.vibecheck]\nprofile = "lcb"\nsystem_prompt = "Be terse."\n')
    s = _resolve(pytester)
    assert (s.profile, s.system_prompt) == ("lcb", "Be terse.")
    assert s.sources["profile"] == "pyproject.toml [tool.vibecheck] profile"
    assert s.protocols == ("baseline",)  # lcb runs the baseline only
    s = _resolve(pytester, env={"VIBECHECK_PROFILE": "paper"})
    assert (s.profile, s.protocols) == ("paper", ("baseline", "single", "multi"))
    s = _resolve(pytester, "--vibe-profile", "paper", "--vibe-temperature", "0.7")
    assert (s.profile, s.temperature) == ("paper", 0.7)
    assert s.to_dict()["profile"] == "paper"


def test_profile_errors(pytester: pytest.Pytester, tmp_path: Path) -> None:
    with pytest.raises(pytest.UsageError, match=r"--vibe-profile: 'papr' is not valid; expected one of paper, lcb \(did you mean 'paper'\?\)"):
        _resolve(pytester, "--vibe-profile", "papr")
    with pytest.raises(pytest.UsageError, match=r"profile 'lcb' runs only baseline .*drop single"):
        _resolve(pytester, "--vibe-profile", "lcb", "--vibe-protocol", "baseline,single")
    prompt = tmp_path / "sys.txt"
    prompt.write_text("From a file.\n", encoding="utf-8")
    assert _resolve(pytester, "--vibe-system-prompt", f"file:{prompt}").system_prompt == "From a file.\n"
    with pytest.raises(pytest.UsageError, match="cannot read"):
        _resolve(pytester, "--vibe-system-prompt", f"file:{tmp_path / 'missing.txt'}")


def test_pytest_help_lists_every_option_and_ini_key(pytester: pytest.Pytester) -> None:
    """Regression: a bare ``%`` in an option's help ("P% of the run's items") made
    ``pytest --help`` end in argparse's TypeError traceback wherever the plugin is installed."""
    result = pytester.runpytest("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "*--vibe-max-errors=N|P%*",
        "*(or P% of*",
        "*vibe_max_errors (string):*",
    ])
    assert "%%" not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--vibe-model", "reference", "--vibe-report="),
         "ERROR: vibecheck: --vibe-report is empty; give --vibe-report=PATH or leave the option out"),
        (("--vibe-model", "reference", "--vibe-junitxml", " "),
         "ERROR: vibecheck: --vibe-junitxml is empty; give --vibe-junitxml=PATH or leave the option out"),
        (("--vibe-model=",),
         "ERROR: vibecheck: --vibe-model is empty; give --vibe-model=SPEC or leave the option out"),
        (("--vibe-shard=",),
         "ERROR: vibecheck: --vibe-shard is empty; give --vibe-shard=I/N or leave the option out"),
    ],
)
def test_an_empty_command_line_value_is_a_usage_error(pytester: pytest.Pytester, args: tuple[str, ...], line: str) -> None:
    """Regression: ``--vibe-report=`` silently wrote no report."""
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    result = pytester.runpytest(*args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [ln for ln in result.errlines if ln.strip()] == [line]
    assert sorted(p.name for p in pytester.path.iterdir()) == ["pyproject.toml"]  # nothing written


def test_an_unknown_scripted_model_says_none_is_available(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: the message ended in an empty "Available:" list."""
    monkeypatch.delenv("VIBECHECK_SCRIPTED", raising=False)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    result = pytester.runpytest("--vibe-model=scripted:nosuch", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [ln for ln in result.errlines if ln.strip()] == [
        "ERROR: vibecheck: unknown scripted test model 'nosuch'; none is available: register one "
        "with register_scripted() or list it in a JSON file named by $VIBECHECK_SCRIPTED"
    ]
    script = pytester.path / "script.json"
    script.write_text('{"nosuc": {"default": "@reference"}}', encoding="utf-8")
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = pytester.runpytest("--vibe-model=scripted:nosuch", "-p", "no:cacheprovider")
    assert [ln for ln in result.errlines if ln.strip()] == [
        "ERROR: vibecheck: unknown scripted test model 'nosuch'; did you mean 'nosuc'? Available: nosuc"
    ]


@pytest.mark.parametrize(
    ("toml", "warning"),
    [
        ("limt = 5", "pyproject.toml [tool.vibecheck]: unknown key 'limt'; did you mean 'limit'?"),
        ('cache_mode = "sometimes"', "pyproject.toml [tool.vibecheck] cache_mode: 'sometimes' is not "
                                     "valid; expected one of use, refresh, only, off"),
    ],
)
def test_a_bad_key_does_not_break_an_ordinary_pytest(pytester: pytest.Pytester, toml: str, warning: str) -> None:
    """The benchmark off (no --vibe option): one warning line, once, and the user's tests run;
    with --vibe the same key is a usage error."""
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n\n[tool.vibecheck]\n" + toml + "\n")
    pytester.makepyfile(test_plain="def test_a() -> None:\n    pass\n")
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    assert plain.ret == pytest.ExitCode.OK
    plain.assert_outcomes(passed=1)
    warnings = [ln for ln in plain.errlines if "vibecheck" in ln]
    assert len(warnings) == 1
    assert warnings[0].startswith("vibecheck: warning: ")
    assert warnings[0].endswith(f"{warning} (ignored: the benchmark is off; with --vibe it is an error)")
    active = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vibe-model", "reference")
    assert active.ret == pytest.ExitCode.USAGE_ERROR


def test_the_request_timeout_is_an_option_and_a_key(pytester: pytest.Pytester) -> None:
    from pytest_vibecheck.plugin.run.runtime import backend_settings

    pytester.makepyprojecttoml("[tool.vibecheck]\nrequest_timeout = 1800\n")
    s = _resolve(pytester, "--vibe-model", "reference")
    assert s.request_timeout == 1800.0
    assert s.sources["request_timeout"] == "pyproject.toml [tool.vibecheck] request_timeout"
    assert backend_settings(s).timeout_s == 1800.0
    s = _resolve(pytester, "--vibe-model", "reference", "--vibe-request-timeout", "2.5")
    assert backend_settings(s).timeout_s == 2.5
    with pytest.raises(pytest.UsageError, match=r"--vibe-request-timeout: '0' is not valid; expected a number of seconds > 0"):
        _resolve(pytester, "--vibe-model", "reference", "--vibe-request-timeout", "0")


def test_a_bad_k_list_says_integers_are_accepted(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.vibecheck]\nk = [1, "x"]\n')
    with pytest.raises(pytest.UsageError) as exc:
        _resolve(pytester, "--vibe-model", "reference")
    assert str(exc.value) == (
        "vibecheck: pyproject.toml [tool.vibecheck] k: [1, 'x'] is not valid; expected integers "
        '>= 1 (instructions per task): 3, [1, 3, 5] or "1,3,5"'
    )
    pytester.makepyprojecttoml('[tool.vibecheck]\nk = [5, "1,3"]\n')
    assert _resolve(pytester, "--vibe-model", "reference").ks == (1, 3, 5)
