"""The span parser (CKY, split heights) and self-training on a teacher model's trees."""
from __future__ import annotations

import itertools
import json
import random

import pytest
import torch

from onlstm_cli.config import SelfTrainConfig, SpanParserConfig
from onlstm_cli.errors import ModelFileError
from onlstm_cli.induction.distances import sentence_distances
from onlstm_cli.modelfile import load_model, read_archive
from onlstm_cli.training.student.train import self_train
from onlstm_cli.span.model import SpanParser, cky, split_heights, trainable_spans
from onlstm_cli.trees import build_tree, tree_spans


def all_binary_span_sets(i: int, j: int):
    """Every binary tree over words i+1 … j, as its set of spans (root included)."""
    if j - i == 1:
        yield frozenset()
        return
    for k in range(i + 1, j):
        for left in all_binary_span_sets(i, k):
            for right in all_binary_span_sets(k, j):
                yield left | right | {(i, j)}


@pytest.mark.parametrize("seed", range(4))
def test_cky_finds_the_tree_with_the_largest_score(seed):
    rng = random.Random(seed)
    lengths = [6, 5, 2, 1]
    size = max(lengths) + 1
    scores = torch.tensor([[[rng.gauss(0, 1) for _ in range(size)] for _ in range(size)] for _ in lengths])
    for b, (n, heights) in enumerate(zip(lengths, cky(scores, lengths))):
        chosen = tree_spans(build_tree(heights, list(range(n)), "symmetric")) if n else set()
        best = max(all_binary_span_sets(0, n), key=lambda spans: sum(float(scores[b, i, j]) for i, j in spans))
        assert chosen == {s for s in best if s != (0, n)}


def test_split_heights_rebuild_every_binary_tree_with_the_symmetric_rule():
    n = 5
    for spans in all_binary_span_sets(0, n):
        split = [[0] * (n + 1) for _ in range(n + 1)]
        for i, j in spans:  # each span splits where its left child (the longest part starting at i) ends
            split[i][j] = max(k for (a, k) in spans | {(i, i + 1)} if a == i and k < j)
        heights = split_heights(split, n)
        assert tree_spans(build_tree(heights, list(range(n)), "symmetric")) == {s for s in spans if s != (0, n)}


def test_trainable_spans_are_the_inner_spans_of_two_words_or_more():
    mask = trainable_spans(torch.tensor([4, 2]), 5)
    inner = {(i, j) for i, j in itertools.combinations(range(5), 2) if j - i >= 2 and (i, j) != (0, 4)}
    assert {tuple(ij) for ij in mask[0].nonzero().tolist()} == inner
    assert not mask[1].any()  # a two-word sentence has no span to decide


def test_span_scores_of_a_sentence_do_not_depend_on_the_batch_padding():
    torch.manual_seed(0)
    parser = SpanParser(SpanParserConfig(vocab_size=12, emb_size=8, hidden_size=6, mlp_size=5)).eval()
    short = torch.tensor([[1, 4, 5, 1]])
    batch = torch.tensor([[1, 4, 5, 1, 1, 1], [1, 6, 7, 8, 9, 1]])
    alone = parser(short, torch.tensor([2]))
    padded = parser(batch, torch.tensor([2, 4]))
    assert torch.allclose(alone[0], padded[0, :3, :3], atol=1e-6)


@pytest.fixture(scope="module")
def student_path(tiny_model_path, tiny_corpus, tmp_path_factory):
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    out = tmp_path_factory.mktemp("student") / "student.onlstm"
    self_train(tiny_corpus["train"], out, load_model(tiny_model_path), tiny_corpus["valid"],
               SpanParserConfig(vocab_size=len(load_model(tiny_model_path).vocab), emb_size=20, hidden_size=16,
                                mlp_size=16), SelfTrainConfig(epochs=6, batch_size=8, lr=0.01, patience=6),
               log=lambda line: None)
    return out


def test_the_student_learns_the_teachers_trees(student_path, tiny_model_path, tiny_corpus):
    """Trained on the teacher's trees (cut at the marks of each line, as the votes hold them), the student's trees
    of the validation text, as `parse` gives them (cut at the same marks), agree with them far more than
    right-branching trees cut the same way do."""
    from onlstm_cli.text.corpus import read_as_trained_with_pieces
    from onlstm_cli.evaluation.metrics import sentence_f1
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.induction.distances import sentence_distances
    from onlstm_cli.trees import spans_cut_at_marks
    teacher, student = load_model(tiny_model_path), load_model(student_path)
    sentences, pieces = read_as_trained_with_pieces(tiny_corpus["valid"], teacher)
    assert any(any(levels) for levels in pieces)  # the commas of the validation text cut
    wanted = [spans_cut_at_marks(tree_spans(build_tree(d, s, teacher.split)), levels)
              for d, s, levels in zip(sentence_distances(teacher, sentences), sentences, pieces)]
    got = [build_tree(d, s, "symmetric") for d, s in zip(sentence_distances(student, sentences), sentences)]
    right = [build_tree(list(range(len(s), 0, -1)), s, "paper") for s in sentences]

    def agreement(trees):
        return sum(sentence_f1(spans_cut_at_marks(tree_spans(t), levels), w)
                   for t, w, levels in zip(trees, wanted, pieces)) / len(wanted)
    assert agreement(got) > agreement(right) + 0.1
    assert agreement(got) > 0.7  # right-branching trees cut the same way: about 0.2


