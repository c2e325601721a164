"""Reports of a run: terminal summary, JSON report (docs/report-schema.md), JUnit XML.

:mod:`~pytest_vibecheck.report.session` holds the controller-only reporter
(:class:`~pytest_vibecheck.report.session.VibeSummary`, stash key ``SUMMARY_KEY``) that collects
the items' results from the pytest reports and writes every report at the end of the session.
"""

from __future__ import annotations
