"""Several server processes on one database: concurrency and faults."""
