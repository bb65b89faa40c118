#!/usr/bin/env python3
# bench/writers.py: many writers in one memory cgroup, libraries side by side.
#
#   sudo bench/writers.py [-r ROUNDS] [-n WRITERS] [-s MIB] [--bs BYTES] [--hot MIB] LIB...
#
# Each round runs every variant once (LIB paths, or "none" for no library),
# the order rotating from round to round.  A run: a fresh v1 memory cgroup
# of --limit MiB; a hot file of --hot MiB made cold, mapped and touched once
# inside it; then WRITERS `dd if=/dev/zero of=F_i bs=1M count=MIB` started
# together inside it, LD_PRELOAD=LIB (--bs: records of that many bytes
# instead, as many as make MIB; tar writes 10240).  The cgroup's memory.stat dirty +
# writeback is sampled every ~10 ms.  Printed per run and as medians
# (min..max): wall time until the last dd exits, peak dirty + writeback,
# hot set resident after (fincore).  -n 1 --hot 0 is a lone writer;
# --no-cgroup runs it where this script runs.  Everything made (files,
# cgroup) is removed at exit.
#
# SPDX-License-Identifier: MIT
import argparse
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CG_ROOT = "/sys/fs/cgroup/memory"
MIB = 1 << 20


def cg_write(cg, name, value):
    with open(os.path.join(cg, name), "w") as f:
        f.write(value)


def cg_stat(cg):
    d = {}
    with open(os.path.join(cg, "memory.stat")) as f:
        for line in f:
            k, v = line.split()
            d[k] = int(v)
    return d


def make_cold(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def resident(path):
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "-o", "RES", path],
                         capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def in_cgroup(cg):
    def join():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    return join


def touch_once(path, cg):
    pid = os.fork()
    if pid == 0:
        try:
            if cg:
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
            with open(path, "rb") as f:
                m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
                s = 0
                for off in range(0, len(m), 4096):
                    s += m[off]
                m.close()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def run_one(args, lib, d, hot, idx):
    cg = None
    if not args.no_cgroup:
        cg = os.path.join(CG_ROOT, "wbudget-bench-%d-%d" % (os.getpid(), idx))
        os.mkdir(cg)
        cg_write(cg, "memory.limit_in_bytes", str(args.limit * MIB))
    try:
        if hot:
            make_cold(hot)
            touch_once(hot, cg)
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env["USEONCE_REUSE"] = "0"
        if lib != "none":
            env["LD_PRELOAD"] = lib
        outs = [os.path.join(d, "out%d" % i) for i in range(args.writers)]
        for o in outs:
            if os.path.exists(o):
                os.unlink(o)
        t0 = time.monotonic()
        procs = []
        for i, o in enumerate(outs):
            if args.trace and lib != "none":
                env["USEONCE_TRACE"] = os.path.join(args.trace, "trace%d-%d" % (idx, i))
            procs.append(subprocess.Popen(["dd", "if=/dev/zero", "of=" + o,
                                           "bs=%d" % args.bs,
                                           "count=%d" % -(-args.size * MIB // args.bs)],
                                          env=env, stderr=subprocess.DEVNULL,
                                          preexec_fn=in_cgroup(cg) if cg else None))
        peak = 0
        while any(p.poll() is None for p in procs):
            if cg:
                s = cg_stat(cg)
                v = s["total_dirty"] + s["total_writeback"]
                peak = max(peak, v)
                if args.samples:
                    print("%.3f %d %d" % (time.monotonic() - t0, s["total_dirty"] // MIB,
                                          s["total_writeback"] // MIB))
            time.sleep(0.01)
        wall = time.monotonic() - t0
        for o in outs:
            fd = os.open(o, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        disk = time.monotonic() - t0
        ok = all(p.returncode == 0 for p in procs)
        kept = resident(hot) if hot else 0
        for o in outs:
            os.unlink(o)
        return wall, disk, peak, kept, ok
    finally:
        if cg:
            try:
                cg_write(cg, "memory.force_empty", "0")
            except OSError:
                pass
            for _ in range(50):
                try:
                    os.rmdir(cg)
                    break
                except OSError:
                    time.sleep(0.05)


def fmt(xs, f="%.3f"):
    return (f + " (" + f + ".." + f + ")") % (statistics.median(xs), min(xs), max(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", "--rounds", type=int, default=5)
    ap.add_argument("-n", "--writers", type=int, default=8)
    ap.add_argument("-s", "--size", type=int, default=128, help="MiB per writer")
    ap.add_argument("--bs", type=int, default=MIB, help="bytes per write")
    ap.add_argument("--hot", type=int, default=85, help="hot file MiB, 0: none")
    ap.add_argument("--limit", type=int, default=256, help="cgroup MiB")
    ap.add_argument("--no-cgroup", action="store_true")
    ap.add_argument("--dir", default="build")
    ap.add_argument("--trace", help="USEONCE_TRACE of each writer into this directory")
    ap.add_argument("--samples", help="print every sample's dirty + writeback",
                    action="store_true")
    ap.add_argument("libs", nargs="+")
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="writers-", dir=args.dir)
    res = {lib: [] for lib in args.libs}
    try:
        hot = None
        if args.hot:
            hot = os.path.join(d, "hot")
            with open(hot, "wb") as f:
                f.write(os.urandom(args.hot * MIB))
        idx = 0
        for r in range(args.rounds):
            order = args.libs[r % len(args.libs):] + args.libs[:r % len(args.libs)]
            for lib in order:
                idx += 1
                wall, disk, peak, kept, ok = run_one(args, lib, d, hot, idx)
                load = os.getloadavg()[0]
                res[lib].append((wall, disk, peak, kept))
                print("round %d %s: %.3f s, to disk %.3f s, peak %d MiB, hot %.1f MiB%s, "
                      "load %.2f" % (r + 1, lib, wall, disk, peak // MIB, kept / MIB,
                                     "" if ok else " FAILED", load), flush=True)
        print("| variant | exit s | to disk s | peak dirty+wb MiB | hot set kept MiB |")
        print("|---|---|---|---|---|")
        for lib in args.libs:
            w = [x[0] for x in res[lib]]
            t = [x[1] for x in res[lib]]
            p = [x[2] / MIB for x in res[lib]]
            k = [x[3] / MIB for x in res[lib]]
            print("| %s | %s | %s | %s | %s |" % (lib, fmt(w), fmt(t), fmt(p, "%.0f"),
                                                 fmt(k, "%.1f")))
        if len(args.libs) == 2:
            a, b = res[args.libs[0]], res[args.libs[1]]
            for i, what in ((0, "exit"), (1, "to disk")):
                ratios = [y[i] / x[i] for x, y in zip(a, b)]
                print("time %s %s / %s paired: %s" % (what, args.libs[1], args.libs[0],
                                                      fmt(ratios)))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
