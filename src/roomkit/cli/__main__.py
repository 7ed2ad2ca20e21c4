"""``python -m roomkit.cli``: the ``roomkit`` command."""

import sys

from roomkit.cli._main import console

sys.exit(console())
