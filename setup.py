"""Build hook: the dbt package (dbt_project.yml and macros/) ships inside the Python package as
sdc/dbt_package, so every command works from an installed wheel, without a checkout
(python/sdc/warehouse/scratch.py finds it there; an editable install uses the checkout itself)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithDbtPackage(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "sdc" / "dbt_package"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        shutil.copy(ROOT / "dbt_project.yml", target / "dbt_project.yml")
        shutil.copytree(ROOT / "macros", target / "macros")


setup(cmdclass={"build_py": BuildWithDbtPackage})
