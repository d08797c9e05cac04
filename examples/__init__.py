"""Jobs that use the package as a user would, outside its wheel (``make demo`` runs :mod:`examples.demo`)."""
