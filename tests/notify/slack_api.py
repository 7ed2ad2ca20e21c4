"""Moved to :mod:`tests.servers.slack_server`; these names stay for the tests that import them."""

from tests.servers.ports import free_port as free_port
from tests.servers.slack_server import SIGNING_SECRET as SIGNING_SECRET
from tests.servers.slack_server import TOKEN as TOKEN
from tests.servers.slack_server import SlackAPI as SlackAPI
