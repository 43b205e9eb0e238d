"""Allocation backends: where nodes are selected and claimed."""
