"""People: who may be asked, how to reach them, and who decides while they are away.

:class:`Directory` maps actor ids to :class:`Person` entries (contact points, a manager,
:class:`Delegation` s) and names the groups an approver may be: a :class:`Role`
(``role("kyc")``) and an on-call schedule (``on_call("payments")``). The handler is given
the directory (``HumanInputHandler(directory=...)``) and routes each request by it; the
notifier and the desk use the handler's.
"""

from roomkit.people._directory import MAX_CHAIN, Directory, StandIn
from roomkit.people._entries import (
    Delegation,
    OnCallSource,
    Person,
    Role,
    on_call,
    reference_of,
    role,
)

__all__ = [
    "MAX_CHAIN",
    "Delegation",
    "Directory",
    "OnCallSource",
    "Person",
    "Role",
    "StandIn",
    "on_call",
    "reference_of",
    "role",
]
