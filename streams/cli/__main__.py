"""`python -m streams.cli`: the `neardup` command (how the dev cluster starts workers)."""

from streams.cli import main

if __name__ == "__main__":  # not when a spawned process (the index process) imports it
    main()
