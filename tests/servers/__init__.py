"""The servers the tests run against, started in one place.

* :mod:`.redis_server`: redis-server (``redis_server``, one per test session);
* :mod:`.postgres_server`: a PostgreSQL cluster (``postgres_server``, one per session) and
  :mod:`.pgbouncer_server` in front of it;
* :mod:`.smtp_server`: an aiosmtpd SMTP server that keeps what it accepts;
* :mod:`.webhook_receiver` and :mod:`.http_server`: HTTP receivers (signed webhooks; the
  scripted base of the model vendors' fakes);
* :mod:`.slack_server`: the fake Slack Web API (``slack_api``, ``slack``);
* :mod:`.stores`: where each store of a test lives, for the suites that run on every store;
* :mod:`.schema_pool`: the schemas tests give back, taken again empty (``postgres_schema``).

:mod:`.plugin` holds the fixtures; the root ``conftest.py`` loads it, so every test can
take them by name. A session-wide server is shared: each test keeps to its own key prefix
or schema (``store_prefix``), so tests never see each other's data, and a test that stops
the shared server starts it again before it ends (the ``server`` fixtures do).
"""
