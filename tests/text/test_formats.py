import io
import json
import shutil
from pathlib import Path

import nltk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from onlstm_cli.text.formats import from_bracket, to_ascii, to_bracket, to_json, to_nltk, to_rich
from onlstm_cli.text.treebanks import read_gold, read_predicted
from onlstm_cli.errors import GoldFormatError, TreeTooDeepError
from onlstm_cli.trees import build_tree, right_branching, tree_leaves

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CHINESE = ["爱", ["真的", ["需要", "勇气"]]]


# --- output formats ---------------------------------------------------------------------------

def test_to_bracket_examples():
    assert to_bracket(CHINESE) == "(S (X 爱) (S (X 真的) (S (X 需要) (X 勇气))))"
    assert to_bracket("w") == "(S (X w))"
    assert to_bracket(["f(x)", ")"]) == "(S (X f-LRB-x-RRB-) (X -RRB-))"


@pytest.mark.parametrize("tree", [CHINESE, "w", ["(", [")", "a"]], [["a", "b"], ["c", "d"]]])
def test_bracket_and_nltk_round_trip(tree):
    words = tree_leaves(tree)
    escaped = [w.replace("(", "-LRB-").replace(")", "-RRB-") for w in words]
    parsed = nltk.Tree.fromstring(to_bracket(tree))
    assert parsed.leaves() == escaped
    assert from_bracket(to_bracket(tree)) == tree
    assert to_nltk(tree).leaves() == words
    # to_nltk is the bracket line's tree, with the original words
    for position, word in zip(parsed.treepositions("leaves"), words):
        parsed[position] = word
    assert to_nltk(tree) == parsed


def test_to_json():
    record = json.loads(to_json(CHINESE, [0.5, 2, 1, 0]))
    assert record == {"tree": CHINESE, "words": ["爱", "真的", "需要", "勇气"],
                      "distances": [0.5, 2.0, 1.0, 0.0]}
    assert "爱" in to_json(CHINESE)  # not \u escaped
    assert "distances" not in json.loads(to_json("w"))
    assert nltk.Tree.fromstring(to_bracket(record["tree"])).leaves() == record["words"]
    assert "\n" not in to_json(CHINESE)


def test_to_ascii_and_rich_show_every_word():
    drawing = to_ascii(CHINESE)
    assert drawing.count("\n") > 4
    for word in tree_leaves(CHINESE):
        assert word in drawing
    console = Console(file=io.StringIO(), width=80)
    console.print(to_rich(["爱", ["[b]", "勇气"]]))
    text = console.file.getvalue()
    assert "[b]" in text and "爱" in text and "勇气" in text


def columns(line: str) -> list[tuple[int, int, str]]:
    """(first terminal column, width, text) of each space-separated piece of a line, wide characters 2."""
    from rich.cells import cell_len
    pieces, column = [], 0
    for piece in line.split(" "):
        if piece:
            pieces.append((column, cell_len(piece), piece))
        column += cell_len(piece) + 1
    return pieces


@pytest.mark.parametrize("tree", [CHINESE, ["同样", ["，", ["施力的", "大小a"]]], [["天安门广场", "é"], ["a", "北"]]],
                         ids=["chinese", "mixed", "wide-and-combining"])
def test_to_ascii_keeps_wide_words_under_their_lines(tree):
    """Issue 41 item 19: nltk counts 天 as one column, a terminal draws it in two, so the lines above
    Chinese words drifted off them. On a terminal, each word's line must end over the word."""
    lines = to_ascii(tree).rstrip("\n").split("\n")
    words, stems = columns(lines[-1]), columns(lines[-2])
    assert [text for _, _, text in words] == tree_leaves(tree)
    assert len(stems) == len(words)
    for (word_at, width, word), (stem_at, _, stem) in zip(words, stems):
        assert stem == "|" and word_at <= stem_at < word_at + max(width, 1), (word, lines)
    last = to_ascii(["\ue000天", "b"]).rstrip("\n").split("\n")[-1]  # a word holding a stand-in character
    assert last.split() == ["\ue000天", "b"]


