"""``python -m roomkit``: the ``roomkit`` command, as ``python -m roomkit.cli`` runs it."""

import sys

from roomkit.cli import main

sys.exit(main())
