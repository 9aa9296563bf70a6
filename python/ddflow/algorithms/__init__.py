"""Graph algorithms written with ddflow's public API (expressions and built-in operators
only, so they never enter Python while running)."""

from __future__ import annotations

from ddflow.algorithms.graph import bfs, connected_components, degrees, reachability, sssp

__all__ = ["bfs", "sssp", "reachability", "degrees", "connected_components"]
