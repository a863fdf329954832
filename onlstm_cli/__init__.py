"""onlstm: unsupervised constituency parsing with Ordered-Neurons LSTM language models.

The CLI's functions are importable from here; torch is imported only when a torch-backed name is used.
"""
__version__ = "0.1.0"

_LAZY = {
    "ModelConfig": "config", "ONLSTMLanguageModel": "lm.model", "cumax": "lm.cell", "reference_layer": "lm.cell",
    "Tokenizer": "text.tokenizers", "Vocabulary": "text.vocab",
    "TrainConfig": "config", "train_model": "training.lm.train",
    "load_model": "modelfile", "save_model": "modelfile", "ModelFileError": "errors",
    "build_tree": "trees", "tree_spans": "trees",
    "read_gold": "text.treebanks", "to_bracket": "text.formats",
    "sentence_f1": "evaluation.metrics", "evaluate": "evaluation.metrics",
    "SpanParserConfig": "config", "SelfTrainConfig": "config", "SpanParser": "span.model",
    "self_train": "training.student.train",
    "RecipeConfig": "config", "run_recipe": "training.recipe.runner", "Budget": "training.run.clock",
    "ModelFamily": "training.families", "FAMILIES": "training.families",
    "PcfgConfig": "config", "PcfgTrainConfig": "config", "NeuralPCFG": "pcfg.model",
    "train_pcfg": "training.pcfg.train", "train_focused_pcfg": "training.student.focus",
    "Parser": "api", "ParseTree": "api", "UnreadableTextWarning": "api", "LineParser": "induction.line_parser",
    "parse_lines": "induction.distances", "sentence_distances": "induction.distances", "resolve_model": "induction.models",
    "parse_in_workers": "induction.parallel", "PausedLines": "text.input_lines", "model_info": "info",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'onlstm_cli' has no attribute {name!r}")
