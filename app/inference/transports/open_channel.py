"""`open_channel(url, options)`: the channel a URL asks for (the default `ChannelFactory`):
`http://` / `https://` -> HttpChannel, `grpc://` or a bare HOST:PORT -> GrpcChannel."""

from __future__ import annotations

from app.inference.protocol import ServerProtocol, protocol_of
from app.inference.transports.channel import Channel, ConnectionOptions, GrpcChannel


def open_channel(url: str, options: ConnectionOptions) -> Channel:
    if protocol_of(url) is ServerProtocol.HTTP:
        # Imported on first use: aiohttp and tritonclient.http (with gevent) cost start-up
        # time that gRPC users never need to pay.
        from app.inference.transports.http_channel import HttpChannel

        return HttpChannel(url, options)
    return GrpcChannel(url, options)
