"""Voice back ends: realtime speech-to-speech providers and the transports that carry calls."""
