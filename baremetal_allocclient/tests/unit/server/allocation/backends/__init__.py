"""Unit tests of the allocation backends."""
