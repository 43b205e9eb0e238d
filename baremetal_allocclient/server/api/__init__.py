"""Shared HTTP plumbing of both wings: the request context, versions,
schemas, limits, policy, errors (imports neither wing)."""
