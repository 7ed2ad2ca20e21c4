"""Test doubles for code built on roomkit.

- :class:`VirtualClockLoop`, :func:`run_virtual`, :func:`virtual_runner`, :func:`advance`: a
  fake clock, an event loop on which timeouts and sleeps complete at once, in deadline order.
- :class:`ScriptedHuman` (with :class:`Reject` and :class:`Silence`): a person who answers
  each question as scripted.
- The scripted model is :class:`roomkit.providers.ai.mock.MockAIProvider`.
"""

from roomkit.testing.clock import VirtualClockLoop, advance, run_virtual, virtual_runner
from roomkit.testing.human import Reject, ScriptedHuman, Silence

__all__ = [
    "Reject",
    "ScriptedHuman",
    "Silence",
    "VirtualClockLoop",
    "advance",
    "run_virtual",
    "virtual_runner",
]
