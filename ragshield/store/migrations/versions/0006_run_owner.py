"""runs: the process executing a run (host, pid, start token), since when, and its heartbeat,
so that a second resumer is refused and a run whose process died shows as interrupted

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('owner_host', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('owner_pid', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('owner_token', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('owner_since', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('heartbeat_at')
        batch_op.drop_column('owner_since')
        batch_op.drop_column('owner_token')
        batch_op.drop_column('owner_pid')
        batch_op.drop_column('owner_host')
