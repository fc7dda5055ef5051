"""A claim that names no particular file (the repo root, `*`, `**/...`) covers nothing."""

import pytest

from agent_rl_sandbox.tools.evals._actions import covered


@pytest.mark.parametrize("claim", [".", "./", "", "/", "*", "**", "**/*.py"])
def test_broad_claims_cover_nothing(claim):
    assert not covered("shopcart/pricing.py", [claim])


@pytest.mark.parametrize(("claim", "path"), [("shopcart", "shopcart/pricing.py"), ("shopcart/pricing.py", "shopcart/pricing.py"), ("shopcart/*.py", "shopcart/cart.py")])
def test_specific_claims_cover_their_files(claim, path):
    assert covered(path, [claim])
    assert not covered("README.md", [claim])
