"""Code that runs inside the sandbox (standard library only, loaded by file path).

``boot`` sets up namespaces, user and limits; ``zygote`` is the fork server; ``harness`` runs the
tests of each test kind, from its parts (``audit``, ``steps``, ``snapshot``, ``values``,
``candidate``, ``run_unittest``, ``run_functional``, ``run_stdin``, with ``guard`` and
``compare``), which it loads by path. Nothing here may import the rest of the package.
"""
