"""The model a user writes: the BART variable and its covariates (coding into split columns, split rules),
the default prior of sigma^2, and the guard that names the PyMC methods that cannot sample trees."""
