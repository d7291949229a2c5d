"""runs: sample totals and failures; answers: role, model, passages, prompt and trace;
verdicts: parse errors and judge details

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

# 0001 left the answers' unique constraint unnamed. PostgreSQL names it itself; on SQLite
# the batch copy names it by this convention so that it can be dropped.
NAMING = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _old_unique_name() -> str:
    if op.get_bind().dialect.name == "postgresql":
        return "answers_run_id_sample_id_answerer_key"
    return "uq_answers_run_id"


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('samples_total', sa.Integer(), nullable=False,
                                      server_default=sa.text('0')))
    op.create_table(
        'run_failures',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('sample_id', sa.Integer(), nullable=False),
        sa.Column('error', sa.Text(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['sample_id'], ['samples.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id', 'sample_id'),
    )
    op.create_index(op.f('ix_run_failures_run_id'), 'run_failures', ['run_id'], unique=False)
    with op.batch_alter_table('answers', schema=None, naming_convention=NAMING) as batch_op:
        batch_op.add_column(sa.Column('role', sa.String(length=20), nullable=False,
                                      server_default='main'))
        batch_op.add_column(sa.Column('model', sa.String(length=300), nullable=True))
        batch_op.add_column(sa.Column('refusal', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('parse_error', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('cites_internal_knowledge', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        for column in ('passages', 'messages', 'trace'):
            batch_op.add_column(sa.Column(column, sa.JSON(), nullable=False,
                                          server_default=sa.text("'[]'")))
        batch_op.drop_constraint(_old_unique_name(), type_='unique')
        batch_op.create_unique_constraint('uq_answers_run_sample_role',
                                          ['run_id', 'sample_id', 'role'])
    with op.batch_alter_table('verdicts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('parse_error', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('details', sa.JSON(), nullable=False,
                                      server_default=sa.text("'{}'")))


def downgrade() -> None:
    with op.batch_alter_table('verdicts', schema=None) as batch_op:
        batch_op.drop_column('details')
        batch_op.drop_column('parse_error')
    with op.batch_alter_table('answers', schema=None) as batch_op:
        batch_op.drop_constraint('uq_answers_run_sample_role', type_='unique')
        batch_op.create_unique_constraint('answers_run_id_sample_id_answerer_key',
                                          ['run_id', 'sample_id', 'answerer'])
        for column in ('trace', 'messages', 'passages', 'cites_internal_knowledge',
                       'parse_error', 'refusal', 'model', 'role'):
            batch_op.drop_column(column)
    op.drop_index(op.f('ix_run_failures_run_id'), table_name='run_failures')
    op.drop_table('run_failures')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('samples_total')
