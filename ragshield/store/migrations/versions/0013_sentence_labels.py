"""sentence_labels: people's labels of single sentences of an answer (supported, unsupported,
unsure), versioned per (sample, answer text, span, person) as labels are

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""
from alembic import op
import sqlalchemy as sa


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

NO_PREVIOUS = sa.text("previous_id IS NULL")


def upgrade() -> None:
    op.create_table(
        'sentence_labels',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('sample_id', sa.Integer(), nullable=False),
        sa.Column('annotator_id', sa.Integer(), nullable=False),
        sa.Column('answer_id', sa.Integer(), nullable=True),
        sa.Column('answer_sha256', sa.String(length=64), nullable=False),
        sa.Column('span_start', sa.Integer(), nullable=False),
        sa.Column('span_end', sa.Integer(), nullable=False),
        sa.Column('sentence', sa.Text(), nullable=False),
        sa.Column('label', sa.String(length=20), nullable=False),
        sa.Column('retracted', sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column('request_id', sa.String(length=64), nullable=True),
        sa.Column('reverts_id', sa.Integer(), nullable=True),
        sa.Column('previous_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("label IN ('supported', 'unsupported', 'unsure')",
                           name='ck_sentence_labels_label_value'),
        sa.CheckConstraint('span_start >= 0 AND span_end > span_start',
                           name='ck_sentence_labels_span'),
        sa.ForeignKeyConstraint(['sample_id'], ['samples.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['annotator_id'], ['annotators.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['answer_id'], ['answers.id'], ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['reverts_id'], ['sentence_labels.id'], ondelete='SET NULL',
                                name='fk_sentence_labels_reverts_id'),
        sa.ForeignKeyConstraint(['previous_id'], ['sentence_labels.id'], ondelete='CASCADE',
                                name='fk_sentence_labels_previous_id'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('request_id', name='uq_sentence_labels_request_id'),
    )
    op.create_index('ix_sentence_labels_sample_annotator', 'sentence_labels',
                    ['sample_id', 'annotator_id'])
    op.create_index('uq_sentence_labels_previous', 'sentence_labels', ['previous_id'],
                    unique=True)
    op.create_index('uq_sentence_labels_first_version', 'sentence_labels',
                    ['sample_id', 'answer_sha256', 'span_start', 'span_end', 'annotator_id'],
                    unique=True, sqlite_where=NO_PREVIOUS, postgresql_where=NO_PREVIOUS)


def downgrade() -> None:
    op.drop_index('uq_sentence_labels_first_version', table_name='sentence_labels')
    op.drop_index('uq_sentence_labels_previous', table_name='sentence_labels')
    op.drop_index('ix_sentence_labels_sample_annotator', table_name='sentence_labels')
    op.drop_table('sentence_labels')
