"""Code that runs inside the sandbox (standard library only, loaded by file path).

``boot`` sets up namespaces, user and limits; ``zygote`` is the fork server; ``harness`` runs the
tests of each test kind. Nothing here may import the rest of the package.
"""
