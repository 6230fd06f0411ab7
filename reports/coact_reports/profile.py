"""Reading causal profiles: Coz ``profile.coz`` (text or JSON lines) and
coact's ``profile.jsonl``, mixed per line and pooled over files.

Input formats
=============

Coz ``profile.coz`` (text)
--------------------------
One record per line, fields separated by tabs; the first field is the record
type, the others are ``key=value`` (split at the first ``=``). Verified against
Coz's source (plasma-umass/coz):

  ``libcoz/profiler.cpp`` (``profiler_thread`` and ``log_samples``)::

      startup    time=<ns>
      experiment selected=<file>:<line> speedup=<0.00..1.00> duration=<ns>
                 selected-samples=<n>
      runtime    time=<ns>
      samples    location=<file>:<line> count=<n>

  ``libcoz/progress_point.h`` (``saved::log``)::

      throughput-point name=<name> delta=<n>
      latency-point    name=<name> arrivals=<n> departures=<n> difference=<n>

  Older Coz wrote ``progress-point name=<name> type=<t> delta=<n>``; the viewer
  treats it as a throughput point and so does this tool.

The output stream is ``ios::fixed`` with ``precision(2)``, so ``speedup`` is
written as ``0.00`` .. ``1.00`` (``SpeedupDivisions = 20`` in
``libcoz/profiler.h``: 5% steps). ``duration`` is the experiment's wall time
minus the delay inserted during it, in nanoseconds. Each progress-point record
belongs to the nearest ``experiment`` record above it. Coz opens the file in
append mode, so one file may hold several runs, each beginning with
``startup``. Newer Coz also writes the same records as JSON lines
(``{"type":"experiment","selected":..,"speedup":..,"duration":..}``,
``throughput_point`` / ``latency_point``); those are accepted too, since the
viewer (``viewer/ts/profile.ts``, ``parseLine``) decides text vs JSON per line
by a leading ``{``, and so does this tool.

coact JSON lines
----------------
One JSON object per line, each with a string ``type``. Experiments::

    {"type":"experiment","region":"Parser::Line","speedup":0.25,
     "duration_ns":120000000,"effective_ns":100000000,
     "progress":{"lines":1000, "req":{"arrivals":9,"departures":9,"difference":2}}}

``effective_ns`` (wall time minus injected delay, the quantity Coz calls
``duration``) is used when present, else ``duration_ns``. A ``progress`` value
that is a number is a throughput count; an object with ``arrivals``,
``departures`` and ``difference`` is a latency point. Extra fields anywhere are
ignored; records of other types are ignored.

Where a sweep ran (coact JSON lines)
------------------------------------
coact's ``startup`` record names the program (``"program"``: the
executable's file name, ``"args"``: its arguments) and the machine
(``"host"``); a shard of a sharded sweep (``coact-profile run --shard K/N``)
also writes ``"shard"`` and ``"shards"`` there and in each of its experiment
records (which carry ``"host"`` too). Each experiment gets a *group*: its
shard and host (``"shard 2/4 on node7"``), else its host (``"host node7"``),
else ``""`` (Coz files, older coact files). The estimator takes each group's
baseline from that group's own speedup-0 experiments (machines differ) when
a profile holds more than one group (estimate.py).

Each experiment also gets its *run*: the process that wrote it, named
``path#K`` where K counts the startup records before it in its file (both
formats write one per process, and a profile of several runs is those
processes appended to one file, or several files). The estimator's interval
accounts for run-to-run variation when a profile holds three or more runs
(estimate.py).

The sweep's time shares (coact JSON lines)
-----------------------------------------
A sweep writes an ``estimates`` record after each experiment (its running
ranking; causal/src/sweep/draw.cpp). Its ``time_share_floor`` and
``time_shares`` (region name -> fraction of the running time, for every
region with an experiment; older records give only each ranked-or-not
region's ``time_share`` under ``points``) say which regions the sweep's
settle rule did not wait for: those under the floor
(``COACT_CAUSAL_TIME_SHARE_FLOOR_PCT``). ``Profile.time_shares`` holds the
last such record of each run, pooled (the smallest floor, each region's
largest share), only when every run with experiments wrote one; otherwise
it is None and every region counts. Coz files carry no such record, so a
``profile.coz`` never exempts a region. A malformed estimates record is
skipped with a ``ProfileWarning`` (its run then has none).

Several profiles (merging)
--------------------------
``load_profiles`` pools files; a directory stands for its ``*.jsonl`` files
(else its ``*.coz`` files; never both: the two are the same run). Files that
say which program they ran must all have run the same command line (program
file name and arguments), and files must measure the same progress points:
otherwise ``ProfileError`` names both files and what differs (merging the
curves of two programs would be a curve of neither).

Robustness rules (both formats)
-------------------------------
* A last line with no terminating newline that does not parse (a run killed
  mid-write) is skipped with a ``ProfileWarning``. (A cut inside the last
  number of a text record cannot be detected; such a line is kept.)
* Unknown record types are ignored.
* Any other line that does not parse, or lacks a required field, or has a
  non-numeric / negative number, raises ``ProfileError`` naming file and line.
* A file in which no line is a record of either format (random text, a
  binary, another tool's JSON) raises ``NotAProfileError`` (a ProfileError)
  naming the file and its first line that is not a record: the input is
  wrong, not a profile gone bad (the CLI exits 2). An empty file (or one of
  blank lines) is an empty profile, not this.
* No experiments at all, or experiments without any progress-point data,
  raise ``ProfileError`` (the CLI exits 1 and draws nothing).
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["ProfileError", "NotAProfileError", "TrialsError", "ProfileWarning", "Throughput", "Latency",
           "Experiment", "TimeShares", "Profile", "parse_profile", "load_profiles"]


class ProfileError(Exception):
    """A profile cannot be used. ``str()`` is ``path:line: message`` when a
    line is at fault, else ``path: message``."""

    def __init__(self, message: str, path: Optional[str] = None,
                 lineno: Optional[int] = None):
        self.path, self.lineno, self.message = path, lineno, message
        where = ""
        if path is not None:
            where = f"{path}:{lineno}: " if lineno is not None else f"{path}: "
        super().__init__(where + message)


class NotAProfileError(ProfileError):
    """The file is not a profile at all (no line of it is a coact or Coz
    record): bad input rather than bad data. ``lineno`` is the first line
    that is not a record."""


class TrialsError(ProfileError):
    """A perf-compare trials file cannot be used (same message format)."""


class ProfileWarning(UserWarning):
    """Something was skipped but the rest of the input is usable."""


@dataclass(frozen=True)
class Throughput:
    delta: float


@dataclass(frozen=True)
class Latency:
    arrivals: float
    departures: float
    difference: float


@dataclass
class Experiment:
    region: str
    speedup: float               # 0..1
    duration_ns: float           # effective: wall time minus injected delay
    points: Dict[str, object] = field(default_factory=dict)  # name -> Throughput|Latency
    source: str = ""             # "path:line" of the experiment record
    group: str = ""              # where it ran: "shard K/N on HOST", "host HOST" or "" (module doc)
    run: str = ""                # which process wrote it: "path#K", K counting startup records (module doc)


@dataclass(frozen=True)
class TimeShares:
    """The sweep's own view of which regions it need not rank (module doc,
    "The sweep's time shares"): its time-share floor, and each region's
    largest share of the running time over the runs that recorded one."""
    floor: float                 # fraction of the running time
    shares: Dict[str, float]     # region -> fraction; regions no record lists are absent

    def below_floor(self, region: str) -> bool:
        """The sweep did not wait for `region`: every record that lists it
        puts it under the floor, or at no running time at all (the sweep's
        rule, draw.cpp). False for a region no record lists."""
        share = self.shares.get(region)
        return share is not None and (share < self.floor or share <= 0)


@dataclass
class Profile:
    experiments: List[Experiment]
    paths: List[str]
    time_shares: Optional[TimeShares] = None   # None: some run recorded no estimates

    def progress_points(self) -> List[str]:
        return sorted({n for e in self.experiments for n in e.points})


_RECORD_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_IGNORED_TYPES = {"startup", "shutdown", "runtime", "samples"}
_THROUGHPUT_TYPES = {"throughput-point", "throughput_point", "progress-point"}
_LATENCY_TYPES = {"latency-point", "latency_point"}
# Record types that make a file a profile (module doc): Coz's, and those
# coact's JSON lines write besides (causal/src/profile_writer.cpp and the
# sweep's records). Other types are ignored in a profile, but a file of
# nothing else is not one.
_PROFILE_TYPES = ({"experiment", "shutdown", "progress-point"} | _IGNORED_TYPES
                  | _THROUGHPUT_TYPES | _LATENCY_TYPES
                  | {"profile", "names", "estimates", "summary", "warning", "error",
                     "sampler", "pad", "calibration"})


def _number(value, what: str, path: str, lineno: int, *, lo: float = 0.0,
            hi: float = math.inf) -> float:
    """Parse a finite number in [lo, hi]; ProfileError otherwise."""
    if isinstance(value, bool):
        raise ProfileError(f"{what} must be a number, got {value!r}", path, lineno)
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        try:
            x = float(value)
        except ValueError:
            raise ProfileError(f"{what} must be a number, got {value!r}",
                               path, lineno) from None
    else:
        raise ProfileError(f"{what} must be a number, got {value!r}", path, lineno)
    if not math.isfinite(x) or x < lo or x > hi:
        rng = f"[{lo:g}, {hi:g}]" if math.isfinite(hi) else f">= {lo:g}"
        raise ProfileError(f"{what} must be a finite number {rng}, got {value!r}",
                           path, lineno)
    return x


def _require(fields: dict, key: str, rtype: str, path: str, lineno: int):
    if key not in fields:
        raise ProfileError(f"{rtype} record lacks field '{key}'", path, lineno)
    return fields[key]


def _parse_text_line(line: str, path: str, lineno: int) -> Tuple[str, dict]:
    parts = line.split("\t")
    rtype = parts[0].strip()
    if not _RECORD_TYPE.match(rtype):
        raise ProfileError(f"not a profile record: {line[:60]!r}", path, lineno)
    fields = {}
    for part in parts[1:]:
        if part == "":
            continue
        key, eq, value = part.partition("=")
        if not eq or not key:
            if rtype in _IGNORED_TYPES or not _is_known(rtype):
                continue            # viewer skips such fields; only known records are strict
            raise ProfileError(f"field {part[:40]!r} of {rtype} record is not key=value",
                               path, lineno)
        fields[key] = value
    return rtype, fields


def _is_known(rtype: str) -> bool:
    return (rtype == "experiment" or rtype in _THROUGHPUT_TYPES
            or rtype in _LATENCY_TYPES)


def _point_from_fields(rtype: str, fields: dict, path: str, lineno: int):
    name = _require(fields, "name", rtype, path, lineno)
    if not isinstance(name, str) or name == "":
        raise ProfileError(f"{rtype} record has an empty or non-string name", path, lineno)
    if rtype in _THROUGHPUT_TYPES:
        return name, Throughput(_number(_require(fields, "delta", rtype, path, lineno),
                                        "delta", path, lineno))
    vals = [_number(_require(fields, k, rtype, path, lineno), k, path, lineno)
            for k in ("arrivals", "departures", "difference")]
    return name, Latency(*vals)


def _experiment_from_fields(fields: dict, path: str, lineno: int, *,
                            coact: bool) -> Experiment:
    region_key = "region" if coact else "selected"
    region = _require(fields, region_key, "experiment", path, lineno)
    if not isinstance(region, str) or region == "":
        raise ProfileError(f"experiment field '{region_key}' must be a non-empty string",
                           path, lineno)
    speedup = _number(_require(fields, "speedup", "experiment", path, lineno),
                      "speedup", path, lineno, hi=1.0)
    if coact:
        if "effective_ns" in fields:
            dur = _number(fields["effective_ns"], "effective_ns", path, lineno)
        elif "duration_ns" in fields:
            dur = _number(fields["duration_ns"], "duration_ns", path, lineno)
        else:
            raise ProfileError("experiment record lacks field 'effective_ns' "
                               "(or 'duration_ns')", path, lineno)
    else:
        dur = _number(_require(fields, "duration", "experiment", path, lineno),
                      "duration", path, lineno)
    return Experiment(region, speedup, dur, {}, f"{path}:{lineno}")


def _coact_points(exp: Experiment, progress, path: str, lineno: int) -> None:
    if not isinstance(progress, dict):
        raise ProfileError("experiment field 'progress' must be an object "
                           "{name: count | {arrivals, departures, difference}}",
                           path, lineno)
    for name, value in progress.items():
        if isinstance(value, dict):
            vals = []
            for k in ("arrivals", "departures", "difference"):
                if k not in value:
                    raise ProfileError(f"latency progress '{name}' lacks field '{k}'",
                                       path, lineno)
                vals.append(_number(value[k], f"progress '{name}' {k}", path, lineno))
            exp.points[name] = Latency(*vals)
        else:
            exp.points[name] = Throughput(
                _number(value, f"progress '{name}'", path, lineno))


def parse_profile(path: str) -> List[Experiment]:
    """Parse one profile file (Coz text, Coz JSON or coact JSON lines, mixed
    per line). Returns experiments in file order, each with its progress
    points. Raises ProfileError on a malformed line or an unreadable file;
    warns (ProfileWarning) and skips an unterminated, unparseable last line.
    Does not check emptiness: see load_profiles."""
    return _parse(path)[0]


def _group(obj: dict, origin: dict) -> str:
    """An experiment's group (module doc) from its record and its run's
    startup record."""
    shard = obj.get("shard", origin.get("shard"))
    shards = obj.get("shards", origin.get("shards"))
    host = obj.get("host", origin.get("host"))
    if shard is not None:
        return f"shard {shard}/{shards} on {host}" if host else f"shard {shard}/{shards}"
    return f"host {host}" if host else ""


def _parse(path: str) -> Tuple[List[Experiment], List[Tuple[str, int]], Dict[str, dict]]:
    """parse_profile's experiments, the command line of each coact startup
    record that names one, with its line number, and the last estimates
    record of each run (keyed like Experiment.run)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ProfileError(f"cannot read: {e.strerror}", path) from None
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    terminated = text.endswith("\n")
    if terminated:
        lines.pop()                       # the empty string after the final '\n'
    experiments: List[Experiment] = []
    programs: List[Tuple[str, int]] = []
    origin: dict = {}                     # the last startup record (coact JSON)
    current: Optional[Experiment] = None
    current_line = 0
    last = len(lines)
    seen = [False]                        # a record of a profile type has been read
    first_other: Optional[Tuple[int, str]] = None   # the first line that is not one
    runs = 0                              # startup records so far: each begins a process's run
    tagged = 0                            # experiments already given their run
    estimates: Dict[str, dict] = {}       # run -> its last estimates record
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if line.strip() == "":
            continue
        was_seen = seen[0]
        try:
            if line.lstrip().startswith("{"):
                current, current_line, origin = _handle_json(line, path, lineno, experiments,
                                                             current, current_line, origin, seen)
                startup = origin.get("_line") == lineno
                if '"estimates"' in line:
                    record = json.loads(line)
                    if record.get("type") == "estimates":
                        estimates[f"{path}#{runs}"] = dict(record, _line=lineno)
                if startup and isinstance(origin.get("program"), str):
                    args = origin.get("args") if isinstance(origin.get("args"), list) else []
                    programs.append((" ".join([origin["program"]] + [str(x) for x in args]), lineno))
            else:
                if line.split("\t", 1)[0].strip() in _PROFILE_TYPES:
                    seen[0] = True
                current, current_line = _handle_text(line, path, lineno, experiments,
                                                     current, current_line)
                startup = line.startswith("startup")
                if startup:
                    origin = {}
            for e in experiments[tagged:]:
                e.run = f"{path}#{runs}"
            tagged = len(experiments)
            runs += startup
        except ProfileError as e:
            if not seen[0]:
                # Nothing so far was a record of a profile: the file is not one.
                raise _not_a_profile(path, first_other or (lineno, line)) from None
            if lineno == last and not terminated:
                warnings.warn(f"{path}:{lineno}: last line is truncated (no newline "
                              f"and does not parse: {e.message}); skipped",
                              ProfileWarning, stacklevel=2)
                break
            raise
        if not was_seen and not seen[0] and first_other is None:
            first_other = (lineno, line)
    if not seen[0] and first_other is not None:
        raise _not_a_profile(path, first_other)
    return experiments, programs, estimates


