"""The README's example runs as pasted (its first Python block, in a fresh namespace)."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_example_runs_as_pasted(tmp_path, monkeypatch):
    text = README.read_text()
    block = re.search(r"## Use\n\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)  # the example saves its plot in the working directory
    out = io.StringIO()
    namespace: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["f_new"].shape[-1] == len(namespace["X_new"]) == 100
    assert (tmp_path / "pdp.png").stat().st_size > 0
    assert "sigma" in out.getvalue()  # az.summary's table
    rmse = float(out.getvalue().rsplit(":", 1)[1])
    assert rmse < 1.5  # Friedman #1 with noise sd 1 on 500 rows: a fit, not the prior
