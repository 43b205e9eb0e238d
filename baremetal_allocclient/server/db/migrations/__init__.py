"""Alembic migrations, run by ``baremetal-alloc-server db upgrade``."""
