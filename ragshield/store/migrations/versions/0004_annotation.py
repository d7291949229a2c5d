"""annotation: retracted labels, undo links, idempotent submissions, skips, per-dataset
guidelines, and each answer's judge disagreement (for the disagreement-first queue)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.add_column(sa.Column('guidelines', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('guidelines_updated_at', sa.DateTime(timezone=True),
                                      nullable=True))
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.add_column(sa.Column('retracted', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('request_id', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('reverts_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key('fk_labels_reverts_id', 'labels', ['reverts_id'], ['id'],
                                    ondelete='SET NULL')
        batch_op.create_unique_constraint('uq_labels_request_id', ['request_id'])
        batch_op.create_index('ix_labels_annotator_sample', ['annotator_id', 'sample_id'],
                              unique=False)
    with op.batch_alter_table('answers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('disagreement', sa.Float(), nullable=True))
        batch_op.create_index('ix_answers_run_disagreement',
                              ['run_id', 'disagreement', 'sample_id'],
                              unique=False)
    op.create_table(
        'skips',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('sample_id', sa.Integer(), nullable=False),
        sa.Column('annotator_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['annotator_id'], ['annotators.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['sample_id'], ['samples.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('annotator_id', 'sample_id'),
    )


def downgrade() -> None:
    op.drop_table('skips')
    with op.batch_alter_table('answers', schema=None) as batch_op:
        batch_op.drop_index('ix_answers_run_disagreement')
        batch_op.drop_column('disagreement')
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.drop_index('ix_labels_annotator_sample')
        batch_op.drop_constraint('uq_labels_request_id', type_='unique')
        batch_op.drop_constraint('fk_labels_reverts_id', type_='foreignkey')
        batch_op.drop_column('reverts_id')
        batch_op.drop_column('request_id')
        batch_op.drop_column('retracted')
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.drop_column('guidelines_updated_at')
        batch_op.drop_column('guidelines')
