"""The CI side: the pull-request gate (entry point ``pytest11: vibecheck-gate``), thresholds, shards."""
