"""Unit tests of the Ironic stand-in."""
