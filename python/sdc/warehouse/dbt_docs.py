"""The dbt docs blocks of the published columns (conventions.PUBLISHED_COLUMN_DOCS), which the package ships in
macros/sdc_published_columns.md: a project describes a published model's column with
``description: "{{ doc('sdc_column_count') }}"`` and dbt docs shows a BI author what it means.

    python -m sdc.warehouse.dbt_docs > macros/sdc_published_columns.md
"""

from __future__ import annotations

from sdc.conventions import DIMENSION_COLUMN_DOCS, PUBLISHED_COLUMN_DOCS

DOC_PREFIX = "sdc_column_"


def doc_name(column: str) -> str:
    return DOC_PREFIX + column


def dimension_doc_name(key: str) -> str:
    """The doc of the column d + DIMENSION_COLUMN_SUFFIXES[key], the same for every dimension d."""
    return f"{DOC_PREFIX}dimension_{key}"


def doc_blocks() -> str:
    """The docs blocks, one per published column, as the file in the package holds them."""
    parts = ["{#- The published columns for dbt docs. Written by `python -m sdc.warehouse.dbt_docs` from "
             "python/sdc/conventions.py PUBLISHED_COLUMN_DOCS: edit there. -#}\n"]
    for column, text in PUBLISHED_COLUMN_DOCS.items():
        parts.append(f"{{% docs {doc_name(column)} %}}\n{text}\n{{% enddocs %}}\n")
    for key, text in DIMENSION_COLUMN_DOCS.items():
        parts.append(f"{{% docs {dimension_doc_name(key)} %}}\n{text}\n{{% enddocs %}}\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(doc_blocks(), end="")
