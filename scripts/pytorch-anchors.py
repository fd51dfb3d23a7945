#!/usr/bin/env python3
"""PyTorch's own allocator on gmlake's traces: the figures the capacity target compares with.

Usage: python3 scripts/pytorch-anchors.py OUT.jsonl TRACE... [--modes default,expandable]
                                          [--step BYTES] [--deadline SECONDS]

Replays each trace (the text format of ../shared/traces/README.md, gzip'd or not) through PyTorch's
CUDA caching allocator (torch.cuda.caching_allocator_alloc / caching_allocator_delete), once in its
default mode and once with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (each mode in its own
process: the setting is read when CUDA starts). Per trace and mode it writes one JSON line in the
form of ../shared/traces/pytorch-anchors.jsonl:

- peak_active: torch.cuda.max_memory_allocated() of a replay with no cap (PyTorch's 512-byte rounding);
- peak_reserved, fragmentation = 1 - peak_active / peak_reserved, of that replay;
- min_capacity: the smallest cap (torch.cuda.set_per_process_memory_fraction, a multiple of --step,
  default 2 MiB) under which the whole trace replays without out-of-memory, found by bisection between
  peak active (never enough) and the uncapped peak reserved; capacity_over_active = min_capacity /
  peak_active. A bisection assumes that a larger cap never fails where a smaller one fits; the replay
  at the answer and one step below are what was measured.

Needs a CUDA GPU and PyTorch; it is a measuring tool, not a dependency of gmlake. Traces are taken
smallest first, and those that would start past --deadline seconds are skipped (said on stderr).
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import time


def read_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    events = []  # (0, id, size, stream) alloc, (1, id) free
    with opener(path, "rt") as f:
        for line in f:
            if not line or line[0] == "#":
                continue
            p = line.split()
            if p[0] == "a":
                events.append((0, int(p[1]), int(p[2]), int(p[3])))
            elif p[0] == "f":
                events.append((1, int(p[1])))
    return events


def replay(torch, events, streams, cap, total):
    """Replays events under cap bytes (None: no cap); returns (fits, peak allocated, peak reserved)."""
    torch.cuda.set_per_process_memory_fraction(1.0 if cap is None else min(1.0, cap / total))
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    alloc, delete = torch.cuda.caching_allocator_alloc, torch.cuda.caching_allocator_delete
    live = {}
    fits = True
    try:
        for ev in events:
            if ev[0] == 0:
                s = streams.get(ev[3])
                live[ev[1]] = alloc(ev[2], stream=s) if s is not None else alloc(ev[2])
            else:
                p = live.pop(ev[1], None)
                if p is not None:
                    delete(p)
    except torch.OutOfMemoryError:
        fits = False
    for p in live.values():
        delete(p)
    peak_alloc, peak_res = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return fits, peak_alloc, peak_res


def measure(mode, out, paths, step, deadline, start):
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    for path in paths:
        if time.time() - start > deadline:
            print(f"pytorch-anchors: {mode}: past the deadline, skipped {path}", file=sys.stderr)
            continue
        t0 = time.time()
        events = read_trace(path)
        streams = {}
        for ev in events:
            if ev[0] == 0 and ev[3] != 0 and ev[3] not in streams:
                streams[ev[3]] = torch.cuda.Stream()
        fits, active, reserved = replay(torch, events, streams, None, total)
        if not fits:
            print(f"pytorch-anchors: {mode}: {path} does not fit the device", file=sys.stderr)
            continue
        lo = (active - 1) // step * step  # below peak active: never fits
        hi = -(-reserved // step) * step
        probes = 0
        while hi - lo > step:
            mid = lo + (hi - lo) // 2 // step * step
            probes += 1
            if replay(torch, events, streams, mid, total)[0]:
                hi = mid
            else:
                lo = mid
        row = {
            "trace": os.path.basename(path),
            "allocator": "pytorch-" + mode,
            "peak_active": active,
            "peak_reserved": reserved,
            "fragmentation": round(1 - active / reserved, 4),
            "min_capacity": hi,
            "capacity_over_active": round(hi / active, 4),
            "step": step,
            "probes": probes,
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0),
        }
        out.write(json.dumps(row) + "\n")
        out.flush()
        print(f"pytorch-anchors: {mode}: {row['trace']} {row['capacity_over_active']} x peak active, "
              f"{probes} probes, {time.time() - t0:.1f} s", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--modes", default="default,expandable")
    ap.add_argument("--step", type=int, default=2 << 20)
    ap.add_argument("--deadline", type=float, default=300, help="seconds, over all modes")
    ap.add_argument("--mode", help=argparse.SUPPRESS)  # the child process of one mode
    ap.add_argument("--start", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.mode:
        with open(a.out, "a") as out:
            measure(a.mode, out, a.traces, a.step, a.deadline, a.start)
        return
    start = time.time()
    paths = sorted(a.traces, key=os.path.getsize)
    modes = [m for m in a.modes.split(",") if m]
    for i, mode in enumerate(modes):
        env = dict(os.environ)
        conf = [c for c in env.get("PYTORCH_CUDA_ALLOC_CONF", "").split(",") if c and not c.startswith("expandable_segments")]
        conf.append("expandable_segments:" + ("True" if mode == "expandable" else "False"))
        env["PYTORCH_CUDA_ALLOC_CONF"] = ",".join(conf)
        # Each mode gets its share of the time left, so that both measure the small traces.
        share = (a.deadline - (time.time() - start)) / (len(modes) - i)
        subprocess.run([sys.executable, __file__, a.out, *paths, "--mode", mode, "--step", str(a.step),
                        "--deadline", str(share), "--start", str(time.time())], env=env, check=True)


if __name__ == "__main__":
    main()
