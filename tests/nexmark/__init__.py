"""Nexmark q0-q8 through dd.sql against DuckDB, and the event generator against its rules."""
