"""Channels other than the web page: the LINE bot and the OpenAI-compatible endpoint.

Both run turns through the same engine and read the same events as ``POST /api/chat``; what differs is
only how a finished (or streaming) turn is shown to the other side.
"""
