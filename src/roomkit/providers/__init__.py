"""Model, realtime-voice and conference back ends."""
