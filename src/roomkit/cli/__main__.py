"""``python -m roomkit.cli``: the ``roomkit`` command."""

import sys

from roomkit.cli._main import main

sys.exit(main())
