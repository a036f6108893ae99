"""HTTP routes, split by feature."""
