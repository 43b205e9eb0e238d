"""Unit tests of the broker's pure parts."""
