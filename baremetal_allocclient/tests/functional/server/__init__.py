"""Functional tests running the reference server as a process."""
