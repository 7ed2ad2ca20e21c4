"""The Slack tests of the desk use the notifier suite's fake Slack Web API and surface."""

from tests.notify.slack_api import slack as slack
from tests.notify.slack_api import slack_api as slack_api
