"""Nexmark on ddflow: the event generator (numpy port of the ``nexmark`` crate's; the crate
itself in ``rust/nexmark-gen``), queries q0-q8 in SQL, DuckDB as the oracle, and the
benchmark (``python -m benches.nexmark.bench``)."""
