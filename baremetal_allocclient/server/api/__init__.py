"""HTTP layer: routing targets, schemas, views and handlers."""