def test_to_ascii_draws_every_word_whatever_its_characters():
    """Issue 50 item 12: a zero-width word (U+200B) took the place of the wide word after it (猫 was lost), and
    a line holding every private-use character left no stand-in to draw with (StopIteration)."""
    last = to_ascii(["\u200b", ["猫", "cat"]]).rstrip("\n").split("\n")[-1]
    assert last.split() == ["\u200b", "猫", "cat"]
    private = "".join(map(chr, range(0xE000, 0xF900)))
    assert to_ascii([private, "cat"]).rstrip("\n").split("\n")[-1].split() == [private, "cat"]
    long_wide = ["天安门广场" * 4, ["a" * 30, "b"]]  # past nltk's 16 columns: whole, under its line
    lines = to_ascii(long_wide).rstrip("\n").split("\n")
    words, stems = columns(lines[-1]), columns(lines[-2])
    assert [text for _, _, text in words] == tree_leaves(long_wide)
    for (word_at, width, word), (stem_at, _, stem) in zip(words, stems):
        assert stem == "|" and word_at <= stem_at < word_at + width, (word, lines)


def test_deep_trees_are_fine():
    words = [f"w{i}" for i in range(2000)]
    tree = right_branching(words)
    line = to_bracket(tree)
    assert to_bracket(from_bracket(line)) == line
    # (json.loads itself cannot read 2,000 nested arrays; to_json must still write them)
    assert to_json(tree).endswith(', "words": ' + json.dumps(words) + "}")
    assert to_nltk(tree).label() == "S"


def test_too_deep_for_the_nltk_drawing_says_which_formats_can_show_it():
    tree = right_branching([f"w{i}" for i in range(3000)])
    with pytest.raises(TreeTooDeepError) as error:
        to_ascii(tree)
    message = str(error.value)
    assert "\n" not in message and "MAX_TREE_DEPTH" not in message
    assert "2999 levels deep" in message and "--format bracket, json, svg or html" in message
    assert to_ascii(right_branching(["a", "b", "c"])).count("\n") > 2  # a shallow tree is drawn as before


