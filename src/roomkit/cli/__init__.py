"""The ``roomkit`` command: serve the answer desk, issue tokens, answer from a terminal.

::

    roomkit desk [--host 127.0.0.1] [--port 8765] [--store memory|sqlite:///x.db|redis://...|postgresql://...]
                 [--log-format text|json] [--sign-in-ttl SECONDS] [--notify notify.toml]
    roomkit notify --store sqlite:///x.db|redis://...|postgresql://... --config notify.toml
    roomkit token ACTOR [--admin] [--ttl SECONDS]
    roomkit revoke TOKEN | --actor ACTOR [--store sqlite:///x.db|redis://...]
    roomkit pending list [--room ROOM] [--json]
    roomkit pending show ID
    roomkit pending answer ID ANSWER
    roomkit pending reject ID [--reason TEXT]
    roomkit pending approve ID | edit ID ARGUMENTS_JSON | respond ID TEXT
    roomkit mcp --store sqlite:///x.db|redis://... [--actor NAME] [--room mcp] [--http PORT]
    roomkit audit export --store URL [--since ISO] [--room ID]
    roomkit audit verify --store URL
    roomkit audit checkpoint --store URL [--adopt]
    roomkit audit key [--rotate]

One module a command group: :mod:`~roomkit.cli.desk` (``desk``), :mod:`~roomkit.cli.tokens`
(``token``, ``revoke``), :mod:`~roomkit.cli.pending`, :mod:`~roomkit.cli.mcp`,
:mod:`~roomkit.cli.notify` and :mod:`~roomkit.cli.audit`. ``roomkit --help`` and every
``roomkit COMMAND --help`` load no optional library; a command loads what it runs on when it
runs, and one whose extra is missing prints one line naming the install command
(``pip install -e '.[mcp]'``) and exits 2.

``desk``, ``token`` and ``revoke`` share the desk's secret (``ROOMKIT_DESK_SECRET``, or the
key file in ``--data-dir``); ``revoke`` writes to the desk's store, where every desk process
reads it. ``desk --notify`` runs a notifier from a TOML file in the desk; ``notify`` runs one
in a process of its own until SIGTERM or Ctrl-C (:mod:`roomkit.notify.config` describes the
file). The ``pending`` commands talk to a running desk (``--url``) with a token (``--token``
or ``ROOMKIT_TOKEN``). The ``audit`` commands read and sign the request histories of a
durable store, with the audit key of ``ROOMKIT_AUDIT_KEY`` or of ``audit.key`` in
``--data-dir``. A failure prints one line on stderr and exits 1; a command used wrongly, or
without its extra, exits 2.
"""

from __future__ import annotations

from roomkit.cli._main import _parser as _parser
from roomkit.cli._main import console, main
from roomkit.cli.pending import answer_body

__all__ = ["answer_body", "console", "main"]
