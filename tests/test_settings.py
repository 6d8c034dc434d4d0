"""Settings: defaults, validation, TOML, and the command-line options built from fields."""

import argparse

import pytest

from bspcrawl.settings import Settings, SettingsError, add_arguments, from_args


def parse(argv):
    p = argparse.ArgumentParser()
    add_arguments(p)
    return from_args(p.parse_args(argv))


def test_defaults_validate_and_agent_token():
    s = Settings().validate()
    assert s.agent_token == "bspcrawl"
    assert s.fetch_workers == 8


def test_options_override_toml_which_overrides_defaults(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("fetch_workers = 3\npoliteness_min_host_delay = 0.5\n")
    s = parse(["--config", str(cfg), "--workers", "5"])
    assert s.fetch_workers == 5 and s.politeness_min_host_delay == 0.5


def test_old_names_still_work_with_one_note_each(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("robots_ttl = 60.0\nrobots_retries = 1\n")
    p = argparse.ArgumentParser()
    add_arguments(p)
    notes = []
    s = from_args(p.parse_args(["--config", str(cfg), "--robots", "5"]), note=notes.append)
    assert (s.fetch_workers, s.robotstxt_ttl, s.robotstxt_retries) == (5, 60.0, 1)
    assert sorted(n.split(": ")[-1] for n in notes) == [
        "--robots is deprecated; use --workers",
        "robots_retries is deprecated; use robotstxt_retries",
        "robots_ttl is deprecated; use robotstxt_ttl"]
    stored = {"fetch_robots": 3, "robots_ttl": 9.0}  # an older crawl's checkpoint
    s = from_args(p.parse_args([]), base=stored, note=notes.append)
    assert (s.fetch_workers, s.robotstxt_ttl) == (3, 9.0) and len(notes) == 3
    # regression (issue 14): an unknown stored key was a TypeError traceback on resume
    s = from_args(p.parse_args([]), base={"fetch_workers": 2, "from_the_future": 1},
                  note=notes.append)
    assert s.fetch_workers == 2 and "'from_the_future' is unknown" in notes[-1]


@pytest.mark.parametrize("argv", [["--robots", "0"], ["--min-host-delay", "-1"],
                                  ["--fetch-timeout", "0"], ["--parse-processes", "-2"],
                                  ["--parse-processes", "65"]])
def test_bad_values_are_rejected(argv):
    with pytest.raises(SettingsError):
        parse(argv)


@pytest.mark.parametrize("text,match", [
    ("nope = 1\n", "unknown setting 'nope'$"),
    ("robots = 8\n", r"unknown setting 'robots' \(option --robots is 'fetch_workers' in a"),
    ("min_host_delay = 1\n", "--min-host-delay is 'politeness_min_host_delay'"),
    ("fetch_robot = 8\n", r"did you mean 'fetch_workers'\?"),
    ("fetch_workers = 'x'\n", "wrong type"),
    ("fetch_workers = \n", "not valid TOML")])
def test_bad_toml_is_rejected(tmp_path, text, match):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    with pytest.raises(SettingsError, match=match):
        parse(["--config", str(cfg)])


def test_missing_config_file():
    with pytest.raises(SettingsError, match="cannot read config"):
        parse(["--config", "/nonexistent/c.toml"])


def test_allow_net_is_repeatable_and_checked(tmp_path):
    assert parse(["--allow-net", "127.0.0.0/8", "--allow-net", "::1/128"]).fetch_allow_net == [
        "127.0.0.0/8", "::1/128"]
    assert Settings().fetch_allow_net == []
    cfg = tmp_path / "c.toml"
    cfg.write_text('fetch_allow_net = ["10.0.0.0/8"]\n')
    assert parse(["--config", str(cfg)]).fetch_allow_net == ["10.0.0.0/8"]
    cfg.write_text('fetch_allow_net = "10.0.0.0/8"\n')
    with pytest.raises(SettingsError, match="wrong type"):
        parse(["--config", str(cfg)])
    with pytest.raises(SettingsError, match="not an IP network"):
        parse(["--allow-net", "10.0.0.0/33"])
