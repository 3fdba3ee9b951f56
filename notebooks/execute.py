"""Execute the notebooks in place, so that their committed outputs are current.

    python notebooks/execute.py            # every notebook in this folder
    python notebooks/execute.py 02_exact_recovery.ipynb

Uses nbclient (``pip install -e ".[notebooks]"``). The test suite executes the
same notebooks (tests/test_notebooks.py) without writing them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
TIMEOUT = 300  # seconds per cell


def execute(path: Path, *, save: bool = False) -> nbformat.NotebookNode:
    """Run every cell of the notebook at ``path`` (raises on the first failing cell)."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    if save:
        nbformat.write(nb, path)
    return nb


def main(argv: list[str]) -> int:
    paths = [HERE / name for name in argv] if argv else sorted(HERE.glob("*.ipynb"))
    for path in paths:
        if not path.is_file():
            print(f"no such notebook: {path}", file=sys.stderr)
            return 2
        execute(path, save=True)
        print(f"executed {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
