"""Labelling and people: the annotation queue and labels, agreement among annotators,
and who may sign in and manage."""
