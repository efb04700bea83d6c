"""`sdc load --target` and `sdc suppress --target` find the dbt profile as dbt does (issue 26): the profile is
--profile, else dbt_project.yml's `profile:` (project: --project-dir, $DBT_PROJECT_DIR, else the working
directory or its nearest parent); profiles.yml lies in --profiles-dir, $DBT_PROFILES_DIR, the working directory,
else ~/.dbt. The targets here are DuckDB files, so every case runs a real load without a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DATA, query
from sdc.cli import main

MICRO = DATA / "cellkey_testdata_with_rkeys.csv"
LOAD = ["--input", str(MICRO), "--table", "survey", "--key-mode", "existing", "--key-column", "rkeys",
        "--modulus", "10000000"]
HOW = ("give --profile NAME, or run sdc in a dbt project (or name it with --project-dir) whose dbt_project.yml "
       "names the profile (profile: NAME)")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A home folder of the test's own (~/.dbt), and none of dbt's variables from the environment."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("DBT_PROFILES_DIR", raising=False)
    monkeypatch.delenv("DBT_PROJECT_DIR", raising=False)
    return folder


def dbt_project(folder: Path, profile: str | None = "census") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dbt_project.yml").write_text('name: census\nversion: "1.0.0"\nconfig-version: 2\n'
                                            + (f"profile: {profile}\n" if profile else ""))
    return folder


def profiles(folder: Path, db: Path, profile: str = "census") -> Path:
    """profiles.yml in ``folder`` whose default target is the DuckDB file ``db``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "profiles.yml").write_text(f"{profile}:\n  target: duck\n  outputs:\n    duck:\n      type: duckdb\n"
                                         f"      path: {db}\n")
    return folder


def loaded(db: Path) -> list[tuple]:
    return query(db, "select count(*), sum(rk) from raw.survey")


def load(*args: str) -> int:
    return main(["load", "--target", "duck", *args, *LOAD])


# the file's 4580 records; its keys in [0, 1) sum to 2271.6220176, times the modulus 10^7
EXPECTED = [(4580, 22716220176)]


def test_the_reference_load_of_the_survey(tmp_path):
    """What every load below must give: the file's own keys, as `sdc load --db` loads them."""
    assert main(["load", "--db", str(tmp_path / "ref.duckdb"), *LOAD]) == 0
    assert loaded(tmp_path / "ref.duckdb") == EXPECTED


def test_load_in_a_dbt_project_takes_the_profile_of_dbt_project_yml(home, tmp_path, monkeypatch):
    project = dbt_project(tmp_path / "census")
    profiles(project, tmp_path / "census.duckdb")  # profiles.yml beside dbt_project.yml, as docs/guides/analytics-engineer.md sets up
    monkeypatch.chdir(project)
    assert load() == 0
    assert loaded(tmp_path / "census.duckdb") == EXPECTED


def test_from_a_folder_inside_the_project_dbt_project_yml_above_names_the_profile(home, tmp_path, monkeypatch):
    project = dbt_project(tmp_path / "census")
    profiles(home / ".dbt", tmp_path / "home.duckdb")
    (project / "models" / "audit").mkdir(parents=True)
    monkeypatch.chdir(project / "models" / "audit")
    assert load() == 0
    assert loaded(tmp_path / "home.duckdb") == EXPECTED


def test_project_dir_names_the_project_and_profiles_dir_the_profiles(home, tmp_path, monkeypatch):
    project = dbt_project(tmp_path / "census")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    folder = profiles(tmp_path / "secrets", tmp_path / "given.duckdb")
    assert load("--project-dir", str(project), "--profiles-dir", str(folder)) == 0
    assert loaded(tmp_path / "given.duckdb") == EXPECTED
    # $DBT_PROJECT_DIR and $DBT_PROFILES_DIR, as dbt reads them
    monkeypatch.setenv("DBT_PROJECT_DIR", str(project))
    monkeypatch.setenv("DBT_PROFILES_DIR", str(profiles(tmp_path / "env", tmp_path / "env.duckdb")))
    assert load() == 0
    assert loaded(tmp_path / "env.duckdb") == EXPECTED


