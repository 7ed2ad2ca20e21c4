"""Bridges from other agent frameworks and protocols to roomkit's human input."""
