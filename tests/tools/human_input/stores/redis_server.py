"""Moved to :mod:`tests.servers.redis_server`; this name stays for the tests that import it."""

from tests.servers.redis_server import DURABLE as DURABLE
from tests.servers.redis_server import RedisServer as RedisServer
from tests.servers.redis_server import running_redis as running_redis
