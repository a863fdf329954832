"""The training text as a stream of word ids, built and read without holding the text in memory.

Two streaming passes over the corpus: the first counts words for the vocabulary, the second encodes each
sentence (its ids, then <eos>) into a file of int32 ids that training memory-maps. Training reads the
stream as AWD-LSTM's `batchify` lays it out — `batch_size` contiguous columns read along time — but only
the window it is about to train on is copied out of the file, so memory does not grow with the corpus.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from array import array
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import torch

from onlstm_cli.errors import TrainingError
from onlstm_cli.files import bounded_lines, check_readable_file
from onlstm_cli.text.tokenizers import Tokenizer, is_punctuation
from onlstm_cli.text.vocab import Vocabulary

TOKEN_FILE_MAGIC = b"onlstm-tokens 1 "


def iter_sentences(path: str | Path, tokenizer: Tokenizer, pretokenized: bool = False,
                   keep_punct: bool = False, reverse: bool = False) -> Iterator[list[str]]:
    """Normalized sentences of a one-sentence-a-line UTF-8 file, one at a time (blank lines skipped);
    with `reverse`, each sentence's words last to first (for a right-to-left model).

    Punctuation is dropped unless asked for: evaluation removes it (the PTB LM text has hardly any).
    """
    path = Path(path)
    check_readable_file(path, "corpus", TrainingError)  # missing, a directory, a device (/dev/zero), a FIFO
    with open(path, "rb") as f:
        for number, raw in enumerate(bounded_lines(f, path), 1):  # a line of more than MAX_LINE_BYTES is refused
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TrainingError(f"{path} is not UTF-8 text (line {number}, byte {e.start})") from None
            if number == 1:
                line = line.removeprefix("\ufeff")
            tokens = [tokenizer.normalize(t) for t in tokenizer.split(line, pretokenized)]
            if not keep_punct:
                tokens = [t for t in tokens if not is_punctuation(t)]
            if tokenizer.characters:
                tokens = [unit for t in tokens for unit in tokenizer.units(t)]
            if tokens:
                yield tokens[::-1] if reverse else tokens


def read_corpus(path: str | Path, tokenizer: Tokenizer, pretokenized: bool = False,
                keep_punct: bool = False, reverse: bool = False) -> list[list[str]]:
    """All sentences of a small text (validation text, a text to measure perplexity on) in memory."""
    sentences = list(iter_sentences(path, tokenizer, pretokenized, keep_punct, reverse))
    if not sentences:
        raise no_sentences(path, tokenizer, pretokenized, keep_punct)
    return sentences


def trained_reading(loaded) -> tuple[bool, bool]:
    """--pretokenized and --keep-punct as `train` was given them for `loaded` (a LoadedModel)."""
    data = loaded.meta.get("data", {})
    return data.get("pretokenized", False), data.get("keep_punct", False)


def read_as_trained(path: str | Path, loaded, reverse: bool = False) -> list[list[str]]:
    """A text read as the training text of `loaded` (a LoadedModel) was: its tokenizer, and --pretokenized and
    --keep-punct as `train` was given them."""
    return read_corpus(path, loaded.tokenizer, *trained_reading(loaded), reverse)


def read_as_trained_with_pieces(path: str | Path, loaded) -> tuple[list[list[str]], list[list[int]]]:
    """read_as_trained's sentences, and for each the piece levels of its tokens (text.marks.piece_levels: how early
    `parse` cuts a tree of it before each), from the marks its line had, those the reading dropped included: one
    pass over the text. A character model's units are not cut (no levels)."""
    if loaded.tokenizer.characters:
        sentences = read_as_trained(path, loaded)
        return sentences, [[0] * len(s) for s in sentences]
    from onlstm_cli.text.marks import levels_among, piece_levels
    pretokenized, keep_punct = trained_reading(loaded)
    sentences, levels = [], []
    for tokens in iter_sentences(path, loaded.tokenizer, pretokenized, keep_punct=True):
        kept = [k for k, token in enumerate(tokens) if keep_punct or not is_punctuation(token)]
        if kept:  # the tokens read_as_trained keeps (iter_sentences' own filter)
            sentences.append([tokens[k] for k in kept])
            levels.append(levels_among(piece_levels(tokens), kept))
    if not sentences:
        raise no_sentences(path, loaded.tokenizer, pretokenized, keep_punct)
    return sentences, levels


