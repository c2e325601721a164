"""Code that runs inside the sandbox (standard library only, loaded by file path).

``boot`` sets up namespaces, the sandbox's own root, user and limits; ``zygote`` is the fork
server. The job scripts: ``runner`` (the candidate's side of the judged kinds: stdin, calls,
serving a judge), ``judge`` (HumanEval-style ``check``), ``harness`` (BigCodeBench ``unittest``
in one interpreter, from its parts ``report``, ``audit``, ``snapshot``, ``calls`` and
``steps``). ``wire`` carries values across processes and ``compare`` holds the LiveCodeBench
grading rules; the evaluator imports both. Nothing here may import the rest of the package.
"""
