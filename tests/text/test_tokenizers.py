"""Tokenizer (PTB, jieba, whitespace), normalization and the vocabulary."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlstm_cli.text.tokenizers import Tokenizer, has_cjk, is_punctuation, treebank_words
from onlstm_cli.text.languages import default_tokenizer
from onlstm_cli.text.vocab import EOS, UNK, Vocabulary

# --- splitting ------------------------------------------------------------------------------------


def test_ptb_split_final_period_is_its_own_token():
    tokens = Tokenizer("ptb").split("The cat sat on the mat.")
    assert tokens[-1] == "."
    assert tokens[:-1] == ["The", "cat", "sat", "on", "the", "mat"]


def test_ptb_split_ignores_trailing_newline():
    assert Tokenizer("ptb").split("The cat sat.\n") == Tokenizer("ptb").split("The cat sat.")


def test_ptb_split_contractions():
    tokens = Tokenizer("ptb").split("I don't know.")
    assert "do" in tokens and "n't" in tokens
    assert tokens.index("n't") == tokens.index("do") + 1
    assert "don't" not in tokens


def test_ptb_split_keeps_special_tokens_whole():
    tokens = Tokenizer("ptb").split("the <unk> sat on <unk> mat and <eos>")
    assert tokens.count("<unk>") == 2
    assert "<eos>" in tokens
    assert "<" not in tokens and "unk" not in tokens
    assert tokens[1] == "<unk>"


def test_ptb_split_commas_are_tokens():
    assert Tokenizer("ptb").split("Hello, world!") == ["Hello", ",", "world", "!"]


@pytest.mark.parametrize("line, tokens", [
    ("Ele disse «sim» e foi.", ["Ele", "disse", "«", "sim", "»", "e", "foi", "."]),
    ("Er sagte „ja“ und ‹nein›…", ["Er", "sagte", "„", "ja", "“", "und", "‹", "nein", "›", "…"]),
    ("¿Qué pasa? ¡Nada!", ["¿", "Qué", "pasa", "?", "¡", "Nada", "!"]),
    ("col·lecció e‐mail 5‰ didn’t", ["col·lecció", "e‐mail", "5‰", "did", "n’t"]),  # marks inside words stay
])
def test_ptb_split_cuts_marks_its_rules_do_not_know_from_words(line, tokens):
    """The PTB rules read any Latin text that comes without --lang; guillemets glued to Portuguese words made
    «sim and sim» two more unknown words and hid the marks from the punctuation cut."""
    assert Tokenizer("ptb").split(line) == tokens


TRICKY_LINES = [
    'He said, "Don\'t go!" -- and then (quietly) left...',
    "''Hello,'' she said: `yes' ; #1 @ 50% & $3.88.",
    "They'll save and invest more. I'm sure we'd've cannot gonna wanna gimme lemme gotta d'ye more'n",
    "'Tis 'twas THEY'RE WE'VE CAN'T I'M, \"quoted\" [brackets] {braces} <angles>.",
    'end with a quote." ',
    "3,000 3,36 a:b a: b, c.",
    "The U.S. (a.k.a. America).\"')]  ",
    "don't! Won't? isn't; 'ello' '' `` \"\"",
]


@pytest.mark.parametrize("line", TRICKY_LINES)
def test_treebank_words_match_nltk_on_tricky_lines(line):
    from nltk.tokenize import TreebankWordTokenizer
    assert treebank_words(line) == TreebankWordTokenizer().tokenize(line)


def test_treebank_words_match_nltk_on_random_text():
    """Our copy of the rules agrees with nltk's on thousands of lines dense in what the rules act on."""
    import random

    from nltk.tokenize import TreebankWordTokenizer
    rng = random.Random(0)
    pieces = ["the", "cat", "Can", "not", "n't", "'s", "'ll", "'RE", "'t", "is", "was", "gon", "na", "more",
              "'n", "3", ",", "5", ".", "...", "..", ":", ";", "@", "#", "$", "%", "&", "?", "!", "'", "''",
              '"', "``", "(", ")", "[", "]", "{", "}", "<", ">", "--", "-", " ", " ", " ", "  ", "\t", "é", "2.5"]
    nltk_tokenize = TreebankWordTokenizer().tokenize
    for _ in range(3000):
        line = "".join(rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(1, 25)))
        assert treebank_words(line) == nltk_tokenize(line), line


