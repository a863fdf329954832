"""Which model file a name means (a path, or a bundled model by name or by the text's script), and a cache that
loads each file once per process."""
from __future__ import annotations

import functools
from pathlib import Path

from onlstm_cli.errors import ParseError
from onlstm_cli.text.languages import SCRIPT_NAMES, lang_of_text


# zh: the Chinese neural PCFG focused on the trees of the Chinese ON-LSTM (zh-pcfg.onlstm, models/zh-pcfg.md), the
# default for CJK text since it parsed the Chinese dev trees better than the span parser (docs/experiments/pcfg.md);
# zh-st: the span parser self-trained on Chinese ON-LSTMs' trees (the default before it); zh-lm: that ON-LSTM alone.
BUNDLED_MODELS = {"en": "en-ptb.onlstm", "en-pcfg": "en-pcfg.onlstm", "zh": "zh-pcfg.onlstm",
                  "zh-pcfg": "zh-pcfg.onlstm", "zh-lm": "zh.onlstm", "zh-st": "zh-st.onlstm"}


@functools.lru_cache(maxsize=None)
def models_dir() -> Path:
    """The bundled models: `models/` of a source checkout, or `onlstm_cli/models/` inside an installed wheel."""
    here = Path(__file__).resolve().parents[1]  # the onlstm_cli package
    for candidate in (here / "models", here.parent / "models"):
        if candidate.is_dir() and any(candidate.glob("*.onlstm")):
            return candidate
    return here.parent / "models"


def resolve_model(name_or_path: str | None, text: str = "") -> Path:
    """A model path from --model: a file path, a bundled name (en, zh), or by the text's script when None."""
    if name_or_path is None:
        name_or_path = lang_of_text(text)
        if name_or_path not in BUNDLED_MODELS:
            script = SCRIPT_NAMES.get(name_or_path.removeprefix("und-"), name_or_path)
            raise ParseError(f"no bundled model reads {script} text (the bundled ones read English and Chinese): "
                             "train one on a corpus of yours, `onlstm train corpus.txt --seeds 3 -o mine.onlstm`, "
                             "and parse with -m mine.onlstm")
    path = Path(name_or_path)
    if path.suffix == ".onlstm" or path.exists() or path.is_symlink() or "/" in name_or_path:  # a broken link too
        return path
    if name_or_path in BUNDLED_MODELS:
        return models_dir() / BUNDLED_MODELS[name_or_path]
    names = {Path(v).stem: v for v in BUNDLED_MODELS.values()}
    if name_or_path in names:
        return models_dir() / names[name_or_path]
    raise ParseError(f"no model named {name_or_path!r}: give a path to a .onlstm file or one of "
                     f"{', '.join(sorted(BUNDLED_MODELS))}")


def model_inputs(name_or_path: str | Path | None) -> list[tuple[str, Path]]:
    """The model files a command given `--model name_or_path` may read, as (what the user calls it, path) for
    files.check_outputs, so that no output is written onto a model being read: the file named, the bundled file
    a bundled name means, and without a name every bundled model (which one reads a text is its script's)."""
    if name_or_path is None:
        return [(f"the bundled model {name}", models_dir() / file) for name, file in BUNDLED_MODELS.items()]
    try:
        path = resolve_model(str(name_or_path))
    except ParseError:  # an unknown name: loading it says so
        return []
    return [("--model", path)]


class ModelCache:
    """Loads each model file once per process, onto one device ("auto", "cpu" or "cuda").

    ensemble=False keeps only the first model of an ensemble file (less work per sentence).
    """

    def __init__(self, device: str = "cpu", ensemble: bool = True):
        self._loaded = {}
        self.device = device
        self.ensemble = ensemble

    def get(self, path: Path):
        from onlstm_cli.lm.model import resolve_device
        from onlstm_cli.modelfile import load_model
        key = str(path)
        if key not in self._loaded:
            loaded = load_model(path)
            if not self.ensemble:
                loaded.first_model_only()
            self._loaded[key] = loaded.to(resolve_device(self.device))
        return self._loaded[key]
