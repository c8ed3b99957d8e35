"""The error ``python -m jaxmax check`` reports as bad input: one line on stderr, exit status 2.

Its own module, so that every part of ``check`` (the runners, the scatter guard, the command
line) raises it without importing one another.
"""


class CheckError(Exception):
    """Bad input to ``check``: reported as one line on stderr, exit status 2."""
