"""Alembic environment: runs on the connection ragshield passes in, or on the configured URL."""

from alembic import context
from sqlalchemy import create_engine

from ragshield.store.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    # Plain `alembic` command line use: the URL comes from alembic.ini or RAGSHIELD settings.
    from ragshield.config import Settings

    url = config.get_main_option("sqlalchemy.url") or Settings().database_url
    engine = create_engine(url)
    with engine.begin() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
