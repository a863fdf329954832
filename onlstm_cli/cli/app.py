"""The `onlstm` Typer app and what every command shares: one-line errors instead of tracebacks, progress lines
on stderr. The commands live one a module (train.py, parse.py, evaluate.py, info.py, ensemble.py) and are
registered in commands.py."""
from __future__ import annotations

import functools
import os

import typer

from onlstm_cli.cli.help_format import PlainGroup
from onlstm_cli.console import printable, stdout_closed
from onlstm_cli.errors import OnlstmError


app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, cls=PlainGroup,
                  help="Unsupervised constituency trees from Ordered-Neurons LSTM language models.")


class Invocation:
    """When the `onlstm` command began (time.time()), set by commands.main: a recipe's --time-budget counts
    from there, torch's import included. None where the app is called another way (a test's CliRunner)."""
    started: float | None = None


def _version(value: bool):
    if value:
        from onlstm_cli import __version__
        typer.echo(f"onlstm {__version__}")
        raise typer.Exit()


@app.callback()
def root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit.")):
    """Unsupervised constituency trees from Ordered-Neurons LSTM language models."""


def err_line(line: str) -> None:
    """A progress line of a long run, on stderr (stdout stays for results)."""
    typer.echo(line, err=True)


def fail(message: str, code: int = 2) -> None:
    """The one line of an error; what it quotes from files or paths cannot act on the terminal (printable)."""
    typer.echo(f"error: {printable(message)}", err=True)
    raise typer.Exit(code)


def friendly_errors(command):
    """Turn every expected failure into one line on stderr and a non-zero exit code, never a traceback."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except BrokenPipeError:
            stdout_closed()
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except OnlstmError as e:
            fail(str(e), e.exit_code)
        except Exception as e:  # noqa: BLE001 — anything else is still one line, never a traceback
            name = type(e).__name__
            if isinstance(e, (OSError, UnicodeError)):
                fail(str(e).splitlines()[0] if str(e) else name)
            if os.environ.get("ONLSTM_DEBUG"):
                raise
            fail(f"internal error ({name}: {str(e).splitlines()[0] if str(e) else ''}); "
                 "set ONLSTM_DEBUG=1 to see the traceback", 1)
    return wrapper


def with_denormals_flushed(command):
    """Run the command with CPU denormal floats flushed (fast.denormals_flushed), entered before torch's threads
    start so that they inherit it: a PCFG's charts make many, which a CPU computes many times slower. torch is
    imported when the command runs, not before (`onlstm --help` stays fast)."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from onlstm_cli import fast
        with fast.denormals_flushed():
            return command(*args, **kwargs)
    return wrapper
