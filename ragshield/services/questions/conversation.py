"""What the faces read of a conversation (ragshield/conversation.py): the question the judges
read after earlier turns, and the turns a sample's row carries."""

from ragshield.conversation import HISTORY, SPEAKERS, Turn, history_of, judged_question

__all__ = ["HISTORY", "SPEAKERS", "Turn", "history_of", "judged_question"]
