"""Models, engine/transactions, lookups and migrations (shared: imports
neither wing)."""
