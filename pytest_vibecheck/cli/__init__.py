"""Sub-commands of the ``vibecheck`` CLI, one module each (see :mod:`pytest_vibecheck.cli.main`)."""
