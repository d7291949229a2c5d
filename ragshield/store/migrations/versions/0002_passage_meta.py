"""passages: meta (relevance flags, page rank, ...) and doc_id as text (CRAG URLs run long)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('passages', schema=None) as batch_op:
        batch_op.add_column(sa.Column('meta', sa.JSON(), nullable=False,
                                      server_default=sa.text("'{}'")))
        batch_op.alter_column('doc_id', existing_type=sa.String(length=500), type_=sa.Text(),
                              existing_nullable=True)


def downgrade() -> None:
    with op.batch_alter_table('passages', schema=None) as batch_op:
        batch_op.alter_column('doc_id', existing_type=sa.Text(), type_=sa.String(length=500),
                              existing_nullable=True)
        batch_op.drop_column('meta')
