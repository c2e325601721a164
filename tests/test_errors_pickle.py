"""Every exception of the package pickles (pytest-xdist sends them between processes)."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import warnings

import pytest

import pytest_vibecheck
from pytest_vibecheck.errors import Picklable


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(pytest_vibecheck.__path__, "pytest_vibecheck."):
        if "._child" in info.name:  # runs inside the sandbox only
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__.startswith("pytest_vibecheck")
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


CLASSES = _exception_classes()

#: Example values per parameter name (keyword-only ones too, so attributes must survive).
EXAMPLES: dict[str, object] = {
    "kind": "api_error",
    "name": "logic_33",
    "available": ["logic_3", "logic_2"],
    "path": "instructions/x.toml",
    "field": "params.max",
    "line": 7,
    "provider": "openai",
    "model": "gpt-5",
    "status": 429,
    "fatal": True,
    "task_id": "BigCodeBench/1",
    "label": "single-k1",
}


def _example(cls: type[BaseException]) -> BaseException:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    args: list[object] = []
    kwargs: dict[str, object] = {}
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            args.append("message")
        elif p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = EXAMPLES.get(p.name, "value")
        elif p.kind is not p.VAR_KEYWORD:
            args.append(EXAMPLES.get(p.name, "message"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(*args, **kwargs)


def test_every_exception_class_is_found() -> None:
    names = {c.__name__ for c in CLASSES}
    assert {"VibeInfraError", "VibeFailure", "UnknownIdError", "DataFileError", "BackendError"} <= names
    assert len(CLASSES) >= 30


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__qualname__ for c in CLASSES])
def test_round_trip(cls: type[BaseException]) -> None:
    exc = _example(cls)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls
    assert str(back) == str(exc)
    assert back.args == exc.args
    assert vars(back) == vars(exc)
    if issubclass(cls, Exception) and not issubclass(cls, Warning):
        assert issubclass(cls, Picklable), f"{cls.__qualname__} should derive from Picklable"


def test_unknown_id_keeps_its_suggestions() -> None:
    from pytest_vibecheck.errors import UnknownIdError

    back = pickle.loads(pickle.dumps(UnknownIdError("instruction", "logic_33", ["logic_3"])))
    assert back.suggestions == ["logic_3"]
    assert str(back) == "unknown instruction 'logic_33'; did you mean 'logic_3'? Available: logic_3"


def test_unknown_id_with_nothing_available_says_so() -> None:
    """Regression: the message ended in an empty "Available:" list."""
    from pytest_vibecheck.errors import UnknownIdError

    assert str(UnknownIdError("replay", "x", [])) == "unknown replay 'x'; none is available"
    exc = UnknownIdError("replay", "x", (), none_hint="record one with vibecheck replay-export")
    back = pickle.loads(pickle.dumps(exc))
    assert str(back) == "unknown replay 'x'; none is available: record one with vibecheck replay-export"
