"""How `onlstm --help` writes options and arguments: flags without a `<bool>` placeholder, arguments as
NAME in capitals (`onlstm train [OPTIONS] CORPUS`), a repeated option's type as that of one value. Newer
typer writes `<bool>`, `{corpus}` and `<list[Path]>`; the app uses PlainGroup to write them as click does."""
from __future__ import annotations

from pathlib import PurePath
from typing import Optional, get_args

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption


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


class PlainCommand(TyperCommand):
    def get_params(self, ctx):
        return plain_params(super().get_params(ctx))


class PlainGroup(TyperGroup):
    """The `onlstm` group: its commands' help and usage lines use PlainOption and PlainArgument."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            if type(command) is TyperCommand:
                command.__class__ = PlainCommand

    def get_params(self, ctx):
        return plain_params(super().get_params(ctx))
