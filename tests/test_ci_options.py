"""The CI options resolve like every setting: command line, environment, [tool.vibecheck], ini;
a bad value names its source."""

from __future__ import annotations

from typing import cast

import pytest


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ({"env": ("VIBECHECK_SHARD", "0/3")},
         "vibecheck: environment variable VIBECHECK_SHARD: '0/3' needs 1 <= I <= N*"),
        ({"toml": 'max_fr = "x"'}, "vibecheck: pyproject.toml [[]tool.vibecheck[]] max_fr: 'x' is not a number*"),
        ({"toml": 'fail_under = ["passs@1=0.4"]'}, "*pyproject.toml [[]tool.vibecheck[]] fail_under*unknown metric 'passs@1'*"),
        ({"ini": "vibe_no_fail_items = \"maybe\""}, "vibecheck: ini option vibe_no_fail_items: 'maybe' is not valid*"),
    ],
)
def test_bad_ci_values_name_their_source(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, setup: dict[str, object], message: str
) -> None:
    if "env" in setup:
        name, value = cast("tuple[str, str]", setup["env"])
        monkeypatch.setenv(name, value)
    toml = "[tool.vibecheck]\n" + str(setup.get("toml", "")) + "\n[tool.pytest.ini_options]\n"
    toml += str(setup.get("ini", "")) + "\n"
    pytester.makepyprojecttoml(toml)
    # with the benchmark on (a --vibe-* option): a bad value stops the run (off, it is a warning)
    result = pytester.runpytest("-p", "no:cacheprovider", "--vibe-model=reference")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_ci_options_from_the_environment_and_the_file(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIBECHECK_NO_FAIL_ITEMS", "1")
    pytester.makepyprojecttoml('[tool.vibecheck]\nfail_under = ["pass@1=0.5"]\nmax_fr = "10%"\n')
    pytester.makeconftest(
        "import pytest\n"
        "from pytest_vibecheck.ci.plugin import CI_SETTINGS_KEY\n"
        "def test_s(request):\n"
        "    s = request.config.stash[CI_SETTINGS_KEY]\n"
        "    assert s.no_fail_items is True\n"
        "    assert len(s.thresholds) == 2\n"
        "    assert s.sources['no_fail_items'] == 'environment variable VIBECHECK_NO_FAIL_ITEMS'\n"
        "    assert s.sources['fail_under'] == 'pyproject.toml [tool.vibecheck] fail_under'\n"
    )
    pytester.makepyfile(test_a="from conftest import test_s\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
