"""``python -m cellcc``: the same command line as the ``cellcc`` script."""

from cellcc.cli import main

if __name__ == "__main__":
    main()
