"""Generation methods (METHODS 4.1): each turns a sample into an Answer."""
