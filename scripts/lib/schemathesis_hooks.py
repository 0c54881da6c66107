"""Hooks for scripts/test-openapi: make `requests` treat WebSocket upgrades the way WebSocket clients do.

statusd recognizes an upgrade only as the first request of a connection (as browsers and WebSocket libraries send it),
and a 101 Switching Protocols answer turns the connection into a WebSocket. `requests` knows neither: it would send an
upgrade on a pooled keep-alive connection, and put an upgraded connection back into its pool, where the next request
would be read as a WebSocket frame. So an upgrade request gets a fresh connection, and an upgraded one is closed.
"""

import requests.adapters

_send = requests.adapters.HTTPAdapter.send
_build_response = requests.adapters.HTTPAdapter.build_response


def _send_upgrades_on_new_connections(self, request, *args, **kwargs):
    if "Upgrade" in request.headers:
        self.poolmanager.clear()
    return _send(self, request, *args, **kwargs)


def _build_response_closing_upgrades(self, req, resp):
    response = _build_response(self, req, resp)
    if response.status_code == 101:
        connection = getattr(resp, "connection", None)
        if connection is not None:
            connection.close()
    return response


requests.adapters.HTTPAdapter.send = _send_upgrades_on_new_connections
requests.adapters.HTTPAdapter.build_response = _build_response_closing_upgrades
