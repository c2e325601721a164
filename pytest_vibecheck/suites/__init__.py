"""Suites layer: problem records, suite files, benchmark loaders, augmentation and selectors."""
