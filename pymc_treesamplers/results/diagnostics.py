"""Numbers about a BART fit, read from the InferenceData alone (they work after ``az.from_netcdf``,
with no model): variable inclusion, tree sizes, each sampler's own stats, convergence of the BART
value at chosen rows, and a comparison of samplers by effective samples per second.

Every function takes the name of the BART variable (``var_name``, default ``"mu"``) and reads the
per-draw stats its tree step wrote (``<var>_split_counts``, ``<var>_n_leaves``, ...; docs/model.md).
Convergence is judged over chains: rank-normalised split R-hat and bulk ESS (Vehtari et al. 2021,
from arviz-stats' array interface); one chain's ESS can be high while its trees never move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

__all__ = [
    "FROZEN_MH",
    "FROZEN_TREES",
    "acceptance",
    "bart_names",
    "bulk_ess",
    "choose_draws",
    "compare_samplers",
    "compute_variable_importance",
    "f_convergence",
    "get_variable_inclusion",
    "rank_rhat",
    "sampler_stats",
    "frozen_message",
    "tree_size_trace",
    "vi_to_kulprit",
]

# stats that are not one number per draw
_NOT_SCALAR = ("split_counts", "forest")

# A tree step's chain "cannot move" after tuning when the likelihood correction keeps fewer than FROZEN_MH of its
# proposals, or fewer than FROZEN_TREES of its tree updates change a tree (docs/likelihoods.md, "A chain that
# cannot move"). Chains that froze kept 0.000-0.04 (the expansion at the leaf prior mean on small counts, issue
# 27); the default routes keep 0.75-0.92 on the exactness tests and 0.6-0.95 on real data, the expansion route
# 0.16-0.99. Every tree of a fit is updated once per draw, so at 1% a tree changes about 10 times in 1000 draws.
FROZEN_MH = 0.1
FROZEN_TREES = 0.01


def frozen_message(var_name: str, step: str, tree_rate: float, mh_rate: float | None) -> str | None:
    """The warning for a chain whose trees could not move after tuning (module constants), or None.

    >>> frozen_message("mu", "CGMStep", 0.3, 0.9) is None
    True
    >>> print(frozen_message("mu", "CGMStep", 0.3, 0.02))  # doctest: +ELLIPSIS
    The tree step of 'mu' (CGMStep) kept 2.0% of its proposals after tuning ...
    """
    if mh_rate is not None and mh_rate < FROZEN_MH:
        what = (f"kept {mh_rate:.1%} of its proposals after tuning (the likelihood correction's acceptance; "
                f"below {FROZEN_MH:.0%} the trees barely move)")
        advice = ("Its working model of the likelihood is far from where the leaves sit: use the step's default "
                  "route=\"auto\" (exact leaf sums or data augmentation where the family has them), and check "
                  "the leaf prior (mu0, sigma_mu) against the data.")
    elif tree_rate < FROZEN_TREES:
        what = f"changed {tree_rate:.2%} of its trees after tuning (below {FROZEN_TREES:.0%} they barely move)"
        advice = ("Try CGMStep or ReshapeStep (moves that change a split without pruning it), more tuning draws, "
                  "or a wider leaf prior (smaller k).")
    else:
        return None
    return (f"The tree step of {var_name!r} ({step}) {what}: its draws may not represent the posterior. {advice} "
            f"Per chain: pmt.diagnostics.acceptance(idata, {var_name!r}).")


def acceptance(idata, var_name: str = "mu") -> pd.DataFrame:
    """Per chain, over the stored draws: the share of tree updates that changed a tree (``accept``), the
    likelihood correction's acceptance (``mh_accept``, when the step has a correction), and ``frozen``:
    whether either is below the threshold under which the step warns at the end of sampling
    (``FROZEN_TREES``, ``FROZEN_MH``).

    >>> import arviz as az
    >>> st = {"mu_accept": np.array([[0.5, 0.7], [0.004, 0.002]]), "mu_forest": np.full((2, 2), "")}
    >>> acceptance(az.from_dict({"sample_stats": st}))
             accept  frozen
    chain 0   0.600   False
    chain 1   0.003    True
    """
    stats = _stats(idata)
    _stat(idata, var_name, "forest")
    cols = {"accept": np.asarray(stats[f"{var_name}_accept"].values, dtype=float)}
    if f"{var_name}_mh_accept" in stats:
        cols["mh_accept"] = np.asarray(stats[f"{var_name}_mh_accept"].values, dtype=float)
    rows = {f"chain {c}": {k: float(v[c].mean()) for k, v in cols.items()} for c in range(stats.sizes["chain"])}
    table = pd.DataFrame.from_dict(rows, orient="index")
    frozen = table["accept"] < FROZEN_TREES
    if "mh_accept" in table:
        frozen |= table["mh_accept"] < FROZEN_MH
    return table.assign(frozen=frozen)


def bulk_ess(draws) -> np.ndarray:
    """Bulk ESS (rank-normalised, split chains) of draws shaped (chain, draw, *rest); shape ``rest``.

    >>> round(float(bulk_ess(np.random.default_rng(0).normal(size=(4, 500)))), -2)
    2000.0
    """
    from arviz_stats.base import array_stats

    return np.asarray(array_stats.ess(np.asarray(draws, dtype=float), chain_axis=0, draw_axis=1, method="bulk"))


def rank_rhat(draws) -> np.ndarray:
    """Rank-normalised split R-hat of draws shaped (chain, draw, *rest); shape ``rest``.

    >>> x = np.random.default_rng(0).normal(size=(4, 500))
    >>> bool(rank_rhat(x) < 1.01), bool(rank_rhat(x + np.arange(4)[:, None]) > 1.5)
    (True, True)
    """
    from arviz_stats.base import array_stats

    return np.asarray(array_stats.rhat(np.asarray(draws, dtype=float), chain_axis=0, draw_axis=1, method="rank"))


def _stats(idata) -> xr.Dataset:
    if "sample_stats" not in idata.children:
        raise ValueError("idata has no sample_stats group: was it produced by pm.sample with a pmt tree step?")
    return idata["sample_stats"].to_dataset()


def _stat(idata, var_name: str, stat: str) -> xr.DataArray:
    stats = _stats(idata)
    key = f"{var_name}_{stat}"
    if key not in stats:
        have = sorted(k.removesuffix("_forest") for k in stats.data_vars if str(k).endswith("_forest"))
        raise ValueError(f"no {key!r} in idata.sample_stats: was {var_name!r} sampled by a pmt tree step? "
                         f"(BART variables with stats here: {have})")
    return stats[key]


def bart_names(idata) -> list[str]:
    """Names of the BART variables whose tree steps wrote stats into ``idata`` (those with ``<name>_forest``).

    >>> import arviz as az
    >>> bart_names(az.from_dict({"sample_stats": {"mu_forest": np.full((1, 2), "")}}))
    ['mu']
    """
    return sorted(str(k).removesuffix("_forest") for k in _stats(idata).data_vars if str(k).endswith("_forest"))


def _one_bart(idata, var_name) -> str:
    """``var_name``, or the only BART variable in ``idata`` when it is None."""
    if var_name is not None:
        if not isinstance(var_name, str):
            raise TypeError(f"var_name must be the BART variable's name (a str), got {type(var_name).__name__}")
        return var_name
    names = bart_names(idata)
    if len(names) != 1:
        raise ValueError(f"idata holds {len(names)} BART variables {names}: name one with var_name "
                         "(pymc-bart's form: bart_var_name=...)" if names else
                         "idata holds no BART forests: was it produced by pm.sample with a pmt tree step?")
    return names[0]


def _is_covariates(x) -> bool:
    """Whether a positional argument is a covariate matrix (pymc-bart's ``X``) rather than a variable name."""
    return x is not None and not isinstance(x, str) and (hasattr(x, "shape") or isinstance(x, (list, tuple)))


def get_variable_inclusion(idata, var_name: str | None = None, labels: Sequence[str] | None = None, X=None, *,
                           model=None, bart_var_name: str | None = None, to_kulprit: bool = False):
    """Share of all splits that use each covariate, overall and per chain, most used first.

    ``inclusion`` is the covariate's splits summed over trees and draws divided by all splits;
    ``chain_<c>`` the same within chain ``c``; ``sd_chains`` the standard deviation of the chains'
    shares (how far chains disagree: the uncertainty a single chain hides); ``pip`` the posterior
    inclusion probability, the share of draws whose forest splits on the covariate at least once
    (Linero 2018 selects the covariates with ``pip > 0.5``). With a Dirichlet prior on the split
    weights (``split_prior="dirichlet"``) also ``weight``, their posterior mean, and ``weight_lo``,
    ``weight_hi``, its 3% and 97% quantiles. ``labels``, or the columns of a DataFrame ``X``, name
    the covariates (else ``x0, x1, ...``). ``var_name``: the BART variable (default: the only one).

    **pymc-bart's form**, ``get_variable_inclusion(idata, X, model=None, bart_var_name=None, labels=None,
    to_kulprit=False)`` (X given and the variable not named by ``var_name``), returns what pymc-bart
    returns: ``(shares, labels)``, the shares most used first as an array
    and their labels as a list (the DataFrame's column names, else the column indices as strings);
    ``to_kulprit=True`` gives kulprit's nested term lists instead, ``[[], [l0], [l0, l1], ..., all]``.
    ``model`` is accepted and not needed (the variable is named by ``bart_var_name``).

    >>> import arviz as az
    >>> counts = np.array([[[3, 1, 0], [1, 1, 0]], [[2, 2, 0], [2, 2, 0]]])
    >>> idata = az.from_dict({"sample_stats": {"mu_split_counts": counts, "mu_forest": np.full((2, 2), "")}})
    >>> get_variable_inclusion(idata)[["inclusion", "sd_chains"]].round(3)
        inclusion  sd_chains
    x0      0.571      0.083
    x1      0.429      0.083
    x2      0.000      0.000
    >>> shares, names = get_variable_inclusion(idata, np.zeros((4, 3)))   # pymc-bart's call
    >>> shares.round(3).tolist(), names
    ([0.571, 0.429, 0.0], ['0', '1', '2'])
    """
    if _is_covariates(var_name):  # pymc-bart's positional (idata, X, model, bart_var_name)
        if X is not None and not isinstance(X, str):
            raise TypeError("get_variable_inclusion got X twice (second argument and X=)")
        if isinstance(X, str):
            bart_var_name, X = X, None
        if labels is not None and not isinstance(labels, (list, tuple, np.ndarray, pd.Index)):
            labels = None  # pymc-bart's positional model, which the variable's name makes unnecessary
        X, var_name = var_name, None
    # our DataFrame when the variable is named (or nothing but idata is given); pymc-bart's tuple otherwise
    pymc_bart_form = (var_name is None and X is not None) or bart_var_name is not None or to_kulprit
    if bart_var_name is not None:
        if var_name is not None and var_name != bart_var_name:
            raise ValueError(f"var_name={var_name!r} and bart_var_name={bart_var_name!r} disagree")
        var_name = bart_var_name
    var_name = _one_bart(idata, var_name) if (var_name is not None or _has_forests(idata)) else "mu"
    counts = np.asarray(_stat(idata, var_name, "split_counts").values.tolist(), dtype=float)
    if counts.ndim != 3:
        raise ValueError(f"{var_name}_split_counts must be (chain, draw, p), got shape {counts.shape}")
    if pymc_bart_form and labels is None and not hasattr(X, "columns"):
        labels = [str(v) for v in range(counts.shape[2])]
    labels = _labels(counts.shape[2], labels, X)
    per_chain = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        chain_share = per_chain / per_chain.sum(axis=1, keepdims=True)
        overall = per_chain.sum(axis=0) / per_chain.sum()
    out = pd.DataFrame({"inclusion": overall, "sd_chains": np.nanstd(chain_share, axis=0),
                        "pip": (counts > 0).mean(axis=(0, 1))}, index=labels)
    stats = idata["sample_stats"]
    if f"{var_name}_split_weights" in stats:
        w = np.asarray(stats[f"{var_name}_split_weights"].values.tolist(), dtype=float).reshape(-1, counts.shape[2])
        out["weight"] = w.mean(axis=0)
        out["weight_lo"], out["weight_hi"] = np.quantile(w, [0.03, 0.97], axis=0)
    for c in range(chain_share.shape[0]):
        out[f"chain_{c}"] = chain_share[c]
    out = out.sort_values("inclusion", ascending=False, kind="stable")
    if not pymc_bart_form:
        return out
    names = [str(v) for v in out.index]
    if to_kulprit:
        return [names[:i] for i in range(len(names) + 1)]
    return out["inclusion"].to_numpy(), names


def _has_forests(idata) -> bool:
    """Whether ``idata`` holds any BART forest (a stats-only record, as in doctests, may not)."""
    return bool(bart_names(idata)) if "sample_stats" in idata.children else False


def vi_to_kulprit(vi_results: dict) -> list[list[str]]:
    """The submodels of :func:`compute_variable_importance` as kulprit's term lists (pymc-bart's
    ``vi_to_kulprit``): ``[[], [v1], [v1, v2], ...]``, the covariates in the order they were added,
    without the full model, for ``kulprit.ProjectionPredictive.project(user_terms=...)``.

    >>> vi_to_kulprit({"names": ["b", "a", "c"], "labels": np.array(["b", "+ a", "+ c"])})
    [[], ['b'], ['b', 'a']]
    """
    names = vi_results.get("names")
    if names is None:
        names = [str(label).strip("+ ") for label in vi_results["labels"]]
    return [list(names[:i]) for i in range(len(names))]


def _labels(p: int, labels, X) -> list[str]:
    """Covariate names: ``labels``, else the columns of a DataFrame ``X``, else ``x0, x1, ...``."""
    if labels is None and X is not None and hasattr(X, "columns"):
        labels = X.columns
    labels = [f"x{v}" for v in range(p)] if labels is None else [str(v) for v in labels]
    if len(labels) != p:
        raise ValueError(f"labels has {len(labels)} names but the forest was fit on {p} covariates")
    return labels


def tree_size_trace(idata, var_name: str = "mu") -> xr.Dataset:
    """Mean number of leaves and mean depth of the trees at every draw, ``(chain, draw)`` each: the
    tree-size traces of Figure 3 of the PG-BART paper (one line per chain shows chains that sit apart).

    >>> import arviz as az
    >>> st = {"mu_n_leaves": np.ones((2, 3)), "mu_tree_depth": np.zeros((2, 3))}
    >>> sorted(tree_size_trace(az.from_dict({"sample_stats": st})).data_vars)
    ['n_leaves', 'tree_depth']
    """
    return xr.Dataset({name: _stat(idata, var_name, name) for name in ("n_leaves", "tree_depth")})


def sampler_stats(idata, var_name: str = "mu") -> pd.DataFrame:
    """Mean of each per-draw stat of the variable's tree step, per chain and over all chains.

    The stats are the step's own: ``accept`` (share of trees whose proposal was kept), ``mh_accept``
    (the likelihood correction's acceptance, non-Gaussian likelihoods), ``kept_old`` and ``stages``
    (PG), ``jumps`` and ``total_rate`` (CT), ``n_leaves`` and ``tree_depth``.

    >>> import arviz as az
    >>> st = {"mu_accept": np.array([[0.5, 0.7], [0.1, 0.3]]), "mu_forest": np.full((2, 2), "")}
    >>> sampler_stats(az.from_dict({"sample_stats": st}))
             accept
    chain 0     0.6
    chain 1     0.2
    all         0.4
    """
    stats = _stats(idata)
    _stat(idata, var_name, "forest")  # the variable's step wrote here
    prefix = f"{var_name}_"
    names = [str(k) for k in stats.data_vars if str(k).startswith(prefix)
             and str(k).removeprefix(prefix) not in _NOT_SCALAR and stats[k].ndim == 2]
    table = {name.removeprefix(prefix): np.asarray(stats[name].values, dtype=float) for name in names}
    rows = {f"chain {c}": {k: v[c].mean() for k, v in table.items()} for c in range(stats.sizes["chain"])}
    rows["all"] = {k: v.mean() for k, v in table.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def f_convergence(idata, var_name: str = "mu", rows: Sequence[int] | None = None, X=None) -> pd.DataFrame:
    """R-hat and bulk ESS over chains of the BART value at chosen rows, with its posterior mean and sd.

    At the training rows from the posterior (``rows``: indices, default the first 25), or at the
    rows of new covariates ``X`` from the stored forests (:func:`pymc_treesamplers.predict`). For a
    BART with several outputs the rows are ``(output, row)`` pairs, one table row each.

    >>> import arviz as az
    >>> mu = np.random.default_rng(0).normal(size=(4, 200, 3))
    >>> f_convergence(az.from_dict({"posterior": {"mu": mu}}))["r_hat"].lt(1.05).all()
    np.True_
    """
    if X is not None:
        from .predictive import predict

        draws = predict(idata, X, var_name)
    else:
        if "posterior" not in idata.children or var_name not in idata["posterior"]:
            raise ValueError(f"no {var_name!r} in idata.posterior")
        draws = np.asarray(idata["posterior"][var_name].values, dtype=float)
    n = draws.shape[-1]
    rows = list(range(min(n, 25))) if rows is None else [int(r) for r in rows]
    if any(not 0 <= r < n for r in rows):
        raise ValueError(f"rows must lie in [0, {n}), got {rows}")
    sel = draws[..., rows]
    lead = sel.shape[2:-1]  # () or (k,)
    flat = sel.reshape(sel.shape[0], sel.shape[1], -1)
    index = pd.MultiIndex.from_product([range(lead[0]), rows], names=["output", "row"]) if lead else \
        pd.Index(rows, name="row")
    return pd.DataFrame({"mean": flat.mean(axis=(0, 1)), "sd": flat.std(axis=(0, 1)),
                         "r_hat": rank_rhat(flat), "ess_bulk": bulk_ess(flat)}, index=index)


def compare_samplers(idatas: Mapping[str, object], var_name: str = "mu", sigma: str | None = "sigma",
                     rows: int = 25) -> pd.DataFrame:
    """Side by side, for fits of the same model by different samplers: sampling time (PyMC's
    ``sampling_time``), bulk ESS and ESS per second of ``sigma`` (if present) and of the BART value
    (median over the first ``rows`` training rows), and the largest R-hat of the BART value there.

    >>> # pmt.compare_samplers({"CGM": idata_cgm, "PG": idata_pg})
    """
    out = {}
    for label, idata in idatas.items():
        post = idata["posterior"]
        seconds = float(post.attrs.get("sampling_time", np.nan))
        conv = f_convergence(idata, var_name, rows=range(min(rows, post[var_name].shape[-1])))
        row = {"sampling_s": seconds, "ess_f": float(conv["ess_bulk"].median()),
               "max_r_hat_f": float(conv["r_hat"].max())}
        row["ess_f_per_s"] = row["ess_f"] / seconds
        if sigma is not None and sigma in post:
            row["ess_sigma"] = float(bulk_ess(np.asarray(post[sigma].values, dtype=float)))
            row["ess_sigma_per_s"] = row["ess_sigma"] / seconds
            row["r_hat_sigma"] = float(rank_rhat(np.asarray(post[sigma].values, dtype=float)))
        out[label] = row
    return pd.DataFrame.from_dict(out, orient="index")


def choose_draws(idata, var_name: str = "mu", samples: int = 100, random_seed=None) -> np.ndarray:
    """``samples`` posterior draws chosen at random, as sorted flat indices ``chain * n_draw + draw`` (the
    ``draws`` of :func:`pymc_treesamplers.predict`): without replacement, or with replacement when there
    are fewer stored draws than ``samples`` (so that results have ``samples`` rows, as pymc-bart's do).

    >>> import arviz as az
    >>> idata = az.from_dict({"sample_stats": {"mu_forest": np.full((2, 3), "")}})
    >>> len(set(choose_draws(idata, samples=4).tolist())), len(choose_draws(idata, samples=10))
    (4, 10)
    """
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples must be an integer >= 1, got {samples!r}")
    n_total = int(np.prod(_stat(idata, var_name, "forest").shape[:2]))
    rng = np.random.default_rng(random_seed)
    return np.sort(rng.choice(n_total, size=samples, replace=samples > n_total))


def _r2(full: np.ndarray, sub: np.ndarray) -> np.ndarray:
    """Squared Pearson correlation of each draw's submodel fit with the full model's (rows: draws)."""
    a = full - full.mean(axis=1, keepdims=True)
    b = sub - sub.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    return np.nan_to_num(r, nan=0.0) ** 2


def _bart_variable_names(bartrv) -> list[str] | None:
    """The names of a BART variable or a list of them (pymc-bart's ``bartrv``), or None if ``bartrv``
    is not one."""
    from ..model.bart import BARTRV
    from ..model.basis import bart_of

    items = [bart_of(v) for v in (bartrv if isinstance(bartrv, (list, tuple)) else [bartrv])]
    if not items or not all(isinstance(getattr(getattr(v, "owner", None), "op", None), BARTRV) for v in items):
        return None
    if isinstance(bartrv, (list, tuple)) and any(v.type.ndim != 1 for v in items):
        raise ValueError("a list of BART variables must hold one-output BARTs (each of shape (n,))")
    return [v.name for v in items]


def coded_for(bartrv, X):
    """Covariates for the forests of a BART variable given as pymc-bart passes them: the columns its
    ``"OneHotSplit"`` rule reads as labels, held as numbers (in an array or a DataFrame), are coded as the
    variable's trees read them (a variable without such columns takes X as it is)."""
    from ..model.basis import bart_of
    from ..model.binning import covariate_matrix, number_labels
    from .predictive import CodedX

    op = bart_of(bartrv[0] if isinstance(bartrv, (list, tuple)) else bartrv).owner.op
    if not op.number_categories:
        return X
    values, categorical = covariate_matrix(X, "X")
    values = np.array(values, dtype=float)
    for j in op.number_categories:
        if j not in categorical:  # a DataFrame's category column is coded already
            values[:, j] = number_labels(values[:, j])
    return CodedX(values, tuple(sorted(set(categorical) | set(op.number_categories))))


def compute_variable_importance(idata, bartrv=None, X=None, model=None, method: str = "VI", fixed: int = 0,
                                samples: int = 50, random_seed=None, *, var_name: str | Sequence[str] | None = None,
                                labels: Sequence[str] | None = None, hdi_prob: float = 0.94) -> dict:
    """How well submodels that use only some covariates reproduce the full model's fit, draw by draw.

    A submodel's value at the training rows ``X`` is each stored forest with the other covariates
    marginalised out (a split on one of them weighs both children by the training rows that went
    each way). For ``samples`` posterior draws chosen at random, the full forest and the submodel of
    the *same* draw are compared by ``R^2`` (squared correlation over the rows, all outputs together);
    reported is its mean over the draws and a central ``hdi_prob`` interval. Submodels grow one
    covariate at a time: ``method="VI"`` adds covariates in order of variable inclusion
    (:func:`get_variable_inclusion`); ``"backward"`` starts from all and drops, at each stage, the
    covariate whose removal keeps ``R^2`` highest (``p^2 / 2`` submodels; then listed in reverse);
    ``"backward_VI"`` first drops the ``fixed`` least included covariates, then goes backward.

    The arguments are pymc-bart's, in its order: ``bartrv`` the BART variable (or a list of one-output
    BARTs on the same covariates, taken together as the outputs of one model), ``X`` the training
    covariates, ``model`` (accepted, not needed: the variable names itself). This package's form,
    ``compute_variable_importance(idata, X, "mu")``, works too: X second and the variable by name
    (``var_name``; default: the only BART variable in ``idata``).

    Returns pymc-bart's keys and shapes: ``indices`` (covariate indices in the order added), ``labels``
    (an array: the first covariate's name, then ``"+ name"`` for each one added), ``r2_mean``, ``r2_hdi``
    (``(p, 2)``: lower, upper), ``preds`` (submodel fits of the chosen draws, ``(p, samples, n)``, or
    ``(p, samples, n, k)`` with k outputs) and ``preds_all`` (the full model's, ``(samples, n[, k])``),
    plus ``names`` (the covariates in the order added), ``draws`` (the flat draw indices used) and
    ``method``.

    >>> # vi = pmt.compute_variable_importance(idata, X, "mu"); vi["r2_mean"]
    """
    from .predictive import check_new_X, predict

    if bartrv is not None and _bart_variable_names(bartrv) is None:  # our form: (idata, X, "mu", ...)
        if X is not None and not isinstance(X, (str, list, tuple)):
            raise TypeError("compute_variable_importance got X twice (second argument and X=)")
        if X is not None:
            if var_name is not None:
                raise TypeError("compute_variable_importance got the variable twice (third argument and var_name=)")
            var_name = X
        if isinstance(model, str):  # our positional method after the name
            method, model = model, None
        X, bartrv = bartrv, None
    if model is not None and not hasattr(model, "free_RVs"):
        raise TypeError(f"model must be a PyMC model (pymc-bart's argument; not needed here), got {model!r}")
    if bartrv is not None:
        names = _bart_variable_names(bartrv)
        if var_name is not None:
            raise TypeError("give the BART variable once: bartrv or var_name")
        var_name = names if len(names) > 1 or isinstance(bartrv, (list, tuple)) else names[0]
    if X is None:
        raise TypeError("compute_variable_importance needs the training covariates X")
    named = X  # names and inclusion read the covariates as given; the forests read them coded
    if bartrv is not None:
        X = coded_for(bartrv, X)
    if method not in ("VI", "backward", "backward_VI"):
        raise ValueError(f"method must be 'VI', 'backward' or 'backward_VI', got {method!r}")
    var_names = list(var_name) if isinstance(var_name, (list, tuple)) else [_one_bart(idata, var_name)]
    counts = [get_variable_inclusion(idata, v, X=named) for v in var_names]
    p = len(counts[0])
    if any(len(c) != p for c in counts):
        raise ValueError(f"the BART variables {var_names} were fit on different numbers of covariates")
    if bartrv is not None and labels is None and not hasattr(named, "columns"):
        labels = [str(v) for v in range(p)]  # pymc-bart's names: the column indices
    names = _labels(p, labels, named)
    if method == "backward_VI" and (isinstance(fixed, bool) or not isinstance(fixed, (int, np.integer))
                                    or not 1 <= fixed < p):
        raise ValueError(f"method='backward_VI' needs fixed, the covariates dropped by inclusion first, in [1, {p}); "
                         f"got {fixed!r}")
    Xa = check_new_X(X, p, with_categories=True)
    draws = choose_draws(idata, var_names[0], samples, random_seed)

    def fit(keep):
        drop = [v for v in range(p) if v not in keep]
        outs = []
        for v in var_names:
            out = predict(idata, Xa, v, exclude=drop or None, X_train=Xa, draws=draws)
            outs.append(out[:, None, :] if out.ndim == 2 else out)  # (draws, k, rows)
        return np.concatenate(outs, axis=1)

    full = fit(list(range(p)))
    inclusion = sum(c["inclusion"].reindex(_labels(p, None, named)).to_numpy() for c in counts)
    by_vi = list(np.argsort(-inclusion, kind="stable"))
    if method == "VI":
        order = by_vi
        preds = [fit(order[: s + 1]) for s in range(p)]
    else:
        keep, dropped, preds_rev = list(range(p)), [], [full]
        for v in (by_vi[::-1][:fixed] if method == "backward_VI" else []):
            keep.remove(v)
            dropped.append(v)
            preds_rev.append(fit(keep))
        while len(keep) > 1:
            trials = {v: fit([u for u in keep if u != v]) for v in keep}
            best = max(trials, key=lambda v: _r2(full, trials[v]).mean())
            keep.remove(best)
            dropped.append(best)
            preds_rev.append(trials[best])
        order = keep + dropped[::-1]
        preds = preds_rev[::-1]
    r2 = np.array([_r2(full.reshape(full.shape[0], -1), sub.reshape(sub.shape[0], -1)) for sub in preds])
    tail = (1.0 - hdi_prob) / 2.0
    added = [names[int(v)] for v in order]

    def rows_last(a):  # (..., k, rows) -> (..., rows[, k]), pymc-bart's layout
        a = np.moveaxis(a, -2, -1)
        return a[..., 0] if a.shape[-1] == 1 else a

    return {"indices": np.array(order, dtype=int), "labels": np.array([added[0]] + [f"+ {a}" for a in added[1:]]),
            "r2_mean": r2.mean(axis=1), "r2_hdi": np.quantile(r2, [tail, 1.0 - tail], axis=1).T,
            "preds": rows_last(np.array(preds)), "preds_all": rows_last(full), "names": added, "draws": draws,
            "method": method}
