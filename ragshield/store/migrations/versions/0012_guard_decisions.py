"""guard_decisions: the decision log of the guard API, one row per answered call

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29
"""
from alembic import op
import sqlalchemy as sa


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'guard_decisions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('caller', sa.String(length=100), nullable=True),
        sa.Column('endpoint', sa.String(length=20), nullable=False),
        sa.Column('question_sha256', sa.String(length=64), nullable=False),
        sa.Column('question', sa.Text(), nullable=True),
        sa.Column('run_id', sa.Integer(), nullable=True),
        sa.Column('dataset', sa.String(length=200), nullable=True),
        sa.Column('sample_id', sa.String(length=200), nullable=True),
        sa.Column('decision', sa.String(length=20), nullable=True),
        sa.Column('kept', sa.Boolean(), nullable=False),
        sa.Column('rule', sa.String(length=200), nullable=False),
        sa.Column('policy_name', sa.String(length=100), nullable=True),
        sa.Column('policy_version', sa.Integer(), nullable=True),
        sa.Column('verdicts', sa.JSON(), nullable=False),
        sa.Column('latency_ms', sa.Float(), nullable=False),
        sa.Column('phases_ms', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_guard_decisions_created_at', 'guard_decisions', ['created_at'])


def downgrade() -> None:
    op.drop_index('ix_guard_decisions_created_at', table_name='guard_decisions')
    op.drop_table('guard_decisions')
