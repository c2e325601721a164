"""The results viewer (``vibecheck view``): a self-contained HTML page from JSON reports.

:mod:`.site` builds the page, :mod:`.replies` fills in replies missing from old reports from
the generation cache, :mod:`.serve` serves it on 127.0.0.1, :mod:`.show` prints one item as
text (``vibecheck show``). The page's HTML, CSS and JavaScript are in ``static/``.
"""
