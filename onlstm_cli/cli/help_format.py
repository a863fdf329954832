"""How `onlstm --help` writes options and arguments: flags without a `<bool>` placeholder, arguments as
NAME in capitals (`onlstm train [OPTIONS] CORPUS`), a repeated option's type as that of one value. Newer
typer writes `<bool>`, `{corpus}` and `<list[Path]>`; the app uses PlainGroup to write them as click does.

The pages are laid out by click, not by typer's rich tables: a rich table gives each of its columns (long
name, short name, negative flag, type, help) the width of its longest entry, which left the help text a
column of about 20 characters at 80 columns. Click writes an option longer than 30 characters on a line
of its own and wraps the help beside it at the terminal's width (at most 80)."""
from __future__ import annotations

from pathlib import PurePath
from typing import Optional, get_args

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

# In an option's help, stands for the bundled models' names (parser.BUNDLED_MODELS), filled in when the
# help is shown: importing the parser only then keeps every other start of `onlstm` as quick as it was.
BUNDLED_MODELS = "BUNDLED_MODELS"


def bundled_model_names() -> str:
    from onlstm_cli.induction.models import BUNDLED_MODELS as bundled
    return ", ".join(bundled)


def with_bundled_names(params: list) -> list:
    for param in params:
        if param.help and BUNDLED_MODELS in param.help:
            param.help = param.help.replace(BUNDLED_MODELS, bundled_model_names())
    return params


def element_type(param) -> Optional[str]:
    """`<path>` for a list of paths (newer typer writes `<list[Path]>`), None for other types."""
    descriptor = param.type_descriptor
    if not descriptor.is_list or descriptor.is_choice:
        return None
    element = (get_args(descriptor.annotation) or (str,))[0]
    if isinstance(element, type) and issubclass(element, PurePath):
        return "<path>"
    return f"<{param._bare_type(element)}>"


class PlainOption(TyperOption):
    """An option whose help shows no value placeholder when it takes no value (a flag; newer typer writes
    `<bool>` beside every flag), and the type of one value for an option that may be repeated."""

    def display_type_rich(self, ctx):
        if self.is_flag or self.count:
            return None
        return super().display_type_rich(ctx)

    def display_type(self, ctx) -> str:
        return element_type(self) or super().display_type(ctx)


class PlainArgument(TyperArgument):
    """An argument written as its NAME in capitals, as click does: `onlstm train [OPTIONS] CORPUS`,
    `onlstm parse [OPTIONS] [FILES]...` (newer typer writes `{corpus}` and `<list[Path]>`)."""

    @property
    def display_name_raw(self) -> str:
        return self.metavar if self.metavar is not None else self.name.upper()

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")

    def display_type(self, ctx) -> str:
        return element_type(self) or super().display_type(ctx)  # FILES... <path>


def plain_params(params: list) -> list:
    """The parameters, each a PlainOption or PlainArgument (the same objects: only their help changes)."""
    for param in params:
        if type(param) is TyperOption:
            param.__class__ = PlainOption
        elif type(param) is TyperArgument:
            param.__class__ = PlainArgument
    return params


def help_sections(params: list, ctx) -> dict[str, list]:
    """Each parameter's help record under its section's title: "Arguments" first, then each option's panel
    (`rich_help_panel`, options.command_of) in the order the panels first come, and "Options" for an option in
    none (--help), each where its first option comes."""
    sections: dict[str, list] = {"Arguments": []}
    for param in params:
        record = param.get_help_record(ctx)
        if record is not None:
            title = "Arguments" if param.param_type_name == "argument" else \
                getattr(param, "rich_help_panel", None) or "Options"
            sections.setdefault(title, []).append(record)
    return {title: records for title, records in sections.items() if records}


class PlainCommand(TyperCommand):
    def get_params(self, ctx):
        return plain_params(super().get_params(ctx))

    def format_options(self, ctx, formatter):
        """Click's layout, a section a help panel (typer's rich tables would show them, but not in this layout)."""
        for title, records in help_sections(self.get_params(ctx), ctx).items():
            with formatter.section(title):
                formatter.write_dl(records)

    def format_help(self, ctx, formatter):
        with_bundled_names(self.params)
        super(TyperCommand, self).format_help(ctx, formatter)  # click's layout (see above), not typer's


class PlainGroup(TyperGroup):
    """The `onlstm` group: its commands' help and usage lines use PlainOption and PlainArgument, and all
    the help pages click's layout."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            if type(command) is TyperCommand:
                command.__class__ = PlainCommand

    def get_params(self, ctx):
        return plain_params(super().get_params(ctx))

    def format_help(self, ctx, formatter):
        super(TyperGroup, self).format_help(ctx, formatter)
