"""Unit tests of the shared database layer."""
