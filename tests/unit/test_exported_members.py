"""Every package's ``__all__`` lists exactly the public names it defines or re-exports."""

import importlib

import pytest

PACKAGES = ["schemas", "agents", "streamxai.handlers", "streamxai.core.storage", "streamxai.core.explainers",
            "streamxai.local.dashboard", "streamxai.ingest"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_matches_public_names(name):
    mod = importlib.import_module(name)
    public = {n for n in vars(mod) if not n.startswith("_")}
    submodules = {n for n, v in vars(mod).items() if type(v).__name__ == "module"}
    assert set(mod.__all__) == public - submodules - {"annotations"}