words_strategy = st.lists(
    st.text(st.characters(blacklist_categories=("Z", "C")), min_size=1, max_size=5)
    .filter(lambda w: "-LRB-" not in w and "-RRB-" not in w),
    min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(words=words_strategy, data=st.data())
def test_bracket_round_trip_property(words, data):
    distances = data.draw(st.lists(st.integers(0, 5), min_size=len(words), max_size=len(words)))
    tree = build_tree(distances, words)
    assert from_bracket(to_bracket(tree)) == tree
    leaves = nltk.Tree.fromstring(to_bracket(tree)).leaves()
    assert leaves == [w.replace("(", "-LRB-").replace(")", "-RRB-") for w in words]


def test_from_bracket_reads_other_parsers_trees():
    assert from_bracket("(ROOT (S (NP (DT a) (NN b)) (VP (VBZ c))))") == [["a", "b"], "c"]
    assert from_bracket("((a b) c)") == ["b", "c"]  # first token after "(" is a label
    assert from_bracket("(S (X a) (X b) (X c))") == ["a", "b", "c"]
    assert from_bracket("(X w)") == "w"
    for bad in ["w", "(S (X a)", "(S (X a)))", "(S (X a)) (S (X b))", "()"]:
        with pytest.raises(ValueError):
            from_bracket(bad)


# --- gold reading -----------------------------------------------------------------------------

def test_read_gold_bracket_file_one_tree_per_line():
    cat, paid, wow = read_gold(FIXTURES / "gold_small.trees")  # line 3 keeps no word
    assert cat.words == ["The", "cat", "sat", "on", "the", "mat"]
    assert cat.all_words == cat.words + ["."]
    assert cat.tags == ["DT", "NN", "VBD", "IN", "DT", "NN"]
    assert cat.spans == {(0, 2), (2, 6), (3, 6), (4, 6)}
    assert cat.labels == {(0, 2): {"NP"}, (2, 6): {"VP"}, (3, 6): {"PP"}, (4, 6): {"NP"}}
    assert cat.source == "gold_small.trees:1"

    # traces and $ , . dropped; NP over QP collapses to one span with both labels;
    # the trace-only PP vanishes
    assert paid.words == ["He", "paid", "5", "million", "only"]
    assert paid.all_words == ["He", "paid", "$", "5", "million", ",", "only", "."]
    assert paid.spans == {(1, 5), (2, 4)}
    assert paid.labels == {(1, 5): {"VP"}, (2, 4): {"NP", "QP"}}

    assert wow.words == ["Wow"] and wow.spans == set() and wow.source == "gold_small.trees:4"


def test_read_gold_multiline_mrg_and_directory(tmp_path):
    mary, question = read_gold(FIXTURES / "two_trees.mrg")
    assert mary.words == ["Mary", "likes", "green", "apples"]
    assert mary.spans == {(1, 4), (2, 4)}
    assert mary.labels == {(1, 4): {"VP"}, (2, 4): {"NP"}}
    assert mary.source == "two_trees.mrg:1"
    assert question.words == ["Is", "it", "good"] and question.spans == set()
    assert question.source == "two_trees.mrg:7"

    shutil.copy(FIXTURES / "two_trees.mrg", tmp_path / "b.mrg")
    shutil.copy(FIXTURES / "gold_small.trees", tmp_path / "a.mrg")
    (tmp_path / "notes.txt").write_text("not a tree")
    sentences = read_gold(tmp_path)
    assert [s.source for s in sentences] == [
        "a.mrg:1", "a.mrg:2", "a.mrg:4", "b.mrg:1", "b.mrg:7"]


def test_read_gold_conllu():
    apples, nonprojective, punct_inside = read_gold(FIXTURES / "small.conllu")
    # multiword token line 4-5 and empty node 8.1 skipped, PUNCT dropped
    assert apples.words == ["他", "很", "喜欢", "红", "苹果", "也", "吃", "梨"]
    assert apples.all_words == ["他", "很", "喜欢", "红", "苹果", "，", "也", "吃", "梨", "。"]
    assert apples.tags[:3] == ["PRON", "ADV", "VERB"]
    assert apples.spans == {(3, 5), (5, 8)}
    assert apples.labels == {(3, 5): {"NOUN"}, (5, 8): {"VERB"}}
    assert apples.source == "small.conllu:1"
    # "a" hangs off "c" across the root "b": no span for c's subtree
    assert nonprojective.spans == {(3, 5)} and nonprojective.labels == {(3, 5): {"ADV"}}
    # the subtree z w v has punctuation of another head inside: contiguous over kept words
    assert punct_inside.words == ["x", "y", "z", "w", "v"]
    assert punct_inside.spans == {(2, 5)}


def test_read_gold_detects_conllu_without_suffix(tmp_path):
    path = tmp_path / "dev.txt"
    shutil.copy(FIXTURES / "small.conllu", path)
    assert len(read_gold(path)) == 3


@pytest.mark.parametrize("name, content, message", [
    ("open.trees", "( (S (NN a) (NN b))\n( (S (NN c)))\n", r"open.trees:1: unbalanced"),
    ("extra.trees", "( (S (NN a)))\n(S (NN b)))\n", r"extra.trees:2: unbalanced"),
    ("outside.trees", "( (S (NN a)))\nhello\n", r"outside.trees:2: text outside"),
    ("deep.trees", "(NN a)\n" + "(S " * 600 + "(NN a)" + ")" * 600 + "\n",
     r"deep.trees:2: this tree is nested 601 brackets deep, more than the 499 onlstm reads"),
    ("fields.conllu", "# c\n1\ta\ta\tNOUN\t_\t_\t0\troot\t_\t_\n2\tb\tb\n",
     r"fields.conllu:3: expected 10 tab-separated fields, found 3"),
    ("head.conllu", "1\ta\ta\tNOUN\t_\t_\t0\troot\t_\t_\n2\tb\tb\tNOUN\t_\t_\tx\tobj\t_\t_\n",
     r"head.conllu:2: bad head index 'x'"),
    ("range.conllu", "1\ta\ta\tNOUN\t_\t_\t0\troot\t_\t_\n2\tb\tb\tNOUN\t_\t_\t7\tobj\t_\t_\n",
     r"range.conllu:2: bad head index 7"),
    ("cycle.conllu", "1\ta\ta\tNOUN\t_\t_\t2\tx\t_\t_\n2\tb\tb\tNOUN\t_\t_\t1\tx\t_\t_\n",
     r"cycle.conllu:1: head indices form a cycle"),
    ("self.conllu", "1\ta\ta\tNOUN\t_\t_\t0\troot\t_\t_\n2\tb\tb\tNOUN\t_\t_\t2\tobj\t_\t_\n",
     r"self.conllu:2: bad head index 2: token 2 is its own head"),
    ("roots.conllu", "1\ta\ta\tNOUN\t_\t_\t0\troot\t_\t_\n2\tb\tb\tNOUN\t_\t_\t1\tobj\t_\t_\n\n"
     "# sent_id = 2\n1\tc\tc\tNOUN\t_\t_\t0\troot\t_\t_\n2\td\td\tNOUN\t_\t_\t1\tobj\t_\t_\n"
     "3\te\te\tVERB\t_\t_\t0\troot\t_\t_\n",
     r"roots.conllu:7: sentence 2 has more than one root: tokens 1 and 3 both have head 0"),
    ("empty.trees", "\n  \n", r"empty.trees: empty file"),
    ("punct.trees", "( (S (. .)))\n", r"punct.trees: no sentences"),
    ("comments.conllu", "# only a comment\n", r"comments.conllu: no sentences"),
])
def test_malformed_gold_names_the_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(GoldFormatError, match=message):
        read_gold(path)


def test_gold_messages_are_one_line_for_a_cli_user(tmp_path):
    """nltk's advice to raise its MAX_TREE_DEPTH is for programmers; a CLI user is told what to do."""
    path = tmp_path / "deep.trees"
    path.write_text("(S " * 2000 + "(NN a)" + ")" * 2000 + "\n", encoding="utf-8")
    with pytest.raises(GoldFormatError) as error:
        read_gold(path)
    message = str(error.value)
    assert "\n" not in message and "MAX_TREE_DEPTH" not in message and "nltk" not in message
    assert "remove or flatten it" in message


def test_gold_trees_just_under_the_depth_limit_are_read(tmp_path):
    path = tmp_path / "deep.trees"
    path.write_text("(S " * 498 + "(NN a) (NN b)" + ")" * 498 + "\n", encoding="utf-8")
    [sentence] = read_gold(path)
    assert sentence.words == ["a", "b"]


def test_gold_errors_for_bytes_and_paths(tmp_path):
    latin = tmp_path / "latin.trees"
    latin.write_bytes(b"( (S (NN a)))\n( (S (NN b)))\n( (S (NN caf\xe9)))\n")
    with pytest.raises(GoldFormatError, match=r"latin.trees:3: not UTF-8"):
        read_gold(latin)
    with pytest.raises(GoldFormatError, match="no such file"):
        read_gold(tmp_path / "missing.trees")
    with pytest.raises(GoldFormatError, match=r"no \*.mrg files"):
        read_gold(tmp_path)


# --- predicted trees --------------------------------------------------------------------------

@pytest.fixture
def gold():
    return read_gold(FIXTURES / "gold_small.trees")


def test_read_predicted_over_kept_words_or_all_tokens(tmp_path, gold):
    pred = tmp_path / "pred.txt"
    pred.write_text(
        "(S (NP The cat) (VP sat (PP on (NP the mat))))\n"
        # all tokens, punctuation included: $ , . are dropped, unaries collapse
        "(S (A He) (B (B paid (C $ (D 5 million))) (E , only)) (F .))\n"
        "(X Wow)\n", encoding="utf-8")
    cat, paid, wow = read_predicted(pred, gold)
    assert cat == [["The", "cat"], ["sat", ["on", ["the", "mat"]]]]
    assert paid == ["He", [["paid", ["5", "million"]], "only"]]
    assert wow == "Wow"


@pytest.mark.parametrize("content, message", [
    ("(S The cat sat on the mat)\n(S He paid 5 billion only)\n(X Wow)\n",
     r"pred.txt:2: words differ from the gold sentence gold_small.trees:2 "
     r"\(word 4 is 'billion', gold has 'million'\)"),
    ("(S The cat sat on the mat)\n\n(X Wow)\n", r"pred.txt:2: blank line"),
    ("(S The cat sat on the mat)\n(S He paid (5 million only)\n(X Wow)\n",
     r"pred.txt:2: cannot read this tree"),
    ("(S The cat sat on the mat)\n(S He paid 5 million only)\n",
     r"pred.txt: 2 trees for 3 gold sentences"),
])
def test_read_predicted_errors(tmp_path, gold, content, message):
    pred = tmp_path / "pred.txt"
    pred.write_text(content, encoding="utf-8")
    with pytest.raises(GoldFormatError, match=message):
        read_predicted(pred, gold)


def test_bracket_keeps_a_trailing_backslash_word_whole():
    # nltk would read "\)" as an escaped parenthesis; found by the round-trip property test
    tree = ["a\\", ["b", "\\"]]
    line = to_bracket(tree)
    assert nltk.Tree.fromstring(line).leaves() == ["a\\", "b", "\\"]
    assert from_bracket(line) == tree


def test_json_never_holds_nan():
    import json

    from onlstm_cli.text.formats import to_json
    line = to_json(["a", ["b", "c"]], [1.5, float("nan"), float("inf")])
    assert "NaN" not in line and "Infinity" not in line
    assert json.loads(line)["distances"] == [1.5, None, None]


MULTIWORD = """# text = Gosto do livro.
1\tGosto\tgostar\tVERB\t_\t_\t0\troot\t_\t_
2-3\tdo\t_\t_\t_\t_\t_\t_\t_\t_
2\tde\tde\tADP\t_\t_\t4\tcase\t_\t_
3\to\to\tDET\t_\t_\t4\tdet\t_\t_
4\tlivro\tlivro\tNOUN\t_\t_\t1\tobl\t_\t_
5\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_

"""


def test_conllu_multiword_tokens_are_kept_as_the_text_shows_them(tmp_path):
    path = tmp_path / "pt.conllu"
    path.write_text(MULTIWORD + MULTIWORD.replace("2-3\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n", ""), encoding="utf-8")
    joined, plain = read_gold(path)
    assert joined.words == ["Gosto", "de", "o", "livro"]  # the tree's words, scored as before
    assert joined.spans == {(1, 4)}
    assert joined.as_written() == (["Gosto", "do", "livro"], [0, 1, None, 2])
    assert plain.tokens is None and plain.as_written() == (["Gosto", "de", "o", "livro"], [0, 1, 2, 3])


RANGE_LINE = "2-3\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n"
BAD_RANGES = {  # the multiword line(s) put in place of MULTIWORD's "2-3" → (line of the error, words of its message)
    "beyond the words": (RANGE_LINE.replace("2-3", "2-9"), 3, "multiword token '2-9' goes beyond the sentence's 5 words"),
    "reversed": (RANGE_LINE.replace("2-3", "3-2"), 3, "'3-2': a reversed or one-word range"),
    "one word": (RANGE_LINE.replace("2-3", "2-2"), 3, "'2-2': a reversed or one-word range"),
    "overlapping": (RANGE_LINE + RANGE_LINE.replace("2-3", "2-4"), 4, "'2-4' overlaps multiword token 2-3"),
    "before its words": (RANGE_LINE.replace("2-3", "3-4"), 3, "'3-4' comes after word 1: a range goes right before"),
    "zero": (RANGE_LINE.replace("2-3", "0-1"), 3, "'0-1' comes after word 1"),
    "not numbers": (RANGE_LINE.replace("2-3", "a-b"), 3, "'a-b': expected a range of word ids such as 3-4"),
}


@pytest.mark.parametrize("case", sorted(BAD_RANGES))
def test_a_multiword_range_that_does_not_fit_the_sentence_is_refused_naming_file_and_line(case, tmp_path):
    lines, line, words = BAD_RANGES[case]
    path = tmp_path / "pt.conllu"
    path.write_text(MULTIWORD.replace(RANGE_LINE, lines), encoding="utf-8")
    with pytest.raises(GoldFormatError) as error:
        read_gold(path)
    assert str(error.value).startswith(f"{path}:{line}: ") and words in str(error.value), str(error.value)
    assert "\n" not in str(error.value)


def test_a_multiword_range_at_a_sentences_end_is_checked_against_its_words(tmp_path):
    path = tmp_path / "pt.conllu"
    last = "5-6\tdo.\t_\t_\t_\t_\t_\t_\t_\t_\n"
    path.write_text(MULTIWORD.replace("5\t.\t", last + "5\t.\t"), encoding="utf-8")
    with pytest.raises(GoldFormatError, match=r":7: multiword token '5-6' goes beyond the sentence's 5 words"):
        read_gold(path)


def test_a_model_reads_a_treebank_as_written_and_each_word_gets_its_tokens_distance(tmp_path, monkeypatch,
                                                                                    tiny_model_path):
    """A model trained on raw Portuguese read "do", never "de o": it is given "do", and "o", inside that
    token, gets no boundary of its own (the lowest distance of the sentence)."""
    from onlstm_cli.evaluation import model_scores
    path = tmp_path / "pt.conllu"
    path.write_text(MULTIWORD, encoding="utf-8")
    read = []

    def fake_distances(loaded, sentences, layer=None, all_layers=False, **options):
        read.extend(sentences)
        d = [[3.0, 5.0, 4.0][:len(s)] for s in sentences]
        return [[x] * loaded.config.n_layers for x in d] if all_layers else d

    monkeypatch.setattr(model_scores, "sentence_distances", fake_distances)
    _, systems, (trees, distances) = model_scores.score_model(read_gold(path), str(tiny_model_path))
    assert read[0] == ["gosto", "do", "livro"]
    assert distances[0] == [3.0, 5.0, 2.0, 4.0]


def test_a_sentence_as_read_puts_back_the_dropped_tokens_a_model_reads_between_its_words():
    from onlstm_cli.text.gold import GoldSentence
    gold = GoldSentence(words=["Gosto", "de", "o", "livro"], all_words=["Gosto", ",", "de", "o", "livro", "."],
                        tags=["VERB", "ADP", "DET", "NOUN"], spans={(1, 4)}, labels={}, source="x:1",
                        kept_positions=[0, 2, 3, 4], tokens=["Gosto", "do", "livro"], token_of_word=[0, 1, 1, 2])
    assert gold.as_read(lambda token: token == ",") == (["Gosto", ",", "do", "livro"], [0, 1, 2, None, 3],
                                                        [0, 1, 2, 3, 4])  # each leaf's place in all_words
    assert gold.as_read(lambda token: False) == (*gold.as_written(), [0, 2, 3, 4])


PUNCTUATED = """# text = Ali, eve gitti.
1\tAli\tAli\tPROPN\t_\t_\t3\tnmod:poss\t_\tSpaceAfter=No
2\t,\t,\tPUNCT\t_\t_\t1\tpunct\t_\t_
3\teve\tev\tNOUN\t_\t_\t4\tobl\t_\t_
4\tgitti\tgit\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t_\t_\t4\tpunct\t_\t_

"""


def test_a_model_trained_on_punctuation_reads_it_in_a_gold_sentence_and_its_tree_is_scored_without_it(
        tmp_path, monkeypatch, tiny_model_path):
    """As `parse` feeds a --keep-punct model the punctuation it knows: "," is read (a boundary the tree is
    built with), "." (not in the vocabulary) is not, and the scored tree and the report's distances hold
    the kept words only."""
    from onlstm_cli.evaluation import model_scores
    from onlstm_cli.modelfile import atomic_save, read_archive
    archive = read_archive(tiny_model_path)
    archive["vocab"] = archive["vocab"][:-1] + [","]
    knows_comma = tmp_path / "comma.onlstm"
    atomic_save(archive, knows_comma)
    gold_path = tmp_path / "tr.conllu"
    gold_path.write_text(PUNCTUATED, encoding="utf-8")
    read = []

    def fake_distances(loaded, sentences, layer=None, all_layers=False, **options):
        read.extend(sentences)
        d = [{4: [1.0, 9.0, 2.0, 3.0], 3: [1.0, 2.0, 3.0]}[len(s)] for s in sentences]
        return [[x] * loaded.config.n_layers for x in d] if all_layers else d

    monkeypatch.setattr(model_scores, "sentence_distances", fake_distances)
    gold = read_gold(gold_path)
    _, _, (trees, distances) = model_scores.score_model(gold, str(knows_comma), split="symmetric",
                                                        punctuation="ignore")
    assert read == [["ali", ",", "eve", "gitti"]]
    assert trees == [["Ali", ["eve", "gitti"]]] and distances == [[1.0, 2.0, 3.0]]
    _, _, (trees, _) = model_scores.score_model(gold, str(tiny_model_path), split="symmetric", punctuation="ignore")
    assert read[1] == ["ali", "eve", "gitti"] and trees == [[["Ali", "eve"], "gitti"]]  # without the comma


def test_evaluate_cuts_at_punctuation_as_the_model_file_says_and_reports_baselines_cut_the_same_way(
        tmp_path, monkeypatch, tiny_model_path):
    """The tiny model (trained now: "boundaries") reads "Ali eve gitti" without the comma; the word after the
    comma is split first, so [Ali [eve gitti]] where its distances alone give [[Ali eve] gitti]."""
    from onlstm_cli.evaluation import model_scores
    gold_path = tmp_path / "tr.conllu"
    gold_path.write_text(PUNCTUATED, encoding="utf-8")
    monkeypatch.setattr(model_scores, "sentence_distances",
                        lambda loaded, sentences, layer=None, all_layers=False, **options:
                        [[[1.0, 2.0, 3.0]] * 3 if all_layers else [1.0, 2.0, 3.0] for _ in sentences])
    gold = read_gold(gold_path)
    fields, _, (trees, shown) = model_scores.score_model(gold, str(tiny_model_path), split="symmetric")
    assert fields["punctuation"] == "boundaries" and trees == [["Ali", ["eve", "gitti"]]]
    assert shown == [[1.0, 5.0, 3.0]]  # the pictures' bars are what the tree was built from: "eve" lifted
    fields, _, (trees, _) = model_scores.score_model(gold, str(tiny_model_path), split="symmetric",
                                                     punctuation="ignore")
    assert fields["punctuation"] == "ignore" and trees == [[["Ali", "eve"], "gitti"]]
    rows = model_scores.baseline_scores(gold, cut_at_marks=True)
    assert rows["left-branching"]["corpus_f1"] != rows["left-branching, cut at punctuation"]["corpus_f1"]
    assert set(model_scores.baseline_scores(gold)) == {"right-branching", "left-branching", "balanced", "random"}


TOKEN_OF_TWO_WORDS = """# text = Ali, kenarındaki eve gitti.
1\tAli\tAli\tPROPN\t_\t_\t5\tnsubj\t_\tSpaceAfter=No
2\t,\t,\tPUNCT\t_\t_\t1\tpunct\t_\t_
3-4\tkenarındaki\t_\t_\t_\t_\t_\t_\t_\t_
3\tkenarında\tkenar\tNOUN\t_\t_\t5\tobl\t_\t_
4\tki\tki\tADP\t_\t_\t3\tcase\t_\t_
5\teve\tev\tNOUN\t_\t_\t6\tobl\t_\t_
6\tgitti\tgit\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
7\t.\t.\tPUNCT\t_\t_\t6\tpunct\t_\t_

"""


def test_evaluate_with_punctuation_removed_scores_the_kept_words_as_parse_pretokenized_parses_them(
        tmp_path, monkeypatch, tiny_model_path):
    """--punctuation remove, the literature's protocol: the model reads the gold words alone (the two words of
    "kenarındaki", no comma), and its trees are those `parse --pretokenized` gives those words; the other rules
    read the token as the text shows it."""
    from onlstm_cli.evaluation import model_scores
    from onlstm_cli.induction import distances as parsing
    gold_path = tmp_path / "tr.conllu"
    gold_path.write_text(TOKEN_OF_TWO_WORDS, encoding="utf-8")
    read = []

    def fake_distances(loaded, sentences, layer=None, batch_size=64, all_layers=False, **options):
        read.extend(list(s) for s in sentences)
        d = [[float((7 * k) % 5) for k in range(len(s))] for s in sentences]
        return [[x] * loaded.config.n_layers for x in d] if all_layers else d

    monkeypatch.setattr(model_scores, "sentence_distances", fake_distances)
    monkeypatch.setattr(parsing, "sentence_distances", fake_distances)
    gold = read_gold(gold_path)
    fields, rows, (trees, _) = model_scores.score_model(gold, str(tiny_model_path), punctuation="remove")
    assert fields["punctuation"] == "remove"
    assert read == [["ali", "kenarında", "ki", "eve", "gitti"]]
    pretokenized = parsing.parse_lines(["Ali kenarında ki eve gitti"], model=str(tiny_model_path),
                                       pretokenized=True)[0].tree
    assert trees == [pretokenized] and tree_leaves(trees[0]) == gold[0].words
    read.clear()
    model_scores.score_model(gold, str(tiny_model_path), punctuation="ignore")
    assert read == [["ali", "kenarındaki", "eve", "gitti"]]  # as the text shows it
