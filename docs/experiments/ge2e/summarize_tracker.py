"""Tables from results/tracker.json: per threshold, time-weighted DER over
c01-c12, real-sample DER, monologue speaker counts."""
import json
import sys
from pathlib import Path

R = json.loads((Path(__file__).parent / "results/tracker.json").read_text())
runs = list(next(iter(R.values()))["runs"])
conv = [n for n, r in R.items() if r["kind"] == "conv"]
mono = [n for n, r in R.items() if r["kind"] == "mono"]
hard = ["real/sample"] + [n for n in conv if n[:3] in ("c02", "c03", "c07", "c08")]
print("run | c01-c12 DER (tw) | real | c02 c03 c07 c08 | rob/base (spk) | monologue speakers " + " ".join(m[:6] for m in mono))
for k in runs:
    e = sum(R[n]["runs"][k]["der"] * R[n]["runs"][k]["total"] for n in conv)
    t = sum(R[n]["runs"][k]["total"] for n in conv)
    rb = R["robustness/base (2 voices)"]["runs"][k]
    print(f"{k} | {100*e/t:5.1f} | {100*R['real/sample']['runs'][k]['der']:5.1f} ({R['real/sample']['runs'][k]['speakers']}) | "
          + " ".join(f"{100*R[n]['runs'][k]['der']:5.1f}({R[n]['runs'][k]['speakers']})" for n in hard[1:])
          + f" | {100*rb['der']:5.1f} ({rb['speakers']}) | "
          + " ".join(str(R[m]["runs"][k]["speakers"]) for m in mono))
if len(sys.argv) > 1:
    k = sys.argv[1]
    print(f"\nper file, {k}: DER % (missed/FA/confusion) speakers; monologues: speakers, majority share")
    for n, r in R.items():
        x = r["runs"][k]
        tot = max(x["total"], 1e-9)
        print(f"{n:40s} {100*x['der']:5.1f} ({100*x['missed']/tot:.1f}/{100*x['false_alarm']/tot:.1f}/{100*x['confusion']/tot:.1f}) "
              f"spk={x['speakers']} major={x['majority_share']:.2f}")
