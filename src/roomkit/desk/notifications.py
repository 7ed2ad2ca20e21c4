"""The desk's notifier: run while the desk's app runs, and counted in ``/metrics``.

``notifier=`` (a :class:`~roomkit.notify.Notifier`) is one of the desk's options. The
desk's router starts it with the application (its lifespan, which FastAPI merges into the
app's on ``include_router``) and stops it at shutdown. Its counts are read at each scrape:

- ``roomkit_notifications_delivered_total{surface}``: deliveries done;
- ``roomkit_notification_failures_total{surface}``: failed attempts (each retry counts);
- ``roomkit_notifications_dropped_total{surface}``: deliveries given up (refused, or failing
  past the retry policy): the log says what to fix;
- ``roomkit_notification_unreachable_total``: approvers no surface could reach.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from roomkit.notify.notifier import Notifier

__all__ = ["NotifierCollector", "running", "watch"]


class NotifierCollector(Collector):
    """Reads a notifier's statistics into the desk's registry at each scrape."""

    def __init__(self, notifier: Notifier) -> None:
        self.notifier = notifier

    def collect(self) -> Iterator[CounterMetricFamily]:
        stats = self.notifier.statistics()
        names = list(self.notifier.surfaces)
        for name, text, counts in (
            ("roomkit_notifications_delivered", "Notices delivered.", stats.delivered),
            ("roomkit_notification_failures", "Failed delivery attempts.", stats.failed),
            ("roomkit_notifications_dropped", "Notices given up.", stats.dropped),
        ):
            family = CounterMetricFamily(name, text, labels=["surface"])
            for surface in names:
                family.add_metric([surface], counts[surface])
            yield family
        yield CounterMetricFamily(
            "roomkit_notification_unreachable",
            "Approvers no surface could reach.",
            value=stats.unreachable,
        )


def watch(registry: CollectorRegistry, notifier: Notifier) -> None:
    """Count ``notifier``'s deliveries in ``registry``."""
    registry.register(NotifierCollector(notifier))


@asynccontextmanager
async def running(notifier: Notifier | None, app: Any = None) -> AsyncIterator[None]:
    """Run ``notifier`` (if any) for as long as the block runs."""
    if notifier is None:
        yield
        return
    async with notifier:
        yield
