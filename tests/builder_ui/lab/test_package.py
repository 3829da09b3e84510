"""The lab package's lazy re-exports stay in step with the modules that define them."""

from __future__ import annotations

import importlib

import pytest

import builder_ui.lab as lab
from builder_ui.lab import common, suite


@pytest.mark.parametrize("name", lab.__all__)
def test_every_re_export_is_the_defining_modules_object(name):
    module = importlib.import_module(lab._EXPORTS[name])
    assert getattr(lab, name) is getattr(module, name)


def test_every_public_name_of_the_suite_is_re_exported():
    assert set(suite.__all__) <= set(lab.__all__)


def test_the_context_and_result_types_are_re_exported_from_common():
    assert lab.LabContext is common.LabContext
    assert lab.ExperimentResult is common.ExperimentResult


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'run_everything'"):
        lab.run_everything  # noqa: B018 - the attribute access is the test
