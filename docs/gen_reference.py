"""Write the reference pages of the documentation from the source, so that they cannot drift from it:

    python docs/gen_reference.py docs/reference

- cli.md: every command, sub-command and option of ``sdc``, from the argument parser (sdc.cli.build_parser);
- macros.md: every public dbt macro with its arguments, from the ``macros:`` YAML beside the macros;
- python.md: every public Python name (the ``__all__`` of the API packages) with its signature and docstring,
  whose examples run as doctests (tests/test_api_examples.py).

tests/test_docs_reference.py checks that each command, option, public macro and public name has its entry.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
# The packages whose __all__ is the public Python API, in the order of the layers (methods, then the layers
# around them).
API_PACKAGES = ("sdc.ptable", "sdc.ckm", "sdc.suppression", "sdc.microaggregation", "sdc.warehouse", "sdc.release")


# ---- CLI ---------------------------------------------------------------------------------------------------


def cli_parser() -> argparse.ArgumentParser:
    from sdc import cli

    return cli.build_parser()


def sub_commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-commands of ``parser`` by name (aliases left out), in the order the parser lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: action.choices[choice.dest] for choice in action._choices_actions}
    return {}


def commands(parser: argparse.ArgumentParser, prefix: str = "sdc") -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command as (its full name, its parser): ``sdc ptable``, ``sdc release diff``, ..."""
    found = []
    for name, sub in sub_commands(parser).items():
        full = f"{prefix} {name}"
        found.append((full, sub))
        found.extend(commands(sub, full))
    return found


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The documented arguments of one command: its options and positionals, not --help nor sub-commands."""
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and a.help != argparse.SUPPRESS]


def option_name(action: argparse.Action) -> str:
    return ", ".join(action.option_strings) if action.option_strings else action.dest


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _option_row(action: argparse.Action) -> str:
    name = option_name(action)
    if action.option_strings and action.nargs != 0:
        name += f" {action.metavar or action.dest.upper()}"
    details = []
    if action.choices is not None and not isinstance(action.choices, dict):
        details.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    if action.required:
        details.append("required")
    help_text = (action.help or "") % {"default": action.default, "prog": ""} if action.help else ""
    if (action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
            and "default" not in help_text):
        details.append(f"default `{action.default}`")
    extra = f" ({'; '.join(details)})" if details else ""
    return f"| `{_cell(name)}` | {_cell(help_text + extra)} |"


def cli_page() -> str:
    parser = cli_parser()
    lines = ["# CLI reference", "",
             "Generated from the argument parser of `sdc` (`sdc <command> --help` prints the same).", "",
             f"{parser.description}", ""]
    for full, sub in commands(parser):
        lines += [f"## `{full}`", "", sub.description or sub.format_usage(), "",
                  "```text", sub.format_usage().strip(), "```", ""]
        rows = [_option_row(a) for a in options(sub)]
        if rows:
            lines += ["| option | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)


# ---- dbt macros --------------------------------------------------------------------------------------------


def macro_entries() -> list[dict]:
    """The ``macros:`` entries of every YAML file under macros/, by file and order."""
    entries = []
    for path in sorted((REPO / "macros").rglob("*.yml")):
        document = yaml.safe_load(path.read_text()) or {}
        for entry in document.get("macros", []):
            entries.append(dict(entry, file=str(path.relative_to(REPO))))
    return entries


def macros_page() -> str:
    lines = ["# dbt macro reference", "",
             "Generated from the `macros:` YAML beside the macros (`macros/**/*.yml`); call them as "
             "`{{ sdc.<name>(...) }}` from your own project.", ""]
    by_folder: dict[str, list[dict]] = {}
    for entry in macro_entries():
        by_folder.setdefault(Path(entry["file"]).parent.name, []).append(entry)
    for folder, entries in by_folder.items():
        lines += [f"## {folder}", ""]
        for entry in entries:
            arguments = entry.get("arguments") or []
            name = entry["name"]
            if name.startswith("test_"):  # dbt's name for the macro of the generic data test after the prefix
                name = name.removeprefix("test_")
                others = ", ".join(f"{a['name']}: ..." for a in arguments if a["name"] not in ("model", "column_name"))
                usage = f"`data_tests: [sdc.{name}]`" + (f" (with `arguments: {{{others}}}`)" if others else "")
                usage = f"A generic data test: on a model, {usage}."
            else:
                usage = f"`{{{{ sdc.{name}({', '.join(a['name'] for a in arguments)}) }}}}`"
            lines += [f"### `{name}`", "", usage, "", textwrap.dedent(entry.get("description", "")).strip(), ""]
            if arguments:
                lines += ["| argument | type | meaning |", "|---|---|---|"]
                lines += [f"| `{a['name']}` | {_cell(a.get('type', ''))} | {_cell(a.get('description', ''))} |"
                          for a in arguments]
                lines.append("")
    return "\n".join(lines)


# ---- Python API --------------------------------------------------------------------------------------------


def public_names() -> list[tuple[str, object]]:
    """(``package.name``, object) for each name in the ``__all__`` of the API packages."""
    found = []
    for package in API_PACKAGES:
        module = importlib.import_module(package)
        found += [(f"{package}.{name}", getattr(module, name)) for name in module.__all__]
    return found


def docstring_markdown(doc: str) -> str:
    """A docstring as Markdown: its prose as text, its doctest examples as code blocks."""
    out, example = [], []
    for line in inspect.cleandoc(doc).splitlines() + [""]:
        if line.lstrip().startswith(">>>") or (example and line.strip()):
            example.append(line)
            continue
        if example:
            out += ["", "```pycon", *textwrap.dedent("\n".join(example)).splitlines(), "```", ""]
            example = []
        line = re.sub(r"``([^`]+)``", r"`\1`", line)
        # a parameter list as the docstrings write it ("name   what it is"): one item each
        line = re.sub(r"^(\w+)\s{2,}(\S.*)$", r"- `\1`: \2", line)
        out.append(line)
    return "\n".join(out).strip()


def _signature(obj) -> str:
    """The signature as the source writes it (annotations are text under ``from __future__ import annotations``)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    parts, star = [], False
    for p in signature.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        star = star or p.kind is p.VAR_POSITIONAL
        if p.annotation is not p.empty:
            text += f": {p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}" if p.annotation is not p.empty else f"={p.default!r}"
        parts.append(text)
    result = f"({', '.join(parts)})"
    if signature.return_annotation is not signature.empty:
        annotation = signature.return_annotation
        result += f" -> {annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)}"
    return result


def python_page() -> str:
    lines = ["# Python API reference", "",
             "Generated from the docstrings of the public names (the `__all__` of each package); every example "
             "runs as a test.", ""]
    current = None
    for full, obj in public_names():
        package, name = full.rsplit(".", 1)
        if package != current:
            current = package
            summary = (importlib.import_module(package).__doc__ or "").strip().split("\n\n")[0]
            lines += [f"## `{package}`", "", " ".join(summary.split()), ""]
        kind = "class " if inspect.isclass(obj) else ""
        lines += [f"### `{full}`", "", "```python", f"{kind}{name}{_signature(obj)}", "```", "",
                  docstring_markdown(obj.__doc__ or ""), ""]
    return "\n".join(lines)


PAGES = {"cli.md": cli_page, "macros.md": macros_page, "python.md": python_page}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python docs/gen_reference.py OUT_FOLDER", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, page in PAGES.items():
        (out / name).write_text(page() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
