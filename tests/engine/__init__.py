"""Engine tests: the ddflow engine against a brute-force model (``model.py``) and plain
references (BFS, Dijkstra, union-find), across feeding schedules and worker counts."""
