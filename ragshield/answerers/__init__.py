"""Generation methods (docs/METHODS.md 4.1): each turns a sample into an Answer."""
