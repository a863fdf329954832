"""What a resumed run must share with the run that wrote its checkpoint (its files, sizes, data and the way its
batches are drawn), else the position, batches and best loss it resumes mean nothing. Each loop names what it
records; this is where the two are compared."""
from __future__ import annotations


def first_change(recorded: dict, given: dict, unset=None):
    """(key, recorded value, given value) of the first of `given`'s options that differs from what the checkpoint's
    run recorded, or None; an option either side does not state (None, or `unset(key)` where the record lacks it)
    does not count: it came after that run, with a default that keeps its behaviour."""
    for key, value in given.items():
        before = recorded.get(key, unset(key) if unset else None)
        if value is not None and before is not None and value != before:
            return key, before, value
    return None
