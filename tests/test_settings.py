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


def test_an_unknown_stored_setting_is_dropped_with_a_note():
    # regression (issue 14): an unknown stored key was a TypeError traceback on resume
    p = argparse.ArgumentParser()
    add_arguments(p)
    notes = []
    s = from_args(p.parse_args([]), base={"fetch_workers": 2, "from_the_future": 1},
                  note=notes.append)
    assert s.fetch_workers == 2 and notes == [
        "the stored setting 'from_the_future' is unknown to this bspcrawl: ignored"]


def test_old_option_names_are_unknown(tmp_path):
    for old in ("--robots-ttl", "--robots-retries"):
        with pytest.raises(SystemExit):  # argparse's "unrecognized arguments"
            parse([old, "1"])
    cfg = tmp_path / "c.toml"
    for old in ("fetch_robots", "robots_ttl", "robots_retries"):
        cfg.write_text(f"{old} = 1\n")
        with pytest.raises(SettingsError, match=f"unknown setting '{old}'"):
            parse(["--config", str(cfg)])


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--min-host-delay", "-1"],
                                  ["--fetch-timeout", "0"], ["--parse-processes", "-2"],
                                  ["--parse-processes", "65"]])
def test_bad_values_are_rejected(argv):
    with pytest.raises(SettingsError):
        parse(argv)


@pytest.mark.parametrize("text,match", [
    ("nope = 1\n", "unknown setting 'nope'$"),
    ("workers = 8\n", r"unknown setting 'workers' \(option --workers is 'fetch_workers' in a"),
    ("min_host_delay = 1\n", "--min-host-delay is 'politeness_min_host_delay'"),
    ("fetch_worker = 8\n", r"did you mean 'fetch_workers'\?"),
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