def test_profiles_yml_is_found_in_dbts_order(home, tmp_path, monkeypatch):
    """--profiles-dir, then $DBT_PROFILES_DIR, then the working directory's profiles.yml, then ~/.dbt: each
    profiles.yml points the same profile at a DuckDB file of its own, and the load lands in the first."""
    project = dbt_project(tmp_path / "census")
    monkeypatch.chdir(project)
    places = {"flag": tmp_path / "flag", "env": tmp_path / "env", "cwd": project, "home": home / ".dbt"}
    for name, folder in places.items():
        profiles(folder, tmp_path / f"{name}.duckdb")
    monkeypatch.setenv("DBT_PROFILES_DIR", str(places["env"]))
    assert load("--profiles-dir", str(places["flag"])) == 0
    assert load() == 0
    monkeypatch.delenv("DBT_PROFILES_DIR")
    assert load() == 0
    (project / "profiles.yml").unlink()
    assert load() == 0
    for name in places:
        assert loaded(tmp_path / f"{name}.duckdb") == EXPECTED, name


def test_profile_overrides_dbt_project_yml(home, tmp_path, monkeypatch, capsys):
    project = dbt_project(tmp_path / "census", profile="production")  # no such profile in profiles.yml
    profiles(project, tmp_path / "census.duckdb", profile="census")
    monkeypatch.chdir(project)
    assert load() == 2
    assert "has no profile 'production' (profiles: census)" in capsys.readouterr().err
    assert load("--profile", "census") == 0
    assert loaded(tmp_path / "census.duckdb") == EXPECTED


def test_a_profile_name_from_env_var_is_rendered_as_dbt_renders_it(home, tmp_path, monkeypatch):
    project = dbt_project(tmp_path / "census", profile="\"{{ env_var('SDC_TEST_PROFILE') }}\"")
    profiles(project, tmp_path / "census.duckdb", profile="census_test")
    monkeypatch.chdir(project)
    monkeypatch.setenv("SDC_TEST_PROFILE", "census_test")
    assert load() == 0
    assert loaded(tmp_path / "census.duckdb") == EXPECTED


