"""What a fit gives back: the stored forests (storage), predictions from them (predictive), the numbers and
plots read from an InferenceData (diagnostics, plots), and jump-mode traces' weights (jumps)."""
