"""Alembic environment: always run online on the connection we are given."""

from __future__ import annotations

from alembic import context

from baremetal_allocclient.server.db import models

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=models.Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