def test_whitespace_and_pretokenized_split_on_spaces_only():
    line = "don't  stop.  now"
    assert Tokenizer("whitespace").split(line) == ["don't", "stop.", "now"]
    assert Tokenizer("ptb").split(line, pretokenized=True) == ["don't", "stop.", "now"]


def test_jieba_splits_chinese_into_words():
    text = "爱真的需要勇气"
    words = Tokenizer("jieba").split(text)
    assert len(words) >= 3
    assert "".join(words) == text
    assert all(w.strip() == w and w for w in words)


def test_jieba_drops_whitespace_tokens():
    words = Tokenizer("jieba").split("  我 爱 北京 \n")
    assert words and all(w.strip() for w in words)
    assert "".join(words) == "我爱北京"


MIXED = "我爱кошка和 hello world，Ελλάδα 123 naïve的e\u0301té"


def test_jieba_keeps_a_word_of_another_script_whole():
    """jieba knows Chinese and ASCII only: it cut кошка into five one-letter tokens, naïve into three."""
    words = Tokenizer("jieba").split(MIXED)
    assert words == ["我", "爱", "кошка", "和", "hello", "world", "，", "Ελλάδα", "123", "naïve", "的", "e\u0301té"]
    assert Tokenizer("jieba").split("iPhone6s和N年 well-known") == ["iPhone6s", "和", "N年", "well", "-", "known"]


def test_a_jieba_model_reads_a_word_of_another_script_whole():
    words = Tokenizer("jieba").split(MIXED)
    normalized = [Tokenizer("jieba").normalize(w) for w in words]
    units, starts = Tokenizer("jieba").reading(normalized)  # (--pretokenized: cut by jieba again)
    assert units == normalized and starts == list(range(len(words)))
    assert Tokenizer("jieba").reading(["我", "кошка", "和"]) == (["我", "кошка", "和"], [0, 1, 2])


def test_a_character_model_reads_cjk_characters_and_the_runs_between_them_whole():
    chars = Tokenizer("jieba", characters=True)
    assert chars.units("我кошка北京") == ["我", "кошка", "北", "京"]
    assert chars.units("n年") == ["n", "年"] and chars.units("кошка") == ["кошка"]
    assert chars.reading(["我кошка", "北京"]) == (["我", "кошка", "北", "京"], [0, 2])


def test_unknown_tokenizer_kind():
    with pytest.raises(ValueError):
        Tokenizer("spacy")


def test_default_tokenizers():
    assert default_tokenizer("en").kind == "ptb"
    assert default_tokenizer("zh").kind == "jieba"
    assert default_tokenizer("de").kind == "unicode"
    assert default_tokenizer("ru").kind == "unicode"


# --- the "unicode" tokenizer (languages without rules of their own) --------------------------------

UNICODE_CASES = [
    ("Die Preise wurden um 3,5 % erhöht. Das gilt z.B. für Dr. Müller.",
     ["Die", "Preise", "wurden", "um", "3,5", "%", "erhöht", ".", "Das", "gilt", "z.B.", "für", "Dr.", "Müller",
      "."]),
    ("„Hallo“, sagte er – und ging (langsam) nach Hause...",
     ["„", "Hallo", "“", ",", "sagte", "er", "–", "und", "ging", "(", "langsam", ")", "nach", "Hause", "..."]),
    ("L'homme qu'il a vu aujourd'hui est M. Dupont, n'est-ce pas ?",
     ["L'", "homme", "qu'", "il", "a", "vu", "aujourd'hui", "est", "M.", "Dupont", ",", "n'", "est-ce", "pas", "?"]),
    ("« Bonjour ! » dit-elle. C’est l’été.",
     ["«", "Bonjour", "!", "»", "dit-elle", ".", "C’", "est", "l’", "été", "."]),
    ("Ele disse-lhe que não: o Sr. Silva bebeu 1.000 copos d'água.",
     ["Ele", "disse-lhe", "que", "não", ":", "o", "Sr.", "Silva", "bebeu", "1.000", "copos", "d'", "água", "."]),
    ("Он сказал: «Привет!» — и ушёл, т.е. из-за дождя.",
     ["Он", "сказал", ":", "«", "Привет", "!", "»", "—", "и", "ушёл", ",", "т.е.", "из-за", "дождя", "."]),
    ("В 2020 г. цены выросли на 3,5%.", ["В", "2020", "г.", "цены", "выросли", "на", "3,5", "%", "."]),
]


