"""The desk page in headless Chromium, for the push tests: the desk with a notifier and a
loopback push service, and a page whose browser subscribes to that service.

Headless Chromium has no push service to subscribe with (a browser context is off the
record, where Chrome refuses the Push API, and a persistent one waits for Google's push
service, which the tests cannot reach). So the page's ``PushManager.subscribe`` is replaced
by one that hands back a subscription of the loopback push service's; everything else is
real: the page posts it to the desk, the notifier pushes to it (VAPID-signed, encrypted), and
the message the push service decrypted is dispatched to the page's worker as a ``PushEvent``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from playwright.sync_api import Browser, BrowserContext, Page
from tests.push.push_service import PushService
from tests.servers.threaded_app import ThreadedApp

from roomkit import RoomKit
from roomkit.desk.app import create_desk_app
from roomkit.notify import Notifier, WebPush
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
SUBJECT = "mailto:ops@example.com"

# Stands in for the browser's push service: subscribe() hands back the loopback service's
# subscription, and keeps the key the page subscribed with.
FAKE_SUBSCRIBE = """
(function (subscription) {
  var current = null;
  PushManager.prototype.getSubscription = function () { return Promise.resolve(current); };
  PushManager.prototype.subscribe = function (options) {
    var key = new Uint8Array(options.applicationServerKey);
    window.__subscribedWith = btoa(String.fromCharCode.apply(null, key))
      .replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    current = { toJSON: function () { return subscription; } };
    return Promise.resolve(current);
  };
})(%s);
"""


def subscribing_page(
    served: Served, browser: Browser, subscription: dict[str, Any]
) -> tuple[BrowserContext, Page]:
    """A page in a context of its own, notifications allowed, whose browser subscribes with
    ``subscription``."""
    context = browser.new_context()
    context.grant_permissions(["notifications"], origin=served.url)
    context.add_init_script(FAKE_SUBSCRIBE % json.dumps(subscription))
    return context, context.new_page()


class Served(ThreadedApp):
    """The desk, its handler, a notifier and a loopback push service, on a loop of their own
    in a thread; the desk on ``127.0.0.1:<free port>``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.service = PushService()
        super().__init__(self.build)

    async def build(self, url: str) -> tuple[FastAPI, HumanInputHandler]:
        handler = HumanInputHandler()
        await self.service.__aenter__()
        self.cleanups.append(self.service.__aexit__)
        app = create_desk_app(
            RoomKit(),
            handler=handler,
            secret=SECRET,
            data_dir=self.data_dir,
            push_hosts=[self.service.origin],
        )
        self.notifier = Notifier(
            handler,
            [WebPush(SUBJECT, data_dir=self.data_dir, push_hosts=[self.service.origin])],
            desk_url=url,
            link_secret=SECRET,
        )
        await self.notifier.__aenter__()
        self.cleanups.append(self.notifier.aclose)
        return app, handler
