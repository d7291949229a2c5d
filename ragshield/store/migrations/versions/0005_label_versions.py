"""label versions form one chain per (sample, annotator): each row names the row it follows,
and the database allows one successor per row and one first row per pair, so concurrent
submissions cannot add two versions after the same current label

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

NO_PREVIOUS = sa.text("previous_id IS NULL")


def upgrade() -> None:
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.add_column(sa.Column('previous_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key('fk_labels_previous_id', 'labels', ['previous_id'], ['id'],
                                    ondelete='CASCADE')
    # Existing rows: each follows the person's row just before it on the same sample. Rows
    # a race duplicated before this revision simply become consecutive versions.
    op.execute(
        "UPDATE labels SET previous_id = (SELECT max(older.id) FROM labels AS older "
        "WHERE older.sample_id = labels.sample_id AND older.annotator_id = labels.annotator_id "
        "AND older.id < labels.id)")
    op.create_index('uq_labels_previous', 'labels', ['previous_id'], unique=True)
    op.create_index('uq_labels_first_version', 'labels', ['sample_id', 'annotator_id'],
                    unique=True, sqlite_where=NO_PREVIOUS, postgresql_where=NO_PREVIOUS)


def downgrade() -> None:
    op.drop_index('uq_labels_first_version', table_name='labels')
    op.drop_index('uq_labels_previous', table_name='labels')
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.drop_constraint('fk_labels_previous_id', type_='foreignkey')
        batch_op.drop_column('previous_id')
