"""The database: SQLAlchemy models, Alembic migrations and sessions."""
