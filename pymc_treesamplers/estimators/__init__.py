"""scikit-learn estimators outside PyMC: GFRRegressor (grow-from-root sweeps alone, not MCMC) and the
single-tree SMC (SMCTreeClassifier, SMCTreeRegressor)."""
