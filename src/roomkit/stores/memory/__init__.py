"""The stores of one process's memory: the default, with nothing to install.

:class:`MemoryStore` holds the pending requests and a bounded retention of outcomes;
:class:`InMemoryStore` holds the rooms (it is the kit's own default, defined in
:mod:`roomkit.core.store` so that a ``RoomKit`` needs nothing above the core).
"""

from roomkit.core.store import InMemoryStore
from roomkit.stores._ledger import MemoryLedger
from roomkit.stores.memory._history import MemoryHistory
from roomkit.stores.memory._outbox import FINISHED_KEPT, MemoryOutbox
from roomkit.stores.memory._requests import MemoryStore
from roomkit.stores.memory._trail import AnchoredHistory, CarriedTrail, MemoryTrail

__all__ = [
    "FINISHED_KEPT",
    "AnchoredHistory",
    "CarriedTrail",
    "InMemoryStore",
    "MemoryHistory",
    "MemoryLedger",
    "MemoryOutbox",
    "MemoryStore",
    "MemoryTrail",
]
