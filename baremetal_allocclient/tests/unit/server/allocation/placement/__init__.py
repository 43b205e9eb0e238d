"""Unit tests of the Placement client, model and sync."""
