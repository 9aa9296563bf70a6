"""TPC-H queries checked against DuckDB through refresh batches."""
