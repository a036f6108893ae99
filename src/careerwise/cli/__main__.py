"""``python -m careerwise.cli``: the same command as the ``careerwise`` script.

multiprocessing never re-runs a package's ``__main__`` in its children (the parse workers), so starting
the server this way costs them nothing.
"""

from careerwise.cli import app

if __name__ == "__main__":
    app()
