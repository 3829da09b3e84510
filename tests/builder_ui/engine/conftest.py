"""Fixtures of the engine's Ray tests: a Ray of the test's own, never the machine's."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def ray_tmpdir(ray_temp_root, monkeypatch):
    """A Ray temp directory of the test's own, so no test reads or writes the machine's /tmp/ray.

    Short (`/tmp/rayXXXXXXXX`, the `ray_temp_root` fixture): Ray's sockets live under it, and
    a Unix socket path may not exceed 107 bytes. Also no `RAY_ADDRESS` from the environment.

    Ray's token authentication is off (`RAY_AUTH_MODE=disabled`) in every Ray test, as for the
    two-node cluster of `test_ray_no_shared_disk.py`. Seen with Ray 2.60: after an instance
    with the default (token) mode in the same pytest worker, that cluster's driver could not
    start its queue actor (it died before it ran), so the test failed after the Tune tests.
    """
    pytest.importorskip("ray")
    root = ray_temp_root
    monkeypatch.setenv("RAY_TMPDIR", str(root))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return root / "ray"  # what Ray makes of RAY_TMPDIR


@pytest.fixture
def local_ray(ray_tmpdir):
    ray = pytest.importorskip("ray")
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}},
    )
    yield ray
    ray.shutdown()
