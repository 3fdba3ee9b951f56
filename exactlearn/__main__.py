"""``python -m exactlearn`` is the ``exactlearn`` command."""

import sys

from .cli import main

sys.exit(main())
