"""Build the Chinese training text for the bundled model from ../shared/data/zh-lm.

The People's Daily text comes segmented by PKU's conventions; `onlstm parse` segments with jieba, so the
words are joined back into plain sentences here and `onlstm train --lang zh` segments everything with jieba,
exactly as parse will. Wikipedia sentences that also occur in the UD dev text are dropped (no evaluation
sentence in training). Every 50th line goes to the validation file.

    python scripts/prepare_zh.py ../shared/data runs/zh
"""
import sys
import unicodedata
from pathlib import Path


def main(data: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ud_text = set()
    for path in sorted((data / "ud-zh-gsdsimp").glob("*.conllu")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# text = "):
                ud_text.add(line[len("# text = "):].strip())
    lines = []
    for line in (data / "zh-lm/peoples-daily-199801/pd199801.seg.txt").read_text(encoding="utf-8").splitlines():
        text = "".join(line.split())
        if text:
            lines.append(text)
    dropped = 0
    for line in (data / "zh-lm/cmrc2018-wiki/cmrc2018.dev+trial.sents.txt").read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if not text:
            continue
        norm = unicodedata.normalize("NFKC", text)
        if any(norm in u or u in norm for u in ud_text if len(u) > 8):
            dropped += 1
            continue
        lines.append(text)
    train = [s for k, s in enumerate(lines) if k % 50 != 49]
    valid = [s for k, s in enumerate(lines) if k % 50 == 49]
    (out / "zh.train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    (out / "zh.valid.txt").write_text("\n".join(valid) + "\n", encoding="utf-8")
    print(f"{len(train)} train lines, {len(valid)} valid lines, {dropped} dropped as UD overlap -> {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
