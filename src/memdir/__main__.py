"""``python -m memdir`` runs the ``memdir`` executable (the per-user service's thin client in
front of the CLI: :mod:`memdir.client`)."""

from memdir.client import main

main()
