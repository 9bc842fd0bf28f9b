"""How the families added one module each write their replies: every module here exports
`WRITERS`, a dict of format name to `families.Writer`, which families.py gathers."""
