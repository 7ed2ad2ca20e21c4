"""Moved to :mod:`tests.servers.webhook_receiver`; these names stay for the tests that import
them."""

from tests.servers.webhook_receiver import SECRET as SECRET
from tests.servers.webhook_receiver import Receiver as Receiver
from tests.servers.webhook_receiver import body_types as body_types
from tests.servers.webhook_receiver import dumps as dumps
