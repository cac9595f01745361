"""``python -m rollway``: the ``rollway`` command (see ``rollway._cli``)."""

from rollway._cli import main

main()
