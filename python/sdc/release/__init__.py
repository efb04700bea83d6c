"""The release: what sdc publishes, verified against its own recomputation (verify), and audited as a whole.

The public API (``__all__``), the Python entries of the commands: ``publish`` (``sdc publish --db``),
``publish_target`` (``sdc publish --target``), ``write_report`` (``sdc report``), ``list_releases`` and
``diff_releases`` (``sdc release list|diff``), ``a_priori_rows`` and ``write_a_priori`` (``sdc release
a-priori``). ``publish`` and ``publish_target`` are imported here, as their modules bear their names (a
module imported as sdc.release.publish would otherwise stand for the function; ``importlib.import_module``
gives the module); the others are loaded when first asked for.
"""

from sdc.release.publish import publish
from sdc.release.publish_target import publish_target

__all__ = ["a_priori_rows", "diff_releases", "list_releases", "publish", "publish_target", "write_a_priori",
           "write_report"]

# public name -> module of sdc.release that defines it
_PUBLIC = {
    "a_priori_rows": "a_priori",
    "diff_releases": "ledger",
    "list_releases": "ledger",
    "write_a_priori": "a_priori",
    "write_report": "report",
}


def __getattr__(name):
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(f"sdc.release.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
