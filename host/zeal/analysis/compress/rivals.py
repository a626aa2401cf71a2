"""Rival codecs of the reports' float64 bit patterns (uint64 arrays): the shared codec shape and
the rivals of GreedyGD (general-purpose compressors, pcodec, the known-prefix packer, an
entropy coder). Work in progress: the rivals land here next."""

CODECS = ()  # (name, pip package or None, factory), filled in as the rivals land
