"""Fixtures of the Python package's tests: the e2e models (tests/e2e/
gen_models.py; ctest passes their folder as MIXPREC_E2E_MODELS, else they
are generated here) and the mixprec CLI (MIXPREC_CLI, else build/bin)."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def e2e_models(tmp_path_factory):
    folder = os.environ.get("MIXPREC_E2E_MODELS")
    if not folder or not os.path.isfile(os.path.join(folder, "manifest.json")):
        folder = str(tmp_path_factory.mktemp("e2e_models"))
        subprocess.run([sys.executable, os.path.join(REPO, "tests/e2e/gen_models.py"), folder],
                       check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    return folder, manifest["models"]


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("MIXPREC_CLI", os.path.join(REPO, "build/bin/mixprec"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"the mixprec CLI is not at {path} (set MIXPREC_CLI)")
    return path
