"""The client's decisions and data, free of I/O, shared by the sync and asyncio flavours: the
acquisition machine and the attempt around it (ports of client/src/acquisition.rs and
attempt.rs), the commands, timing, kinds, options, node URLs, slot maps, replies and tallies."""
