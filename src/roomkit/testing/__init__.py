"""Test doubles for code built on roomkit.

- :class:`VirtualClockLoop`, :func:`run_virtual`, :func:`virtual_runner`: a fake clock, an
  event loop on which timeouts and sleeps complete at once, in deadline order.
"""

from roomkit.testing.clock import VirtualClockLoop, run_virtual, virtual_runner

__all__ = ["VirtualClockLoop", "run_virtual", "virtual_runner"]
