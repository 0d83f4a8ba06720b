"""`python -m streams.cli`: the `neardup` command (how the dev cluster starts workers)."""

from streams.cli import main

main()
