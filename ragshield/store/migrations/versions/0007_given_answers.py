"""samples: the answer an outside system gave (text, model, token log-probs, cited
passages), kept with the sample so that a run can judge it instead of generating one

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('samples', schema=None) as batch_op:
        batch_op.add_column(sa.Column('given_answer', sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('samples', schema=None) as batch_op:
        batch_op.drop_column('given_answer')
