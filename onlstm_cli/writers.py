"""The output formats of `onlstm parse`: one table, format name → writer, beside the formats themselves
(text/formats.py writes a sentence; pictures/ draws them). A new format is one function and one line in
WRITERS; the CLI's --format choices and their help come from the table.

A writer takes the parsed batches as they come (lists of induction.distances.ParsedSentence) and writes
them to `out`, flushed after each batch, so that a pipe is answered line by line; it returns the number of
lines it refused. Its modules are imported when it writes: the table itself costs nothing at start-up.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from onlstm_cli.console import printable, printable_json
from onlstm_cli.errors import TreeTooDeepError


@dataclass(frozen=True)
class Output:
    """Where and how a parse is written: the stream, the parser (pictures colour the words it did not read),
    each word's distance beside its tree (--distances), a folder for pictures (--out-dir), and `say`, which
    tells the user one line on stderr."""
    out: TextIO
    parser: object
    say: Callable[[str], None]
    distances: bool = False
    out_dir: Path | None = None


Writer = Callable[[Iterable[list], Output], int]


def sentence_writer(start: Callable[[Output], Callable]) -> Writer:
    """A Writer of one answer a line: `start(output)` gives the function that writes a parsed sentence.
    Output line N answers input line N: a line without a tree (an empty line, or one not parsed, whose reason
    goes to stderr) gets an empty line."""
    def write(batches: Iterable[list], output: Output) -> int:
        write_sentence = start(output)
        refused = Refused(output.say)
        number = 0  # input lines so far, for messages
        for batch in refused.told(batches):
            for sentence in batch:
                number += 1
                if sentence.tree is None:
                    output.out.write("\n")
                    continue
                try:
                    write_sentence(sentence)
                except TreeTooDeepError as error:
                    raise TreeTooDeepError(f"input line {number}: {error}") from None
            output.out.flush()
        return refused.count
    return write


class Refused:
    """The lines not parsed, told the same way by every format: `error: input line N: why` on stderr, as each
    batch comes, and counted (the CLI then ends with exit code 2)."""

    def __init__(self, say: Callable[[str], None]):
        self.say, self.count = say, 0

    def told(self, batches: Iterable[list]) -> Iterable[list]:
        number = 0
        for batch in batches:
            for sentence in batch:
                number += 1
                if sentence.error:
                    self.say(f"error: input line {number}: {printable(sentence.error)}")
                    self.count += 1
            yield batch


def _shown_distances(sentence) -> str:
    from onlstm_cli.text.formats import distances_text
    return printable(distances_text(sentence.tokens, sentence.distances))


def _shown_tree(sentence):
    """The sentence's tree with each word printable (console.printable: a bidirectional override such as
    U+202E written as an escape, as `info` writes it), for the drawings, which measure words as shown."""
    from onlstm_cli.trees import fold_tree
    return fold_tree(sentence.tree, printable, lambda children: children)


@sentence_writer
def write_bracket(output: Output):
    from onlstm_cli.text.formats import to_bracket

    def write(sentence) -> None:
        shown = f"\t{_shown_distances(sentence)}" if output.distances else ""
        output.out.write(printable(to_bracket(sentence.tree)) + shown + "\n")
    return write


@sentence_writer
def write_json(output: Output):
    from onlstm_cli.text.formats import to_json
    # the same data once parsed, with nothing a terminal acts on (a bidirectional override) left raw
    return lambda sentence: output.out.write(printable_json(to_json(sentence.tree, sentence.distances,
                                                                    sentence.log_likelihood)) + "\n")


@sentence_writer
def write_nltk(output: Output):
    from onlstm_cli.text.formats import to_ascii

    def write(sentence) -> None:
        output.out.write(to_ascii(_shown_tree(sentence)).rstrip("\n") + "\n")
        if output.distances:
            output.out.write(f"distances: {_shown_distances(sentence)}\n")
    return write


@sentence_writer
def write_tree(output: Output):
    from onlstm_cli.console import stdout_console
    from onlstm_cli.text.formats import to_rich
    console = stdout_console(file=output.out)

    def write(sentence) -> None:
        console.print(to_rich(_shown_tree(sentence)))
        if output.distances:
            console.print(f"distances: {_shown_distances(sentence)}", markup=False)
    return write


def picture_writer(html: bool) -> Writer:
    """pictures/picture_files.py's SVG a line (or a file a sentence, with --out-dir), or its HTML page."""
    def write(batches: Iterable[list], output: Output) -> int:
        from onlstm_cli.pictures.picture_files import write_pictures
        if output.distances:
            output.say(f"warning: --distances adds nothing to --format {'html' if html else 'svg'}: the picture's "
                       "bars are the distances (hover a bar for its value)")
        refused = Refused(output.say)  # a line not parsed is said and counted, as in the other formats
        write_pictures(refused.told(batches), output.parser, output.out, html=html, out_dir=output.out_dir)
        return refused.count
    return write


# name → (writer, what --help says of it; "" for nothing), in the order --help lists them
WRITERS: dict[str, tuple[Writer, str]] = {
    "bracket": (write_bracket, ""),
    "json": (write_json, ""),
    "nltk": (write_nltk, "ASCII drawing"),
    "tree": (write_tree, "rich"),
    "svg": (picture_writer(html=False), "a picture per sentence: tree, distance bars, split order; one a line, "
                                        "or files with --out-dir"),
    "html": (picture_writer(html=True), "one page for all lines"),
}


def formats_help() -> str:
    """The formats as --help lists them: `bracket, json, nltk (ASCII drawing), … or html (…)`."""
    named = [f"{name} ({about})" if about else name for name, (_, about) in WRITERS.items()]
    return f"{', '.join(named[:-1])} or {named[-1]}"
