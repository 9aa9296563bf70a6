"""Runnable examples, each a module run with ``python -m ddflow.examples.<name>``:

* ``bfs``: the main job, BFS distances on a random graph under a stream of edge updates;
* ``orders_dashboard``: revenue per region and month over orders and cancellations (left
  join, ``group_by(...).agg`` with decimals and dates);
* ``top_sellers``: the best-selling products per category over sales and returns
  (``top_k`` per key);
* ``friend_groups``: connected components of a changing friendship graph;
* ``spark_bfs``: BFS distance counts over a generated history on local Spark;
* ``spark_kernels``: ``ddflow.kernels`` inside a user's own ``mapInArrow`` function: two
  views of a bitemporal change feed, one day's statuses as published and as known now
  (``docs/how-to/kernels-in-spark.md``).

``docs/examples.md`` shows each with its command and output.
"""
