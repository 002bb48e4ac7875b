"""MediaPipe's BlazePose as a BLS pipeline: pose_detector, then pose_landmark on each person.

The rules are those of MediaPipe's pose_landmark_cpu graph for a still image (no tracking,
no smoothing): the detection's keypoint 0 (the hips' centre) is the region's centre, twice
its distance to keypoint 1 the region's side, the vector between them turned upright
(pose_detection_to_roi: AlignmentPointsRectsCalculator, 90 degrees, then square and 1.25
times larger); the region is cut out at 256x256 (edge pixels repeated); the landmarks are
projected back; people whose presence is below 0.5 are dropped. See config.pbtxt.
"""

from __future__ import annotations

import os
import sys

import cv2
import numpy as np

DETECTOR, LANDMARKS = "pose_detector", "pose_landmark"
CROP = 256
SCALE = 1.25
LANDMARK_BATCH = 8  # pose_landmark's max_batch_size
NUM_LANDMARKS = 33  # of the model's 39: the body's (the rest are auxiliary points)
VISIBLE = 0.5


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
        params, self.slots, self.presence_threshold = pipeline_stages.pipeline_settings(args)
        self.max_people = min(int(params.get("max_people", self.slots)), self.slots)

    def people(self, image: np.ndarray, trace: object = None) -> list[tuple]:
        """[(box, score, keypoints (33, 3))] of one image."""
        h, w = image.shape[:2]
        found = self.stages.call_stage(
            DETECTOR, {"image": image[None]}, ["num_dets", "det_scores", "det_keypoints"], trace
        )
        n = min(int(found["num_dets"][0, 0]), self.max_people)
        if n == 0:
            return []
        scores, points = found["det_scores"][0, :n], found["det_keypoints"][0, :n]
        regions = [
            self.regions.square_long(self.regions.region_from_alignment(kps[0, :2], kps[1, :2]), SCALE)
            for kps in points
        ]
        crops = np.stack([self.regions.crop(image, region, CROP) for region in regions])
        marks = self.stages.call_in_batches(LANDMARKS, crops, ["landmarks", "presence"], LANDMARK_BATCH, trace)
        out = []
        for i, region in enumerate(regions):
            if float(marks["presence"][i, 0]) < self.presence_threshold:
                continue
            body = marks["landmarks"][i, :NUM_LANDMARKS]
            xy = self.regions.project(body[:, :2], region, CROP)
            visible = body[:, 3] >= VISIBLE
            box = self.stages.keypoint_box(xy[visible] if visible.any() else xy, w, h)
            out.append((box, float(scores[i]), np.concatenate([xy, body[:, 3:4]], axis=1)))
        return out

    def execute(self, requests: list) -> list:
        return self.stages.answer(requests, self.people, self.slots, NUM_LANDMARKS)
