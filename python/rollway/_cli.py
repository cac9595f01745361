"""The ``rollway`` command of an installed package (``pip install rollway`` puts it in the
venv's ``bin/``; ``python -m rollway`` is the same): the command line compiled into the
extension module, the same code as ``cargo build``'s binary, so flags, help and exit codes
(0 ok, 1 the work failed, 2 usage or input error) have one source."""

from __future__ import annotations

import os
import signal
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> None:
    """Runs ``rollway`` with ``argv`` (default: this process's arguments) and exits with its code."""
    from rollway import _rollway

    # Python turns SIGINT into KeyboardInterrupt, checked only while Python code runs; the
    # command runs in Rust with the GIL released, so Ctrl-C must act as it does on the
    # binary (end the process; committed episodes stay committed).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Hosted envs (`--env gym:…`) and `--backend ray` start this interpreter, which has rollway,
    # rather than whatever `python3` is first on PATH.
    os.environ.setdefault("ROLLWAY_PYTHON", sys.executable)
    args = sys.argv[1:] if argv is None else argv
    sys.exit(_rollway.cli(["rollway", *args]))


if __name__ == "__main__":
    main()
