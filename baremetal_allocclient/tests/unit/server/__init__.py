"""Unit tests of the reference server."""
