"""The one error base class the CLI reports as a single line (exit code 2) instead of a traceback."""


class OnlstmError(Exception):
    """Bad input, options or files; str(error) is one line for the user."""
