"""What a fit gives back: the stored forests (storage), predictions from them (predictive), the numbers and
plots read from an InferenceData (diagnostics, plots), jump-mode traces' weights (jumps), and runs streamed to disk
by PyMC's ZarrTrace (streamed)."""
