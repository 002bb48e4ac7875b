"""Errors of the embedded server, each with a message a user can act on."""


class ServerError(RuntimeError):
    """The embedded Triton server could not be found, started or stopped."""


class TritonNotFoundError(ServerError):
    pass


class ModelLoadError(ServerError):
    """A model of the repository did not load; the message names it and quotes the server."""

    def __init__(self, message: str, failed: dict[str, str]) -> None:
        super().__init__(message)
        self.failed = failed
