"""The step-3 key table from a separability result: results/separability_window.json (GE2E)
unless another is named, e.g. results/separability_deepspeaker.json (Deep Speaker ResCNN)."""
import json
import sys
R = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "results/separability_window.json"))["files"]
hard = ["real/sample", "c02_neutral_m1_m2", "c03_agreeing_f1_f2", "c07_stressed_m3_m4", "c08_disengaged_f3_f4"]
mono_same = ["calm_then_stressed", "baseline", "hesitant", "rising", "stressed", "fillers"]
mono_cross = ["en-us baseline x hesitant", "en-us baseline x rising", "en-us baseline x stressed", "en-us baseline x disengaged"]
for L in ["1.0", "1.6"]:
    print(f"--- {L} s segments, pair cosines: mean [p5, p95] (min/max)")
    lows = []
    for n in mono_same:
        s = R[n][L]["same"]; lows.append((s["p5"], s["min"], n))
        extra = ""
        if "cross_register" in R[n][L]:
            c = R[n][L]["cross_register"]; lows.append((c["p5"], c["min"], n + " calm x stressed"))
            extra = f" | calm x stressed {c['mean']:.3f} [{c['p5']:.3f},{c['p95']:.3f}] ({c['min']:.3f})"
        print(f"  mono {n:22s} same {s['mean']:.3f} [{s['p5']:.3f},{s['p95']:.3f}] ({s['min']:.3f}){extra}")
    for n in mono_cross:
        c = R[n][L]["cross_register"]; lows.append((c["p5"], c["min"], n))
        print(f"  one voice {n:27s} {c['mean']:.3f} [{c['p5']:.3f},{c['p95']:.3f}] ({c['min']:.3f})")
    highs = []
    for n in hard:
        s, d = R[n][L]["same"], R[n][L]["diff"]; highs.append((d["p95"], d["max"], n))
        print(f"  {n:22s} same {s['mean']:.3f} [{s['p5']:.3f},{s['p95']:.3f}]  diff {d['mean']:.3f} [{d['p5']:.3f},{d['p95']:.3f}] (max {d['max']:.3f})")
    lo, hi = min(lows), max(highs)
    print(f"  lowest one-voice p5 {lo[0]:.3f} ({lo[2]}), highest different-speaker p95 {hi[0]:.3f} ({hi[2]}): margin {lo[0]-hi[0]:+.3f}")
    lo2, hi2 = min(lows, key=lambda t: t[1]), max(highs, key=lambda t: t[1])
    print(f"  strict: lowest one-voice min {lo2[1]:.3f} ({lo2[2]}), highest different max {hi2[1]:.3f} ({hi2[2]}): margin {lo2[1]-hi2[1]:+.3f}")
    nh = [h for h in highs if h[2] != "c02_neutral_m1_m2"]
    print(f"  without c02: highest different p95 {max(nh)[0]:.3f} ({max(nh)[2]}): margin {lo[0]-max(nh)[0]:+.3f}")
