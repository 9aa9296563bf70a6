"""The Spark backend's tasks: everything that runs inside ``mapInArrow`` on the executors.

Partition functions and the specs pickled with them (``batch_functions.py``: expressions and
user batch functions; ``reduce.py``: the engine's reduce operator; ``fused.py``: a whole
fused superstep), the reduce state store's on-disk layout (``store.py``), data errors as
error updates and rows (``error_rows.py``) and the shared Arrow helpers and column names
(``batches.py``). These modules import Arrow, numpy, ``ddflow._core`` and plain ddflow
modules only, never pyspark: an executor runs them without the driver's code.
"""
