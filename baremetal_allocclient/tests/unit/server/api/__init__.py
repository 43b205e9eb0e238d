"""Unit tests of the shared HTTP plumbing."""
