"""Runnable examples: ``python -m ddflow.examples.bfs NODES EDGES BATCH ROUNDS``."""
