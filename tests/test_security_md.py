"""SECURITY.md names the test that holds each guarantee: every file and test it names exists, so a renamed
or removed test cannot leave a guarantee standing on nothing."""

import re

from conftest import REPO


def test_every_test_security_md_names_exists():
    text = (REPO / "SECURITY.md").read_text()
    named, current = [], None
    for token in re.findall(r"`([^`]+)`", text):
        match = re.fullmatch(r"(tests/[\w/]+\.py|demo/tests/[\w/]+\.sql)(?:::(\w+))?", token)
        if match:
            current = match.group(1)
            named.append((current, match.group(2)))
        elif re.fullmatch(r"::\w+", token) and current:
            named.append((current, token[2:]))
    assert len(named) > 40
    for path, test in named:
        assert (REPO / path).is_file(), path
        if test:
            assert re.search(rf"^def {test}\(", (REPO / path).read_text(), flags=re.M), f"{path}::{test}"
