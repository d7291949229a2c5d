"""Pure metric functions (numpy/pandas): no I/O, no store, no LLM."""
