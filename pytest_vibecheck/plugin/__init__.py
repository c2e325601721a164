"""The pytest plugin (entry point ``pytest11: vibecheck`` is :mod:`pytest_vibecheck.plugin.hooks`)."""