@pytest.mark.parametrize("line, tokens", UNICODE_CASES, ids=["de", "de-quotes", "fr", "fr-quotes", "pt", "ru",
                                                             "ru-numbers"])
def test_unicode_tokenizer_splits_punctuation_from_words(line, tokens):
    assert Tokenizer("unicode").split(line) == tokens


def test_unicode_tokenizer_splits_a_final_period_and_keeps_words_whole():
    split = Tokenizer("unicode").split
    assert split("Es war Plan B.") == ["Es", "war", "Plan", "B", "."]  # an initial only before another word
    assert split("See the U.S. Dr. Who etc.") == ["See", "the", "U.S.", "Dr.", "Who", "etc", "."]
    assert split("geht's COVID-19 2020er") == ["geht's", "COVID-19", "2020er"]  # no elision: kept whole
    assert split("हिन्दी भाषा।") == ["हिन्दी", "भाषा", "।"]  # combining marks stay inside words
    assert split("the <unk> sat") == ["the", "<unk>", "sat"]
    assert split("dell'anno") == ["dell'", "anno"]


def test_unicode_tokenizer_keeps_armenian_and_hebrew_words_whole_across_the_marks_written_inside_them():
    split = Tokenizer("unicode").split
    assert split("Ինչո՞ւ ես եկել։") == ["Ինչո՞ւ", "ես", "եկել", "։"]  # ՞ asks, over the word's vowel
    assert split("Նա՝ մեր ընկերը, հայ֊ռուսական") == ["Նա", "՝", "մեր", "ընկերը", ",", "հայ֊ռուսական"]  # ՝ is a comma
    assert split("חיילי צה״ל בבית־ספר.") == ["חיילי", "צה״ל", "בבית־ספר", "."]  # gershayim, and the maqaf (a hyphen)


def test_unicode_tokenizer_cuts_japanese_where_the_script_changes():
    """Japanese has no spaces: without the cuts a sentence would be one word."""
    split = Tokenizer("unicode").split
    assert split("私は本を読みました。") == ["私", "は", "本", "を", "読", "みました", "。"]
    assert split("学生たちはコーヒーを飲んだ") == ["学生", "たちは", "コーヒー", "を", "飲", "んだ"]  # ー stays in its word
    assert split("Tシャツ、すごーい") == ["T", "シャツ", "、", "すごーい"]
    assert split("韓國語를 배운다") == ["韓國語를", "배운다"]  # no kana: ideographs in a Korean word stay in it


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=60))
def test_unicode_tokens_are_the_line_without_its_spaces(line):
    """No character is lost, changed or moved, and no token is empty or holds a space (a byte order mark inside a
    line reads as a space, as issue 50 made it: it is in no word)."""
    tokens = Tokenizer("unicode").split(line)
    assert "".join(tokens) == "".join(line.replace("\ufeff", " ").split())
    assert all(token and not any(ch.isspace() for ch in token) for token in tokens)


def test_old_model_files_tokenize_as_before():
    """A file keeps its tokenizer: the bundled models (ptb, jieba) and a file trained with "whitespace"
    before "unicode" existed split exactly as they did."""
    from onlstm_cli.modelfile import read_archive
    from onlstm_cli.induction.models import resolve_model
    kinds = {name: read_archive(resolve_model(name))["tokenizer"] for name in ("en", "zh", "zh-st")}
    assert {name: t["kind"] for name, t in kinds.items()} == {"en": "ptb", "zh": "jieba", "zh-st": "jieba"}
    line = 'The cat sat. "Don\'t go," she said (quietly)...'
    # the Treebank rules, which split only a final period, with the quotes as written
    assert Tokenizer(**kinds["en"]).split(line) == ["The", "cat", "sat.", '"', "Do", "n't", "go", ",", '"', "she",
                                                     "said", "(", "quietly", ")", "..."]
    assert Tokenizer(**kinds["zh"]).split("爱真的需要勇气。") == ["爱", "真的", "需要", "勇气", "。"]
    old = Tokenizer(**{"kind": "whitespace", "lowercase": True, "numbers_to_n": True, "nfkc": True,
                       "characters": False})
    assert old.split("Die Preise wurden erhöht.") == ["Die", "Preise", "wurden", "erhöht."]
    assert Tokenizer(**Tokenizer("unicode").to_dict()).kind == "unicode"  # a new file records the new kind


