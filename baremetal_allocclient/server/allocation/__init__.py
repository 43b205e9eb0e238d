"""The allocation product: handlers, service, workers, selection,
reservation."""
