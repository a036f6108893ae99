"""The web pages: static files and the server-side rendering of model output."""
