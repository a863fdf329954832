"""`--families auto` (RecipeConfig.families): which model families teach, read from the training text's size per hour
of the recipe's budget. PCFGs train after the language models, in the same hour, so each language model gets half
the time it would have alone. On a small text that still leaves it many epochs, and the PCFGs it focuses lift the
vote. On a large text it leaves too few epochs for the language models to show a word-order direction. The PCFGs
then cost the recipe its branching voter (docs/experiments/pcfg.md, "Families by corpus size").
"""
from __future__ import annotations

from pathlib import Path

from onlstm_cli.text.tokenizers import has_cjk
from onlstm_cli.training.recipe.files import utf8_lines

ONLSTM_ALONE = ("onlstm",)
BOTH_FAMILIES = ("onlstm", "pcfg")


def corpus_words(corpus: Path) -> int:
    """The words of the text as `wc -w` counts them, each CJK character one word (Chinese is written without
    spaces). It streams a line at a time, as training reads the corpus."""
    return sum(len(word) if has_cjk(word) else 1 for line in utf8_lines(corpus) for word in line.split())


def auto_families(words: int, seconds: float | None, pcfg_below: float) -> tuple[tuple[str, ...], str]:
    """(the families, why in words) for a text of `words` words and a budget of `seconds` (None: no budget, read
    as one hour): both families below `pcfg_below` words an hour, the ON-LSTMs alone from it."""
    hours = (seconds or 3600.0) / 3600.0
    per_hour = words / hours
    if not seconds:
        budget = "recipe without a budget, read as one hour"
    elif seconds >= 3600:
        budget = f"{hours:g}-hour budget"
    else:
        budget = f"{seconds / 60:.3g}-minute budget"
    if per_hour < pcfg_below:
        return BOTH_FAMILIES, (f"{words:,} words for a {budget}, under {pcfg_below:,.0f} words an hour: "
                               "the language models have time to spare for PCFGs")
    return ONLSTM_ALONE, (f"{words:,} words for a {budget}, {pcfg_below:,.0f} words an hour or more: "
                          "the language models need all their time")
