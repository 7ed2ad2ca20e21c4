"""The framework core: rooms, hooks and the error tree."""
