"""The benchmark harness, a package by role: child processes and the command line (:mod:`.run`), where a
measurement comes from and the clean-tree guard (:mod:`.provenance`), saved JSON and raw files (:mod:`.store`),
Markdown reports (:mod:`.report`), and where they all live (:mod:`.paths`). ``from benchmarks import harness``
gives every benchmark script the names it uses from one place.

A benchmark script is its spec, its worker body and its tables; everything else is done here, the
same way for every benchmark:

* :func:`run_worker` runs one measured configuration as ``python -m <script> --worker SPEC`` in its
  own process session (threads pinned, numba cache keyed by the package source, timeout, log file)
  while it polls the memory of the child's process tree and the machine's busy CPU time, so a
  report can flag runs during which other processes competed for the cores. :func:`worker_main`
  is the child's side. ``src=`` runs the child against another checkout of the package.
* :func:`environment` and :func:`report_meta` capture the machine, package versions and git state.
* Every report has one JSON file, ``benchmarks/results/<report>.json`` with ``meta``, ``settings``
  and ``results``; the script's ``render(saved)`` turns it into ``docs/reports/<report>.md``, so a report
  can always be rebuilt from its JSON (``--render-only``; ``python -m benchmarks.harness`` rebuilds
  all of them).
* A report is measured and written only from a clean tree (:func:`require_clean_tree`, asked before
  the run and again before writing; ``BENCH_ALLOW_DIRTY=1`` writes it anyway, marked ``-dirty``).
  Re-rendering saved JSON does not ask: it measures nothing.
* Git keeps the summaries the reports show; draws and traces go to an ignored ``raw/`` folder, and the
  JSON records each file's size, sha256 and the command that regenerates it (:func:`save_raw`,
  :func:`load_raw`; ``python -m benchmarks.harness --verify-raw``).
* :func:`fmt`, :func:`md_table`, :func:`column_table` (a table from ``(header, cell)`` pairs),
  :func:`header_lines`, :func:`contention_note` and :func:`source_line` are the pieces every
  report shares.

No pymc import here: the parent process only orchestrates.
"""

from . import paths
from .paths import DOCS_DIR, REPORTS_DIR, RESULTS_DIR, ROOT, rel
from .provenance import (
    ALLOW_DIRTY_ENV,
    CORE_PACKAGES,
    PEER_PACKAGES,
    SOURCE_PATHSPEC,
    DirtyTreeError,
    dirty_paths,
    environment,
    git_state,
    machine_info,
    package_versions,
    require_clean_tree,
    source_hash,
    utc_now,
)
from .report import (
    CONTENTION_WARN_CORES,
    Column,
    column_table,
    command_line,
    contention_note,
    fmt,
    header_lines,
    if_ok,
    machine_text,
    md_table,
    publish,
    render_saved,
    report_meta,
    rerender,
    saved_reports,
    smoke_title,
    source_line,
)
from .run import (
    THREAD_ENVS,
    THREAD_VARS,
    add_cases_option,
    add_harness_args,
    child_env,
    choice_list,
    chosen_cases,
    chosen_settings,
    finish,
    grid_main,
    int_list,
    measuring,
    monitor_child,
    own_cpu_s,
    parse_case_args,
    parse_report_args,
    print_status,
    report_footer,
    report_parser,
    resolve_report_paths,
    run_notes,
    run_specs,
    run_worker,
    start,
    tail,
    worker_main,
)
from .store import load_json, load_raw, raw_record, raw_records, raw_status, save_json, save_raw, verify_raw

__all__ = [
    "ALLOW_DIRTY_ENV",
    "CONTENTION_WARN_CORES",
    "CORE_PACKAGES",
    "Column",
    "DOCS_DIR",
    "DirtyTreeError",
    "PEER_PACKAGES",
    "REPORTS_DIR",
    "RESULTS_DIR",
    "ROOT",
    "SOURCE_PATHSPEC",
    "THREAD_ENVS",
    "THREAD_VARS",
    "add_cases_option",
    "add_harness_args",
    "child_env",
    "choice_list",
    "chosen_cases",
    "column_table",
    "command_line",
    "contention_note",
    "dirty_paths",
    "environment",
    "finish",
    "fmt",
    "git_state",
    "grid_main",
    "header_lines",
    "if_ok",
    "int_list",
    "measuring",
    "load_json",
    "load_raw",
    "machine_info",
    "machine_text",
    "md_table",
    "monitor_child",
    "own_cpu_s",
    "package_versions",
    "parse_case_args",
    "parse_report_args",
    "paths",
    "print_status",
    "report_footer",
    "report_parser",
    "publish",
    "raw_record",
    "raw_records",
    "raw_status",
    "rel",
    "render_saved",
    "report_meta",
    "require_clean_tree",
    "rerender",
    "resolve_report_paths",
    "run_notes",
    "run_specs",
    "run_worker",
    "save_json",
    "save_raw",
    "saved_reports",
    "chosen_settings",
    "smoke_title",
    "source_hash",
    "source_line",
    "start",
    "tail",
    "utc_now",
    "verify_raw",
    "worker_main",
]
