"""The settings of a run, shared by the benchmark plugin and the gate: every option as an
``OptionSpec`` (command line > environment > ``[tool.vibecheck]`` > ini > default), the
thresholds, shards, run limits and the selection they describe."""
