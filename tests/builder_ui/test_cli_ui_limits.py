"""`keras-seq ui --data-dir DIR ... --max-upload-mb MB`: passed to the app, or refused (exit 2).

The app is not started: `builder_ui.app.page` is replaced by a stub that
records its `launch` call (as in `test_cli.py`).
"""

from __future__ import annotations

import sys
import types

import pytest

from builder_ui import cli


def test_data_dirs_and_the_upload_cap_reach_the_app(launched, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    argv = ["ui", "--data-dir", str(first), "--data-dir", str(second), "--max-upload-mb", "25"]
    assert cli.main(argv) == 0
    (call,) = launched
    assert call["data_dirs"] == [first, second]
    assert call["max_upload_bytes"] == 25 * 2**20


def test_without_the_options_the_app_keeps_its_defaults(launched):
    assert cli.main(["ui"]) == 0
    (call,) = launched
    assert "data_dirs" not in call and "max_upload_bytes" not in call


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--data-dir", "/no/such/folder"], "--data-dir: expected an existing directory, got "),
        (["--max-upload-mb", "0"], "--max-upload-mb: expected 1 to 1024, got 0"),
        (["--max-upload-mb", "5000"], "--max-upload-mb: expected 1 to 1024, got 5000"),
    ],
)
def test_a_bad_data_dir_or_upload_cap_is_refused_naming_it(launched, capsys, argv, named):
    with pytest.raises(SystemExit) as exited:
        cli.main(["ui", *argv])
    assert exited.value.code == 2
    assert named in capsys.readouterr().err
    assert launched == []


def test_a_data_dir_that_is_a_file_is_refused(launched, capsys, tmp_path):
    plain = tmp_path / "file.csv"
    plain.write_text("a,1\n")
    with pytest.raises(SystemExit) as exited:
        cli.main(["ui", "--data-dir", str(plain)])
    assert exited.value.code == 2
    assert (
        f"--data-dir: expected an existing directory, got {str(plain)!r}" in capsys.readouterr().err
    )


def test_trusted_proxies_reach_the_app(launched):
    assert cli.main(["ui", "--trusted-proxy", "10.0.0.5", "--trusted-proxy", "fd00::/8"]) == 0
    (call,) = launched
    assert call["trusted_proxies"] == ["10.0.0.5", "fd00::/8"]


@pytest.mark.parametrize("value", ["proxy.example", "*"])
def test_a_trusted_proxy_that_is_no_address_is_refused_naming_it(launched, capsys, value):
    with pytest.raises(SystemExit) as exited:
        cli.main(["ui", "--trusted-proxy", value])
    assert exited.value.code == 2
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "error" in x]
    assert "--trusted-proxy: expected the IP address or network" in line and repr(value) in line
    assert launched == []


@pytest.mark.parametrize("under", [False, True], ids=["the file", "a folder under it"])
def test_runs_naming_a_file_is_refused_naming_it(launched, capsys, tmp_path, under):
    plain = tmp_path / "runs.txt"
    plain.write_text("not a folder\n")
    runs = plain / "runs" if under else plain
    with pytest.raises(SystemExit) as exited:
        cli.main(["ui", "--runs", str(runs)])
    assert exited.value.code == 2
    assert f"--runs: expected a folder of runs, but {str(plain)!r} is a file" in (
        capsys.readouterr().err
    )
    assert launched == []


def test_a_port_the_app_cannot_listen_on_is_one_line_exit_2(monkeypatch, capsys):
    from builder_ui.app import serving

    def launch(**kwargs):  # as the page's launch refuses a port in use, before building
        raise serving.ListenError("port 7860 on 127.0.0.1 is in use by another program")

    stub = types.ModuleType("builder_ui.app.page")
    stub.launch = launch
    monkeypatch.setitem(sys.modules, "builder_ui.app.page", stub)
    with pytest.raises(SystemExit) as exited:
        cli.main(["ui"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "keras-seq ui: error: port 7860 on 127.0.0.1 is in use" in err
    assert "Traceback" not in err
