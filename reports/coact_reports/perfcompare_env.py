"""perf-compare: sampling the environment a trial runs in, recorded before
each trial (the 1-minute load also after it): CPU model, usable cores,
frequency governor and mean frequency (where /sys or /proc/cpuinfo tell),
load average, and the calibration file coact would read with that side's
environment (path and content hash). perfstats.summarize_environment and
environment_differs turn the samples into each side's summary and the
reason to withhold a verdict.
"""

from __future__ import annotations

import glob
import hashlib
import os
from typing import Dict, Optional


def read_text(path: str) -> Optional[str]:
    """The file's text, or None if it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _cpu_model() -> Optional[str]:
    text = read_text("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("model name") or line.startswith("Model"):
            return line.split(":", 1)[1].strip()
    return None


def calibration_path(env: Dict[str, str]) -> Optional[str]:
    """The calibration file coact would read with this environment (same
    order as calibrate/src/calibration_file.cpp)."""
    if env.get("COACT_CALIBRATION_FILE"):
        return env["COACT_CALIBRATION_FILE"]
    if env.get("XDG_CACHE_HOME"):
        return os.path.join(env["XDG_CACHE_HOME"], "coact", "calibration.json")
    if env.get("HOME"):
        return os.path.join(env["HOME"], ".cache", "coact", "calibration.json")
    return None


def _calibration(env: Dict[str, str]) -> dict:
    path = calibration_path(env)
    if path is None:
        return {"path": None}
    try:
        with open(path, "rb") as f:
            return {"path": path, "sha256": hashlib.sha256(f.read()).hexdigest()[:16]}
    except OSError:
        return {"path": path, "sha256": None}


def _freq_mhz() -> Optional[float]:
    xs = []
    for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"):
        t = read_text(p)
        if t and t.strip().isdigit():
            xs.append(int(t) / 1000)
    if not xs:
        for line in (read_text("/proc/cpuinfo") or "").splitlines():
            if line.startswith("cpu MHz"):
                try:
                    xs.append(float(line.split(":", 1)[1]))
                except ValueError:
                    pass
    return round(sum(xs) / len(xs), 1) if xs else None


def _governor() -> Optional[str]:
    govs = {(read_text(p) or "").strip() for p in
            glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")}
    govs.discard("")
    return ",".join(sorted(govs)) if govs else None


def load1() -> Optional[float]:
    """The 1-minute load average, or None where /proc/loadavg cannot be read."""
    t = read_text("/proc/loadavg")
    return float(t.split()[0]) if t else None


def sample_environment(env: Dict[str, str]) -> dict:
    """What is recorded before each trial (load1_after is added after it)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    return {"cpu_model": _cpu_model(), "cores": cores, "governor": _governor(),
            "freq_mhz": _freq_mhz(), "calibration": _calibration(env),
            "load1_before": load1()}
