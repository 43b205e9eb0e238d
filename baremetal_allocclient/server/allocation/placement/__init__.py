"""Placement: client, node model, sync and reconciliation."""
