"""Tests for the `keras-seq` command line (argument parsing and refusals, no server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from builder_ui import cli


def exit_code(argv: list[str]) -> int:
    """Run `main(argv)` and return the code it exits with."""
    with pytest.raises(SystemExit) as excinfo:
        cli.main(argv)
    return excinfo.value.code


def test_ui_defaults_to_loopback_port_7860_runs_dir_and_no_auth(launched):
    assert cli.main(["ui"]) == 0
    assert launched == [{"host": "127.0.0.1", "port": 7860, "runs_dir": Path("runs"), "auth": None}]


def test_ui_passes_host_port_runs_and_auth_through(launched, tmp_path):
    argv = ["ui", "--host", "0.0.0.0", "--port", "7871", "--runs", str(tmp_path)]
    assert cli.main([*argv, "--auth", "alice:s3cret"]) == 0
    assert launched == [
        {"host": "0.0.0.0", "port": 7871, "runs_dir": tmp_path, "auth": ("alice", "s3cret")}
    ]


def test_password_may_contain_colons(launched):
    cli.main(["ui", "--auth", "alice:pa:ss"])
    assert launched[0]["auth"] == ("alice", "pa:ss")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_non_loopback_host_without_auth_is_refused_with_hint(launched, capsys, host):
    assert exit_code(["ui", "--host", host]) == 2
    err = capsys.readouterr().err
    assert f"non-loopback host {host!r}" in err
    assert "pass --auth USER:PASS to allow it" in err
    assert launched == []


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1"])
def test_loopback_hosts_need_no_auth(launched, host):
    assert cli.main(["ui", "--host", host]) == 0
    assert launched[0]["host"] == host


@pytest.mark.parametrize("value", ["alice", "alice:", ":s3cret", ":", ""])
def test_malformed_auth_is_refused_naming_the_value(launched, capsys, value):
    assert exit_code(["ui", "--auth", value]) == 2
    err = capsys.readouterr().err
    assert "argument --auth" in err
    assert repr(value) in err
    assert launched == []


@pytest.mark.parametrize("port", ["0", "65536", "http"])
def test_invalid_port_is_refused(launched, capsys, port):
    assert exit_code(["ui", "--port", port]) == 2
    assert "argument --port" in capsys.readouterr().err
    assert launched == []


def test_version_prints_package_version(capsys):
    import keras_seq

    assert exit_code(["--version"]) == 0
    assert capsys.readouterr().out == f"keras-seq {keras_seq.__version__}\n"


def test_missing_subcommand_is_an_error(capsys):
    assert exit_code([]) == 2
    assert "required: COMMAND" in capsys.readouterr().err


def test_every_registered_command_has_its_own_subparser():
    parser, subparsers = cli.build_parser()
    assert sorted(subparsers) == sorted(command.name for command in cli.COMMANDS)
    assert "ui" in subparsers
    assert parser.prog == "keras-seq"


@pytest.mark.large
def test_help_imports_neither_gradio_nor_keras():
    code = (
        "import sys\n"
        "from builder_ui import cli\n"
        "try:\n"
        "    cli.main(['ui', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted({'gradio', 'keras', 'keras_seq'} & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "usage: keras-seq ui" in result.stdout
    assert result.stdout.strip().endswith("[]")
