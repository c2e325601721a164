"""Analysis of vibecheck results (issue 7): composite-vs-Elo correlation, intervals,
co-failure, retention, breakdowns by position/category, and the Markdown/HTML report.

See ``docs/analysis.md``. Needs scipy and numpy (``pip install 'pytest-vibecheck[analysis]'``);
matplotlib (the ``plots`` extra) only for figures.
"""

from __future__ import annotations
