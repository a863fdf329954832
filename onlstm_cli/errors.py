"""Every error the CLI reports as a single line (exit code 2) instead of a traceback: OnlstmError and its
kinds, in one place so that any layer can raise them without importing another."""


class OnlstmError(Exception):
    """Bad input, options or files; str(error) is one line for the user."""
    exit_code = 2


class UserError(OnlstmError):
    """Bad command-line input or options."""


class InputError(OnlstmError):
    """Input that cannot be read (a missing file, text that is not UTF-8); one line for the user."""


class GoldFormatError(OnlstmError, ValueError):
    """A gold or predicted tree file that cannot be read; the message names file and line."""


class TreeTooDeepError(OnlstmError):
    """A tree nested deeper than nltk's drawing can go; the message says which formats can show it."""


class ModelFileError(OnlstmError):
    """A model or checkpoint file that cannot be used; the message is one line for the user."""


class OutputInUse(OnlstmError):
    """An output file that another running onlstm command is writing (files.output_lock)."""


class DeviceError(OnlstmError, ValueError):
    """An unusable --device; the message is one line for the user."""


class ParseError(OnlstmError):
    """A problem with parse input or options; the message is one line for the user."""


class WorkerError(OnlstmError):
    """A parse worker died (killed, out of memory); the parse stops rather than leave lines unanswered."""


class PictureFileError(OnlstmError):
    """A picture or page could not be written where asked."""


class TrainingError(OnlstmError):
    """A problem with the training input or options; the message is one line for the user."""


class StoppedBySignal(TrainingError):
    """Ctrl-C or SIGTERM came before a run had anything to write; the CLI exits with 128 + the signal's number, as
    a run that stops with a checkpoint does."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signal = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signal


class RankZeroFailed(TrainingError):
    """Raised on the other ranks where the run could not be set up (rank 0 reports why), so that they exit
    instead of waiting for it, and say nothing."""


class Diverged(TrainingError):
    """Training met a loss or gradient that is not finite in too many steps in a row."""
