"""Unit tests of the allocation wing."""