def count_as_trained(path: str | Path, loaded) -> Counter:
    """The word counts of a text read as `read_as_trained` reads it, one sentence in memory at a time."""
    return count_words(path, loaded.tokenizer, *trained_reading(loaded))


def no_sentences(path: str | Path, tokenizer: Tokenizer, pretokenized: bool, keep_punct: bool) -> TrainingError:
    """The error for a text with no words; it points at --keep-punct when the text has only punctuation."""
    if not keep_punct and any(True for _ in iter_sentences(path, tokenizer, pretokenized, keep_punct=True)):
        return TrainingError(f"{path} has only punctuation, which is dropped unless --keep-punct is given")
    return TrainingError(f"{path} has no sentences")


def count_words(path: str | Path, tokenizer: Tokenizer, pretokenized: bool = False,
                keep_punct: bool = False) -> Counter:
    """The first pass: word counts for the vocabulary, one sentence in memory at a time."""
    counts, sentences = Counter(), 0
    for tokens in iter_sentences(path, tokenizer, pretokenized, keep_punct):
        counts.update(tokens)
        sentences += 1
    if not sentences:
        raise no_sentences(path, tokenizer, pretokenized, keep_punct)
    return counts


# A token this long is a phrase or a sentence, not a word: few words of any language are (German compounds and
# Turkish word forms are mostly under 15 letters); an unspaced run of Thai, Khmer or Burmese often is.
LONG_TOKEN = 25


def unspaced_share(counts: Counter) -> float:
    """The share of a corpus's characters that are in tokens of LONG_TOKEN characters or more: most of them for a
    text written without spaces between its words, which a tokenizer reads a whole run a word."""
    total = sum(len(word) * n for word, n in counts.items())
    return sum(len(word) * n for word, n in counts.items() if len(word) >= LONG_TOKEN) / max(total, 1)


def build_vocab(sentences: Iterable[list[str]], max_size: int | None, min_freq: int) -> Vocabulary:
    return Vocabulary.build(Counter(t for s in sentences for t in s), max_size, min_freq)


def encode(sentences: Iterable[list[str]], vocab: Vocabulary, chunk: int = 1 << 20) -> Iterator[np.ndarray]:
    """Word ids with <eos> after each sentence (the Mikolov/AWD-LSTM convention), in int32 pieces of about
    `chunk` ids."""
    ids = array("i")
    for sentence in sentences:
        ids.extend(vocab.encode(sentence))
        ids.append(vocab.eos_id)
        if len(ids) >= chunk:
            yield np.asarray(ids, dtype=np.int32)
            ids = array("i")
    if ids:
        yield np.asarray(ids, dtype=np.int32)


def token_stream(sentences: Iterable[list[str]], vocab: Vocabulary) -> torch.Tensor:
    """A small text's whole id stream in memory, as `encode` makes it."""
    pieces = list(encode(sentences, vocab))
    return torch.from_numpy(np.concatenate(pieces) if pieces else np.zeros(0, np.int32)).long()


