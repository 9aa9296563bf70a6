"""TPC-H on ddflow: data generation, refresh batches, the queries written with the Python API,
DuckDB as the oracle, and the benchmark (see ``README.md``)."""
