"""Channels: where messages come from and go to (AI, WebSocket, realtime voice)."""
