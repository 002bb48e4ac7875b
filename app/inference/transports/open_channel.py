"""`open_channel(endpoint, options)`: the channel an endpoint asks for (the default
`ChannelFactory`): `http://` / `https://` -> HttpChannel, `grpc://` or a bare HOST:PORT ->
GrpcChannel."""

from __future__ import annotations

from app.inference.protocol import Endpoint, ServerProtocol
from app.inference.transports.channel import Channel, ConnectionOptions, GrpcChannel


def open_channel(endpoint: Endpoint, options: ConnectionOptions) -> Channel:
    if endpoint.protocol is ServerProtocol.HTTP:
        # Imported on first use: aiohttp and tritonclient.http (with gevent) cost start-up
        # time that gRPC users never need to pay.
        from app.inference.transports.http_channel import HttpChannel

        return HttpChannel(endpoint, options)
    return GrpcChannel(endpoint, options)
