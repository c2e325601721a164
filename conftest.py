"""Repository-level pytest configuration: the test suite uses pytester."""

pytest_plugins = ["pytester"]
