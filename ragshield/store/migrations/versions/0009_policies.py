"""policies: fitted decision policies (two thresholds on a judge's score with a risk
promise), versioned by name

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'policies',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('source', sa.String(length=200), nullable=False),
        sa.Column('dataset', sa.String(length=200), nullable=True),
        sa.Column('body', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name', 'version'),
    )


def downgrade() -> None:
    op.drop_table('policies')
