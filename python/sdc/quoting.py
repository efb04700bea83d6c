"""Text that reaches SQL from names, codes and paths goes through these two functions (one place).

Names the design allows only in a plain form are refused at the edge instead (``loader.quote``); the dbt
macros have their twin in macros/_quoting.sql.
"""

from __future__ import annotations

from sdc.errors import SdcError


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (embedded quotes doubled); works for any name but NUL."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise SdcError(f"{name!r} cannot be an SQL name")
    return '"' + name.replace('"', '""') + '"'


def quote_spark_identifier(name: str) -> str:
    """``name`` as a Spark SQL identifier: backquoted, embedded backquotes doubled (Spark reads "..." as a
    string); works for any name but NUL and ``${`` (spark_text)."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise SdcError(f"{name!r} cannot be an SQL name")
    return "`" + spark_text(name).replace("`", "``") + "`"


def spark_text(text: str) -> str:
    """``text``, refused when it holds ``${``: Spark replaces ``${...}`` by a variable's value before it parses the
    SQL, inside literals and names alike (``${env:SDC_KEY_SECRET}``), unless the session turns that off
    (spark.sql.variable.substitute=false, which sdc's sessions set); the twin of spark_no_substitution in
    macros/_quoting.sql."""
    if "${" in text:
        raise SdcError(f"{text!r} holds '${{', which Spark SQL replaces by the value of a variable "
                       "(spark.sql.variable.substitute): sdc does not send it to Spark; rename it")
    return text


def quote_spark_literal(text) -> str:
    """``text`` as a Spark SQL string literal: single-quoted, backslashes and quotes escaped by a backslash
    (Spark reads backslash escapes in literals, and two literals side by side as one); works for any text but
    NUL and ``${`` (spark_text)."""
    text = str(text)
    if "\x00" in text:
        raise SdcError(f"{text!r} cannot be an SQL string")
    return "'" + spark_text(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def quote_literal(text) -> str:
    """``text`` as a single-quoted SQL string literal (embedded quotes doubled); works for any text but NUL."""
    text = str(text)
    if "\x00" in text:
        raise SdcError(f"{text!r} cannot be an SQL string")
    return "'" + text.replace("'", "''") + "'"


def quote_path(path) -> str:
    """``path`` as a SQL string literal for DuckDB's file readers, which take glob patterns: each of ``* ? [``
    becomes a one-character class (``[*]``), so a file named ``m*.csv`` is read alone, never ``m1.csv`` beside it."""
    text = str(path)
    if "\\" in text and any(c in text for c in "*?["):
        # in a pattern DuckDB takes a backslash for a path separator, and no escape keeps it
        raise SdcError(f"{text!r}: a path with a backslash and one of * ? [ cannot be read; rename the file")
    return quote_literal("".join(f"[{c}]" if c in "*?[" else c for c in text))


def temporary(name: str) -> str:
    """``"temp "`` where the relation ``name`` (quoted SQL) lies in DuckDB's temp catalog (``"temp"."main"."x"``:
    one connection's own, dropped when it closes), as CREATE must then say; else ``""``."""
    return "temp " if name.startswith('"temp".') else ""
