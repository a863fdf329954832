"""The `onlstm` command: registers each command's module on the app; no method logic lives here.

torch is imported inside the commands, so `onlstm --help` stays fast; their options take their defaults
from the torch-free config dataclasses (config.py, through options.py).
"""
from __future__ import annotations

import time

from onlstm_cli.cli.app import Invocation, app
from onlstm_cli.cli.ensemble import ensemble
from onlstm_cli.cli.evaluate import evaluate
from onlstm_cli.cli.info import info
from onlstm_cli.cli.parse import parse
from onlstm_cli.cli.train import train

for command in (train, parse, info, evaluate, ensemble):
    app.command()(command)


def main() -> None:
    Invocation.started = time.time()
    app()
