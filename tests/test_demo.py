"""The `make demo` job in miniature (catches API drift between the package and its demo)."""

import numpy as np
import pytest

from examples.demo import main
from pymc_treesamplers import datasets


def test_demo_quick_writes_its_outputs(tmp_path):
    table = main(["--quick", "--all", "--out", str(tmp_path)])
    assert set(table["sampler"]) == {"cgm", "ctbirthdeath", "growprune", "pgbart", "reshape"}
    assert np.isfinite(table["test_rmse"]).all() and (table["test_rmse"] < 10).all()
    for name in ("comparison.csv", "predicted_vs_observed.png", "sigma_trace_rank.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_datasets_shapes_and_errors():
    X, y = datasets.load_boston()
    assert X.shape == (506, 13) and y.shape == (506,)
    X, y, f = datasets.friedman1(50, rng=0)
    assert X.shape == (50, 10) and 0.3 < np.std(y - f) < 2.0
    with pytest.raises(ValueError, match="p"):
        datasets.friedman1(50, p=3)
    X, y, f = datasets.wu_tjelmeland_west(300, rng=0)
    np.testing.assert_array_equal(X[:, 0] <= 0.5, X[:, 2] > 0.5)
