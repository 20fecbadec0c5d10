"""The sync client, GENERATED from dlock/_async/ by python/tools/unasync.py: do not edit these
files; edit their sources and run `python tools/unasync.py` in python/ (`make python-test`
checks they are current)."""
