"""The Spark backend's driver side: validation, planning, the operator registry, supersteps,
the state's placement and lifetime, progress and error collection. It builds the DataFrames
and the specs that ``ddflow.spark.tasks`` runs inside ``mapInArrow``; only this side imports
pyspark. See ``runner.py`` for the module map.
"""
