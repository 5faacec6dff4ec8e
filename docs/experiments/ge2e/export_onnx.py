"""Step 6: export the GE2E encoder (mel [B, T, 40] -> L2-normalised [B, 256])
to ONNX and compare onnxruntime with torch."""
import collections
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch

from common import CONV, encoder, mel, read_wav, SR, gain_to_target

torch.set_num_threads(1)
enc = encoder().eval()


class Wrap(torch.nn.Module):
    def __init__(self, e):
        super().__init__()
        self.e = e

    def forward(self, mels):
        return self.e(mels)


dynamo = len(sys.argv) > 1 and sys.argv[1] == "dynamo"
dummy = torch.randn(1, 160, 40).abs()
kw = dict(input_names=["mels"], output_names=["embedding"],
          dynamic_axes={"mels": {0: "batch", 1: "frames"}, "embedding": {0: "batch"}}, opset_version=13)
if dynamo:
    torch.onnx.export(Wrap(enc), (dummy,), "ge2e.onnx", dynamo=True, input_names=["mels"],
                      output_names=["embedding"],
                      dynamic_shapes={"mels": {0: torch.export.Dim("batch"), 1: torch.export.Dim("frames")}})
else:
    torch.onnx.export(Wrap(enc), (dummy,), "ge2e.onnx", dynamo=False, **kw)
m = onnx.load("ge2e.onnx")
onnx.checker.check_model(m)
ops = collections.Counter(n.op_type for n in m.graph.node)
print("opset", [(o.domain or "ai.onnx", o.version) for o in m.opset_import])
print("ops", dict(ops))
print("inputs", [(i.name, [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]) for i in m.graph.input])

sess = ort.InferenceSession("ge2e.onnx", providers=["CPUExecutionProvider"])
x = read_wav(CONV / "c02_neutral_m1_m2.wav")
worst = 0.0
for n_frames, batch in [(160, 1), (160, 8), (100, 4), (250, 2)]:
    ws = []
    for k in range(batch):
        s = int((1.0 + 2.3 * k) * SR)
        seg = x[s: s + n_frames * 160]
        seg = seg * gain_to_target(seg)
        ws.append(mel(seg)[:n_frames])
    W = np.stack(ws).astype(np.float32)
    with torch.no_grad():
        ref = enc(torch.from_numpy(W)).numpy()
    got = sess.run(None, {"mels": W})[0]
    d = np.abs(ref - got).max()
    worst = max(worst, d)
    print(f"frames {n_frames} batch {batch}: max |torch - ort| = {d:.2e}, cos min {min((ref*got).sum(1)):.7f}")
print("PASS" if worst < 1e-4 else "FAIL", f"worst {worst:.2e}")
