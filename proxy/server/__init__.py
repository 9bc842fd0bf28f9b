"""The HTTP edge and the process: the app, its middleware, serving, the command line."""
