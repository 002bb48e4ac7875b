"""`ModelVocabulary`: what a model's numbers mean, for the formats that name them: class names by
id (YOLO's classes.txt, COCO categories), keypoint names (labelme point labels, COCO categories'
`keypoints`) and the skeleton (COCO's `skeleton`). Built from the model's profile."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.inference.profiles.profile_types import ModelProfile


@dataclass(frozen=True)
class ModelVocabulary:
    labels: tuple[str, ...] = ()
    keypoint_names: tuple[str, ...] = ()
    skeleton: tuple[tuple[int, int], ...] = ()  # 0-based keypoint index pairs

    @classmethod
    def of(cls, value: ModelVocabulary | Sequence[str] | None) -> ModelVocabulary:
        """A vocabulary as given, or one of class names only (a list of labels)."""
        if isinstance(value, ModelVocabulary):
            return value
        return cls(labels=tuple(value or ()))

    @classmethod
    def from_profile(cls, profile: ModelProfile) -> ModelVocabulary:
        return cls(tuple(profile.labels), tuple(profile.keypoint_names), tuple(profile.skeleton))

    def keypoint_name(self, index: int) -> str:
        """The model's name of keypoint `index`, else `keypoint N`."""
        names = self.keypoint_names
        return names[index] if 0 <= index < len(names) else f"keypoint {index}"

    def keypoint_list(self, count: int) -> list[str]:
        """Names of `count` keypoints (the model's, `keypoint N` beyond them)."""
        return [self.keypoint_name(i) for i in range(max(count, len(self.keypoint_names)))]
