"""A model's configuration as text: `config.pbtxt` (protobuf text format) or JSON, both ways.

Triton's own schema does the parsing and printing (`tritonclient.grpc.model_config_pb2`
with protobuf's `text_format` and `json_format`), so a file this module accepts is one the
server accepts, and a file it writes is one Triton reads. In memory a config is the dict
the server's `get_model_config(..., as_json=True)` gives: proto field names, int64 values
as strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from app.system.bounded_read import MAX_CONFIG_BYTES, BoundedReadError, parse_json, read_text

ModelConfigDict = dict[str, Any]


class ConfigError(ValueError):
    """A config that does not parse, with the source and the protobuf parser's reason."""


def _message(config: Mapping[str, Any], source: str) -> model_config_pb2.ModelConfig:
    message = model_config_pb2.ModelConfig()
    try:
        json_format.ParseDict(dict(config), message)
    except json_format.ParseError as e:
        # The first line says which field; the rest lists every field of the schema.
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigError(f"{source}: not a Triton model config: {reason}") from None
    return message


def _as_dict(message: model_config_pb2.ModelConfig) -> ModelConfigDict:
    return dict(json_format.MessageToDict(message, preserving_proto_field_name=True))


def normalise(config: Mapping[str, Any], source: str = "config") -> ModelConfigDict:
    """The config through Triton's schema: unknown fields refused, defaults dropped."""
    return _as_dict(_message(config, source))


def parse_config(text: str, source: str = "config") -> ModelConfigDict:
    """`config.pbtxt` text, or JSON (a config, or the server's `{"config": {...}}` answer)."""
    if text.lstrip().startswith("{"):
        try:
            data = parse_json(text, source)
        except BoundedReadError as e:
            raise ConfigError(str(e)) from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"{source}: not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: a JSON config must be an object")
        if set(data) == {"config"} and isinstance(data["config"], dict):
            data = data["config"]
        return normalise(data, source)
    message = model_config_pb2.ModelConfig()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as e:
        # The parser's message starts with "LINE:COLUMN : ...".
        raise ConfigError(f"{source}:{e}") from None
    return _as_dict(message)


def read_config_file(path: str | Path) -> ModelConfigDict:
    """A config file (config.pbtxt or JSON); ConfigError naming the file and the cause."""
    try:
        text = read_text(Path(path), MAX_CONFIG_BYTES)
    except BoundedReadError as e:
        raise ConfigError(str(e)) from None
    return parse_config(text, str(path))


def to_pbtxt(config: Mapping[str, Any]) -> str:
    """The config as `config.pbtxt` text."""
    return str(text_format.MessageToString(_message(config, "config")))


def to_json(config: Mapping[str, Any]) -> str:
    """The config as the JSON Triton's load API takes in its `config` parameter."""
    return json.dumps(normalise(config))
