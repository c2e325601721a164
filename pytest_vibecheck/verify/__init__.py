"""Verification layer: VeriCode instructions, parameters, code extraction, Ruff and built-in checks."""
