"""The public Python API is the ``__all__`` of six packages; every name in it has a docstring with an example
that runs (issue 35: no public symbol without an example).

Each name is its own test (``sdc.ckm.count_table``): it must exist, have a docstring with at least one ``>>>``
example, and its examples must pass as doctests. A class's examples are those of its docstring and of its
public methods' docstrings.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

PACKAGES = ("sdc.ptable", "sdc.ckm", "sdc.suppression", "sdc.microaggregation", "sdc.warehouse", "sdc.release")


def _public_names() -> list:
    """(package, name) of every name in the packages' __all__, as pytest parameters with the id package.name."""
    found = []
    for package in PACKAGES:
        try:
            names = importlib.import_module(package).__all__
        except (ImportError, AttributeError):
            continue  # test_every_package_has_an_all says why
        found += [pytest.param(package, name, id=f"{package}.{name}") for name in names]
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_has_an_all(package):
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    assert isinstance(names, (list, tuple)) and names, f"{package} has no __all__ (its public API)"
    assert all(isinstance(n, str) for n in names) and len(set(names)) == len(names), f"{package}.__all__: {names}"


@pytest.mark.parametrize(("package", "name"), _public_names())
def test_every_public_name_has_an_example_that_runs(package, name):
    module = importlib.import_module(package)
    assert hasattr(module, name), f"{package}.__all__ names {name}, which {package} does not have"
    obj = getattr(module, name)
    assert (obj.__doc__ or "").strip(), f"{package}.{name} has no docstring"
    # exclude_empty: only docstrings with examples; recurse into a class's methods, not into other modules
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = [t for t in finder.find(obj, f"{package}.{name}", module=False, globs={}) if t.examples]
    own = [t for t in tests if t.name == f"{package}.{name}"]
    assert own, f"{package}.{name}: its docstring has no >>> example"
    runner = doctest.DocTestRunner()  # the examples give their own options (# doctest: +ELLIPSIS)
    for test in tests:
        report = _Output()
        runner.run(test, out=report)
        assert not runner.failures, f"{test.name}: its example fails:\n{report.text}"


class _Output:
    """DocTestRunner's report of a failing example, kept for the assertion message."""

    def __init__(self):
        self.parts: list[str] = []

    def __call__(self, text: str) -> None:
        self.parts.append(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)
