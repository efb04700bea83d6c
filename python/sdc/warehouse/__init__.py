"""The warehouse layer: loading microdata with record keys (DuckDB file or a dbt target), the CKM macros for
ad-hoc SQL, connections to a dbt profile's target, and the in-process renderer of the dbt macros that
sdc.ckm and sdc.release run.

The public API (``__all__``): ``load_microdata`` and its ``LoadReport``, ``read_facts_config``,
``load_into_target``, ``install_sql_macros`` (``sdc sql install``), ``find_profile`` and ``connect_target``.
Every name is loaded when first asked for: the modules of this package import one another and sdc.ptable,
and sdc.ckm imports them, so this package imports nothing on its own.
"""

__all__ = ["LoadReport", "connect_target", "find_profile", "install_sql_macros", "load_into_target",
           "load_microdata", "read_facts_config"]

# public name -> (module of sdc.warehouse, its name there)
_PUBLIC = {
    "LoadReport": ("loader", "LoadReport"),
    "connect_target": ("profiles", "connect_target"),
    "find_profile": ("profiles", "find_profile"),
    "install_sql_macros": ("sql_install", "install"),
    "load_into_target": ("target_load", "load_into_target"),
    "load_microdata": ("loader", "load_microdata"),
    "read_facts_config": ("loader", "read_facts_config"),
}


def __getattr__(name):
    if name in _PUBLIC:
        import importlib

        module, attribute = _PUBLIC[name]
        return getattr(importlib.import_module(f"sdc.warehouse.{module}"), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
