"""Runnable examples, each a module run with ``python -m ddflow.examples.<name>``:

* ``bfs``: the main job, BFS distances on a random graph under a stream of edge updates;
* ``orders_dashboard``: revenue per region and month over orders and cancellations (left
  join, ``group_by(...).agg`` with decimals and dates);
* ``top_sellers``: the best-selling products per category over sales and returns
  (``top_k`` per key);
* ``friend_groups``: connected components of a changing friendship graph;
* ``spark_bfs``: BFS distance counts over a generated history on local Spark;
* ``tpch_dashboard``: TPC-H's Q1 and the revenue per nation and market segment over
  ``tpchgen-cli`` data, kept up to date through refresh pairs (``pip install tpchgen-cli``);
* ``postgres_mirror``: a PostgreSQL table followed through logical replication, its
  aggregate per category kept in another table (``--conninfo``, ``ddflow[postgres]``);
* ``sssp``: weighted shortest paths under edge insertions, removals and weight changes,
  checked against Dijkstra's algorithm;
* ``clickstream``: page views per tumbling window and sessions per user over out-of-order
  views, given once final by a watermark, late views set aside;
* ``spark_kernels``: ``ddflow.kernels`` inside a user's own ``mapInArrow`` function: two
  views of a bitemporal change feed, one day's statuses as published and as known now
  (``docs/how-to/kernels-in-spark.md``).

``docs/examples.md`` shows each with its command and output.
"""
