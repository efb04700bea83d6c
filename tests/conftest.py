from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent


@pytest.fixture
def data_dir() -> Path:
    return DATA
