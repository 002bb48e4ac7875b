"""MediaPipe's Face Mesh as a BLS pipeline: face_detector, then face_landmark on each face.

The rules are those of MediaPipe's face_landmark_front_cpu graph (static images, no
tracking): the detector is given MediaPipe's own 128x128 letterbox of the image (warped
bilinearly into the centred square, black border: face_detector's own letterbox, made for
downscaled client images, resizes by area instead), its answers mapped back; each
detection's box becomes a region rotated so that the line from the right eye to the left eye
(detector keypoints 0 and 1) is level, made square on its longer side and enlarged 1.5 times
(face_detection_front_detection_to_roi); the region is cut out at 192x192 (edge pixels
repeated); the landmarks are projected back; faces whose presence is below 0.5 are dropped.
See config.pbtxt for the outputs.
"""

from __future__ import annotations

import os
import sys

import cv2
import numpy as np

DETECTOR, LANDMARKS = "face_detector", "face_landmark"
CROP = 192
DETECTOR_SIZE = 128  # BlazeFace's input: face_detector letterboxes a 128x128 image as it is
SCALE = 1.5
LANDMARK_BATCH = 16  # face_landmark's max_batch_size
NUM_LANDMARKS = 468


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        cv2.setNumThreads(1)
        # The shared helpers are copies inside this model's own folder (beside this file), so
        # the folder alone deploys into any repository (tests/unit/test_bundled_helpers.py keeps
        # the copies equal). No bytecode: an installed repository may be read-only.
        sys.dont_write_bytecode = True
        sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
        import mediapipe_rules
        import pipeline_stages

        self.regions, self.stages = mediapipe_rules, pipeline_stages
        _, self.slots, self.presence_threshold = pipeline_stages.pipeline_settings(args)

    def faces(self, image: np.ndarray, trace: object = None) -> list[tuple]:
        """[(box, score, keypoints (468, 3))] of one image."""
        h, w = image.shape[:2]
        letterbox = self.regions.whole_image(w, h)
        tensor = self.regions.crop(image, letterbox, DETECTOR_SIZE, replicate_border=False)
        found = self.stages.call_stage(
            DETECTOR, {"image": tensor[None]}, ["num_dets", "det_boxes", "det_scores", "det_keypoints"], trace
        )
        n = min(int(found["num_dets"][0, 0]), self.slots)
        if n == 0:
            return []
        scores = found["det_scores"][0, :n]
        # From the letterbox's pixels back to the image's.
        boxes = self.regions.project(found["det_boxes"][0, :n].reshape(-1, 2), letterbox, DETECTOR_SIZE).reshape(-1, 4)
        points = self.regions.project(found["det_keypoints"][0, :n, :2, :2].reshape(-1, 2), letterbox, DETECTOR_SIZE)
        eyes = points.reshape(n, 2, 2)  # the right eye, the left eye
        regions = [
            self.regions.square_long(self.regions.region_from_box(box, pair[0], pair[1], 0.0), SCALE)
            for box, pair in zip(boxes, eyes, strict=True)
        ]
        crops = np.stack([self.regions.crop(image, region, CROP) for region in regions])
        marks = self.stages.call_in_batches(LANDMARKS, crops, ["landmarks", "presence"], LANDMARK_BATCH, trace)
        out = []
        for i, region in enumerate(regions):
            presence = float(marks["presence"][i, 0])
            if presence < self.presence_threshold:
                continue
            xy = self.regions.project(marks["landmarks"][i, :, :2], region, CROP)
            keypoints = np.concatenate([xy, np.full((NUM_LANDMARKS, 1), presence)], axis=1)
            out.append((self.stages.keypoint_box(xy, w, h), float(scores[i]), keypoints))
        return out

    def execute(self, requests: list) -> list:
        return self.stages.answer(requests, self.faces, self.slots, NUM_LANDMARKS)