def token_file_key(corpus: str | Path, vocab: Vocabulary, tokenizer: Tokenizer, pretokenized: bool,
                   keep_punct: bool, reverse: bool = False) -> dict:
    """What a token file's ids depend on; a file written for another key is written again."""
    stat = Path(corpus).stat()
    return {"corpus": str(Path(corpus).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "tokenizer": tokenizer.to_dict(), "pretokenized": pretokenized, "keep_punct": keep_punct,
            **({"reverse": True} if reverse else {}),  # absent when false: older token files stay valid
            "vocab": hashlib.sha1("\n".join(vocab.itos).encode("utf-8")).hexdigest()}


def write_token_file(path: str | Path, pieces: Iterable[np.ndarray], key: dict) -> None:
    """A header line (the magic and `key` as JSON, padded to a multiple of 64 bytes so that the ids are
    aligned), then the ids as native int32. Written beside `path` and renamed, like the model files."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = TOKEN_FILE_MAGIC + json.dumps(key, sort_keys=True).encode("utf-8")
    header = line + b" " * (-(len(line) + 1) % 64) + b"\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            for piece in pieces:
                f.write(piece.tobytes())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; this one is as shareable as the model beside it
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def open_token_file(path: str | Path, key: dict) -> np.ndarray | None:
    """The ids of a token file written for `key`, memory-mapped; None when there is none or it is stale."""
    try:
        with open(path, "rb") as f:
            header = f.readline()
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return None
    if not header.startswith(TOKEN_FILE_MAGIC):
        return None
    try:
        if json.loads(header[len(TOKEN_FILE_MAGIC):]) != key:
            return None
    except ValueError:
        return None
    if size == len(header):  # no ids: mmap cannot map an empty range
        return np.zeros(0, np.int32)
    return np.memmap(path, dtype=np.int32, mode="r", offset=len(header))


def corpus_token_file(corpus: str | Path, path: str | Path, vocab: Vocabulary, tokenizer: Tokenizer,
                      pretokenized: bool, keep_punct: bool, reverse: bool = False, write: bool = True) -> np.ndarray:
    """The corpus's id stream from the token file at `path`, memory-mapped; with `write`, the file is
    (re)written first by the second pass over the corpus unless it is up to date."""
    key = token_file_key(corpus, vocab, tokenizer, pretokenized, keep_punct, reverse)
    ids = open_token_file(path, key)
    if ids is None and write:
        write_token_file(path, encode(iter_sentences(corpus, tokenizer, pretokenized, keep_punct, reverse), vocab), key)
        ids = open_token_file(path, key)
    if ids is None:
        raise TrainingError(f"{path} (the corpus as ids) is missing or was written for another copy of the corpus; "
                            "machines that share --out's directory need the same corpus file (size, modification time)")
    return ids


class TokenColumns:
    """A token stream as `batch_size` columns read along time, without copying it.

    Column j is ids[j·rows : (j+1)·rows] (AWD-LSTM's batchify): the (rows, batch_size) array is a
    transposed view of the stream, so `window` reads only the rows asked for, a short run of each column.
    On a memory-mapped file the pages read stay in the OS's page cache, which it reclaims as it needs;
    the process's own memory does not grow with the file.
    """

    def __init__(self, ids: np.ndarray, batch_size: int):
        self.rows = len(ids) // batch_size
        if self.rows < 2:
            raise TrainingError(f"too little text for batch size {batch_size} ({len(ids)} tokens)")
        self.batch_size = batch_size
        self.view = ids[:self.rows * batch_size].reshape(batch_size, self.rows).T

    def counts(self, size: int, rows_at_once: int = 1 << 16) -> np.ndarray:
        """How often each id (0 … size − 1) occurs in the columns, read a few rows at a time: a copy of the whole
        stream (a transposed view does not flatten in place) would grow with the corpus."""
        counts = np.zeros(size, dtype=np.int64)
        for start in range(0, self.rows, rows_at_once):
            counts += np.bincount(np.asarray(self.view[start:start + rows_at_once]).ravel(), minlength=size)[:size]
        return counts

    def window(self, start: int, length: int) -> torch.Tensor:
        """Rows start … start + length − 1 as a (length, batch_size) int64 tensor."""
        # a copy, always: with one column the rows are a contiguous, read-only slice of the memory-mapped file,
        # which torch would wrap as it is (and warn that the tensor is not writable)
        return torch.from_numpy(np.array(self.view[start:start + length], dtype=np.int64))


def rank_columns(ids: np.ndarray, batch_size: int, rank: int = 0, world_size: int = 1) -> TokenColumns:
    """The columns process `rank` of `world_size` trains on.

    The stream is cut to a multiple of world_size × batch_size and into world_size contiguous pieces; rank r
    takes the r-th piece in batch_size columns. So the ranks' columns together are exactly the columns of
    one process with batch world_size × batch_size, in the same order.
    """
    global_batch = world_size * batch_size
    if len(ids) // global_batch < 2:
        processes = f" × {world_size} processes" if world_size > 1 else ""
        raise TrainingError(f"too little text for batch size {batch_size}{processes} ({len(ids)} tokens)")
    per_rank = len(ids) // global_batch * batch_size
    return TokenColumns(ids[rank * per_rank:(rank + 1) * per_rank], batch_size)


def batchify(stream: torch.Tensor, batch_size: int) -> torch.Tensor:
    """(N,) → (N // batch_size, batch_size) in memory: each column is a contiguous piece of the stream."""
    columns = TokenColumns(stream.numpy(), batch_size)
    return columns.window(0, columns.rows)
