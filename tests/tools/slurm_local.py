#!/usr/bin/python3
"""A real one-node Slurm (Debian's slurmctld, slurmd and munge), started as
root in a temporary directory and stopped again: what test_slurm_sweep.py
runs scripts/slurm-sweep.sh against, and what a person can run a command
under by hand:

    sudo /usr/bin/python3 tests/tools/slurm_local.py -- scripts/slurm-sweep.sh ...

Protocol (LocalSlurm.start, numbered; stop() undoes them in reverse):
 1. A directory owned by root with a munge/ subdirectory owned by the munge
    user; munged runs as that user with its socket, pid, log and seed files
    there (Debian's key, /etc/munge/munge.key), so nothing outside the
    directory is touched and a munged already running elsewhere is left alone.
 2. slurm.conf there: this host as controller and as the only node
    (NodeAddr 127.0.0.1, its CPUs as slurmd -C reports, RealMemory below what
    it detects), two free TCP ports, state and spool in the directory, no
    accounting, no cgroups (proctrack/linuxproc, task/none), AuthInfo naming
    the private munge socket, batch_sched_delay=0. SLURM_CONF points every
    client (sbatch, scontrol) at it.
 3. slurmctld -D and slurmd -D -N NODE as children of this process; ready
    when `scontrol -o show node` says the node is IDLE.
 4. stop(): SIGTERM to slurmd, slurmctld and munged, then SIGKILL after a
    grace period; a process is gone once it no longer exists or is a zombie
    (an exited daemon stays a zombie briefly here). Every Slurm client call
    runs under a timeout (a client facing a dead controller hangs).

Needs root and the packages of scripts/bootstrap.sh; LocalSlurm.missing()
says what is absent, for a test's skip message.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel")
NODE = "coactnode"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gone(pid: int) -> bool:
    """True when `pid` no longer runs: it does not exist, or is a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


class LocalSlurm:
    def __init__(self, keep: bool = False):
        self.dir = ""
        self.keep = keep
        self.procs: List[subprocess.Popen] = []
        self.munged_pid: Optional[int] = None
        self.env = dict(os.environ)

    @staticmethod
    def missing() -> List[str]:
        """What this machine lacks to start a local Slurm ([] if nothing)."""
        out = [b for b in BINARIES if shutil.which(b) is None]
        if os.geteuid() != 0:
            out.append("root (the daemons are started as root)")
        try:
            pwd.getpwnam("munge")
        except KeyError:
            out.append("the munge user (Debian's munge package)")
        if not os.path.exists("/etc/munge/munge.key"):
            out.append("/etc/munge/munge.key (Debian's munge package)")
        return out

    def _client(self, *args: str, timeout: float = 15) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=timeout)

    def start(self, timeout_s: float = 30) -> None:
        # Step 1.
        self.dir = tempfile.mkdtemp(prefix="coact-slurm-")
        os.chmod(self.dir, 0o755)
        mdir = os.path.join(self.dir, "munge")
        os.mkdir(mdir, 0o700)
        munge = pwd.getpwnam("munge")
        os.chown(mdir, munge.pw_uid, munge.pw_gid)
        sock = os.path.join(mdir, "munge.sock")
        r = subprocess.run(["runuser", "-u", "munge", "--", "munged", "--force", f"--socket={sock}",
                            "--key-file=/etc/munge/munge.key", f"--pid-file={mdir}/munged.pid",
                            f"--log-file={mdir}/munged.log", f"--seed-file={mdir}/munged.seed"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"munged did not start: {r.stderr.strip()}")
        with open(f"{mdir}/munged.pid") as f:
            self.munged_pid = int(f.read().strip())
        # Step 2.
        probe = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30).stdout
        cpus = int(re.search(r"CPUs=(\d+)", probe).group(1))
        mem = int(re.search(r"RealMemory=(\d+)", probe).group(1))
        for sub in ("state", "spool"):
            os.mkdir(os.path.join(self.dir, sub))
        conf = os.path.join(self.dir, "slurm.conf")
        d = self.dir
        with open(conf, "w") as f:
            f.write(f"""ClusterName=coact
SlurmctldHost=localhost
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MailProg=/bin/true
ReturnToService=2
MinJobAge=300
NodeName={NODE} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={max(mem // 2, 1)} State=UNKNOWN
PartitionName=coact Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""")
        self.env["SLURM_CONF"] = conf
        # Step 3.
        for cmd in (["slurmctld", "-D", "-i"], ["slurmd", "-D", "-N", NODE]):
            with open(os.path.join(self.dir, cmd[0] + ".out"), "w") as log:
                self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                   start_new_session=True))
        deadline = time.monotonic() + timeout_s
        while True:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[0]} exited with {p.returncode} at start; see {self.log_tail()}")
            try:
                r = self._client("scontrol", "-o", "show", "node", NODE, timeout=5)
                if re.search(r"State=IDLE", r.stdout):
                    return
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the node did not become idle in {timeout_s:g} s; {self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self) -> str:
        out = []
        for name in ("slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out", "munge/munged.log"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    out.append(f"--- {name}\n" + "".join(f.readlines()[-8:]))
        return "\n".join(out)

    def stop(self, grace_s: float = 10) -> List[str]:
        """Step 4. Returns the daemons still running after SIGKILL (should be [])."""
        pids = [p.pid for p in reversed(self.procs)]
        if self.munged_pid:
            pids.append(self.munged_pid)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while any(not _gone(pid) for pid in pids) and time.monotonic() < deadline:
            for p in self.procs:
                p.poll()  # reap our children
            time.sleep(0.1)
        for pid in pids:
            if not _gone(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        time.sleep(0.2)
        left = [str(pid) for pid in pids if not _gone(pid)]
        self.procs = []
        self.munged_pid = None
        if not self.keep and self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return left

    def __enter__(self) -> "LocalSlurm":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: List[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: slurm_local.py [--keep] -- COMMAND ARGS...  (runs COMMAND with SLURM_CONF set to a "
              "local one-node Slurm started for it, then stops it)", file=sys.stderr)
        return 2
    cut = argv.index("--")
    missing = LocalSlurm.missing()
    if missing:
        print(f"slurm_local.py: cannot start a local Slurm: missing {', '.join(missing)} "
              "(scripts/bootstrap.sh installs the packages)", file=sys.stderr)
        return 2
    with LocalSlurm(keep="--keep" in argv[:cut]) as s:
        print(f"slurm_local.py: Slurm up in {s.dir}", file=sys.stderr)
        return subprocess.run(argv[cut + 1:], env=s.env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
