"""`onlstm train ARGS…` whose span parser (a student on --teacher files) trains until its --time-budget, with no epoch
cap and no patience, as the recipe's does (RecipeConfig.span_parser_until_budget): stage 2 of a recipe, rerun on its
teachers. Unlike suffix_units_stage2.py and cut_votes_probe.py, it patches nothing else: the students read and vote
as main's code does."""
import sys
from dataclasses import replace

if __name__ == "__main__":
    from onlstm_cli.training.recipe.runner import UNTIL_BUDGET
    from onlstm_cli.training.student import train as student_train
    plain = student_train.self_train

    def until_budget(*args, train=None, **kwargs):
        return plain(*args, train=replace(train, epochs=UNTIL_BUDGET, patience=UNTIL_BUDGET), **kwargs)

    student_train.self_train = until_budget
    from onlstm_cli.cli.commands import app
    app(sys.argv[1:])
