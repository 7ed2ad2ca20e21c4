"""The commands that open the desk's store only to read it (``create=False``)."""

READ_ONLY_COMMANDS = [
    ["audit", "verify"],
    ["audit", "export"],
    ["audit", "checkpoint"],
    ["grants", "list"],
]