def test_has_cjk():
    assert has_cjk("hello 爱")
    assert not has_cjk("hello world ，。")  # full-width punctuation alone is not CJK text


# --- normalization --------------------------------------------------------------------------------

@pytest.mark.parametrize("number", ["29", "3.5", "1,000", "-5", "12:30", "50%", "１２"])
def test_numbers_become_n(number):
    assert Tokenizer().normalize(number) == "N"


@pytest.mark.parametrize("word", ["1990s", "a1", "-", ".", "N.Y.", "n't"])
def test_non_numbers_stay(word):
    assert Tokenizer().normalize(word) == word.lower()


def test_normalize_lowercases():
    assert Tokenizer().normalize("The") == "the"
    assert Tokenizer(lowercase=False).normalize("The") == "The"


def test_a_dotted_capital_i_lowercases_to_the_word_typed_in_lower_case():
    normalize = Tokenizer("unicode").normalize
    assert normalize("İstanbul") == normalize("istanbul") == "istanbul" and normalize("İKİ") == "iki"
    assert normalize("Işık") == "işık"  # (the dotless I keeps Python's lower case: no language is assumed)


def test_normalize_nfkc_full_width():
    assert Tokenizer(numbers_to_n=False).normalize("２９") == "29"
    assert Tokenizer().normalize("Ｈｅｌｌｏ") == "hello"
    assert Tokenizer(nfkc=False, numbers_to_n=False, lowercase=False).normalize("２９") == "２９"


def test_numbers_to_n_can_be_off():
    assert Tokenizer(numbers_to_n=False).normalize("1,000") == "1,000"


def test_special_tokens_are_not_normalized():
    t = Tokenizer()
    assert t.normalize("<unk>") == "<unk>"
    assert t.normalize("<UNK>") == "<UNK>"  # left exactly as written, not lower-cased


def test_tokenizer_dict_round_trip():
    t = Tokenizer("jieba", lowercase=False, numbers_to_n=False, nfkc=True)
    assert Tokenizer(**t.to_dict()) == t


# --- punctuation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("token", [",", ".", "--", "''", "``", "。", "，", "$", "!?", "-"])
def test_is_punctuation_true(token):
    assert is_punctuation(token)


@pytest.mark.parametrize("token", ["", "a", "n't", "N", "3", "-LRB-", "爱", "a.", "<unk>"])
def test_is_punctuation_false(token):
    assert not is_punctuation(token)


# --- vocabulary ---------------------------------------------------------------------------------------

COUNTS = Counter({"the": 10, "cat": 5, "dog": 5, "sat": 3, "mat": 1, "on": 2})


def test_special_ids():
    v = Vocabulary.build(COUNTS)
    assert v.itos[0] == UNK and v.itos[1] == EOS
    assert v.stoi[UNK] == v.unk_id == 0
    assert v.stoi[EOS] == v.eos_id == 1
    assert len(v) == len(COUNTS) + 2


def test_most_frequent_first_ties_alphabetical():
    v = Vocabulary.build(COUNTS)
    assert v.itos[2:] == ["the", "cat", "dog", "sat", "on", "mat"]


def test_build_does_not_depend_on_insertion_order():
    reordered = Counter(dict(reversed(list(COUNTS.items()))))
    assert Vocabulary.build(reordered).itos == Vocabulary.build(COUNTS).itos


@pytest.mark.parametrize("max_size", [2, 3, 5, 8, 100])
def test_max_size_counts_the_specials(max_size):
    v = Vocabulary.build(COUNTS, max_size=max_size)
    assert len(v) == min(max_size, len(COUNTS) + 2)
    assert v.itos[:2] == [UNK, EOS]
    if max_size >= 3:
        assert "the" in v


def test_min_freq():
    v = Vocabulary.build(COUNTS, min_freq=3)
    assert set(v.itos[2:]) == {"the", "cat", "dog", "sat"}
    assert "mat" not in v and "on" not in v


def test_specials_in_counts_are_not_duplicated():
    v = Vocabulary.build(Counter({"<unk>": 50, "<eos>": 40, "a": 1}))
    assert v.itos == [UNK, EOS, "a"]


def test_encode_unknown_words_to_unk():
    v = Vocabulary.build(COUNTS)
    ids = v.encode(["the", "zebra", "cat", "<unk>"])
    assert ids[0] == v.stoi["the"] and ids[2] == v.stoi["cat"]
    assert ids[1] == 0 and ids[3] == 0
    assert "zebra" not in v


