"""What a run keeps: the summary JSON of every report (in git) and the raw draws and traces (in an ignored ``raw/``
folder, recorded in the JSON by size, sha256 and the command that regenerates them)."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import numpy as np

from . import paths
from .paths import rel


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o))


def save_json(obj, path: Path) -> None:
    """Write ``obj`` as indented JSON, atomically (numpy scalars and arrays become plain JSON)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=_json_default) + "\n")
    tmp.replace(path)


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


#
# Draws and traces that a report does not show are not kept in git: they go to a ``raw/`` folder next
# to the results (ignored by git), and the summary JSON keeps a record of each file (its path, size,
# sha256 and the command that regenerates it). ``python -m benchmarks.harness --verify-raw`` checks them.


def save_raw(path: Path, arrays: dict[str, np.ndarray], regenerate: str | None = None) -> dict:
    """Write ``arrays`` as an ``.npz`` whose bytes depend on the arrays alone (fixed zip timestamps: a
    rerun that draws the same numbers gives the same checksum) and return its :func:`raw_record`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asarray(arrays[name]), allow_pickle=False)
    tmp.replace(path)
    return raw_record(path, regenerate)


def raw_record(path: Path, regenerate: str | None = None) -> dict:
    """What a summary JSON keeps of a raw file: path (from the repository), size, sha256, and the command
    that regenerates it."""
    data = Path(path).read_bytes()
    rec = {"path": rel(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if regenerate:
        rec["regenerate"] = regenerate
    return rec


def raw_status(record: dict) -> str:
    """'ok', 'missing' or 'differs' (the file there is not the one the record describes)."""
    p = Path(record["path"])
    p = p if p.is_absolute() else paths.ROOT / p
    if not p.exists():
        return "missing"
    return "ok" if hashlib.sha256(p.read_bytes()).hexdigest() == record["sha256"] else "differs"


def load_raw(record: dict) -> dict[str, np.ndarray]:
    """The arrays of a raw file recorded by :func:`save_raw`, after checking its checksum. Raw files are
    not in git: a missing one raises FileNotFoundError naming the command that regenerates it."""
    status = raw_status(record)
    how = record.get("regenerate", "rerunning the benchmark that recorded it")
    if status == "missing":
        raise FileNotFoundError(
            f"{record['path']} is not here (raw draws and traces are kept out of git): `{how}` regenerates it; "
            f"`python -m benchmarks.harness --verify-raw` then checks it against sha256 {record['sha256']}"
        )
    if status == "differs":
        raise ValueError(
            f"{record['path']} is not the file its results recorded (sha256 {record['sha256']}): regenerated "
            f"by other code, versions or machine? `{how}` regenerates it together with its summary"
        )
    p = Path(record["path"])
    with np.load(p if p.is_absolute() else paths.ROOT / p) as z:
        return {k: z[k] for k in z.files}


def raw_records(obj) -> list[dict]:
    """Every raw-file record anywhere in a saved JSON object."""
    if isinstance(obj, dict):
        if {"path", "bytes", "sha256"} <= obj.keys():
            return [obj]
        return [rec for v in obj.values() for rec in raw_records(v)]
    if isinstance(obj, list):
        return [rec for v in obj for rec in raw_records(v)]
    return []


def verify_raw() -> int:
    """``--verify-raw``: check every raw file recorded in ``benchmarks/results`` against its checksum; 1 if
    one is missing or differs (each with the command that regenerates it)."""
    seen: dict[str, dict] = {}
    for js in sorted(paths.RESULTS_DIR.rglob("*.json")):
        if "raw" not in js.relative_to(paths.RESULTS_DIR).parts:
            for rec in raw_records(load_json(js)):
                seen.setdefault(rec["path"], rec)
    bad = 0
    for path, rec in sorted(seen.items()):
        status = raw_status(rec)
        bad += status != "ok"
        how = f": `{rec['regenerate']}` regenerates it" if status != "ok" and rec.get("regenerate") else ""
        print(f"{path}: {status}{how}", file=sys.stderr)
    print(f"{len(seen) - bad} of {len(seen)} recorded raw files present and as recorded", file=sys.stderr)
    return 1 if bad else 0
