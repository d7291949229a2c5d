"""A question asked and answered: retrieval or given passages, the answer, the judges,
the decision and its fallback, and the record of every ask in a live run."""
