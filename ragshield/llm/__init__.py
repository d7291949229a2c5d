"""LLM backends behind one protocol (base.LLM), the call cache and the packaged models."""
