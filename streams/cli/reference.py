"""The CLI reference page of the docs (`docs/cli.md`), generated from the command parser itself:
`python -m streams.cli.reference > docs/cli.md` (`make docs-reference`); a test fails when the page
differs from what this prints, so a new command or option cannot be left out of the docs."""

from __future__ import annotations

import inspect
from typing import Any

import typer.main

import streams.cli


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _default(param: Any) -> str:
    if getattr(param, "is_flag", False) and param.secondary_opts:
        return f"`{param.opts[0] if param.default else param.secondary_opts[0]}`"
    if param.default is None or param.required:
        return ""
    return f"`{param.default}`"


def _command(lines: list[str], path: str, command: Any) -> None:
    sub = getattr(command, "commands", None)
    if sub:
        for name in sorted(sub):
            _command(lines, f"{path} {name}", sub[name])
        return
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    usage = " ".join([path, "[OPTIONS]", *(f"{p.name.upper()}{'...' if p.nargs == -1 else ''}" for p in arguments)])
    lines += [f"## `{path}`", "", f"    {usage}", "", inspect.cleandoc(command.help or ""), ""]
    lines += ["| argument or option | default | meaning |", "|---|---|---|"]
    for p in command.params:
        if p.param_type_name == "argument":
            name = f"`{p.name.upper()}`"
        else:
            name = " / ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
        lines.append(f"| {name} | {_default(p)} | {_one_line(getattr(p, 'help', ''))} |")
    lines.append("")


def cli_markdown() -> str:
    """The whole page: the exit codes (the CLI module's docstring), then every command's usage, help and
    options, as the parser defines them."""
    group: Any = typer.main.get_command(streams.cli.app)
    doc = inspect.cleandoc(streams.cli.__doc__ or "")
    lines = ["# Command line reference", "",
             "Generated from the parser by `python -m streams.cli.reference` (`make docs-reference`); "
             "`neardup COMMAND --help` prints the same.", "",
             "## Exit codes", "", "The same for every command:", "", doc.split("\n\n", 2)[2], "",
             "## `neardup`", "", "    neardup [OPTIONS] COMMAND [ARGS]...", "",
             "| option | meaning |", "|---|---|"]
    for p in group.params:
        lines.append(f"| {' / '.join(f'`{o}`' for o in p.opts)} | {_one_line(getattr(p, 'help', ''))} |")
    lines.append("")
    for name in group.commands:
        _command(lines, f"neardup {name}", group.commands[name])
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(cli_markdown(), end="")
