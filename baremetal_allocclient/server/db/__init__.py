"""Models, engine/transactions, lookups and migrations (shared)."""
