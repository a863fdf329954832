"""onlstm: unsupervised constituency parsing with Ordered-Neurons LSTM language models.

The CLI's functions are importable from here; torch is imported only when a torch-backed name is used.
"""
__version__ = "0.1.0"

_LAZY = {
    "ModelConfig": "config", "ONLSTMLanguageModel": "model", "cumax": "cell", "reference_layer": "cell",
    "Tokenizer": "vocab", "Vocabulary": "vocab",
    "TrainConfig": "config", "train_model": "train",
    "load_model": "modelfile", "save_model": "modelfile", "ModelFileError": "modelfile",
    "build_tree": "trees", "tree_spans": "trees",
    "read_gold": "formats", "to_bracket": "formats",
    "sentence_f1": "metrics", "evaluate": "metrics",
    "SpanParserConfig": "config", "SelfTrainConfig": "config", "SpanParser": "span_parser",
    "self_train": "self_training",
    "RecipeConfig": "config", "run_recipe": "recipe",
    "Parser": "api", "ParseTree": "api", "UnreadableTextWarning": "api",
    "parse_lines": "parser", "sentence_distances": "parser", "resolve_model": "parser",
    "parse_in_workers": "parallel", "model_info": "info",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'onlstm_cli' has no attribute {name!r}")