def test_duplicates_rejected():
    with pytest.raises(ValueError):
        Vocabulary(["a", "b", "a"])


def test_a_character_tokenizer_reads_cjk_words_a_character_at_a_time(tmp_path):
    from onlstm_cli.text.corpus import iter_sentences
    chars = Tokenizer("jieba", characters=True)
    assert chars.units("北京") == ["北", "京"]
    assert chars.units("N") == ["N"] and chars.units("abc") == ["abc"]  # only CJK words are cut
    assert Tokenizer("jieba").units("北京") == ["北京"]
    text = tmp_path / "zh.txt"
    text.write_text("我爱北京，abc 2024年\n", encoding="utf-8")
    words = next(iter_sentences(text, Tokenizer("jieba")))
    units = next(iter_sentences(text, chars))
    assert "".join(units) == "".join(words) and all(len(u) == 1 or not has_cjk(u) for u in units)
    assert len(units) > len(words)
    assert Tokenizer(**chars.to_dict()) == chars  # stored in the model file


def test_a_jieba_model_reads_a_sentence_cut_by_jieba_whatever_its_segmentation():
    jieba_words = Tokenizer("jieba").split("我们爱北京天安门")
    assert "北京" in jieba_words  # what jieba makes of it, as in a jieba model's training text
    # a treebank's segmentation: finer here, coarser there
    words = ["我们", "爱", "北", "京", "天安门"]
    units, starts = Tokenizer("jieba").reading(words)
    assert units == jieba_words
    # each word points to the unit that begins where it begins; 京 begins inside 北京
    assert starts == [0, 1, units.index("北京"), None, units.index("天安门")]
    coarser = ["我们爱", "北京天安门"]
    assert Tokenizer("jieba").reading(coarser) == (jieba_words, [0, units.index("北京")])
    # Latin words keep the space between them; a number (N once normalized) is cut as a number, not as
    # the letter N that jieba joins to the character after it
    units, starts = Tokenizer("jieba").reading(["iphone", "pro", "手机"])
    assert units[:2] == ["iphone", "pro"] and starts[:2] == [0, 1] and "".join(units) == "iphonepro手机"
    assert Tokenizer("jieba").reading(["我们", "N", "年"]) == (["我们", "N", "年"], [0, 1, 2])
    assert Tokenizer("jieba").reading([]) == ([], [])
    # other models read the words as they are; a character model, each CJK word a character at a time
    assert Tokenizer("ptb").reading(["do", "n't"]) == (["do", "n't"], [0, 1])
    assert Tokenizer("jieba", characters=True).reading(["北京", "N", "年"]) == (["北", "京", "N", "年"], [0, 2, 3])


def test_the_share_of_letters_in_phrase_long_tokens():
    from collections import Counter

    from onlstm_cli.text.corpus import LONG_TOKEN, unspaced_share
    run = "ก" * LONG_TOKEN
    assert unspaced_share(Counter({run: 2, "abcde": 10})) == 0.5
    assert unspaced_share(Counter({"Donaudampfschifffahrt": 3, "ist": 1})) == 0  # a long compound is no phrase
    assert unspaced_share(Counter()) == 0


@pytest.mark.parametrize("kind", ["ptb", "unicode", "jieba", "whitespace"])
def test_a_byte_order_mark_inside_a_text_separates_tokens_and_is_in_none(kind):
    tokens = Tokenizer(kind).split("cat\ufeffdog \ufeffbird")
    assert tokens == ["cat", "dog", "bird"]
    assert Tokenizer(kind).split("\ufeffcat dog", pretokenized=True) == ["cat", "dog"]


def test_a_number_is_told_from_a_run_of_digits_without_an_end_in_linear_time():
    # one `\d` between two classes with digits backtracked over the run: 100,000 digits took minutes
    digits = "1" * 100_000
    assert Tokenizer().normalize(digits) == "N"
    assert Tokenizer().normalize(digits + "x") == digits + "x"


@pytest.mark.parametrize("quote", ['"', "''", "“"])
def test_quotes_come_back_as_written_in_linear_time(quote):
    # each quote token was searched for along the rest of the line: 150,000 of them took two minutes
    line = f"{quote} " * 150_000
    assert Tokenizer().split(line) == [quote] * 150_000
