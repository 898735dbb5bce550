"""``python -m memdir`` runs the CLI."""

from memdir.cli import main

main()
