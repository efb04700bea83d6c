"""The dbt docs of the published columns: the package's docs blocks are python/sdc/conventions.py's texts, and
every measure sdc publishes has one."""

from __future__ import annotations

from pathlib import Path

from sdc.conventions import (
    DIMENSION_COLUMN_DOCS,
    DIMENSION_COLUMN_SUFFIXES,
    PUBLISHED_COLUMN_DOCS,
    PUBLISHED_MEASURES,
)
from sdc.warehouse.dbt_docs import doc_blocks

REPO = Path(__file__).resolve().parent.parent


def test_the_package_s_docs_blocks_are_written_from_the_conventions():
    assert (REPO / "macros" / "sdc_published_columns.md").read_text() == doc_blocks(), \
        "run: python -m sdc.warehouse.dbt_docs > macros/sdc_published_columns.md"


def test_every_published_measure_has_a_description():
    assert set(PUBLISHED_MEASURES) <= set(PUBLISHED_COLUMN_DOCS)
    assert set(DIMENSION_COLUMN_DOCS) == set(DIMENSION_COLUMN_SUFFIXES)
    assert all(len(text) > 40 for text in [*PUBLISHED_COLUMN_DOCS.values(), *DIMENSION_COLUMN_DOCS.values()])
