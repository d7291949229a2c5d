"""samples: one index on (dataset_id, id) instead of (dataset_id), so that the label
queue reads a dataset's samples in order from the index and stops at the first open one,
without sorting the dataset

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""
from alembic import op


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('samples', schema=None) as batch_op:
        batch_op.create_index('ix_samples_dataset_order', ['dataset_id', 'id'], unique=False)
        batch_op.drop_index('ix_samples_dataset_id')


def downgrade() -> None:
    with op.batch_alter_table('samples', schema=None) as batch_op:
        batch_op.create_index('ix_samples_dataset_id', ['dataset_id'], unique=False)
        batch_op.drop_index('ix_samples_dataset_order')
