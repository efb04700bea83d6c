"""The build record of a relation, read from its comment: a JSON object under BUILD_RECORD_KEY that
macros/build_record.sql writes on what dbt builds, and sdc suppress --target on the tables it writes."""

from __future__ import annotations

import json

from sdc.conventions import BUILD_RECORD_KEY


def build_record_of_comment(comment) -> dict | None:
    """The record in ``comment`` (a relation's comment, or None), or None when it holds none."""
    if not isinstance(comment, str) or not comment.startswith("{"):
        return None
    try:
        record = json.loads(comment)[BUILD_RECORD_KEY]
    except (json.JSONDecodeError, TypeError, KeyError):
        return None
    return record if isinstance(record, dict) else None


def build_record_comment(record: dict) -> str:
    """The comment that holds ``record`` (the form build_record.sql writes, which its readers expect)."""
    return json.dumps({BUILD_RECORD_KEY: record}, sort_keys=True)
