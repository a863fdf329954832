"""Progress of a long `onlstm parse` on a terminal: lines parsed and their rate, on stderr, while the trees go
to a file or a pipe. Nothing is shown when stderr is no terminal (a log, a test) or when the trees themselves
scroll by on it."""
from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator


def wanted(output_to_file: bool) -> bool:
    return sys.stderr.isatty() and (output_to_file or not sys.stdout.isatty())


def with_progress(batches: Iterable[list]) -> Iterator[list]:
    """The same batches, counted on a transient line of stderr that ends when they do."""
    from rich.console import Console
    from rich.live import Live

    started, done = time.monotonic(), 0
    with Live(console=Console(stderr=True), transient=True, refresh_per_second=4) as live:
        for batch in batches:
            yield batch
            done += len(batch)
            rate = done / max(time.monotonic() - started, 1e-9)
            live.update(f"parsed {done:,} lines, {rate:,.0f} lines/s")
