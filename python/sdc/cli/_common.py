"""What several commands share: argument types, the options of a dbt target, the PostgreSQL target of a
command that reads one. Command modules import this and the API, never each other."""

from __future__ import annotations

import argparse
from contextlib import AbstractContextManager
from typing import Callable

from sdc.errors import SdcError


def split(text: str) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


def scalar(values: list):
    return values[0] if len(values) == 1 else tuple(values)


def floats(text: str) -> list[float]:
    try:
        return [float(x) for x in split(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or comma-separated numbers, got {text!r}") from None


def ints(text: str) -> list[int]:
    try:
        return [int(x) for x in split(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or comma-separated ones, got {text!r}") from None


def booleans(text: str) -> list[bool]:
    words = {"true": True, "t": True, "1": True, "false": False, "f": False, "0": False}
    try:
        return [words[x.lower()] for x in split(text)]
    except KeyError:
        raise argparse.ArgumentTypeError(f"expected true or false (or a comma-separated list), got {text!r}") from None


def digits(text: str) -> int | None:
    """--digits: a whole number, or 'none' (unrounded); not given, 'default' (the rule of sdc.ckm._inputs.rounded)."""
    if text.strip().lower() == "none":
        return None
    if text == "default":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number or 'none', got {text!r}") from None


def add_profile_options(group, prefix: str) -> None:
    """--profile, --project-dir and --profiles-dir of a command with --target; unset, they are found as dbt finds
    them (sdc.warehouse.profiles.find_profile)."""
    group.add_argument("--profile", help=f"{prefix}the dbt profile (the name in profiles.yml; default: profile: in "
                       "the dbt project's dbt_project.yml)")
    group.add_argument("--project-dir", metavar="DIR",
                       help=f"{prefix}the dbt project whose dbt_project.yml names the profile (default as dbt: "
                       "$DBT_PROJECT_DIR, else the working directory or its nearest parent with dbt_project.yml)")
    group.add_argument("--profiles-dir", help=f"{prefix}folder of profiles.yml (default as dbt: $DBT_PROFILES_DIR, "
                       "else the working directory if it holds profiles.yml, else ~/.dbt)")


def add_publication_schema_option(group) -> None:
    group.add_argument("--publication-schema", metavar="SCHEMA",
                       help="the schema grant_published publishes to (default: var sdc_publication_schema of the "
                       "project's dbt_project.yml, else sdc_publication)")


def profile(args: argparse.Namespace) -> tuple:
    """(profiles_dir, profile) of --profile, --project-dir and --profiles-dir."""
    from sdc.warehouse.profiles import find_profile

    return find_profile(args.profile, args.project_dir, args.profiles_dir)


def postgres_target(args: argparse.Namespace, refusal: Callable[[str], str]) -> AbstractContextManager:
    """The connection to --target, refused with ``refusal(its type)`` unless it is PostgreSQL."""
    from sdc.warehouse.profiles import connect_target, read_target

    profiles_dir, name = profile(args)
    kind = read_target(profiles_dir, name, args.target)["type"]
    if kind != "postgres":
        raise SdcError(refusal(kind))
    return connect_target(profiles_dir, name, args.target)
