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
    assert s.fetch_robots == 8


def test_options_override_toml_which_overrides_defaults(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("fetch_robots = 3\npoliteness_min_host_delay = 0.5\n")
    s = parse(["--config", str(cfg), "--robots", "5"])
    assert s.fetch_robots == 5 and s.politeness_min_host_delay == 0.5


@pytest.mark.parametrize("argv", [["--robots", "0"], ["--min-host-delay", "-1"],
                                  ["--fetch-timeout", "0"]])
def test_bad_values_are_rejected(argv):
    with pytest.raises(SettingsError):
        parse(argv)


@pytest.mark.parametrize("text,match", [
    ("nope = 1\n", "unknown setting 'nope'$"),
    ("robots = 8\n", r"unknown setting 'robots' \(option --robots is 'fetch_robots' in a"),
    ("min_host_delay = 1\n", "--min-host-delay is 'politeness_min_host_delay'"),
    ("fetch_robot = 8\n", r"did you mean 'fetch_robots'\?"),
    ("fetch_robots = 'x'\n", "wrong type"),
    ("fetch_robots = \n", "not valid TOML")])
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
