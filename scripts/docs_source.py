"""Assemble the documentation site's source (``build/docs-src``) for ``mkdocs build``.

The pages live where a reader of the repository finds them (README.md, docs/, notebooks/); the site
needs them under one folder, with the README as its home page and an API page generated from the
package's public names (rendered from their docstrings by mkdocstrings).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "docs-src"

# public names by module, in the order a reader meets them
API = {
    "The BART variable": ["pymc_treesamplers.BART", "pymc_treesamplers.DirichletSplitPrior",
                          "pymc_treesamplers.model.split_rules"],
    "Tree steps": ["pymc_treesamplers.CGMStep", "pymc_treesamplers.ReshapeStep", "pymc_treesamplers.GrowPruneStep",
                   "pymc_treesamplers.PGBARTStep", "pymc_treesamplers.CTBirthDeathStep",
                   "pymc_treesamplers.NormalScaleGibbs", "pymc_treesamplers.PGBART",
                   "pymc_treesamplers.steps.options.TreeStepOptions"],
    "BART in a bambi formula": ["pymc_treesamplers.bambi.Model", "pymc_treesamplers.bambi.bart"],
    "Methods that cannot sample trees": ["pymc_treesamplers.model.callers.UnsupportedMethodError"],
    "Predictions": ["pymc_treesamplers.predict", "pymc_treesamplers.sample_posterior_predictive",
                    "pymc_treesamplers.load_zarr"],
    "Chains across machines": ["pymc_treesamplers.distributed.sample", "pymc_treesamplers.distributed.local_cluster",
                               "pymc_treesamplers.distributed.ChainsFailed",
                               "pymc_treesamplers.distributed.current_chain",
                               "pymc_treesamplers.distributed.ChainSeed"],
    "Single trees by SMC": ["pymc_treesamplers.SMCTreeClassifier", "pymc_treesamplers.SMCTreeRegressor"],
    "Grow-from-root fit (not MCMC)": ["pymc_treesamplers.GFRRegressor"],
    "Diagnostics": ["pymc_treesamplers.results.diagnostics", "pymc_treesamplers.vi_to_kulprit"],
    "Plots": ["pymc_treesamplers.results.plots"],
    "Priors and jump-mode traces": ["pymc_treesamplers.chipman_sigma2_prior", "pymc_treesamplers.jump_weights",
                                    "pymc_treesamplers.weighted_mean", "pymc_treesamplers.resample_jump_chain"],
    "Data sets": ["pymc_treesamplers.datasets"],
}


def home_page(readme: str) -> str:
    """The README with its links into docs/ made relative to the site, and links to repository files
    outside the site turned into plain text."""
    text = readme.replace("](docs/", "](")

    def outside(match):
        label, target = match.group(1), match.group(2)
        if target.startswith(("http", "#")) or target.endswith(".md") or ".md#" in target:
            return match.group(0)
        return f"{label} (`{target}`)"

    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", outside, text)


def api_page() -> str:
    lines = ["# API reference", "", "Generated from the docstrings.", ""]
    for title, names in API.items():
        lines += [f"## {title}", ""]
        lines += [f"::: {name}\n" for name in names]
    return "\n".join(lines) + "\n"


def package_stamp() -> str:
    """A hash of the package's files: mkdocs-jupyter executes the notebooks at build time and caches each
    rendered page by the notebook file's bytes, so the copies carry this hash and a change to the package
    executes them again."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "pymc_treesamplers").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def stamped(notebook: str, stamp: str) -> str:
    """The notebook as the site executes it: stamped with the package's hash, and with ``%matplotlib inline``
    at the top of its first code cell. The figures that ``pmt.plots`` returns are plain matplotlib Figures,
    not pyplot's, so a kernel shows them as images only once the inline backend is active (pyplot imported
    or this magic); without it the page would show ``<Figure size ...>`` where each plot belongs."""
    book = json.loads(notebook)
    book.setdefault("metadata", {})["pymc_treesamplers_source"] = stamp
    for cell in book.get("cells", []):
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            cell["source"] = "%matplotlib inline\n" + source
            break
    return json.dumps(book, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "notebooks").mkdir(parents=True)
    for page in sorted((ROOT / "docs").glob("*.md")):
        shutil.copy(page, OUT / page.name)
    # the generated benchmark reports and the figures they draw (benchmarks/mixing.py)
    shutil.copytree(ROOT / "docs" / "reports", OUT / "reports")
    stamp = package_stamp()
    for book in sorted((ROOT / "notebooks").glob("*.ipynb")):
        (OUT / "notebooks" / book.name).write_text(stamped(book.read_text(), stamp))
    (OUT / "index.md").write_text(home_page((ROOT / "README.md").read_text()))
    for page in ("CHANGELOG.md", "CONTRIBUTING.md"):
        (OUT / page).write_text(home_page((ROOT / page).read_text()))
    (OUT / "api.md").write_text(api_page())
    print(f"docs source in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
