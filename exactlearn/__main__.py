"""``python -m exactlearn`` is the ``exactlearn`` command."""

import sys

from .cli import main

if __name__ == "__main__":  # importing this module (e.g. by Sphinx) runs nothing
    sys.exit(main())
