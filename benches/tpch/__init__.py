"""TPC-H on ddflow: data generation, integer column encodings, refresh batches, the queries
written with the Python API, DuckDB as the oracle, and the benchmark (see ``README.md``)."""
