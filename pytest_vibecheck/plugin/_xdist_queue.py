"""The one place that reads pytest-xdist internals: the items queued for this worker.

pytest-xdist has no public API for "which items will this worker run next"; its worker keeps them
in ``WorkerInteractor.torun`` (a ``TestQueue`` of indices into ``session.items``), after the
next one, which it keeps in ``WorkerInteractor.nextitem_index``. Prefetching
generations for exactly those items (and not for items another worker runs) needs that list, so
this adapter reads it, guarded:

- only for the xdist versions in :data:`SUPPORTED` (checked against the installed distribution;
  tested in ``tests/test_plugin_xdist.py``);
- only on the plugin whose class is named ``WorkerInteractor`` and has a ``torun`` queue with a
  ``lock()`` (xdist runs that class from source on the worker, so no ``isinstance``), read under
  the queue's own lock;
- any failure (another version, a changed attribute, a non-worker process) gives None, and the
  caller falls back to the current item alone: slower, never wrong.
"""

from __future__ import annotations

import contextlib
from functools import cache
from importlib import metadata
from typing import Any

__all__ = ["SUPPORTED", "queued_indices", "supported_version"]

#: pytest-xdist versions whose worker queue layout this adapter knows: ``[low, high)``.
SUPPORTED: tuple[tuple[int, int], tuple[int, int]] = ((3, 0), (4, 0))


@cache
def supported_version() -> bool:
    """True when the installed pytest-xdist is in :data:`SUPPORTED`."""
    try:
        parts = metadata.version("pytest-xdist").split(".")
        version = (int(parts[0]), int(parts[1]))
    except (metadata.PackageNotFoundError, ValueError, IndexError):
        return False
    return SUPPORTED[0] <= version < SUPPORTED[1]


def _interactor(config: Any) -> Any:
    """xdist's worker plugin. Matched by class name and shape: on a worker, xdist's ``remote``
    module is sent over execnet and run as a module of its own, so its class is not
    ``xdist.remote.WorkerInteractor`` and ``isinstance`` cannot be used."""
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        if type(plugin).__name__ == "WorkerInteractor" and callable(getattr(torun, "lock", None)):
            return plugin
    return None


def queued_indices(config: Any) -> list[int] | None:
    """Indices into ``session.items`` queued for this xdist worker, in run order (the current
    item excluded); None when this is not an xdist worker or the queue cannot be read."""
    if getattr(config, "workerinput", None) is None or not supported_version():
        return None
    with contextlib.suppress(Exception):
        plugin = _interactor(config)
        torun = getattr(plugin, "torun", None)
        if torun is not None:
            # the worker has already taken the next item off the queue (``nextitem_index``)
            following = getattr(plugin, "nextitem_index", None)
            with torun.lock() as queue:
                queued = [i for i in list(queue) if isinstance(i, int)]
            return ([following] if isinstance(following, int) else []) + queued
    return None