def _record_shares(record: dict, path: str) -> Optional[Tuple[float, Dict[str, float]]]:
    """(floor, region -> share) from one estimates record; None with a
    ProfileWarning when it lacks them or they are not fractions."""
    def fraction(x) -> Optional[float]:
        ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1
        return float(x) if ok else None
    floor = fraction(record.get("time_share_floor"))
    shares: Dict[str, float] = {}
    listed = record.get("time_shares")     # every region with an experiment
    points = record.get("points")          # the regions with a non-zero speedup (older records: only these)
    bad = (floor is None or not isinstance(listed, (dict, type(None)))
           or (listed is None and not isinstance(points, list)))
    pairs = list(listed.items()) if isinstance(listed, dict) else []
    for point in points if isinstance(points, list) and listed is None else []:
        regions = point.get("regions") if isinstance(point, dict) else None
        for r in regions if isinstance(regions, list) else [None]:
            pairs.append((r.get("name"), r.get("time_share")) if isinstance(r, dict) else (None, None))
    for name, value in pairs:
        share = fraction(value)
        if not isinstance(name, str) or share is None:
            bad = True
            continue
        shares[name] = max(share, shares.get(name, 0.0))
    if bad:
        warnings.warn(f"{path}:{record.get('_line')}: estimates record without a time_share_floor and a "
                      "time_share per region (fractions); its run's time shares are not used",
                      ProfileWarning, stacklevel=3)
        return None
    return floor, shares


