"""What the realtime channels share: the live session, the doors of its calls, the reasoner.

The voice channel and the conference channel both run sessions on a realtime provider and
serve their model's calls through the one call path (``channels/_calls``). ``live`` holds a
running session and its open calls; ``doors`` brings a call in, runs it and sends its result
back the way it came; ``reasoning`` is the protocol of a backend that reasons for the model.
"""