def test_a_self_trained_file_parses_with_its_span_parser_and_keeps_its_language_model(student_path, runner):
    from onlstm_cli.api import Parser
    from onlstm_cli.cli.commands import app
    from onlstm_cli.modelfile import load_model
    loaded = load_model(student_path)
    assert loaded.span_parser is not None and loaded.span_parser.meta["epochs"] >= 1
    parser = Parser.load(str(student_path))
    distances = parser.distances("The cat saw a dog near the house .")
    assert distances[-1] is None and all(float(d).is_integer() for d in distances[:-1])
    assert sorted(distances[:-1])[-1] == 8  # the root splits the eight words
    layered = Parser.load(str(student_path), layer=2).distances("The cat saw a dog near the house .")
    assert layered[:-1] != distances[:-1]  # --layer reads the language model instead
    result = runner.invoke(app, ["parse", "-m", str(student_path), "--format", "bracket"],
                           input="The cat saw a dog .\n")
    assert result.exit_code == 0 and result.stdout.count("(") == 6 + 5  # six leaves (the full stop too), five inner nodes


def test_evaluate_scores_the_span_parser_beside_the_language_models_layers(student_path, runner):
    import json

    from onlstm_cli.cli.commands import app
    from tests.conftest import FIXTURES
    result = runner.invoke(app, ["evaluate", "-g", str(FIXTURES / "cli_gold.trees"), "-m", str(student_path),
                                 "--all-layers", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    systems = list(report["systems"])
    assert systems[0] == "span parser (self-trained)" and report["split"] == "symmetric"
    assert report["layer_split"] == "paper"  # the language model's rows keep its own rule
    assert {"onlstm (layer 1)", "onlstm (layer 2)", "onlstm (layer 3)"} <= set(systems)


def test_training_resumes_after_its_last_whole_epoch(tiny_model_path, tiny_corpus, tmp_path):
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    config = SpanParserConfig(vocab_size=len(load_model(tiny_model_path).vocab), emb_size=20, hidden_size=8,
                              mlp_size=8)
    out = tmp_path / "s.onlstm"
    lines: list[str] = []
    first = self_train(tiny_corpus["train"], out, load_model(tiny_model_path), tiny_corpus["valid"], config,
                       SelfTrainConfig(epochs=1, batch_size=8, patience=5), log=lines.append)
    assert first.epochs_done == 1 and first.checkpoint.is_file() and out.is_file()
    lines.clear()
    second = self_train(tiny_corpus["train"], out, load_model(tiny_model_path), tiny_corpus["valid"], config,
                        SelfTrainConfig(epochs=3, batch_size=8, patience=5), resume=first.checkpoint,
                        log=lines.append)
    assert second.epochs_done == 3
    assert any(line.startswith("resumed in epoch 2 after 0 batches") for line in lines)
    assert [line.split(":")[0] for line in lines if line.startswith("epoch") and "validation" in line] == \
        ["epoch 2", "epoch 3"]


def test_train_teacher_needs_validation_text(runner, model, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--teacher", model, "-o", str(tmp_path / "s.onlstm")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: --teacher needs --valid: the teacher's trees of the validation text choose the epoch kept"]


def test_train_teacher_refuses_a_language_models_checkpoint(runner, model, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    from onlstm_cli.modelfile import atomic_save
    checkpoint = tmp_path / "lm.ckpt"
    archive = torch.load(model, weights_only=True)
    atomic_save(dict(archive, format="onlstm-checkpoint"), checkpoint)
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--teacher", model, "--valid",
                                 str(tiny_corpus["valid"]), "--resume", str(checkpoint), "-o", str(tmp_path / "s.onlstm")])
    assert result.exit_code == 2 and "not a span parser's" in result.output and "Traceback" not in result.output


def test_a_damaged_span_parser_is_a_one_line_error(student_path, tmp_path):
    from onlstm_cli.modelfile import atomic_save, load_model
    from onlstm_cli.errors import ModelFileError
    archive = torch.load(student_path, weights_only=True)
    archive["span_parser"]["state_dict"].pop("out.weight")
    atomic_save(archive, tmp_path / "bad.onlstm")
    with pytest.raises(ModelFileError, match=r"\(span parser\) is damaged: it lacks the weight 'out.weight'"):
        load_model(tmp_path / "bad.onlstm")


def test_seed_spread_scores_each_file_as_evaluate_does(student_path, tiny_model_path, runner):
    import json
    import statistics
    import subprocess
    import sys

    from onlstm_cli.cli.commands import app
    from tests.conftest import FIXTURES, REPO
    gold = FIXTURES / "cli_gold.trees"
    got = subprocess.run([sys.executable, "scripts/seed_spread.py", "--gold", str(gold), str(student_path),
                          str(tiny_model_path)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    expected = []
    for path in (student_path, tiny_model_path):
        report = json.loads(runner.invoke(app, ["evaluate", "-g", str(gold), "-m", str(path), "--json"]).stdout)
        expected.append(next(iter(report["systems"].values()))["sentence_f1"])
    rows = [line.split(" | ") for line in got.stdout.splitlines() if line.startswith("| ") and ".onlstm" in line]
    assert [float(r[2]) for r in rows] == [round(f, 2) for f in expected]
    assert rows[0][1].startswith("loss ") and rows[1][1].startswith("ppl ")
    assert f"sentence F1: mean {statistics.mean(expected):.2f} ± {statistics.stdev(expected):.2f}" in got.stdout


def test_several_teachers_vote_on_each_span(tiny_model_path, tiny_corpus):
    from onlstm_cli.text.corpus import read_corpus
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.votes import teacher_spans
    first, second = load_model(tiny_model_path), load_model(tiny_model_path)
    second.parse_layer = 3  # another tree for many sentences
    sentences = read_corpus(tiny_corpus["valid"], first.tokenizer)
    alone_first, alone_second = teacher_spans([first], sentences), teacher_spans([second], sentences)
    votes = teacher_spans([first, second], sentences)
    assert any(set(a) != set(b) for a, b in zip(alone_first, alone_second))
    for a, b, v in zip(alone_first, alone_second, votes):
        assert {s for s, share in v.items() if share == 1.0} == set(a) & set(b)
        assert {s for s, share in v.items() if share == 0.5} == set(a) ^ set(b)


def test_train_with_two_teachers_from_the_command_line(runner, model, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    from onlstm_cli.modelfile import load_model
    out = tmp_path / "s.onlstm"
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--teacher", model, "--teacher", model,
                                 "--valid", str(tiny_corpus["valid"]), "-o", str(out), "--epochs", "1"])
    assert result.exit_code == 0, result.output
    assert "teachers " in result.output and "1 epochs" in result.output
    assert load_model(out).span_parser.meta["teacher"] == [model, model]


def test_model_card_describes_the_span_parser_and_its_scores(student_path, runner, tmp_path):
    import subprocess
    import sys

    from onlstm_cli.cli.commands import app
    from tests.conftest import FIXTURES, REPO
    report = runner.invoke(app, ["evaluate", "-g", str(FIXTURES / "cli_gold.trees"), "-m", str(student_path),
                                 "--json"]).stdout
    (tmp_path / "dev.json").write_text(report)
    got = subprocess.run([sys.executable, "scripts/model_card.py", str(student_path), "--title", "Tiny",
                          "--eval", str(tmp_path / "dev.json"), "--sample", "The cat sat ."],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    assert "| span parser (parses by default) | BiLSTM 2 layers × 16 a direction" in got.stdout
    assert "| self-training | on the trees of " in got.stdout
    assert "| span parser (self-trained) | " in got.stdout and "symmetric split" in got.stdout


def test_the_model_card_says_which_layers_and_which_prior_voted():
    import importlib.util

    from tests.conftest import REPO
    spec = importlib.util.spec_from_file_location("model_card", REPO / "scripts" / "model_card.py")
    card = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(card)
    next_layer = "; each teacher votes with its parse layer and the layer next to it (above it, below where it has too few above)"
    assert card.voters({"extra_layers": 1}, {"right_branching": 2.887}) == (
        next_layer + "; a right-branching tree votes with weight 2.887")
    assert card.voters({"layers_above": 1}, {}) == next_layer  # the files written before the option's new name
    assert (card.voters({"teacher_layers": [2, 3], "extra_layers": 1}, {})
            == "; each teacher votes with its layers 2 and 3")
    assert card.voters({"extra_layers": 0}, {"right_branching": 0.0}) == ""
    recipe = {"teachers": [{"seed": 1111, "valid_ppl": 554.9, "votes": False}, {"seed": 1112, "valid_ppl": 386.48,
                                                                                "votes": True}]}
    assert card.voters({}, {"recipe": recipe}) == ("; the recipe's language model of seed 1111 did not vote "
                                                   "(validation perplexity 554.9, a failed run by `--max-ppl-ratio`)")


def test_the_consensus_of_one_model_is_its_own_tree(tiny_model_path, runner):
    """CKY over one model's span votes rebuilds that model's trees exactly (the script's figure then equals
    `onlstm evaluate`'s)."""
    import json
    import subprocess
    import sys

    from onlstm_cli.cli.commands import app
    from tests.conftest import FIXTURES, REPO
    gold = FIXTURES / "cli_gold.trees"
    got = subprocess.run([sys.executable, "scripts/span_votes.py", "--gold", str(gold), str(tiny_model_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    report = json.loads(runner.invoke(app, ["evaluate", "-g", str(gold), "-m", str(tiny_model_path), "--json",
                                            "--punctuation", "ignore"]).stdout)  # the votes know no punctuation
    own = next(iter(report["systems"].values()))
    assert f"sentence F1 {own['sentence_f1']:.2f}, corpus F1 {own['corpus_f1']:.2f}" in got.stdout


def test_the_consensus_script_votes_with_layers_and_a_right_branching_voter(tiny_model_path, runner, tmp_path,
                                                                             monkeypatch, capsys):
    """--layers K gives a voter a layer (the parse layer alone is the default's tree); a right-branching voter
    that outweighs the model gives the right-branching trees; auto reads its weight off --text over each model's
    parse layer wherever it stands in --layers, and says so. The script runs in this process (as `python
    scripts/span_votes.py` runs it, its __main__), not in one started for each call."""
    import json
    import runpy
    import sys

    from onlstm_cli.cli.commands import app
    from tests.conftest import FIXTURES, REPO
    gold = FIXTURES / "cli_gold.trees"

    def consensus(*options):
        monkeypatch.setattr(sys, "argv", ["span_votes.py", "--gold", str(gold), str(tiny_model_path), *options])
        capsys.readouterr()
        runpy.run_path(str(REPO / "scripts" / "span_votes.py"), run_name="__main__")
        return capsys.readouterr().out

    report = json.loads(runner.invoke(app, ["evaluate", "-g", str(gold), "-m", str(tiny_model_path), "--json",
                                            "--punctuation", "ignore"]).stdout)  # the votes know no punctuation
    own, right = next(iter(report["systems"].values())), report["systems"]["right-branching"]
    assert f"sentence F1 {own['sentence_f1']:.2f}," in consensus("--layers", "2")  # the tiny model parses with 2
    assert f"sentence F1 {right['sentence_f1']:.2f}, corpus F1 {right['corpus_f1']:.2f}" in consensus(
        "--right-branching", "1000")
    assert "right-branching voter weight 0.00" in consensus("--layers", "1,2,3", "--right-branching", "0")
    valid = tmp_path / "valid.txt"
    valid.write_text("the cat sat on the mat\na dog barked at the cat\n", encoding="utf-8")
    def auto(layers):  # two teachers (the same file twice): auto is read over each one's parse layer, as train does
        return consensus(str(tiny_model_path), "--layers", layers, "--right-branching", "auto",
                         "--text", str(valid)).splitlines()[0]
    both = auto("1,2")
    assert both.startswith("right-branching voter weight ") and both == auto("2") == auto("2,1")
    with pytest.raises(SystemExit, match="needs --text"):
        consensus("--right-branching", "auto")
    if auto("1") == auto("2"):  # they differ here, with the C cell or the torch one; another CPU's rounding may not
        pytest.skip("this tiny model's layers 1 and 2 give the same auto weight: the readings cannot be told apart")


def test_the_bundled_self_trained_models_parse_with_their_span_parsers():
    from onlstm_cli.api import Parser
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.induction.models import resolve_model
    for name, text in (("en", "The cat sat on the mat ."), ("zh-st", "爱真的需要勇气")):
        assert load_model(resolve_model(name)).span_parser is not None
        distances = Parser.load(name).distances(text)
        assert all(d is None or float(d).is_integer() for d in distances)
    assert load_model(resolve_model("zh")).kind == "pcfg"  # the Chinese default is the focused PCFG
    assert load_model(resolve_model("zh-lm")).span_parser is None  # its ON-LSTM alone


def test_the_time_budget_ends_the_first_epoch_early_and_still_keeps_a_model(tiny_model_path, tiny_corpus, tmp_path):
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    teacher = load_model(tiny_model_path)
    config = SpanParserConfig(vocab_size=len(teacher.vocab), emb_size=20, hidden_size=8, mlp_size=8)
    lines = []
    result = self_train(tiny_corpus["train"], tmp_path / "s.onlstm", teacher, tiny_corpus["valid"], config,
                        SelfTrainConfig(epochs=5, batch_size=2), budget=1e-6, log=lines.append)
    assert result.stopped_by_time and result.epochs_done == 1 and result.out.is_file()
    assert any("epoch 1 (" in line and "of it)" in line for line in lines)  # validated part-way through


def test_resume_into_another_run_is_refused_before_the_teachers_parse(student_path, tiny_model_path, tiny_corpus,
                                                                      tmp_path):
    from onlstm_cli.errors import TrainingError
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    teacher = load_model(tiny_model_path)
    config = SpanParserConfig(vocab_size=len(teacher.vocab), emb_size=20, hidden_size=16, mlp_size=16)
    lines = []
    with pytest.raises(TrainingError, match="checkpoint of a run with other --out"):
        self_train(tiny_corpus["train"], tmp_path / "new.onlstm", teacher, tiny_corpus["valid"], config,
                   SelfTrainConfig(epochs=6, batch_size=8, lr=0.01, patience=6),
                   resume=str(student_path) + ".ckpt", log=lines.append)
    assert not any("parsing" in line for line in lines)


def test_sigterm_during_self_training_checkpoints_and_says_how_to_resume(model, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from conftest import write_corpus
    corpus = write_corpus(tmp_path / "big.txt", 3000, seed=3)
    out = tmp_path / "s.onlstm"
    process = subprocess.Popen([sys.executable, "-m", "onlstm_cli", "train", str(corpus), "--teacher", model,
                                "--valid", str(corpus), "-o", str(out), "--epochs", "50", "--batch-size", "2",
                                "--threads", "1"], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        if "parsing" in line:  # the teachers' parse has begun: a signal from here on ends with a checkpoint
            break
    time.sleep(1)
    process.send_signal(signal.SIGTERM)
    err = process.communicate(timeout=120)[1]
    assert process.returncode == 143, err
    assert f"resume with --resume {out}.ckpt" in err and err.strip().splitlines()[-1].startswith("interrupted:")
    assert (tmp_path / "s.onlstm.ckpt").is_file()


def test_a_second_round_teaches_with_the_span_parsers_trees(student_path):
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.induction.distances import sentence_distances
    from onlstm_cli.training.student.votes import teacher_spans
    student = load_model(student_path)
    sentences = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "saw", "the", "bird", "near", "a", "tree"]]
    own = sentence_distances(student, sentences)  # the span parser's split heights
    expected = [{s: 1.0 for s in tree_spans(build_tree(d, list(range(len(d))), "symmetric"))} for d in own]
    assert teacher_spans([student], sentences, span_parsers=True) == expected
    lm = sentence_distances(student, sentences, student.parse_layer)
    assert teacher_spans([student], sentences) == [
        {s: 1.0 for s in tree_spans(build_tree(d, list(range(len(d))), student.split))} for d in lm]


def test_the_auto_branching_weight_follows_the_teachers_agreement_with_each_shape():
    from onlstm_cli.training.student.votes import auto_weight, left_branching_spans, right_branching_spans
    lengths = [4, 6, 9]
    right = [right_branching_spans(n) for n in lengths]
    left = [left_branching_spans(n) for n in lengths]
    assert right[1] == {(1, 6), (2, 6), (3, 6), (4, 6)} and left[0] == {(0, 2), (0, 3)}
    assert auto_weight([right, right, right], lengths).weight == 3  # the prior is the whole consensus: K
    assert auto_weight([right, right, right], lengths).weights() == (3, 0)
    # a head-final language's teachers lean left: the same weight goes to a left-branching voter
    leaning_left = auto_weight([left, left], lengths)
    assert leaning_left.direction == "left" and leaning_left.weights() == (0, 2)
    assert "a left-branching voter of weight 2.00" in str(leaning_left)
    assert auto_weight([right], lengths).weight == 0  # one teacher: no voter
    # two teachers that share only the last split: each agrees with the other as much as with right-branching
    # trees, and not at all with left-branching ones, so the voter weighs as much as both teachers
    last = [{(n - 2, n)} for n in lengths]
    mixed = auto_weight([last, last], lengths)
    assert mixed.left == 0 and mixed.mutual == pytest.approx(100)
    assert mixed.weight == pytest.approx(2 * mixed.right / 100, abs=1e-3) and 0 < mixed.weight < 2
    # the mutual agreement votes_of has already computed for its log is used as given, not computed again
    from onlstm_cli.evaluation.metrics import mutual_agreement
    assert auto_weight([last, last], lengths, mutual_agreement([last, last])) == mixed
    assert auto_weight([last, last], lengths, [0.5, 0.5]).mutual == pytest.approx(50)


@pytest.mark.parametrize("given, wanted", [("auto", "auto"), (" AUTO ", "auto"), ("2", 2.0), ("0.5", 0.5), (0, 0.0)])
def test_a_voter_weight_is_a_number_or_auto(given, wanted):
    from onlstm_cli.config import voter_weight
    assert voter_weight(given) == wanted


@pytest.mark.parametrize("given", ["-1", "nan", "inf", "many", None])
def test_a_voter_weight_that_is_not_one_is_refused(given):
    from onlstm_cli.config import voter_weight
    with pytest.raises(ValueError, match="--right-branching"):
        voter_weight(given)


def test_a_teacher_that_cannot_read_the_corpus_is_warned_about(tiny_model_path, tmp_path):
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.votes import votes_of
    chinese = tmp_path / "zh.txt"
    chinese.write_text("我们 都 爱 和平 。\n他 喜欢 北京 。\n" * 5, encoding="utf-8")
    lines = []
    votes_of([load_model(tiny_model_path)], chinese, chinese, SelfTrainConfig(), lines.append)
    assert any(line.startswith("warning: the text is in CJK script but model tiny.onlstm") for line in lines)


def test_consensus_targets_are_the_tree_with_the_most_votes_beyond_a_half():
    """--targets tree: each sentence's target is the binary tree whose spans' (share − ½) sum highest, every
    one of its spans 1; sentences of several lengths in batches smaller than the corpus."""
    from onlstm_cli.training.student.votes import consensus_targets, vote
    rng = random.Random(7)
    lengths = [6, 3, 5, 1, 6, 4]
    trees = [[set(rng.choice(list(all_binary_span_sets(0, n)))) - {(0, n)} for n in lengths] for _ in range(3)]
    votes = vote(trees, lengths, right_branching=0.7)
    targets = consensus_targets(votes, lengths, batch_size=4)
    for n, shares, target in zip(lengths, votes, targets):
        assert set(target.values()) <= {1.0}

        def gain(spans):
            return sum(shares.get(s, 0.0) - 0.5 for s in spans)
        candidates = [set(t) - {(0, n)} for t in all_binary_span_sets(0, n)]
        assert set(target) in candidates
        assert gain(target) == pytest.approx(max(gain(c) for c in candidates))


def test_student_units_are_an_option_of_a_span_parser_only(runner, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--student-units", "ngrams", "-o",
                                 str(tmp_path / "m.onlstm")])
    assert result.exit_code != 0 and "--student-units is for a span parser" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "m.onlstm").exists()


def test_consensus_targets_drop_a_minority_teachers_spans():
    from onlstm_cli.training.student.votes import consensus_targets, vote
    majority, minority = {(0, 2), (2, 5), (3, 5)}, {(1, 5), (1, 4), (2, 4)}
    targets = consensus_targets(vote([[majority], [majority], [minority]], [5]), [5])
    assert targets == [dict.fromkeys(majority, 1.0)]


def test_targets_are_an_option_of_the_teachers_span_parser_only(runner, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--targets", "tree", "-o",
                                 str(tmp_path / "m.onlstm")])
    assert result.exit_code != 0 and "--targets are for the span parser of --teacher" in result.output
    assert not (tmp_path / "m.onlstm").exists()


def test_a_resume_with_other_targets_is_refused(tiny_model_path, tiny_corpus, tmp_path):
    from onlstm_cli.errors import TrainingError
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.induction.teachers import as_teacher
    from onlstm_cli.training.student.train import check_resumable, run_identity
    teacher = load_model(tiny_model_path)
    config = SpanParserConfig(vocab_size=len(teacher.vocab), emb_size=20, hidden_size=16, mlp_size=16)

    def identity(targets):
        return run_identity(tiny_corpus["train"], tiny_corpus["valid"], tmp_path / "s.onlstm", [as_teacher(teacher)],
                            config, SelfTrainConfig(targets=targets))
    check_resumable({"identity": identity("tree")}, identity("tree"), "s.onlstm.ckpt")
    with pytest.raises(TrainingError, match="other --targets"):
        check_resumable({"identity": identity("shares")}, identity("tree"), "s.onlstm.ckpt")


def test_teacher_layers_give_each_layer_its_own_trees(tiny_model_path, tiny_corpus):
    from onlstm_cli.text.corpus import read_corpus
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.induction.teachers import layer_trees, model_trees
    teacher = load_model(tiny_model_path)
    sentences = read_corpus(tiny_corpus["valid"], teacher.tokenizer)
    by_layer = layer_trees(teacher, sentences, (1, 2, 3))
    for layer, trees in zip((1, 2, 3), by_layer):
        teacher.parse_layer = layer
        assert trees == model_trees(teacher, sentences)
    assert by_layer[0] != by_layer[2]  # the layers differ, so each is a voter of its own


def test_a_student_of_two_layers_counts_each_layer_as_a_voter(tiny_model_path, tiny_corpus, tmp_path):
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    teacher = load_model(tiny_model_path)
    config = SpanParserConfig(vocab_size=len(teacher.vocab), emb_size=20, hidden_size=8, mlp_size=8)
    lines = []
    self_train(tiny_corpus["train"], tmp_path / "s.onlstm", teacher, tiny_corpus["valid"], config,
               SelfTrainConfig(epochs=1, batch_size=8, teacher_layers=(2, 3), right_branching="auto"),
               log=lines.append)
    assert any(line.startswith("each teacher votes with the trees of its layers") and line.endswith(" 2+3")
               for line in lines)
    # two voters from one teacher are still one teacher: no right-branching voter (auto is read over teachers)
    assert "the branching voter: none (auto, with one teacher)" in lines
    assert list(load_model(tmp_path / "s.onlstm").span_parser.meta["train"]["teacher_layers"]) == [2, 3]


def test_the_extra_voting_layers_lie_above_the_parse_layer_else_below_it():
    """A model that parses with its top layer (the Chinese ones) votes with the layers under it instead of
    with that one alone; --teacher-layers overrides either."""
    from types import SimpleNamespace
    from onlstm_cli.induction.teachers import voting_layers, weighing_layer

    def teacher(parse_layer: int, n_layers: int = 3):
        return SimpleNamespace(parse_layer=parse_layer, config=SimpleNamespace(n_layers=n_layers))
    one_more, two_more = SelfTrainConfig(extra_layers=1), SelfTrainConfig(extra_layers=2)
    assert voting_layers(teacher(2), one_more.teacher_layers, one_more.extra_layers) == (2, 3)
    assert voting_layers(teacher(3), one_more.teacher_layers, one_more.extra_layers) == (2, 3)
    assert voting_layers(teacher(1), one_more.teacher_layers, one_more.extra_layers) == (1, 2)
    assert voting_layers(teacher(3), two_more.teacher_layers, two_more.extra_layers) == (1, 2, 3)
    assert voting_layers(teacher(2), two_more.teacher_layers, two_more.extra_layers) == (1, 2, 3)
    assert voting_layers(teacher(1, n_layers=1), two_more.teacher_layers, two_more.extra_layers) == (1,)
    assert voting_layers(teacher(3)) == (3,)
    assert voting_layers(teacher(3), teacher_layers=(1,), extra_layers=1) == (1,)
    # the agreement and the auto weight are read over the parse layer, wherever it stands among the voters
    assert weighing_layer(teacher(3), (2, 3)) == 3 and weighing_layer(teacher(2), (3, 2)) == 2
    assert weighing_layer(teacher(3), (1, 2)) == 1


def test_auto_weighs_the_right_branching_voter_by_the_teachers_parse_layers_alone(tiny_model_path, tiny_corpus,
                                                                                  monkeypatch):
    """The layers above vote, but auto reads its weight over each teacher's parse layer, K the teachers: read over
    every voter, the less alike layers and the doubled K made a Portuguese consensus the right-branching tree.
    The layers' trees are shaped here (the parse layer branches right, layer 3 left) so that the two readings
    differ on any machine; a tiny model's own trees may give both readings the same weight."""
    from onlstm_cli.induction import teachers as teachers_module
    from onlstm_cli.training.student.votes import auto_weight, left_branching_spans, right_branching_spans, votes_of
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.text.corpus import read_corpus

    def shaped_trees(teacher, sentences, layers, **_):
        shape = {2: right_branching_spans, 3: left_branching_spans}
        return [[shape[layer](len(s)) for s in sentences] for layer in layers]

    monkeypatch.setattr(teachers_module, "layer_trees", shaped_trees)
    teachers = [load_model(tiny_model_path), load_model(tiny_model_path)]
    assert teachers[0].parse_layer == 2
    valid = read_corpus(tiny_corpus["valid"], teachers[0].tokenizer)
    lengths = [len(s) for s in valid]
    wanted = auto_weight([shaped_trees(t, valid, (2,))[0] for t in teachers], lengths).weight
    every_voter = auto_weight([trees for t in teachers for trees in shaped_trees(t, valid, (2, 3))], lengths).weight
    assert wanted > 1 and every_voter == 0
    for layers in ((), (2, 3), (3, 2)):
        votes = votes_of(teachers, tiny_corpus["train"], tiny_corpus["valid"],
                         SelfTrainConfig(teacher_layers=layers, right_branching="auto", lean_from="trees"),
                         lambda line: None)
        assert votes.right_branching == wanted


@pytest.mark.parametrize("layers, message", [("2,x", "expected layer numbers separated by commas"),
                                             ("0,2", "numbered from 1, each given once"),
                                             ("2,2", "numbered from 1, each given once"),
                                             ("2,9", "has layers 1 to 3")])
def test_bad_teacher_layers_are_refused_in_one_line(layers, message, runner, model, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    out = tmp_path / "s.onlstm"
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--teacher", model, "--valid",
                                 str(tiny_corpus["valid"]), "--teacher-layers", layers, "-o", str(out)])
    assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_a_new_teacher_family_is_a_class_with_a_name_a_tokenizer_and_trees(tiny_loaded, tiny_corpus, tmp_path):
    """The Teacher seam (induction/teachers.py): a model family that is no ON-LSTM votes beside one by giving its
    name, its tokenizer and its voters' trees (TeacherBase gives the rest); self-training learns from its votes
    without knowing what it is."""
    from onlstm_cli.induction.teachers import Teacher, TeacherBase
    from onlstm_cli.training.student.votes import left_branching_spans, votes_of

    class LeftBranchingTeacher(TeacherBase):  # a toy family: every sentence's left-branching tree, a single voter
        name, tokenizer, weighing = "left-branching", tiny_loaded.tokenizer, 0

        def voter_trees(self, sentences, batch_size=64, model_tokens=True):
            return [[left_branching_spans(len(s)) for s in sentences]]

    toy = LeftBranchingTeacher()
    assert isinstance(toy, Teacher)
    votes = votes_of([toy], tiny_corpus["train"], tiny_corpus["valid"], SelfTrainConfig(), lambda line: None,
                     host=tiny_loaded)
    assert all(set(spans) == left_branching_spans(len(ids)) and set(spans.values()) <= {1.0}
               for spans, ids in zip(votes.spans, votes.ids))
    lines = []
    config = SpanParserConfig(vocab_size=len(tiny_loaded.vocab), emb_size=20, hidden_size=16, mlp_size=16)
    result = self_train(tiny_corpus["train"], tmp_path / "toy.onlstm", [toy], tiny_corpus["valid"], config,
                        SelfTrainConfig(epochs=1, batch_size=8), log=lines.append, host=tiny_loaded)
    student = load_model(result.out)
    assert student.span_parser.meta["teacher"] == ["left-branching"] and student.vocab.itos == tiny_loaded.vocab.itos
    alone = self_train(tiny_corpus["train"], tmp_path / "alone.onlstm", [toy], tiny_corpus["valid"], None,
                       SelfTrainConfig(epochs=1, batch_size=8), log=lines.append)  # no language model to host it
    student = load_model(alone.out)
    assert student.kind == "span" and student.model is None and student.span_parser is not None
    assert read_archive(alone.out).get("config") is None  # no language model's weights in the file
    assert "the" in student.vocab.stoi  # its own vocabulary, of the corpus's words
    words = ["the", "cat", "sat", "on", "the", "mat"]
    distances = sentence_distances(student, [words])[0]
    assert len(distances) == len(words)
    with pytest.raises(ModelFileError, match="span parser without a language model"):
        sentence_distances(student, [words], layer=2)


def test_a_model_file_of_an_unknown_kind_is_refused_in_one_line(tiny_model_path, tmp_path):
    from onlstm_cli.modelfile import MODEL_KINDS, atomic_save, read_archive
    archive = read_archive(tiny_model_path)
    assert archive["kind"] == "onlstm" and "onlstm" in MODEL_KINDS
    archive["kind"] = "dop"
    atomic_save(archive, tmp_path / "dop.onlstm")
    with pytest.raises(ModelFileError, match="of kind 'dop', which this onlstm cannot read"):
        load_model(tmp_path / "dop.onlstm")


def test_votes_can_hold_a_left_branching_voter():
    from onlstm_cli.training.student.votes import left_branching_spans, vote
    teacher = [{(1, 4)}]  # one teacher, one sentence of four words
    votes = vote([teacher], [4], left_branching=1.0)[0]
    assert votes[(1, 4)] == pytest.approx(0.5)  # the teacher's span: one vote of two
    assert all(votes[span] == pytest.approx(0.5) for span in left_branching_spans(4))
    assert vote([teacher], [4], right_branching=1.0, left_branching=1.0)[0][(0, 2)] == pytest.approx(1 / 3)


def test_teachers_that_lean_left_by_the_symmetric_split_keep_it(tiny_model_path, tiny_corpus, monkeypatch):
    """The paper's split is a right-branching prior, so the lean is read from the teachers' trees built with the
    symmetric split: where those lean left, the teachers vote with them (the votes, the record and the student's
    file carry the rule), even where the paper's split would have made their trees lean right. Where they lean
    right, the paper's split stays."""
    from onlstm_cli.induction import teachers as teachers_module
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.votes import left_branching_spans, right_branching_spans, votes_of
    shapes = {"left": {"paper": right_branching_spans, "symmetric": left_branching_spans},
              "right": {"paper": right_branching_spans, "symmetric": right_branching_spans}}
    for lean, expected in (("left", "symmetric"), ("right", "paper")):
        splits_used = []

        def shaped_trees(teacher, sentences, layers, **_):
            splits_used.append(teacher.split)
            return [[shapes[lean][teacher.split](len(s)) for s in sentences] for _ in layers]

        monkeypatch.setattr(teachers_module, "layer_trees", shaped_trees)
        teachers = [load_model(tiny_model_path), load_model(tiny_model_path)]
        assert [t.split for t in teachers] == ["paper", "paper"]
        lines = []
        votes = votes_of(teachers, tiny_corpus["train"], tiny_corpus["valid"],
                         SelfTrainConfig(right_branching="auto", lean_from="trees"), lines.append)
        assert [t.split for t in teachers] == [expected, expected]
        assert splits_used[-1] == expected and votes.split == (None if expected == "paper" else "symmetric")
        # each teacher parses the validation text for the lean, shuffled for word order's part of it (direction.WordOrder),
        # and again only where the split changes back
        assert len(splits_used) == 2 * (3 if expected == "symmetric" else 4)
        assert any("the split: symmetric" in line for line in lines) == (expected == "symmetric")
        assert (votes.left_branching > 0) == (expected == "symmetric")


@pytest.mark.parametrize("keep_punct", [False, True])
def test_the_votes_read_the_text_as_the_host_models_training_text_was_read(keep_punct, tiny_loaded, tiny_corpus):
    """A --keep-punct language model learned from text with its punctuation: its student does too."""
    import dataclasses

    from onlstm_cli.training.student.votes import left_branching_spans, votes_of

    from onlstm_cli.induction.teachers import TeacherBase

    class LeftBranchingTeacher(TeacherBase):
        name, tokenizer, weighing = "left-branching", tiny_loaded.tokenizer, 0

        def voter_trees(self, sentences, batch_size=64, model_tokens=True):
            return [[left_branching_spans(len(s)) for s in sentences]]

    meta = {**tiny_loaded.meta, "data": {**tiny_loaded.meta.get("data", {}), "keep_punct": keep_punct}}
    host = dataclasses.replace(tiny_loaded, meta=meta)
    votes = votes_of([LeftBranchingTeacher()], tiny_corpus["train"], tiny_corpus["valid"], SelfTrainConfig(),
                     lambda line: None, host=host)
    read_commas = any("," in words for words in votes.valid_sentences)
    assert read_commas == keep_punct  # the tiny corpus has a comma in most lines


def test_a_short_budget_bounds_the_teachers_parse_to_the_sentences_parsed_in_it(tiny_loaded, tmp_path, monkeypatch):
    import time as clock
    from conftest import write_corpus
    from onlstm_cli.training.student import votes
    monkeypatch.setattr(votes, "PARSE_CHUNK", 5)
    corpus, valid = write_corpus(tmp_path / "c.txt", 40), write_corpus(tmp_path / "v.txt", 8, seed=1)
    full = votes.votes_of([tiny_loaded], corpus, valid, SelfTrainConfig(), lambda line: None)
    said = []
    short = votes.votes_of([tiny_loaded], corpus, valid, SelfTrainConfig(), said.append, deadline=clock.monotonic())
    assert len(short.ids) == len(short.spans) == len(short.sentences) == 5  # one chunk, then the clock said stop
    assert short.spans == full.spans[:5] and short.valid_spans == full.valid_spans  # the validation text whole
    assert any(f"parse 5 of the {len(full.ids)} training sentences" in line for line in said), said
    resumed = votes.votes_of([tiny_loaded], corpus, valid, SelfTrainConfig(), lambda line: None, limit=7)
    assert resumed.spans == full.spans[:7]  # a resumed run parses what its first run did, whatever the clock


def test_sigterm_during_the_teachers_parse_stops_at_the_next_chunk_with_nothing_written(tiny_loaded, tmp_path,
                                                                                         monkeypatch):
    """A resumed run parses again, so a SIGTERM is not held until the whole parse ends: the parse stops at the
    next chunk, in one line, and neither the file nor a checkpoint is written."""
    import signal
    from conftest import sigterm_after_first_chunk, write_corpus
    from onlstm_cli.errors import TrainingError
    from onlstm_cli.induction.teachers import as_teacher
    from onlstm_cli.training.student.train import self_train
    corpus, valid = write_corpus(tmp_path / "c.txt", 40), write_corpus(tmp_path / "v.txt", 8, seed=1)
    teacher = as_teacher(tiny_loaded)
    chunks = sigterm_after_first_chunk(monkeypatch, teacher)
    out, handler = tmp_path / "s.onlstm", signal.getsignal(signal.SIGTERM)
    with pytest.raises(TrainingError, match=r"stopped while the teachers parsed \(5 of 40 training sentences\)") \
            as excinfo:
        self_train(corpus, out, teacher, valid, train=SelfTrainConfig(epochs=1), log=lambda line: None,
                   host=tiny_loaded)
    assert excinfo.value.exit_code == 128 + signal.SIGTERM  # 143, as a run stopped with a checkpoint exits
    assert chunks == [5]  # the second chunk was never parsed
    assert not out.exists() and not out.with_name(out.name + ".ckpt").exists()
    assert signal.getsignal(signal.SIGTERM) == handler  # the handler before the run is put back


def test_a_student_without_a_language_model_host_parses_and_has_a_card(tiny_corpus, tmp_path):
    """Issue 51: no teacher is a language model, so the student is a span parser file of its own (kind "span"):
    `parse` reads it, `info` says what it is, and asking it for a layer is a one-line error."""
    from onlstm_cli.cli.commands import app
    from onlstm_cli.induction.teachers import TeacherBase
    from onlstm_cli.info import info_text, model_info
    from onlstm_cli.text.tokenizers import Tokenizer
    from onlstm_cli.training.student.votes import left_branching_spans
    from typer.testing import CliRunner

    class LeftBranching(TeacherBase):
        name, tokenizer, lang = "left-branching", Tokenizer("ptb"), "en"

        def voter_trees(self, sentences, batch_size=64, model_tokens=True):
            return [[left_branching_spans(len(s)) for s in sentences]]

    out = tmp_path / "alone.onlstm"
    self_train(tiny_corpus["train"], out, [LeftBranching()], tiny_corpus["valid"], None,
               SelfTrainConfig(epochs=2, batch_size=8), log=lambda line: None)
    card = info_text(model_info(out))
    assert "a span parser without a language model" in card and "Language model training" not in card
    assert "self-trained on the trees of left-branching" in card
    runner = CliRunner()
    parsed = runner.invoke(app, ["parse", "-m", str(out), "-f", "json"], input="the cat sat on the mat\n")
    assert parsed.exit_code == 0, parsed.output
    assert json.loads(parsed.stdout.splitlines()[0])["words"] == ["the", "cat", "sat", "on", "the", "mat"]
    layer = runner.invoke(app, ["parse", "-m", str(out), "--layer", "2"], input="the cat sat\n")
    assert layer.exit_code == 2 and "span parser without a language model" in layer.output
    assert "Traceback" not in layer.output


def test_self_train_checks_its_config_before_the_teachers_parse(tiny_loaded, tiny_corpus, tmp_path):
    """The library checks a span parser's options once (SelfTrainConfig.check), for the CLI and Python callers."""
    from onlstm_cli.errors import TrainingError
    for config, message in ((SelfTrainConfig(teacher_layers=(2,), span_parser_teachers=True), "--second-round"),
                            (SelfTrainConfig(lr=0.0), "--lr must be positive")):
        with pytest.raises(TrainingError, match=message):
            self_train(tiny_corpus["train"], tmp_path / "s.onlstm", [tiny_loaded], tiny_corpus["valid"], train=config)
    assert not (tmp_path / "s.onlstm").exists()


def test_a_teacher_class_short_of_the_protocol_is_told_what_to_subclass():
    from onlstm_cli.errors import TrainingError
    from onlstm_cli.induction.teachers import as_teacher

    class Bare:  # voter_trees alone: no host, coverage or split to ask of it
        name, tokenizer, weighing = "bare", None, 0

        def voter_trees(self, sentences, batch_size=64, model_tokens=True):
            return [[set() for _ in sentences]]

    with pytest.raises(TrainingError, match="subclass induction.teachers.TeacherBase"):
        as_teacher(Bare())
