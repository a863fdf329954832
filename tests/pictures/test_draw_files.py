"""Writing pictures and report pages safely (`parse -f svg --out-dir`, `evaluate --html`), the report's
options, and the warning about a missing CJK font (onlstm_cli/pictures/picture_files.py)."""
from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from onlstm_cli.pictures import picture_files
from onlstm_cli.pictures.picture_files import write_svgs
from onlstm_cli.errors import OnlstmError
from onlstm_cli.trees import build_tree

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))  # test_cli's folder, run alone or not
from test_cli import run  # noqa: E402  the CLI through typer's runner, never a traceback

GOLD = FIXTURES / "draw_gold.trees"
PRED_GOLD = FIXTURES / "cli_gold.trees"
PRED = FIXTURES / "cli_pred.trees"


def one_error_line(result) -> str:
    assert result.exit_code != 0, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    return lines[0]


def hidden_temp_files(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


@pytest.fixture
def evaluation_never_runs(monkeypatch):
    """Make scoring fail loudly: a test that uses this shows a check came before the evaluation."""
    def refuse(*args, **kwargs):
        raise AssertionError("the evaluation ran")
    # model_scores binds metrics.evaluate at its import: imported here first, so that the CLI's lazy import
    # cannot bind the refusal for the tests after this one; both names are patched, and both restored
    from onlstm_cli.evaluation import model_scores
    monkeypatch.setattr("onlstm_cli.evaluation.metrics.evaluate", refuse)
    monkeypatch.setattr(model_scores, "score", refuse)


# --- where pictures go ----------------------------------------------------------------------------

def test_out_dir_replaces_a_planted_link_instead_of_writing_through_it(runner, model, tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("keep me\n")
    pictures = tmp_path / "pics"
    pictures.mkdir()
    (pictures / "line-000001.svg").symlink_to(precious)
    result = run(runner, ["parse", "--model", model, "-f", "svg", "--out-dir", pictures], input="the cat sat\n")
    assert result.exit_code == 0, result.output
    assert precious.read_text() == "keep me\n"
    written = pictures / "line-000001.svg"
    assert not written.is_symlink() and written.read_text(encoding="utf-8").startswith("<svg")
    assert hidden_temp_files(pictures) == []


def test_out_dir_that_is_a_file_is_refused_in_one_line(runner, model, tmp_path):
    existing = tmp_path / "notes.txt"
    existing.write_text("mine\n")
    line = one_error_line(run(runner, ["parse", "--model", model, "-f", "svg", "--out-dir", existing],
                              input="the cat sat\n"))
    assert "is a file, not a folder" in line and "Errno" not in line
    assert existing.read_text() == "mine\n"


def full_disk(monkeypatch):
    """Every write fails as on a full disk at the moment the data must reach it (fsync)."""
    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", no_space)


def test_a_full_disk_leaves_no_empty_picture(monkeypatch, tmp_path):
    (tmp_path / "line-000001.svg").write_text("<svg>old</svg>\n")
    tokens = ["the", "cat", "sat"]
    full_disk(monkeypatch)
    with pytest.raises(OnlstmError, match="no space left"):
        write_svgs([(1, tokens, build_tree([1.0, 2.0, 0.5], tokens), [1.0, 2.0, 0.5])], tmp_path)
    assert (tmp_path / "line-000001.svg").read_text() == "<svg>old</svg>\n"  # the old picture, whole
    assert hidden_temp_files(tmp_path) == []


def test_a_full_disk_is_one_line_from_parse(runner, model, monkeypatch, tmp_path):
    full_disk(monkeypatch)
    line = one_error_line(run(runner, ["parse", "--model", model, "-f", "svg", "--out-dir", tmp_path / "pics"],
                              input="the cat sat\n"))
    assert "no space left" in line
    assert [p.name for p in (tmp_path / "pics").iterdir()] == []  # no 0-byte picture, no temporary file


# --- the report page ------------------------------------------------------------------------------

def test_html_link_is_refused_before_evaluating(runner, tmp_path, evaluation_never_runs):
    precious = tmp_path / "precious"
    precious.write_text("keep me\n")
    link = tmp_path / "link.html"
    link.symlink_to(precious)
    line = one_error_line(run(runner, ["evaluate", "--gold", PRED_GOLD, "--pred", PRED, "--html", link]))
    assert "symbolic link" in line
    assert precious.read_text() == "keep me\n" and link.is_symlink()


@pytest.mark.parametrize("where", ["under a file", "a folder", "missing folder"])
def test_unwritable_html_is_reported_before_evaluating(runner, tmp_path, evaluation_never_runs, where):
    (tmp_path / "file").write_text("x")
    html = {"under a file": tmp_path / "file" / "r.html", "a folder": tmp_path,
            "missing folder": tmp_path / "missing" / "r.html"}[where]
    line = one_error_line(run(runner, ["evaluate", "--gold", PRED_GOLD, "--pred", PRED, "--html", html]))
    assert "cannot write" in line and str(html) in line


def test_a_full_disk_keeps_the_old_report(runner, monkeypatch, tmp_path):
    report = tmp_path / "r.html"
    report.write_text("old report\n")
    full_disk(monkeypatch)
    line = one_error_line(run(runner, ["evaluate", "--gold", PRED_GOLD, "--pred", PRED, "--html", report]))
    assert "no space left" in line
    assert report.read_text() == "old report\n" and hidden_temp_files(tmp_path) == []


def examples_in(page: str) -> int:
    return page.count('<p class="caption">gold</p>')


def test_evaluate_examples_draws_as_many_as_asked(runner, model, tmp_path):
    report = tmp_path / "r.html"
    # draw_gold.trees has 5 sentences of 5 to 20 words, the lengths examples are chosen from
    for asked, drawn in ((None, 3), (4, 4), (0, 0), (50, 5)):
        args = ["evaluate", "--gold", GOLD, "--model", model, "--html", report]
        result = run(runner, args + ([] if asked is None else ["--examples", asked]))
        assert result.exit_code == 0, result.output
        assert examples_in(report.read_text(encoding="utf-8")) == drawn


def test_report_figures_are_rounded(runner, model, tmp_path):
    report = tmp_path / "r.html"
    assert run(runner, ["evaluate", "--gold", GOLD, "--model", model, "--html", report]).exit_code == 0
    meta = re.search(r'<p class="meta">(.*?)</p>', report.read_text(encoding="utf-8")).group(1)
    assert "validation perplexity: " in meta
    assert re.search(r"\d\.\d{3}", meta) is None, meta  # 115.79, not 115.79193019733425
    assert "split rule: paper" in meta  # an ON-LSTM's trees: its split rule is named


# --- fonts for Chinese ----------------------------------------------------------------------------

@pytest.fixture
def fresh_warning(monkeypatch):
    monkeypatch.setattr(picture_files, "_warned", False)


def fake_fc_list(folder: Path, families: str, marker: Path | None = None) -> Path:
    """An fc-list on PATH that prints the given families (and touches marker when run)."""
    folder.mkdir(exist_ok=True)
    script = folder / "fc-list"
    touch = f"touch '{marker}'\n" if marker else ""
    script.write_text(f"#!/bin/sh\n{touch}printf '%s' '{families}'\n")
    script.chmod(0o755)
    return folder


def test_cjk_font_check_asks_fontconfig(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(fake_fc_list(tmp_path / "none", "")))
    assert picture_files.cjk_font_missing()
    monkeypatch.setenv("PATH", str(fake_fc_list(tmp_path / "noto", "Noto Sans CJK SC\n")))
    assert not picture_files.cjk_font_missing()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no fc-list at all: nothing to say
    assert not picture_files.cjk_font_missing()


def test_the_warning_comes_once_and_only_for_cjk_text(monkeypatch, fresh_warning, capsys):
    asked = []
    monkeypatch.setattr(picture_files, "cjk_font_missing", lambda: asked.append(1) or True)
    assert not picture_files.warn_once_about_cjk(["the", "cat"])
    assert asked == []  # English text: fontconfig is not even asked
    assert picture_files.warn_once_about_cjk(["我", "爱", "北京"])
    assert not picture_files.warn_once_about_cjk(["天安门"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no CJK font" in err and "fonts-noto-cjk" in err


def test_parse_warns_once_when_chinese_has_no_font(runner, model, monkeypatch, fresh_warning):
    monkeypatch.setattr(picture_files, "cjk_font_missing", lambda: True)
    result = run(runner, ["parse", "--model", model, "-f", "html"], input="我 爱 北京\n天安门 广场\n")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("no CJK font") == 1


def test_no_warning_where_a_font_is_installed(runner, model, monkeypatch, fresh_warning):
    monkeypatch.setattr(picture_files, "cjk_font_missing", lambda: False)
    result = run(runner, ["parse", "--model", model, "-f", "svg"], input="我 爱 北京\n")
    assert result.exit_code == 0 and "font" not in result.stderr


def test_importing_asks_no_fonts(tmp_path):
    marker = tmp_path / "fc-list-ran"
    env = dict(os.environ, PATH=f"{fake_fc_list(tmp_path / 'bin', '', marker)}{os.pathsep}{os.environ['PATH']}")
    code = ("import onlstm_cli.pictures.draw, onlstm_cli.pictures.picture_files, onlstm_cli.pictures.report_page, "
            "onlstm_cli.cli.commands")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert not marker.exists()


# --- what the bars are, by the model ----------------------------------------------------------------

@pytest.mark.parametrize("model_name, says", [("zh-lm", "d_f"), ("zh-st", "split height"), ("zh", "split height")])
def test_the_legend_says_what_the_bars_of_each_model_are(runner, model_name, says):
    result = run(runner, ["parse", "--model", model_name, "--pretokenized", "-f", "svg"], input="我 真的 很 喜欢 北京 。\n")
    assert result.exit_code == 0, result.output
    legend = re.search(r'<text class="legend"[^>]*>([^<]*)<', result.stdout).group(1)
    assert says in legend


# --- what the picture formats say -------------------------------------------------------------------

def test_distances_with_a_picture_format_says_the_bars_are_them(runner, model):
    """Issue 41 item 15: --distances was silently ignored by -f svg and -f html."""
    for fmt in ("svg", "html"):
        result = run(runner, ["parse", "--model", model, "-f", fmt, "--distances"], input="the cat sat\n")
        assert result.exit_code == 0, result.output
        assert result.stderr.count("warning: --distances adds nothing") == 1, result.stderr
        assert "<svg" in result.stdout
    quiet = run(runner, ["parse", "--model", model, "-f", "svg"], input="the cat sat\n")
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


def test_several_svgs_into_one_stream_point_to_out_dir_once(runner, model, tmp_path):
    """Issue 41 item 15: three lines with -f svg gave three <svg> documents in one file, which no viewer
    opens, without a word. One line stays quiet: its output is one valid SVG."""
    lines = "the cat sat\n\na dog ran\nthe man saw a bird\n"
    for extra in ([], ["-o", tmp_path / "all.svg"]):
        result = run(runner, ["parse", "--model", model, "-f", "svg", *extra], input=lines)
        assert result.exit_code == 0, result.output
        warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
        assert len(warnings) == 1 and "--out-dir" in warnings[0] and "one <svg> document a line" in warnings[0]
    one = run(runner, ["parse", "--model", model, "-f", "svg"], input="the cat sat\n")
    assert one.exit_code == 0 and "warning" not in one.stderr
    assert one.stdout.count("<svg") == 1
