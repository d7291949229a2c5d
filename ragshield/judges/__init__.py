"""Judges (docs/METHODS.md 4.2-4.12): each decides whether an answer is kept or withheld."""