def _time_shares(exps: List[Experiment], estimates: Dict[str, dict]) -> Optional[TimeShares]:
    """The pooled time shares (module doc), or None unless every run with
    experiments left a usable estimates record."""
    floors: List[float] = []
    pooled: Dict[str, float] = {}
    for run in sorted({e.run for e in exps}):
        got = _record_shares(estimates[run], run.rpartition("#")[0]) if run in estimates else None
        if got is None:
            return None
        floors.append(got[0])
        for name, share in got[1].items():
            pooled[name] = max(share, pooled.get(name, 0.0))
    return TimeShares(min(floors), pooled) if floors else None


def _not_a_profile(path: str, where: Tuple[int, str]) -> NotAProfileError:
    lineno, line = where
    return NotAProfileError(f"not a coact or Coz profile (line {lineno}, {line[:40]!r}, is not "
                            "a profile record; coact-profile run and Coz write profile.coz, "
                            "profile.jsonl)", path, lineno)


def _attach(current: Optional[Experiment], current_line: int, name: str, point,
            rtype: str, path: str, lineno: int) -> None:
    if current is None:
        raise ProfileError(f"{rtype} record before any experiment record", path, lineno)
    if name in current.points:
        raise ProfileError(f"progress point {name!r} appears twice for the experiment "
                           f"at line {current_line}", path, lineno)
    current.points[name] = point


