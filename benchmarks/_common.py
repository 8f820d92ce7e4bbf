"""Helpers shared by the benchmark scripts (imported as ``_common`` when a script in
this folder is run as ``python benchmarks/<name>.py``)."""

from __future__ import annotations

import json
import os
import platform


def cpu_name() -> str:
    """CPU model from ``/proc/cpuinfo``, else ``platform.processor()``."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


def machine_info(extra_versions=None) -> dict:
    """CPU, core count, library versions and JAX devices.

    Args:
        extra_versions: ``{name: version}`` listed after NumPy's version.

    Returns:
        dict, in the order it is printed.
    """
    import jax
    import numpy as np
    import ribs

    import ribsax

    info = {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "ribsax": ribsax.__version__,
        "ribs": ribs.__version__,
        "jax": jax.__version__,
        "numpy": np.__version__,
    }
    info.update(extra_versions or {})
    info["jax_devices"] = [str(d) for d in jax.devices()]
    return info


def print_header(title, info) -> None:
    """Prints ``# title`` and one ``- key: value`` line per machine-info entry."""
    print(f"# {title}")
    for key, value in info.items():
        print(f"- {key}: {value}")


def report(table, info, results, json_path) -> None:
    """Prints the results table and, if ``json_path``, writes machine info and
    results there as JSON."""
    print()
    print(table)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as file:
            json.dump({"machine": info, "results": results}, file, indent=2)
