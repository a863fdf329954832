"""The command line: the Typer app and its commands (commands.py), help pages readable at 80 columns
(help_format.py). The commands only wire: what they run lives in the other folders."""