def _handle_text(line, path, lineno, experiments, current, current_line):
    rtype, fields = _parse_text_line(line, path, lineno)
    if rtype == "experiment":
        exp = _experiment_from_fields(fields, path, lineno, coact=False)
        experiments.append(exp)
        return exp, lineno
    if rtype in _THROUGHPUT_TYPES or rtype in _LATENCY_TYPES:
        name, point = _point_from_fields(rtype, fields, path, lineno)
        _attach(current, current_line, name, point, rtype, path, lineno)
        return current, current_line
    if rtype == "startup":
        return None, 0                    # a new run appended to the same file
    return current, current_line          # runtime, samples, shutdown, unknown


def json_object_line(line: str, path: str, lineno: int, error=ProfileError,
                     not_object: str = "JSON record is not an object") -> dict:
    """One JSON-lines record, which must be an object; else ``error`` (a
    ProfileError class) naming path:lineno, with ``not_object`` as the message
    for valid JSON that is not an object."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise error(f"invalid JSON ({e.msg} at column {e.colno})", path, lineno) from None
    if not isinstance(obj, dict):
        raise error(not_object, path, lineno)
    return obj


def _handle_json(line, path, lineno, experiments, current, current_line, origin, seen):
    obj = json_object_line(line, path, lineno)
    rtype = obj.get("type")
    if not isinstance(rtype, str) or not rtype:
        raise ProfileError("JSON record lacks a string field 'type'", path, lineno)
    if rtype in _PROFILE_TYPES:
        seen[0] = True
    if rtype == "experiment":
        coact = "region" in obj or "selected" not in obj
        exp = _experiment_from_fields(obj, path, lineno, coact=coact)
        if coact:
            _coact_points(exp, _require(obj, "progress", "experiment", path, lineno),
                          path, lineno)
            exp.group = _group(obj, origin)
        experiments.append(exp)
        return exp, lineno, origin
    if rtype in _THROUGHPUT_TYPES or rtype in _LATENCY_TYPES:
        name, point = _point_from_fields(rtype, obj, path, lineno)
        _attach(current, current_line, name, point, rtype, path, lineno)
        return current, current_line, origin
    if rtype == "startup":
        return None, 0, dict(obj, _line=lineno)
    return current, current_line, origin


def _expand(paths: Sequence[str]) -> List[str]:
    """Files for `paths`: a directory stands for its *.jsonl files, else its
    *.coz files (sorted). ProfileError for a directory with neither."""
    out: List[str] = []
    for p in paths:
        if not os.path.isdir(p):
            out.append(p)
            continue
        names = sorted(os.listdir(p))
        for ext in (".jsonl", ".coz"):
            found = [os.path.join(p, n) for n in names
                     if n.endswith(ext) and os.path.isfile(os.path.join(p, n))]
            if found:
                out.extend(found)
                break
        else:
            raise ProfileError("directory holds no profile (no *.jsonl or *.coz file)", p)
    return out


def _check_same_sweep(per_file: List[Tuple[str, List[Experiment], List[Tuple[str, int]]]]) -> None:
    """Merging: every file that names its program ran one command line, and
    every file with experiments measured one set of progress points;
    ProfileError naming both files otherwise."""
    first_prog = None
    first_points = None
    for path, exps, programs in per_file:
        for prog, lineno in programs:
            if first_prog is None:
                first_prog = (path, lineno, prog)
            elif prog != first_prog[2]:
                raise ProfileError(
                    f"profiles of different programs cannot be merged: {first_prog[0]}:{first_prog[1]} ran "
                    f"{first_prog[2]!r} but {path}:{lineno} ran {prog!r} (merge only the shards of one sweep)")
        points = sorted({n for e in exps for n in e.points})
        if not exps:
            continue
        if first_points is None:
            first_points = (path, points)
        elif points != first_points[1]:
            raise ProfileError(
                f"profiles of different progress points cannot be merged: {first_points[0]} measured "
                f"{', '.join(map(repr, first_points[1])) or 'none'} but {path} measured "
                f"{', '.join(map(repr, points)) or 'none'} (merge only the shards of one sweep)")


def load_profiles(paths: Sequence[str]) -> Profile:
    """Parse and pool several profile files (a directory: its profiles, see
    the module doc). Raises ProfileError if none of them holds an
    experiment, no experiment carries progress-point data, or the files come
    from different programs or progress points."""
    if not paths:
        raise ProfileError("no profile files given")
    paths = _expand(paths)
    exps: List[Experiment] = []
    per_file = []
    estimates: Dict[str, dict] = {}
    for p in paths:
        e, programs, est = _parse(p)
        per_file.append((p, e, programs))
        exps.extend(e)
        estimates.update(est)
    if len(per_file) > 1:
        _check_same_sweep(per_file)
    where = paths[0] if len(paths) == 1 else ", ".join(paths)
    if not exps:
        raise ProfileError("profile is empty: it contains no experiment records "
                           "(did the run reach a progress point, and last long "
                           "enough for one experiment?)", where)
    if not any(e.points for e in exps):
        raise ProfileError(f"profile has {len(exps)} experiment(s) but no "
                           "progress-point data (no throughput/latency point "
                           "records or empty 'progress')", where)
    return Profile(exps, list(paths), _time_shares(exps, estimates))
