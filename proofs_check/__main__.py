"""``python -m proofs_check``: see :mod:`proofs_check.cli`."""

import sys

from .cli import main

sys.exit(main())