def test_without_profile_or_project_the_error_names_both_ways(home, tmp_path, monkeypatch, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    profiles(outside, tmp_path / "never.duckdb")
    cases = [
        ([], f"--target needs a dbt profile: {HOW}; there is no dbt_project.yml in {outside} or above it"),
        (["--project-dir", str(outside)], f"no dbt_project.yml in {outside} (--project-dir); --target needs a dbt "
                                          f"profile: {HOW}"),
    ]
    nameless = dbt_project(tmp_path / "nameless", profile=None)
    cases.append((["--project-dir", str(nameless)],
                  f"--target needs a dbt profile: {HOW}; {nameless / 'dbt_project.yml'} names none"))
    for extra, message in cases:
        assert load(*extra) == 2, extra
        err = capsys.readouterr().err
        assert err == f"sdc load: error: {message}\n", extra
    assert not (tmp_path / "never.duckdb").exists()


def test_suppress_target_finds_the_profile_the_same_way(home, tmp_path, monkeypatch, capsys):
    """The profile of dbt_project.yml reaches the warehouse: sdc suppress opens the target and names the
    missing cell table there (before, it stopped at '--target needs --profile')."""
    project = dbt_project(tmp_path / "census")
    profiles(project, tmp_path / "census.duckdb")
    monkeypatch.chdir(project)
    assert load() == 0
    code = main(["suppress", "--target", "duck", "--cells", "main.nope", "--relations", "main.nope_relations",
                 "--pattern", "main.nope_pattern", "--dims", "sex"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("sdc suppress: error: ") and "main.nope" in err and "--profile" not in err, err
    (project / "dbt_project.yml").unlink()
    assert main(["suppress", "--target", "duck", "--cells", "main.nope", "--relations", "main.nope_relations",
                 "--pattern", "main.nope_pattern", "--dims", "sex"]) == 2
    assert capsys.readouterr().err == (f"sdc suppress: error: --target needs a dbt profile: {HOW}; there is no "
                                       f"dbt_project.yml in {project} or above it\n")


def test_profiles_yml_is_read_as_yaml_first_and_its_values_rendered_as_dbt_does(home, tmp_path, monkeypatch):
    """dbt reads profiles.yml as YAML and then renders each value; sdc did it the other way round, so YAML's
    single-quoted style (quotes doubled inside), which dbt reads, stopped sdc, and a template in a comment was
    rendered (here: an unset variable)."""
    project = dbt_project(tmp_path / "census")
    monkeypatch.chdir(project)
    monkeypatch.setenv("SDC_TEST_WAREHOUSE", str(tmp_path / "census.duckdb"))
    monkeypatch.delenv("SDC_TEST_UNSET", raising=False)
    (project / "profiles.yml").write_text(
        "# the path comes from {{ env_var('SDC_TEST_UNSET') }}, see the runbook\n"
        "census:\n  target: duck\n  outputs:\n    duck:\n      type: duckdb\n"
        "      path: '{{ env_var(''SDC_TEST_WAREHOUSE'') }}'\n      threads: \"{{ 2 | as_number }}\"\n")
    assert load() == 0
    assert loaded(tmp_path / "census.duckdb") == EXPECTED


def test_profile_values_take_dbts_types_and_a_password_is_kept_as_written(home, tmp_path):
    from sdc.errors import SdcError
    from sdc.warehouse.profiles import read_target

    def target(**values):
        lines = "".join(f"      {k}: {v}\n" for k, v in values.items())
        (tmp_path / "profiles.yml").write_text(f"census:\n  target: pg\n  outputs:\n    pg:\n      type: postgres\n{lines}")
        return read_target(tmp_path, "census")

    assert target(port="\"{{ '5432' | as_number }}\"", keepalives="\"{{ 'True' | as_bool }}\"",
                  sslmode="\"{{ 'require' }}\"", dbname="\"{{ '007' }}\"") == {
        "type": "postgres", "port": 5432, "keepalives": True, "sslmode": "require", "dbname": "007"}
    # a password may hold what looks like Jinja: dbt keeps one that renders to nothing valid as written
    assert target(password="'se{%cret{{'")["password"] == "se{%cret{{"
    with pytest.raises(SdcError, match=r"profiles\.yml: census\.outputs\.pg\.password: env_var\('SDC_TEST_UNSET_PASSWORD'\) is not set"):
        target(password="\"{{ env_var('SDC_TEST_UNSET_PASSWORD') }}\"")  # a template, not a password as written
    for value, message in (("\"{{ 'abc' | as_number }}\"", "could not convert value 'abc' into type 'number'"),
                           ("\"{{ 'true' | as_bool }}\"", "could not convert value 'true' into type 'bool'")):
        with pytest.raises(SdcError) as caught:
            target(port=value)
        assert str(caught.value).startswith(f"{tmp_path / 'profiles.yml'}: census.outputs.pg.port: ") \
            and message in str(caught.value)
    with pytest.raises(SdcError, match=r"profiles\.yml: census\.outputs\.pg\.host: cannot read it"):
        target(host="\"{{ 'db' \"")  # not a password: a broken template is an error, named by its key


def test_only_the_chosen_profile_and_target_are_rendered_as_in_dbt(home, tmp_path, monkeypatch, capsys):
    """A developer's profiles.yml beside a production target whose settings come from variables that are not
    set here, and another profile with a broken value: dbt renders only the target it uses, and so does sdc
    (it rendered every value of the file, and stopped on the production target's unset variable)."""
    project = dbt_project(tmp_path / "census")
    monkeypatch.chdir(project)
    monkeypatch.delenv("SDC_TEST_PROD_HOST", raising=False)
    (project / "profiles.yml").write_text(
        f"census:\n  target: \"{{{{ env_var('SDC_TEST_TARGET', 'duck') }}}}\"\n  outputs:\n"
        f"    duck:\n      type: duckdb\n      path: {tmp_path / 'census.duckdb'}\n"
        "    prod:\n      type: postgres\n      host: \"{{ env_var('SDC_TEST_PROD_HOST') }}\"\n"
        "      port: \"{{ env_var('SDC_TEST_PROD_PORT') | as_number }}\"\n"
        "other:\n  target: x\n  outputs:\n    x:\n      type: postgres\n      host: \"{{ 'broken' \"\n")
    assert load() == 0
    assert loaded(tmp_path / "census.duckdb") == EXPECTED
    capsys.readouterr()
    assert main(["load", "--target", "prod", *LOAD]) == 2
    assert capsys.readouterr().err == (f"sdc load: error: {project / 'profiles.yml'}: census.outputs.prod.host: "
                                       "env_var('SDC_TEST_PROD_HOST') is not set\n")
    from sdc.errors import SdcError
    from sdc.warehouse.profiles import read_target

    monkeypatch.delenv("SDC_TEST_TARGET", raising=False)
    assert read_target(project, "census")["type"] == "duckdb"  # the profile's own target, rendered
    monkeypatch.setenv("SDC_TEST_TARGET", "prod")
    with pytest.raises(SdcError, match=r"census\.outputs\.prod\.host: env_var\('SDC_TEST_PROD_HOST'\) is not set"):
        read_target(project, "census")
