"""Parameter validation (paper §3.1), prompt rendering and CLI argument parsing."""

from __future__ import annotations

import warnings

import pytest

from pytest_vibecheck.errors import ParameterError, ParameterWarning, UnknownIdError
from pytest_vibecheck.verify.instructions import get_instruction
from pytest_vibecheck.verify.params import parse_instruction_arg, render_prompt, validate_params


def test_defaults_are_filled_in() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = validate_params("logic_3")
    assert got.params == {"max_branches": 2}
    assert got.changes == ()
    assert validate_params("style_1").params == {}


def test_valid_values_are_kept() -> None:
    assert validate_params("logic_3", {"max_branches": 4}).params == {"max_branches": 4}
    assert validate_params("doc_3", {"convention": "numpy"}).params == {"convention": "numpy"}
    # integral strings and floats are the same int (CLI values arrive as strings): no change
    for raw in ("3", " 3 ", 3.0):
        got = validate_params("logic_3", {"max_branches": raw})
        assert got.params == {"max_branches": 3}
        assert got.changes == ()


def test_unknown_keys_are_dropped_with_a_warning() -> None:
    with pytest.warns(ParameterWarning) as record:
        got = validate_params("logic_3", {"max_branches": 3, "colour": "red"})
    assert got.params == {"max_branches": 3}
    assert got.changes == ("logic_3: unknown parameter 'colour' dropped (parameters: max_branches)",)
    assert [str(w.message) for w in record] == list(got.changes)


@pytest.mark.parametrize(
    ("iid", "params", "expected", "change"),
    [
        ("logic_3", {"max_branches": 9}, {"max_branches": 2},
         "logic_3: parameter max_branches=9 is not int in [2, 4]; reset to the default 2"),
        ("logic_3", {"max_branches": 1}, {"max_branches": 2},
         "logic_3: parameter max_branches=1 is not int in [2, 4]; reset to the default 2"),
        ("logic_3", {"max_branches": "three"}, {"max_branches": 2},
         "logic_3: parameter max_branches='three' is not int in [2, 4]; reset to the default 2"),
        ("logic_3", {"max_branches": True}, {"max_branches": 2},
         "logic_3: parameter max_branches=True is not int in [2, 4]; reset to the default 2"),
        ("logic_3", {"max_branches": 2.5}, {"max_branches": 2},
         "logic_3: parameter max_branches=2.5 is not int in [2, 4]; reset to the default 2"),
        ("doc_3", {"convention": "rst"}, {"convention": "pep257"},
         "doc_3: parameter convention='rst' is not one of google, numpy, pep257; reset to the default 'pep257'"),
        ("doc_3", {"convention": 3}, {"convention": "pep257"},
         "doc_3: parameter convention=3 is not one of google, numpy, pep257; reset to the default 'pep257'"),
        ("style_3", {"line_length": 78}, {"line_length": 79},
         "style_3: parameter line_length=78 is not int in [79, 120]; reset to the default 79"),
    ],
)
def test_invalid_values_are_reset_with_a_warning(
    iid: str, params: dict[str, object], expected: dict[str, object], change: str
) -> None:
    with pytest.warns(ParameterWarning, match="reset to the default"):
        got = validate_params(iid, params)
    assert got.params == expected
    assert got.changes == (change,)
    with pytest.raises(ParameterError) as info:
        validate_params(iid, params, strict=True)
    # strict mode resets nothing, so its message is the problem without the "reset" clause
    assert str(info.value) == change.partition("; reset to the default")[0]


def test_strict_mode_raises_on_unknown_keys_and_passes_valid_input() -> None:
    with pytest.raises(ParameterError, match=r"^logic_3: unknown parameter 'x' \(parameters: max_branches\)$"):
        validate_params("logic_3", {"x": 1}, strict=True)
    assert validate_params("logic_3", {"max_branches": 3}, strict=True).params == {"max_branches": 3}


def test_warn_false_is_silent_but_records_changes() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = validate_params("logic_3", {"max_branches": 99}, warn=False)
    assert len(got.changes) == 1


def test_unknown_instruction() -> None:
    with pytest.raises(UnknownIdError, match="did you mean 'logic_3'"):
        validate_params("logic_30", {})


def test_render_prompt_fills_parameters() -> None:
    assert render_prompt("logic_3", {"max_branches": 3}) == "Ensure each function has at most 3 branches."
    assert render_prompt("logic_3", {"max_branches": 3}, "multi") == (
        "Refactor the code so that each function has at most 3 branches."
    )
    assert render_prompt("doc_3", {"convention": "google"}) == "Document your code using the google docstring format."
    assert render_prompt("style_3") == "Write code ensuring all lines are no longer than 79 characters."
    assert render_prompt(get_instruction("style_3"), {"line_length": 88}, "multi") == (
        "Reformat the code so that all lines are no longer than 88 characters."
    )
    # invalid values render the default, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert render_prompt("logic_3", {"max_branches": 99}) == "Ensure each function has at most 2 branches."


def test_render_prompt_without_parameters_is_the_template() -> None:
    inst = get_instruction("error_3")
    assert render_prompt(inst) == inst.single_turn
    assert render_prompt(inst, protocol="multi") == inst.multi_turn


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("logic_3:max_branches=3", ("logic_3", {"max_branches": "3"})),
        ("doc_3:convention=google", ("doc_3", {"convention": "google"})),
        ("style_1", ("style_1", {})),
        (" logic_3 : max_branches = 4 , extra=x", ("logic_3", {"max_branches": "4", "extra": "x"})),
    ],
)
def test_parse_instruction_arg(text: str, expected: tuple[str, dict[str, str]]) -> None:
    assert parse_instruction_arg(text) == expected


@pytest.mark.parametrize("text", ["logic_3:max_branches", "logic_3:=3", "logic_3:a=1,,b=2"])
def test_parse_instruction_arg_rejects_malformed_parts(text: str) -> None:
    with pytest.raises(ParameterError, match="expected ID\\[:key=value"):
        parse_instruction_arg(text)


def test_unknown_id_message_separates_the_available_list() -> None:
    from pytest_vibecheck.errors import UnknownIdError

    assert str(UnknownIdError("suite", "nosuch", ["alpha", "beta"])) == (
        "unknown suite 'nosuch'. Available: alpha, beta"
    )
    assert str(UnknownIdError("suite", "alpah", ["alpha", "beta"])) == (
        "unknown suite 'alpah'; did you mean 'alpha'? Available: alpha, beta"
    )
