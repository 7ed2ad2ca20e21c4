"""Moved to :mod:`tests.servers.http_server`; these names stay for the tests that import them."""

from tests.servers.http_server import FakeServer as FakeServer
from tests.servers.http_server import Recorded as Recorded
from tests.servers.http_server import Reply as Reply
from tests.servers.http_server import Sleeps as Sleeps
from tests.servers.http_server import split_evenly as split_evenly
from tests.servers.http_server import sse as sse
