"""Models, engine/transactions, queries and migrations."""
