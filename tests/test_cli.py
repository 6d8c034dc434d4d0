"""Bad input ends with one clear line on stderr and a non-zero exit, and loses no data."""

import subprocess

import pytest

from tests.crawling import PY, crawl, serve


def bspcrawl(*argv, timeout=60, **kw):
    return subprocess.run([PY, "-m", "bspcrawl", *argv], capture_output=True, text=True,
                          timeout=timeout, **kw)


def assert_one_line_error(res, fragment):
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("bspcrawl: error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in res.stderr


def test_missing_seed_file(tmp_path):
    res = bspcrawl("run", "--seeds", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o"))
    assert_one_line_error(res, "cannot read seed file")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("line", ["not a url", "ftp://example.org/", "http://", "//x.org/a",
                                  "http://exa mple.org/"])
def test_malformed_seed(tmp_path, line):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"# comment\nhttp://127.1.0.1:1/\n{line}\n")
    res = bspcrawl("run", "--seeds", str(seeds), "--out", str(tmp_path / "o"))
    assert_one_line_error(res, "line 3")


@pytest.mark.parametrize("line", ["http://user:secret@127.1.0.1:1/", "https://tok@a.test/x",
                                  "http://:pw@a.test/"])
def test_a_seed_with_credentials_is_refused(tmp_path, line):
    # regression (issue 14): the credentials went into /pages/url, the WARC, crawl.h5's
    # seeds and checkpoint.json in clear
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"http://127.1.0.1:1/a@b\n{line}\n")  # an @ in the path is fine
    res = bspcrawl("run", "--seeds", str(seeds), "--out", str(tmp_path / "o"))
    assert_one_line_error(res, "line 2: a URL with credentials")
    assert not (tmp_path / "o").exists()


def test_empty_seed_file(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# nothing\n\n")
    assert_one_line_error(bspcrawl("run", "--seeds", str(seeds), "--out", str(tmp_path / "o")),
                          "no seed URL")


def test_output_directory_holding_something_else(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.1.0.1:1/\n")
    out = tmp_path / "o"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    for extra in ([], ["--overwrite"]):
        res = bspcrawl("run", "--seeds", str(seeds), "--out", str(out), *extra)
        assert_one_line_error(res, "not a crawl's")
    assert (out / "thesis.tex").read_text() == "precious"
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]


def test_a_killed_crawls_temporary_files_do_not_block_overwrite(tmp_path):
    # regression (issue 14): a leftover crawl.h5.tmp made --overwrite refuse the directory
    from bspcrawl.index.output import OutputError, prepare

    out = tmp_path / "o"
    (out / "segments" / "rank-0000").mkdir(parents=True)
    for name in ("crawl.h5.tmp", "rank-0003.h5.tmp", "rank-0003.h5", ".bspcrawl-write-test"):
        (out / name).write_bytes(b"half")
    with pytest.raises(OutputError, match="earlier crawl"):
        prepare(out, overwrite=False)
    prepare(out, overwrite=True)
    assert list(out.iterdir()) == []
    (out / "notes.h5.tmp").write_bytes(b"someone else's")
    with pytest.raises(OutputError, match="not a crawl's"):
        prepare(out, overwrite=True)


def test_output_is_a_file(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.1.0.1:1/\n")
    (tmp_path / "o").write_text("x")
    assert_one_line_error(bspcrawl("run", "--seeds", str(seeds), "--out", str(tmp_path / "o")),
                          "not a directory")


@pytest.mark.parametrize("argv,fragment", [
    (["run", "--no-such-option"], "unrecognized arguments"),
    (["run", "--workers", "zero"], "invalid int value"),
    (["run", "--workers", "0", "--seeds", "s", "--out", "o"], "--workers must be > 0"),
    (["run", "--robots-ttl", "9", "--seeds", "s", "--out", "o"], "unrecognized arguments"),
    (["run"], "needs --seeds"),
    (["frobnicate"], "invalid choice"),
    (["inspect"], "required"),
])
def test_usage_errors(argv, fragment):
    assert_one_line_error(bspcrawl(*argv), fragment)


def test_inspect_of_a_directory_that_is_not_a_crawl(tmp_path):
    assert_one_line_error(bspcrawl("inspect", str(tmp_path)), "holds no crawl.h5")
    (tmp_path / "crawl.h5").write_bytes(b"garbage")
    assert_one_line_error(bspcrawl("inspect", str(tmp_path)), "not a readable HDF5")


def test_inspect_of_a_damaged_crawl_and_of_a_closed_pipe(tmp_path):
    out = tmp_path / "out"
    with serve(pages=200, hosts=4) as web:
        assert crawl(1, web.seeds(), out).returncode == 0
    # a reader that went away (| head) ends the listing without a traceback (the pipe is
    # closed before the listing starts: its first write fails)
    listing = subprocess.Popen([PY, "-m", "bspcrawl", "inspect", str(out), "--urls"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    listing.stdout.close()
    assert listing.wait(timeout=60) == 1 and listing.stderr.read() == b""
    rank_file = out / "rank-0000.h5"
    with rank_file.open("r+b") as f:  # a rank file cut short (a full disk, a copy stopped)
        f.truncate(rank_file.stat().st_size // 2)
    for extra in ((), ("--json",), ("--urls",)):
        res = bspcrawl("inspect", str(out), *extra)
        assert_one_line_error(res, f"cannot read the crawl in {out}")


@pytest.mark.slow
def test_an_earlier_crawl_is_never_overwritten_without_overwrite(tmp_path):
    out = tmp_path / "out"
    with serve(pages=120, hosts=4) as web:
        assert crawl(1, web.seeds(), out).returncode == 0
        before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
        again = crawl(2, web.seeds(), out)
        assert_one_line_error(again, "--overwrite")
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
        assert crawl(2, web.seeds(), out, "--overwrite").returncode == 0
    assert (out / "rank-0001.h5").exists()


@pytest.mark.parametrize("command", ["run", "resume"])
def test_help_gives_each_default_once(command):
    text = " ".join(bspcrawl(command, "--help").stdout.split())
    assert "(default: None)" not in text and "(default: '')" not in text
    assert text.count("(default: 8)") == 1  # --workers
    assert text.count("(default: auto)") == 1  # --progress
    assert "no limit) (default: 0)" in text  # --max-pages: a zero is shown


def test_demo_crawls_the_local_web_and_summarises(tmp_path):
    # what `make demo` runs, on a smaller web: the crawl, the summary, the next steps
    res = bspcrawl("demo", "--pages", "120", "--hosts", "4", "--ranks", "1",
                   "--out", str(tmp_path / "demo"), timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    summary = dict(line.split(None, 1) for line in res.stdout.splitlines()
                   if line and not line.startswith(" ") and len(line.split(None, 1)) == 2)
    assert int(summary["pages_fetched"]) > 0 and summary["ranks"] == "1"
    assert (tmp_path / "demo" / "crawl.h5").is_file()
    assert f"bspcrawl serve {tmp_path / 'demo'}" in res.stderr
