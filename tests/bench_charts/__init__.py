"""The benchmark charts (benches/charts.py) checked against the tables they are drawn from."""
