"""Shared HTTP plumbing of both wings: the request and its context,
versions, limits, numbers, preferences, authentication, and the one
place domain errors become HTTP answers (imports neither wing, nor
SQLAlchemy)."""
