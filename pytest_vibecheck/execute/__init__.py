"""Execution layer: run a problem's tests against candidate code in the sandbox (parent side).

The modules in :mod:`pytest_vibecheck.execute._child` run inside the sandbox; everything else here runs
in the parent process and never executes candidate code.
"""
