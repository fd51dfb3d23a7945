# Opens gmlake's snapshots with PyTorch's memory_viz and compares their figures with gmlake's Stats
# (the first line of NAME.stats.txt, written by gmlake-bench replay --snapshot); also takes a real
# torch.cuda.memory._snapshot() on this GPU and compares the keys of its entries with gmlake's.
# Usage: python3 scripts/memory-viz-check.py DIR (DIR holds NAME.pickle.gz and NAME.stats.txt; $OUT gets the results).
import glob, gzip, json, os, pickle, re, subprocess, sys, traceback
import torch
from torch.cuda import _memory_viz as mv

out = os.environ.get("OUT", ".")
report = {"torch": torch.__version__, "cuda": torch.version.cuda,
          "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, "files": {}}
try:
    report["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                                          capture_output=True, text=True).stdout.strip()
except Exception as e:
    report["nvidia_smi"] = repr(e)

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
for path in sorted(glob.glob(os.path.join(here, "*.pickle.gz"))):
    name = os.path.basename(path)[:-len(".pickle.gz")]
    r = {}
    with gzip.open(path, "rb") as f:
        data = pickle.load(f)
    stats = open(os.path.join(here, name + ".stats.txt")).readline()
    m = re.search(r"reserved (\d+) bytes, live (\d+) bytes, (\d+) stitched views", stats)
    r["gmlake_stats"] = {"reserved": int(m.group(1)), "live": int(m.group(2)), "views": int(m.group(3))}
    segs = data["segments"]
    r["snapshot"] = {
        "segments": len(segs),
        "reserved_large": sum(s["total_size"] for s in segs if s["segment_type"] == "large"),
        "reserved_all_segments": sum(s["total_size"] for s in segs),
        "stitched_segments": sum(1 for s in segs if s["segment_type"] == "stitched"),
        "allocated_requested": sum(b["requested_size"] for s in segs for b in s["blocks"] if b["state"] == "active_allocated"),
        "trace_entries": len(data["device_traces"][0]),
    }
    g, s = r["gmlake_stats"], r["snapshot"]
    r["agree"] = {"reserved": g["reserved"] == s["reserved_large"], "allocated": g["live"] == s["allocated_requested"],
                  "views": g["views"] == s["stitched_segments"]}
    for fn in ("trace_plot", "segment_plot"):
        try:
            html = getattr(mv, fn)(data)
            r[fn] = {"ok": True, "html_bytes": len(html)}
            if name.startswith("opt"):
                open(os.path.join(out, f"{name}.{fn}.html"), "w").write(html)
        except Exception:
            r[fn] = {"ok": False, "error": traceback.format_exc()[-2000:]}
    try:
        txt = mv.segsum(data)
        r["segsum_head"] = txt[:600]
        mt = re.search(r"[Tt]otal [Rr]eserved:?\s*([^\n,]+)", txt)
        r["segsum_total_reserved"] = mt.group(1) if mt else None
    except Exception:
        r["segsum"] = traceback.format_exc()[-1500:]
    report["files"][name] = r

# A real PyTorch snapshot on this GPU: the keys of its entries beside gmlake's.
try:
    torch.cuda.memory._record_memory_history(max_entries=1000)
    xs = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (3, 25, 1, 40)]
    del xs[1]
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    seg = snap["segments"][0]
    ours = pickle.load(gzip.open(sorted(glob.glob(os.path.join(here, "*.pickle.gz")))[0], "rb"))
    def keys(d):
        return sorted(d.keys())
    tr = [e for e in snap["device_traces"][0]]
    report["torch_keys"] = {"top": keys(snap), "segment": keys(seg), "block": keys(seg["blocks"][0]),
                            "trace": keys(tr[0]) if tr else [], "actions": sorted({e["action"] for e in tr})}
    report["gmlake_keys"] = {"top": keys(ours), "segment": keys(ours["segments"][0]), "block": keys(ours["segments"][0]["blocks"][0]),
                             "trace": keys(ours["device_traces"][0][0]), "actions": sorted({e["action"] for e in ours["device_traces"][0]})}
    report["torch_snapshot_trace_plot_ok"] = len(mv.trace_plot(snap)) > 0
except Exception:
    report["torch_snapshot"] = traceback.format_exc()[-1500:]
json.dump(report, open(os.path.join(out, "memory-viz-check.json"), "w"), indent=1)
print(json.dumps(report, indent=1)[:6000])
