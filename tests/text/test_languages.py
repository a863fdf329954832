"""Per-language defaults, and the language `--lang auto` takes by the text's script (text/languages.py)."""
from __future__ import annotations

import pytest

from onlstm_cli.errors import UserError
from onlstm_cli.text.languages import assumed_note, check_lang, default_split, default_tokenizer, lang_of_text


@pytest.mark.parametrize("text, lang", [
    ("the cat sat on the mat", "en"), ("Bu kitap çok güzel", "en"), ("爱真的需要勇气", "zh"),
    ("我爱 New York", "zh"), ("mixed text with 中文", "zh"), ("кошка сидит на окне", "und-Cyrl"), ("日本語のテキストです", "und-Kana"),
    ("한국어 문장입니다", "und-Hang"), ("美 대통령이 서울을 방문했다", "und-Hang"), ("韓國語 한", "zh"), ("नमस्ते दुनिया", "und-Deva"), ("ภาษาไทย", "und-Thai"),
    ("مرحبا بالعالم", "und-Arab"), ("Καλημέρα κόσμε", "und-Grek"), ("", "en"), ("123 !!", "en"),
    # scripts that were once taken as English (no letter of a listed script: the PTB rules, silently)
    ("Ես գիրք եմ կարդում։", "und-Armn"), ("მე ვკითხულობ წიგნს.", "und-Geor"), ("நான் புத்தகம் படிக்கிறேன்.", "und-Taml"),
    ("ខ្ញុំអានសៀវភៅ", "und-Khmr"), ("আমি বই পড়ি।", "und-Beng"), ("ሰላም ነው።", "und-Ethi"), ("ᏣᎳᎩ", "und-Cher"),
    ("ꦧꦱꦗꦮ ꦲꦤ", "und-Zzzz"),  # Javanese, a script not listed: still not English
    ("ɐ ʃɪp", "en"), ("ＡＢＣ «x»", "en")])  # IPA and full-width letters are Latin
def test_auto_takes_the_language_of_the_texts_script(text, lang):
    assert lang_of_text(text) == lang


def test_a_line_is_counted_by_script_letter_by_letter():
    from onlstm_cli.text.languages import script_counts
    assert script_counts("美 대통령이 — 12 Seoul ꦧꦱ") == {"Hani": 1, "Hang": 4, "Latn": 5, "Zzzz": 2}
    assert script_counts("12 — !!") == {}


def test_a_script_without_rules_of_its_own_is_read_by_unicode_class():
    assert default_tokenizer("und-Cyrl").kind == "unicode" and default_tokenizer("tr").kind == "unicode"
    assert default_tokenizer("en").kind == "ptb" and default_tokenizer("zh").kind == "jieba"
    assert default_split("zh") == "symmetric" and default_split("und-Kana") == "paper"


def test_what_was_assumed_is_said_and_how_to_change_it():
    assert "English rules" in assumed_note("en", given=False) and "--lang" in assumed_note("en", given=False)
    assert "Cyrillic script" in assumed_note("und-Cyrl", given=False)
    assert assumed_note("und-Zzzz", given=False).startswith("the text is in non-Latin script: words are read by")
    assert assumed_note("tr", given=True) is None


@pytest.mark.parametrize("code", ["", " ", "e", "english language", "zh_CN", "../x", "\x1b]0;x"])
def test_a_bad_language_code_is_refused_in_one_line(code):
    with pytest.raises(UserError, match="expected a language code"):
        check_lang(code)
    assert check_lang("pt-BR") == "pt-BR" and check_lang("und-Cyrl") == "und-Cyrl"


def test_a_corpus_is_taken_in_the_script_of_most_of_its_lines_and_a_mix_is_said(tmp_path):
    from onlstm_cli.text.languages import detect_lang
    corpus = tmp_path / "tr.txt"
    corpus.write_text("Bu kitap çok güzel .\n" * 8 + "Pekin'e 北京 denir .\n" + "12 34\n" + "Ali okula gitti .\n")
    lang, mix = detect_lang(corpus)
    assert lang == "en" and mix == {"Latn": 0.9, "Hani": 0.1}  # one line of ideographs does not make it Chinese
    note = assumed_note(lang, given=False, mix=mix)
    assert note.startswith("most of the text is in Latin script") and note.endswith("Latin 90%, CJK 10%)")
    corpus.write_text("кошка сидит .\n" * 3 + "the cat sat .\n" * 2)
    assert detect_lang(corpus) == ("und-Cyrl", {"Cyrl": 0.6, "Latn": 0.4})
    corpus.write_text("кошка сидит .\n")
    lang, mix = detect_lang(corpus)
    assert assumed_note(lang, given=False, mix=mix).startswith("the text is in Cyrillic script")
    corpus.write_text("")
    assert detect_lang(corpus) == ("en", {})


@pytest.mark.parametrize("code, tokenizer, split", [
    ("zh-CN", "jieba", "symmetric"), ("zh-Hans", "jieba", "symmetric"), ("ZH-tw", "jieba", "symmetric"),
    ("zh-Hant-TW", "jieba", "symmetric"), ("EN", "ptb", "paper"), ("en-GB", "ptb", "paper"),
    ("pt-BR", "unicode", "paper"), ("und-Hani", "unicode", "paper")])
def test_a_language_tag_is_read_by_its_language_subtag(code, tokenizer, split):
    # --lang zh-CN used to fall back to the unicode tokenizer: a Chinese line became a "word" a run of characters
    assert check_lang(code) == code
    assert default_tokenizer(code).kind == tokenizer and default_split(code) == split
